import ArgumentParser
import AssetPack
import AssetPackCrypto
import Foundation

extension AssetPackCommand {
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a publisher key pair for signed packs: NAME.key (private) and NAME.pub (public).",
            discussion: """
                NAME.key (mode 0600) is the private signing key: keep it out of the repository and out of the app, \
                and back it up (a lost key cannot sign packs that apps holding its public key accept). NAME.pub is \
                the public key on one line: paste it into the app. The public key line goes to stdout, the summary \
                to stderr (--quiet drops it). An existing NAME.key or NAME.pub is replaced only with --force. \
                Missing folders in NAME are created, private (mode 0700).

                With --pack-key: write NAME.packkey instead, a random 32-byte container key (64 hex digits, mode \
                0600): what ASSETPACK_KEY_FILE names for the PackAssets plugin and for this command line. The \
                plugin gives the app the same key (PackedAssets.credential), so opening the pack costs no key \
                derivation at launch. Keep it out of the repository; a lost key cannot make patches for packs \
                already shipped.
                """)

        @Option(
            help: ArgumentHelp(
                "Write NAME.key and NAME.pub (NAME's missing folders are created, mode 0700).", valueName: "NAME"))
        var out: String
        @Flag(help: "Replace an existing NAME.key and NAME.pub; the old private key is lost.") var force = false
        @Flag(help: "Write NAME.packkey, a random 32-byte container key (ASSETPACK_KEY_FILE), instead of a key pair.")
        var packKey = false
        @OptionGroup var quiet: QuietOption

        func validate() throws {
            if out.isEmpty || out.hasSuffix("/") {
                throw ValidationError("--out needs a file name without extension, such as keys/publisher")
            }
        }

        func run() throws {
            if packKey { return try writePackKey() }
            try reporting {
                let keyPath = out + ".key"
                let pubPath = out + ".pub"
                if let status = try? FileSystem.stat(out), status.kind == .directory {
                    throw AssetPackError(
                        .invalidArgument, "\(out) is a directory: give a name inside it, such as \(out)/publisher")
                }
                let created = try Self.makeFolders(above: out)
                for path in [keyPath, pubPath] { try AtomicFile.checkTarget(path) }
                // lstat: a dangling symbolic link is a file too (the rename would replace it).
                let existing = [keyPath, pubPath].filter { (try? FileSystem.lstat($0)) != nil }
                if !existing.isEmpty && !force {
                    throw AssetPackError(
                        .invalidArgument,
                        "\(existing.joined(separator: " and ")) already exist\(existing.count == 1 ? "s" : ""); "
                            + "give --force to replace (the old private key is then lost)")
                }
                let key = PublisherSigningKey.generate()
                let publicKey = key.publicKey
                try key.write(to: keyPath)
                do { try publicKey.write(to: pubPath) } catch {
                    // A private key without its .pub is one nobody can use; remove the one just made.
                    if !existing.contains(keyPath) { try? FileSystem.unlink(keyPath) }
                    throw error
                }
                print(publicKey.text)
                for folder in created { quiet.say("created \(folder) (mode 0700)") }
                quiet.say(
                    "wrote \(keyPath): the private signing key (mode 0600); keep it out of the repository and the app")
                quiet.say("wrote \(pubPath): the public key \(publicKey.fingerprint); paste its line into the app")
            }
        }

        /// `--pack-key`: NAME.packkey, 32 random bytes as 64 hex digits and a newline, mode 0600.
        func writePackKey() throws {
            try reporting {
                let path = out + ".packkey"
                if let status = try? FileSystem.stat(out), status.kind == .directory {
                    throw AssetPackError(
                        .invalidArgument, "\(out) is a directory: give a name inside it, such as \(out)/assets")
                }
                let created = try Self.makeFolders(above: out)
                try AtomicFile.checkTarget(path)
                if (try? FileSystem.lstat(path)) != nil && !force {
                    throw AssetPackError(
                        .invalidArgument,
                        "\(path) already exists; give --force to replace it (packs made with the old key then need it to open)"
                    )
                }
                var key = secureRandomBytes(32)
                var line = Array((key.map { String(format: "%02x", $0) }.joined() + "\n").utf8)
                defer {
                    key.withUnsafeMutableBytes { wipeMemory($0) }
                    line.withUnsafeMutableBytes { wipeMemory($0) }
                }
                try AtomicFile.write(path, mode: 0o600, exactMode: true) { fd in
                    try line.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: path) }
                }
                for folder in created { quiet.say("created \(folder) (mode 0700)") }
                quiet.say(
                    "wrote \(path): a random 32-byte pack key (mode 0600); name it in the target's assetpack.json "
                        + "(\"keyFile\": \"\(path)\", relative to the package) for the PackAssets plugin, and give "
                        + "the assetpack command --key-file \(path) or ASSETPACK_KEY_FILE=\(path); keep it out of the "
                        + "repository"
                )
            }
        }

        /// Creates the folders missing above `path`, outermost first, each 0700 whatever the umask
        /// (they hold a private key), and returns them. Folders that exist are left as they are.
        static func makeFolders(above path: String) throws -> [String] {
            var missing: [String] = []
            var folder = AtomicFile.folder(of: path)
            // lstat: a symbolic link (even a dangling one) is there; checkTarget judges it.
            while !folder.isEmpty, folder != "/", (try? FileSystem.lstat(folder)) == nil {
                missing.append(folder)
                folder = AtomicFile.folder(of: folder)
            }
            var created: [String] = []
            for folder in missing.reversed() {
                do throws(Errno) {
                    try FileSystem.mkdir(folder, permissions: 0o700)
                    try FileSystem.chmod(folder, 0o700)  // the umask may have taken bits away
                    created.append(folder)
                } catch  where error == .fileExists {
                    continue  // `a/..` in the name: made a moment ago under another spelling
                } catch {
                    throw error.io("cannot create folder \(folder)")
                }
            }
            return created
        }
    }
}
