#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack-pack`, the lean tool the PackAssets plugin runs, as a built binary: its fixed
/// argument list (anything else is a usage error, exit 64), the credential by file or environment
/// variable only, the summary line, and signing. (The plugin around it: `make example`.)
@Suite struct PackToolTests {
    static let password = "pack-tool"

    /// `assetpack-pack` beside the `assetpack` the other CLI tests run.
    static var binary: String {
        CLI.binary.deletingLastPathComponent().appendingPathComponent("assetpack-pack").path
    }

    static func run(_ arguments: [String], password: String? = Self.password) throws -> CLI.Run {
        try CLI.run(arguments, password: password, executable: binary)
    }

    static func tree(_ dir: TemporaryDirectory) throws -> URL {
        try dir.write(["a.txt": textBytes(2_000, seed: 1), "b/c.bin": testBytes(5_000, seed: 2)], under: "src")
    }

    /// A new publisher key, and the path of its key file in `dir`.
    static func signingKey(in dir: TemporaryDirectory) throws -> (PublisherSigningKey, String) {
        let key = PublisherSigningKey.generate()
        let path = dir.appending("publisher.key").path
        try key.write(to: path)
        return (key, path)
    }

    /// SOURCE OUTPUT and the two required options, with the password from `$ASSETPACK_PASSWORD`.
    static func base(_ dir: TemporaryDirectory, format: String = "container") throws -> [String] {
        [
            try tree(dir).path, dir.appending("out.pack").path, "--format", format, "--compression", "auto",
            "--password-env", "ASSETPACK_PASSWORD",
        ]
    }

