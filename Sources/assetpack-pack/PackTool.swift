import AssetPack
import Dispatch
import Foundation

/// `assetpack-pack`: the lean packing tool the PackAssets build-tool plugin runs. It links the
/// AssetPack library and nothing else (no argument parser, no perf report, no HTTP client of its
/// own), so an app's first build compiles far less, and it does one thing: `AssetPacks.pack`.
///
/// Only the plugin composes its command line, always in this fixed shape:
///
///     assetpack-pack SOURCE OUTPUT --format zip|container --compression auto|store|deflate
///         [--level default|fast] [--scrypt-cost LOG2N]
///         (--key-file PATH | --password-file PATH | --password-env NAME)
///         [--sign-key PATH [--pack-name NAME] [--pack-version N] [--expires DATE]]
///         [--swift-credential PATH]
///
/// - `SOURCE`, `OUTPUT`: the asset folder and the pack to write (first, in this order).
/// - `--format`, `--compression`: as `assetpack pack`'s; both required.
/// - `--level`: as `assetpack pack --level`; `default` when absent.
/// - `--scrypt-cost`: as `assetpack pack --scrypt-cost` (a container with a password; 10 to 18).
/// - exactly one credential: a raw 32-byte container key file, a file whose first line is the
///   password, or the name of the environment variable holding the password. The secret itself
///   never goes on the command line.
/// - `--sign-key`: a publisher signing key (`NAME.key` from `assetpack keygen`); with it,
///   `--pack-name`, `--pack-version` and `--expires` as `assetpack pack`'s (ISO 8601 date or
///   date-time, or `+30d` / `+12h` from now). A signed pack is packed fresh: no entry is reused
///   from the pack already at OUTPUT, which the build directory holds and the key would otherwise
///   sign unseen (the Security article, "Sign at build time").
/// - `--swift-credential`: also write Swift source there declaring `PackedAssets` (the pack's
///   resource URL and the credential it was packed with, masked), compiled into the app's target.
///
/// Prints one summary line to stdout. Exit codes as the `assetpack` CLI's: 0 packed, 1 other error,
/// 2 missing or wrong password, 64 usage (an unknown option, a missing or malformed value).
@main
enum PackTool {
    static func main() {
        // As the CLI does: libzip converts every entry's DOS time with mktime(3) when it reopens the
        // previous pack; with TZ unset glibc re-stats /etc/localtime on every call.
        if getenv("TZ") == nil { setenv("TZ", ":/etc/localtime", 0) }
        // Ctrl-C or SIGTERM while a build packs: remove the temporary pack in flight (the
        // previous pack at OUTPUT is only ever replaced by renaming a complete one).
        TemporaryFiles.removeOnInterrupt()
        let arguments = Array(CommandLine.arguments.dropFirst())
        let request: Request
        do {
            request = try Request(parsing: arguments)
        } catch let error as UsageError {
            fail(
                error.message + "\n  (assetpack-pack takes only the arguments the PackAssets plugin composes)",
                ToolExit.usage)
        } catch {
            fail("\(error)", 1)
        }
        do {
            print(try request.run())
        } catch let error as AssetPackError {
            fail(error.description, error.code.toolExitCode)
        } catch let error as UsageError {
            fail(error.message, ToolExit.usage)
        } catch {
            fail("\(error)", 1)
        }
    }

    static func fail(_ message: String, _ code: Int32) -> Never {
        FileHandle.standardError.write(Data("assetpack-pack: error: \(message)\n".utf8))
        exit(code)
    }
}

/// A usage error: exit 64.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// One pack to write, as the command line asks.
struct Request {
    enum Credential: Equatable {
        case keyFile(String)
        case passwordFile(String)
        case passwordEnv(String)

        /// Whether the secret is a password (which a KDF turns into the key), not a raw key.
        var isPassword: Bool { if case .keyFile = self { false } else { true } }
    }

    var source: String
    var output: String
    var format: PackFormat
    var compression: CompressionPolicy
    var level: CompressionLevel
    var credential: Credential
    var signKey: String?
    var packName: String?
    var packVersion: UInt64?
    var expires: String?
    /// scrypt's log2 N for a container's password; `nil`: the pack at OUTPUT's, else 15.
    var scryptCost: Int?
    /// Where to write the `PackedAssets` Swift source, if anywhere.
    var swiftCredential: String?

