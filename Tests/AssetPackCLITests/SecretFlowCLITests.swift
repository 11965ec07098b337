#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The secret from build to app (issue 39): `keygen --pack-key` makes the key, the CLI reads the
/// same variables the plugin reads, and `assetpack-pack --swift-credential` hands the app the
/// credential it packed with.
@Suite struct SecretFlowCLITests {
    static func tree(_ dir: TemporaryDirectory) throws -> URL {
        try dir.write(["a.txt": textBytes(3_000, seed: 7), "levels/1.json": textBytes(500, seed: 8)], under: "src")
    }

    @Test func keygenPackKeyWritesAPrivateRandomKeyAndRefusesToReplaceIt() throws {
        let dir = TemporaryDirectory()
        let out = dir.appending("keys/game").path
        let made = try CLI.run(["keygen", "--pack-key", "--out", out])
        #expect(made.status == 0, "\(made.stderr)")
        let path = out + ".packkey"
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat(dir.appending("keys").path, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.count == 65 && text.hasSuffix("\n"))
        #expect(text.dropLast().allSatisfy { $0.isHexDigit }, "\(text)")
        #expect(made.stderr.contains("ASSETPACK_KEY_FILE=\(path)"), "\(made.stderr)")
        // The plugin's steadier way first: the file, which no change of environment re-plans.
        #expect(made.stderr.contains("\"keyFile\": \"\(path)\""), "\(made.stderr)")

        let again = try CLI.run(["keygen", "--pack-key", "--out", out])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists; give --force"), "\(again.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text, "the key was replaced without --force")
        let forced = try CLI.run(["keygen", "--pack-key", "--out", out, "--force"])
        #expect(forced.status == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) != text, "a new key is random")
    }

    /// `$ASSETPACK_KEY_FILE` and `$ASSETPACK_PASSWORD_FILE` work as the plugin reads them: no
    /// option needed, the key file preferred, an explicit option winning over the environment.
    @Test func theCommandLineReadsTheVariablesThePluginReads() throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        let key = dir.appending("k").path
        #expect(try CLI.run(["keygen", "--pack-key", "--out", key]).status == 0)
        let keyFile = ["ASSETPACK_KEY_FILE": key + ".packkey"]
        let container = dir.appending("c.pack").path
        let packed = try CLI.run(["pack", source.path, "-o", container, "--format", "container"], environment: keyFile)
        #expect(packed.status == 0, "\(packed.stderr)")
        let read = try CLI.run(["cat", container, "levels/1.json"], environment: keyFile)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == textBytes(500, seed: 8))
        // Without the variable: no credential, exit 2, naming the variables to set.
        let none = try CLI.run(["cat", container, "levels/1.json"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("$ASSETPACK_PASSWORD_FILE") && none.stderr.contains("$ASSETPACK_KEY_FILE"))

        let passwordFile = dir.appending("pw.txt")
        try Data("from a file\n".utf8).write(to: passwordFile)
        let zip = dir.appending("z.zip").path
        let zipped = try CLI.run(
            ["pack", source.path, "-o", zip, "--format", "zip"],
            environment: ["ASSETPACK_PASSWORD_FILE": passwordFile.path])
        #expect(zipped.status == 0, "\(zipped.stderr)")
        #expect(try CLI.run(["cat", zip, "a.txt"], password: "from a file").status == 0)
        // An explicit --password-env wins over the file variables.
        let wrong = try CLI.run(
            ["cat", zip, "a.txt", "--password-env", "OTHER"],
            environment: ["ASSETPACK_PASSWORD_FILE": passwordFile.path, "OTHER": "not it"])
        #expect(wrong.status == 2, "\(wrong.stderr)")
    }

    /// The tool writes `PackedAssets` with the secret as two arrays whose XOR is it: the key's
    /// bytes, or the password's; never the secret itself as one literal.
    @Test(arguments: [true, false])
    func theToolHandsTheAppTheCredentialItPackedWith(key: Bool) throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        var arguments = [
            source.path, dir.appending("assets.pack").path, "--format", "container", "--compression", "auto",
            "--swift-credential", dir.appending("PackedAssets.swift").path,
        ]
        var secret: [UInt8]
        if key {
            #expect(try CLI.run(["keygen", "--pack-key", "--out", dir.appending("k").path]).status == 0)
            let hex = try String(contentsOfFile: dir.appending("k.packkey").path, encoding: .utf8).dropLast()
            secret = stride(from: 0, to: 64, by: 2).map {
                UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)...].prefix(2), radix: 16)!
            }
            arguments += ["--key-file", dir.appending("k.packkey").path]
        } else {
            secret = Array("a password for the app".utf8)
            arguments += ["--password-env", "ASSETPACK_PASSWORD", "--scrypt-cost", "10"]
        }
        let run = try CLI.run(
            arguments, password: key ? nil : "a password for the app",
            executable: PackToolTests.binary)
        #expect(run.status == 0, "\(run.stderr)")
        let swift = try String(contentsOfFile: dir.appending("PackedAssets.swift").path, encoding: .utf8)
        #expect(swift.contains("enum PackedAssets"))
        #expect(swift.contains("forResource: \"assets.pack\""))
        #expect(swift.contains(key ? "return .key(bytes)" : "return .password(String(decoding: bytes, as: UTF8.self))"))
        let arrays = swift.components(separatedBy: ": [UInt8] = [").dropFirst().map { block in
            block.prefix { $0 != "]" }.split(separator: ",").compactMap {
                UInt8($0.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst(2), radix: 16)
            }
        }
        #expect(arrays.count == 2 && arrays[0].count == secret.count && arrays[1].count == secret.count)
        #expect(zip(arrays[0], arrays[1]).map { $0 ^ $1 } == secret)
        #expect(arrays[0] != secret && arrays[1] != secret)
        let hex = secret.map { String(format: "0x%02x", $0) }.joined(separator: ", ")
        #expect(!swift.contains(hex), "the secret appears as one literal")
        // The credential the source hands over opens the pack.
        let credential: PackCredential = key ? .key(secret) : .password(String(decoding: secret, as: UTF8.self))
        let reader = try AssetPacks.open(dir.appending("assets.pack"), credential: credential)
        #expect(try reader.read("levels/1.json") == textBytes(500, seed: 8))
    }
}
#endif