    @Test(arguments: [
        (["--bogus", "1"], "unknown option '--bogus'"),
        (["--password", "secret"], "unknown option '--password'"),
        (["--fresh"], "unknown option '--fresh'"),
        (["stray"], "unexpected argument 'stray'"),
        (["--pack-name"], "--pack-name needs a value"),
        (["--format", "zip"], "--format is given twice"),
        (["--password-file", "/dev/null"], "give exactly one of --key-file, --password-file and --password-env"),
        (
            ["--pack-version", "3"],
            "--pack-name, --pack-version and --expires describe a signature: give --sign-key too"
        ),
        (["--sign-key", "k.key", "--pack-version", "-1"], "--pack-version takes a whole number"),
    ])
    func anythingButTheFixedListIsAUsageError(extra: [String], message: String) throws {
        let dir = TemporaryDirectory()
        let run = try Self.run(try Self.base(dir) + extra)
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("assetpack-pack: error: \(message)"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("out.pack").path))
    }

    /// `--scrypt-cost` (assetpack.json's `"scryptCost"`): recorded in the container's header (FORMAT.md,
    /// offset 12), refused outside 10…18, for zip and with a key file.
    @Test func scryptCostIsRecordedAndCheckedAsTheCLIChecksIt() throws {
        let dir = TemporaryDirectory()
        let run = try Self.run(try Self.base(dir) + ["--scrypt-cost", "11"])
        #expect(run.status == 0, "\(run.stderr)")
        let header = [UInt8](try Data(contentsOf: dir.appending("out.pack")).prefix(16))
        #expect(header[10] == 1 && header[12..<16].elementsEqual([11, 0, 0, 0]), "\(header)")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        let keyed = try Self.tree(dir).path
        for (arguments, message) in [
            (try Self.base(dir) + ["--scrypt-cost", "9"], "--scrypt-cost must be from 10 to 18, not '9'"),
            (try Self.base(dir, format: "zip") + ["--scrypt-cost", "12"], "--scrypt-cost applies to a container"),
            (
                [
                    keyed, dir.appending("k.pack").path, "--format", "container", "--compression", "auto",
                    "--key-file", dir.appending("key").path, "--scrypt-cost", "12",
                ],
                "--scrypt-cost applies to a container with a password"
            ),
        ] {
            let refused = try Self.run(arguments)
            #expect(refused.status == 64 && refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
    }

    @Test func missingOrMalformedRequiredArgumentsAreUsageErrors() throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir).path
        let output = dir.appending("out.pack").path
        let cases: [([String], String)] = [
            ([], "expected SOURCE OUTPUT first"),
            ([source, "--format", "zip"], "expected SOURCE OUTPUT first"),
            ([source, output, "--compression", "auto", "--password-env", "P"], "--format is required"),
            ([source, output, "--format", "zip", "--password-env", "P"], "--compression is required"),
            (
                [source, output, "--format", "tar", "--compression", "auto"],
                "--format must be container or zip, not 'tar'"
            ),
            (
                [source, output, "--format", "zip", "--compression", "max"],
                "--compression must be auto, store or deflate"
            ),
            ([source, output, "--format", "zip", "--compression", "auto"], "give exactly one of --key-file"),
        ]
        for (arguments, message) in cases {
            let run = try Self.run(arguments)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
            #expect(run.stderr.hasPrefix("assetpack-pack: error: \(message)"), "\(arguments): \(run.stderr)")
        }
    }

    @Test func aMissingPasswordIsExitTwoAndAnUnreadableKeyExitOne() throws {
        let dir = TemporaryDirectory()
        let unset = try Self.run(try Self.base(dir), password: nil)
        #expect(unset.status == 2, "\(unset.stderr)")
        #expect(unset.stderr.contains("$ASSETPACK_PASSWORD is not set"), "\(unset.stderr)")

        let missing = dir.appending("missing.key").path
        let noKey = try Self.run(try Self.base(dir) + ["--sign-key", missing])
        #expect(noKey.status == 1, "\(noKey.stderr)")
        #expect(noKey.stderr.contains(missing), "\(noKey.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("out.pack").path))
    }

    @Test(arguments: ["container", "zip"])
    func packsAndSaysSoOnOneLine(format: String) throws {
        let dir = TemporaryDirectory()
        let passwordFile = dir.appending("password.txt")
        try Data("\(Self.password)\n".utf8).write(to: passwordFile)
        let arguments = [
            try Self.tree(dir).path, dir.appending("out.pack").path, "--format", format, "--compression", "auto",
            "--password-file", passwordFile.path,
        ]
        let run = try Self.run(arguments, password: nil)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        let line = run.text.split(separator: "\n")
        #expect(line.count == 1 && line[0].hasPrefix("packed 2 entries (7000 bytes) into "), "\(run.text)")
        #expect(run.text.contains(": 0 reused, 2 packed"), "\(run.text)")
        // Unsigned packs are re-packed incrementally, as `assetpack pack` does.
        let again = try Self.run(arguments, password: nil)
        #expect(again.text.contains(": 2 reused, 0 packed"), "\(again.text)")
        let reader = try AssetPacks.open(dir.appending("out.pack").path, credential: .password(Self.password))
        #expect(try reader.read("a.txt") == textBytes(2_000, seed: 1))
    }

    /// What a re-pack replaced is the library's to say (``PackOptions/describesReplacedPack``),
    /// so the plugin's tool says it as `assetpack pack` does: the entries removed, in both formats
    /// (a zip's writer does not count them: the library lists the replaced pack), and a signed
    /// pack replaced by an unsigned one.
    @Test(arguments: ["container", "zip"])
    func saysWhatTheRepackRemovedAndReplaced(format: String) throws {
        let dir = TemporaryDirectory()
        let (key, keyPath) = try Self.signingKey(in: dir)
        let arguments = try Self.base(dir, format: format)
        #expect(try Self.run(arguments + ["--sign-key", keyPath]).status == 0)
        try FileManager.default.removeItem(at: dir.appending("src/a.txt"))
        let unsigned = try Self.run(arguments)
        #expect(unsigned.status == 0, "\(unsigned.stderr)")
        #expect(unsigned.text.contains(", 1 removed"), "\(unsigned.text)")
        #expect(
            unsigned.stderr.contains(
                "assetpack-pack: warning: \(dir.appending("out.pack").path) was signed by key \(key.publicKey.fingerprint)"
            ) && unsigned.stderr.contains("this pack is not signed, so installers that trust that key will refuse it"),
            "\(unsigned.stderr)")
        let same = try Self.run(arguments)
        #expect(same.status == 0 && same.stderr.isEmpty, "\(same.stderr)")
        #expect(!same.text.contains("removed"), "\(same.text)")
    }

    /// The plugin's output is a build product: after the password changes, the next build packs it
    /// afresh under the new one (where `assetpack pack` refuses without --fresh).
    @Test(arguments: ["container", "zip"])
    func aNewPasswordRepacksTheBuildProductAfresh(format: String) throws {
        let dir = TemporaryDirectory()
        let arguments = try Self.base(dir, format: format)
        #expect(try Self.run(arguments).status == 0)
        let changed = try Self.run(arguments, password: "rotated")
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(changed.text.contains(": 0 reused, 2 packed"), "\(changed.text)")
        let reader = try AssetPacks.open(dir.appending("out.pack").path, credential: .password("rotated"))
        #expect(try reader.read("a.txt") == textBytes(2_000, seed: 1))
    }

    /// A signed pack verifies with the public key and states the release asked for; signed packs
    /// are always packed fresh (the previous output is not signed unseen).
    @Test(arguments: ["container", "zip"])
    func signsWithTheKeyAndTheRelease(format: String) throws {
        let dir = TemporaryDirectory()
        let (key, keyPath) = try Self.signingKey(in: dir)
        let arguments =
            try Self.base(dir, format: format) + [
                "--sign-key", keyPath, "--pack-name", "levels", "--pack-version", "12", "--expires", "+30d",
            ]
        let run = try Self.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.text.contains(", signed by key \(key.publicKey.fingerprint) as levels version 12, expires "),
            "\(run.text)")
        let again = try Self.run(arguments)
        #expect(again.text.contains(": 0 reused, 2 packed"), "\(again.text)")

        let output = dir.appending("out.pack").path
        let reader = try AssetPacks.open(output, credential: .password(Self.password), trustedKeys: [key.publicKey])
        #expect(reader.release?.name == "levels")
        #expect(reader.release?.version == 12)
        let expires = try #require(reader.release?.expires)
        #expect(abs(expires.timeIntervalSinceNow - 30 * 86_400) < 600)
        #expect(try reader.read("b/c.bin") == testBytes(5_000, seed: 2))
        let other = PublisherSigningKey.generate().publicKey
        #expect(throws: AssetPackError.self) {
            _ = try AssetPacks.open(output, credential: .password(Self.password), trustedKeys: [other])
        }

        let past = try Self.run(
            try Self.base(dir, format: format) + ["--sign-key", keyPath, "--expires", "2001-01-01"])
        #expect(past.status == 64, "\(past.stderr)")
        #expect(past.stderr.contains("--expires 2001-01-01 is not in the future"), "\(past.stderr)")
    }

    /// `--level fast` (the plugin's `"level": "fast"` in assetpack.json) packs larger than the
    /// default it means when absent or given as `--level default`; every pack reads back.
    @Test func levelIsHonouredAndAnUnknownOneIsAUsageError() throws {
        let dir = TemporaryDirectory()
        let files = ["levels.cfg": textBytes(300_000, seed: 5), "hero.png": testBytes(20_000, seed: 6)]
        let source = try dir.write(files, under: "src")
        func pack(_ name: String, _ extra: [String]) throws -> (CLI.Run, Int) {
            let output = dir.appending(name)
            let run = try Self.run(
                [source.path, output.path, "--format", "zip", "--compression", "auto"] + extra
                    + ["--password-env", "ASSETPACK_PASSWORD"])
            let size = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? nil
            return (run, size ?? -1)
        }
        let (absent, absentSize) = try pack("absent.zip", [])
        let (named, namedSize) = try pack("default.zip", ["--level", "default"])
        let (fast, fastSize) = try pack("fast.zip", ["--level", "fast"])
        for run in [absent, named, fast] { #expect(run.status == 0, "\(run.stderr)") }
        #expect(absentSize == namedSize)
        #expect(fastSize > namedSize, "fast \(fastSize), default \(namedSize)")
        for name in ["absent.zip", "default.zip", "fast.zip"] {
            for (path, bytes) in files {
                let cat = try CLI.run(["cat", dir.appending(name).path, path], password: Self.password)
                #expect(cat.status == 0 && cat.stdout == bytes, "\(name): \(path) \(cat.stderr)")
            }
        }

        let (unknown, _) = try pack("max.zip", ["--level", "max"])
        #expect(unknown.status == 64, "\(unknown.stderr)")
        #expect(
            unknown.stderr.hasPrefix("assetpack-pack: error: --level must be default or fast, not 'max'"),
            "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("max.zip").path))
    }
}
#endif