    /// Parses the fixed argument list in ``PackTool``'s documentation.
    /// - Throws: ``UsageError`` naming what is wrong.
    init(parsing arguments: [String]) throws {
        guard arguments.count >= 2, !arguments[0].hasPrefix("-"), !arguments[1].hasPrefix("-") else {
            throw UsageError("expected SOURCE OUTPUT first, then the options")
        }
        source = arguments[0]
        output = arguments[1]
        var values: [String: String] = [:]
        var rest = arguments.dropFirst(2).makeIterator()
        let known = [
            "--format", "--compression", "--level", "--key-file", "--password-file", "--password-env", "--sign-key",
            "--pack-name", "--pack-version", "--expires", "--scrypt-cost", "--swift-credential",
        ]
        while let option = rest.next() {
            guard known.contains(option) else {
                throw UsageError(
                    option.hasPrefix("-") ? "unknown option '\(option)'" : "unexpected argument '\(option)'")
            }
            guard let value = rest.next() else { throw UsageError("\(option) needs a value") }
            guard values[option] == nil else { throw UsageError("\(option) is given twice") }
            guard !value.isEmpty else { throw UsageError("\(option) needs a value, not an empty one") }
            values[option] = value
        }

        guard let formatName = values["--format"] else { throw UsageError("--format is required") }
        guard let driver = AssetPacks.formats.first(where: { $0.format.rawValue == formatName }) else {
            let known = AssetPacks.formats.map(\.format.rawValue).joined(separator: " or ")
            throw UsageError("--format must be \(known), not '\(formatName)'")
        }
        self.format = driver.format
        guard let compressionName = values["--compression"] else { throw UsageError("--compression is required") }
        guard let compression = CompressionPolicy(rawValue: compressionName) else {
            throw UsageError("--compression must be auto, store or deflate, not '\(compressionName)'")
        }
        self.compression = compression
        let levelName = values["--level"] ?? CompressionLevel.default.rawValue
        guard let level = CompressionLevel(rawValue: levelName) else {
            throw UsageError("--level must be default or fast, not '\(levelName)'")
        }
        self.level = level

        let credentials: [Credential] = [
            values["--key-file"].map(Credential.keyFile), values["--password-file"].map(Credential.passwordFile),
            values["--password-env"].map(Credential.passwordEnv),
        ].compactMap { $0 }
        guard credentials.count == 1 else {
            throw UsageError(
                "give exactly one of --key-file, --password-file and --password-env (the secret itself never goes on the command line)"
            )
        }
        credential = credentials[0]

        signKey = values["--sign-key"]
        swiftCredential = values["--swift-credential"]
        packName = values["--pack-name"]
        expires = values["--expires"]
        if let text = values["--pack-version"] {
            guard let version = UInt64(text) else {
                throw UsageError("--pack-version takes a whole number from 0 to \(UInt64.max), not '\(text)'")
            }
            packVersion = version
        }
        if let text = values["--scrypt-cost"] {
            guard driver.refusal(of: .passwordKDF) == nil, credential.isPassword else {
                throw UsageError("--scrypt-cost applies to a container with a password only")
            }
            let costs = ContainerKDF.scryptCosts
            guard let cost = Int(text), costs.contains(cost) else {
                throw UsageError("--scrypt-cost must be from \(costs.lowerBound) to \(costs.upperBound), not '\(text)'")
            }
            scryptCost = cost
        }
        if signKey == nil && (packName != nil || packVersion != nil || expires != nil) {
            throw UsageError("--pack-name, --pack-version and --expires describe a signature: give --sign-key too")
        }
    }

    /// The pack options the request gives, reading the credential and the signing key.
    /// - Throws: `AssetPackError` (a credential or key file that cannot be read, a password
    ///   variable that is not set), ``UsageError`` for an expiry that is malformed or past.
    func options(now: Date = Date()) throws -> PackOptions {
        var options = PackOptions()
        options.format = format
        options.compression = compression
        options.level = level
        if let scryptCost { options.container.kdf = .scrypt(cost: scryptCost) }
        switch credential {
        case .keyFile(let path): options.credential = try .keyFile(path)
        case .passwordFile(let path): options.credential = try .passwordFile(path)
        case .passwordEnv(let name):
            guard let password = ProcessInfo.processInfo.environment[name], !password.isEmpty else {
                throw AssetPackError(.missingPassword, "a password is needed: $\(name) is not set")
            }
            options.credential = .password(password)
        }
        if let signKey {
            options.fresh = true  // sign only what was packed from SOURCE now
            options.signingKey = try PublisherSigningKey.load(from: URL(fileURLWithPath: signKey))
            options.releaseName = packName
            options.releaseVersion = packVersion ?? 0
            options.allowRollback = true  // the output is this build's product, not a published release
            if let expires {
                do { options.releaseExpires = try PackRelease.futureExpiry(expires, now: now, of: "pack").get() } catch
                {
                    throw UsageError(error.text)
                }
            }
        }
        return options
    }

