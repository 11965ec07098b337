#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `--sign-key` and `--trust` through the built binary: exit 0 for a pack the trusted key signed,
/// exit 5 for one that is unsigned, signed by another key or altered, and the same checks on
/// every command that reads a pack.
@Suite struct SigningCLITests {
    let dir = TemporaryDirectory("signing-cli")
    let tree: [String: [UInt8]] = ["a.txt": Array("hello, signed world".utf8), "img/b.bin": testBytes(70_000, seed: 9)]

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    /// Key pairs `publisher` and `stranger`, a source tree, and packs of `format` signed by each and unsigned.
    func setUp(_ format: String) throws -> (signed: String, stranger: String, unsigned: String) {
        _ = try dir.write(tree, under: "src")
        for name in ["publisher", "stranger"] {
            let keygen = try run(["keygen", "--out", dir.appending(name).path])
            #expect(keygen.status == 0, "\(keygen.stderr)")
        }
        var packs: [String] = []
        for (name, key) in [("signed", "publisher"), ("stranger", "stranger"), ("unsigned", nil)] {
            let out = dir.appending("\(name).\(format)").path
            var args = ["pack", dir.appending("src").path, "-o", out, "--format", format]
            if let key { args += ["--sign-key", dir.appending(key + ".key").path] }
            let pack = try run(args)
            #expect(pack.status == 0, "\(pack.stderr)")
            if let key {
                let fingerprint = try PublisherKey.load(from: dir.appending(key + ".pub")).fingerprint
                #expect(pack.stderr.contains("signed by key \(fingerprint)"), "\(pack.stderr)")
            }
            packs.append(out)
        }
        return (packs[0], packs[1], packs[2])
    }

    @Test(.slow, arguments: ["zip", "container"])
    func everyReadingCommandChecksTrust(format: String) throws {
        let (signed, stranger, unsigned) = try setUp(format)
        let trust = ["--trust", dir.appending("publisher.pub").path]
        let commands: [(String, [String])] = [
            ("list", ["list"]), ("cat", ["cat"]), ("extract", ["extract"]), ("verify", ["verify"]),
            ("install", ["install"]),
        ]
        for (name, command) in commands {
            func args(_ pack: String) -> [String] {
                switch name {
                case "cat": command + [pack, "a.txt"]
                case "extract": command + [pack, "--into", dir.appending("x-\(UUID().uuidString)").path]
                case "install": command + [pack, "--into", dir.appending("i-\(UUID().uuidString)").path]
                default: command + [pack]
                }
            }
            let good = try run(args(signed) + trust)
            #expect(good.status == 0, "\(name) signed: \(good.stderr)")
            if name == "cat" { #expect(good.stdout == tree["a.txt"]) }
            for (label, pack) in [("stranger", stranger), ("unsigned", unsigned)] {
                let bad = try run(args(pack) + trust)
                #expect(bad.status == 5, "\(name) \(label): \(bad.status) \(bad.stderr)")
                #expect(bad.stdout.isEmpty, "\(name) \(label) printed data")
            }
            // Without --trust a signed pack reads as an unsigned one.
            #expect(try run(args(signed)).status == 0, "\(name) without --trust")
        }
        // Rotation: trusting the stranger's key as well accepts both.
        let both = trust + ["--trust", dir.appending("stranger.pub").path]
        #expect(try run(["verify", stranger] + both).status == 0)
        // An altered signed pack: one byte of the big entry's stored bytes.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: signed)))
        bytes[format == "container" ? 8192 + 2000 : 2000] ^= 0x01  // a container's data starts at 8192
        let altered = dir.appending("altered.\(format)").path
        try Data(bytes).write(to: URL(fileURLWithPath: altered))
        let verify = try run(["verify", altered] + trust)
        #expect(verify.status == 5 || verify.status == 4, "\(verify.stderr)")
        #expect(verify.stderr.contains("img/b.bin"), "names the entry: \(verify.stderr)")
        let installDir = dir.appending("altered-install").path
        let install = try run(["install", altered, "--into", installDir] + trust)
        #expect(install.status == 5, "\(install.stderr)")
        #expect(!FileManager.default.fileExists(atPath: installDir + "/altered.\(format)"), "nothing installed")
    }

    @Test(.slow) func trustErrorsAreClear() throws {
        let (signed, _, _) = try setUp("container")
        // A private key where a public one belongs, and a missing file: usage errors, exit 1.
        let wrongFile = try run(["list", signed, "--trust", dir.appending("publisher.key").path])
        #expect(wrongFile.status == 1 && wrongFile.stderr.contains("private signing key"), "\(wrongFile.stderr)")
        let missing = try run(["list", signed, "--trust", dir.appending("nope.pub").path])
        #expect(missing.status == 1, "\(missing.stderr)")
        let signWithPublic = try run(
            [
                "pack", dir.appending("src").path, "-o", dir.appending("x.zip").path, "--sign-key",
                dir.appending("publisher.pub").path,
            ])
        #expect(signWithPublic.status == 1 && signWithPublic.stderr.contains("public key"), "\(signWithPublic.stderr)")
        let untrusted = try run(["verify", signed, "--trust", dir.appending("stranger.pub").path])
        let stranger = try PublisherKey.load(from: dir.appending("publisher.pub")).fingerprint
        #expect(untrusted.status == 5 && untrusted.stderr.contains(stranger), "\(untrusted.stderr)")
    }

    @Test(.slow) func perfComparesSignedAndUnsigned() throws {
        let (signed, _, unsigned) = try setUp("container")
        let json = dir.appending("perf.json").path
        let perf = try run(
            [
                "perf", "--pack", signed, "--pack", unsigned, "--trust", dir.appending("publisher.pub").path,
                "--iterations", "1", "--json", json, "--quiet",
            ])
        #expect(perf.status == 0, "\(perf.stderr)")
        let report = try String(contentsOfFile: json, encoding: .utf8)
        #expect(report.contains("\"container-signed\"") && report.contains("\"container\""), "\(report.prefix(400))")
    }
}
#endif