    /// Packs, and returns the summary line.
    func run() throws -> String {
        var options = try options()
        let summary: AssetPacks.PackSummary
        do {
            summary = try AssetPacks.pack(
                source: URL(fileURLWithPath: source), to: URL(fileURLWithPath: output), options: options)
        } catch let error as AssetPackError where error.code == .wrongPassword && !options.fresh {
            // The pack at the output is this build's own product from an earlier password (the
            // plugin's output lives in the build folder): replace it, as a clean build would.
            options.fresh = true
            summary = try AssetPacks.pack(
                source: URL(fileURLWithPath: source), to: URL(fileURLWithPath: output), options: options)
        }
        for skipped in summary.skipped {
            FileHandle.standardError.write(
                Data(
                    "assetpack-pack: warning: skipped special file \(EntryPath.printable(skipped.path)) (\(skipped.kind))\n"
                        .utf8))
        }
        for warning in summary.warnings {
            FileHandle.standardError.write(Data("assetpack-pack: warning: \(warning)\n".utf8))
        }
        let inputBytes = summary.files.reduce(UInt64(0)) { $0 + $1.size }
        let count = summary.files.count
        var line =
            "packed \(count) \(count == 1 ? "entry" : "entries") (\(inputBytes) bytes) into \(output) "
            + "(\(summary.packSize) bytes, \(format.rawValue)) in \(String(format: "%.2f", summary.seconds)) s: "
            + "\(summary.reused) reused, \(summary.packed) packed"
            + (summary.removed.map { $0 > 0 ? ", \($0) removed" : "" } ?? "")
            + (summary.droppedBytes > 0 ? ", \(summary.droppedBytes) bytes of removed or replaced content dropped" : "")
            + (summary.zeroedBytes > 0 ? ", \(summary.zeroedBytes) bytes of removed or replaced content zeroed" : "")
        if let key = options.signingKey {
            line += ", signed by key \(key.publicKey.fingerprint) as \(try options.release(for: output).summary)"
        }
        if let swiftCredential, let credential = options.credential {
            let resource = URL(fileURLWithPath: output).lastPathComponent
            let text = PackedAssetsSource.text(resource: resource, credential: credential)
            try AtomicFile.write(swiftCredential, mode: 0o600, exactMode: true) { fd in
                try Array(text.utf8).withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: swiftCredential) }
            }
        }
        return line
    }
}

/// The Swift source that hands an app its pack and credential (`--swift-credential`).
///
/// The secret is written as two byte arrays whose XOR it is: one fresh random mask per build and
/// the masked bytes. That keeps it from being one constant that `strings` or a grep for 32-byte
/// keys finds in the binary, and nothing more: the app holds everything needed to rebuild it, so
/// anyone who runs the app under a debugger, or reads this code, has it (docs/SECURITY.md).
enum PackedAssetsSource {
    static func text(resource: String, credential: PackCredential, mask: [UInt8]? = nil) -> String {
        let (secret, isKey): ([UInt8], Bool) =
            switch credential {
            case .key(let bytes): (bytes, true)
            case .password(let password): (Array(password.utf8), false)
            }
        let mask = mask ?? (0..<secret.count).map { _ in UInt8.random(in: 0...255) }
        let masked = zip(secret, mask).map { $0 ^ $1 }
        func literal(_ bytes: [UInt8]) -> String {
            stride(from: 0, to: bytes.count, by: 16).map { start in
                "            "
                    + bytes[start..<min(start + 16, bytes.count)].map { String(format: "0x%02x", $0) }
                    .joined(separator: ", ") + ","
            }.joined(separator: "\n")
        }
        let swiftString = resource.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
        return """
            // Generated by the PackAssets plugin (assetpack-pack) at build time: not source to edit or commit.
            import AssetPack
            import Foundation

            /// The pack the PackAssets plugin built from this target's assets, and what it opens with.
            enum PackedAssets {
                /// The pack, a resource of this target.
                static var url: URL {
                    guard let url = Bundle.module.url(forResource: "\(swiftString)", withExtension: nil) else {
                        preconditionFailure("\(swiftString) is not among this target's resources")
                    }
                    return url
                }

                /// The \(isKey ? "raw key" : "password") the pack was packed with (joined from two masked halves at first
                /// use, so it is no single constant in the binary; docs/SECURITY.md, "The pack key in the app").
                static let credential: PackCredential = {
                    let a: [UInt8] = [
            \(literal(masked))
                    ]
                    let b: [UInt8] = [
            \(literal(mask))
                    ]
                    let bytes = zip(a, b).map { $0 ^ $1 }
                    return \(isKey ? ".key(bytes)" : ".password(String(decoding: bytes, as: UTF8.self))")
                }()
            }

            """
    }
}
