import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The publisher key vocabulary: text forms, key files, and what a malformed one says.
@Suite struct PublisherKeyTests {
    /// RFC 8032 TEST 1: the seed and its public key, in our text forms.
    static let seedText = "assetpack-ed25519-key:nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="
    static let publicText = "assetpack-ed25519-pub:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="

    func mode(_ path: String) -> mode_t {
        var st = stat()
        stat(path, &st)
        return st.st_mode & 0o7777
    }

    func invalidArgument(_ body: () throws -> Void) -> String? {
        do {
            try body()
            Issue.record("expected .invalidArgument")
        } catch let error as AssetPackError {
            #expect(error.code == .invalidArgument, "\(error)")
            return error.message
        } catch {
            Issue.record("unexpected \(error)")
        }
        return nil
    }

    @Test func textFormRoundTripsAndMatchesRFC8032() throws {
        let key = try PublisherKey(text: Self.publicText)
        #expect(key.text == Self.publicText)
        #expect(key.description == Self.publicText)
        #expect(key.fingerprint == "d75a980182b10ab7")
        #expect(try PublisherKey(text: "  \(Self.publicText)\r\n") == key, "whitespace around the line")
        let dir = TemporaryDirectory("keys")
        try Data((Self.seedText + "\n").utf8).write(to: dir.appending("k.key"))
        let signing = try PublisherSigningKey.load(from: dir.appending("k.key"))
        #expect(signing.publicKey == key)
    }

    @Test func malformedTextIsRefusedWithoutEchoingIt() throws {
        let bad = [
            "", "   ", "assetpack-ed25519-pub:", "assetpack-ed25519-pub:AAAA",
            "ASSETPACK-ED25519-PUB:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
            "assetpack-ed25519-pub: 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
            "assetpack-ed25519-pub:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo",  // no padding
            "assetpack-ed25519-pub:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURp=",  // non-zero trailing bits
            "assetpack-ed25519-pub:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=",  // base64url
            "assetpack-ed25519-pub:11qYAYKxCrfVS/7TyWQH\nOg7hcvPapiMlrwIaaPcHURo=",
            "assetpack-ed25519-pub:" + Data(repeating: 1, count: 31).base64EncodedString(),
            "assetpack-ed25519-pub:" + Data(repeating: 1, count: 33).base64EncodedString(),
            "assetpack-ed25519-pub:" + Data(repeating: 1, count: 64).base64EncodedString(),
            Self.publicText + "\n" + Self.publicText,
        ]
        for text in bad {
            let message = invalidArgument { _ = try PublisherKey(text: text) }
            #expect(
                message?.contains("not an AssetPack public key") == true, "\(text.debugDescription): \(message ?? "")")
        }
        let secret = invalidArgument { _ = try PublisherKey(text: Self.seedText) }
        #expect(secret?.contains("private signing key") == true)
        #expect(secret?.contains("nWGxne") == false, "the message repeats the secret")
    }

    @Test func keyFilesRoundTripWithTheirModes() throws {
        let dir = TemporaryDirectory("keys")
        let signing = PublisherSigningKey.generate()
        let keyPath = dir.appending("k.key").path
        let pubPath = dir.appending("k.pub").path
        try signing.write(to: keyPath)
        try signing.publicKey.write(to: pubPath)
        #expect(mode(keyPath) == 0o600)
        let keyText = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(keyText.hasPrefix("assetpack-ed25519-key:") && keyText.hasSuffix("=\n") && keyText.count == 67)
        #expect(try String(contentsOfFile: pubPath, encoding: .utf8) == signing.publicKey.text + "\n")
        let loaded = try PublisherSigningKey.load(from: URL(fileURLWithPath: keyPath))
        #expect(loaded.publicKey == signing.publicKey)
        #expect(try PublisherKey.load(from: URL(fileURLWithPath: pubPath)) == signing.publicKey)
        loaded.withSeed { seed in signing.withSeed { #expect(Array(seed) == Array($0)) } }
        #expect(PublisherSigningKey.generate().publicKey != signing.publicKey)
    }

    @Test func signingKeyNeverPrintsItself() throws {
        let dir = TemporaryDirectory("keys")
        try Data((Self.seedText + "\n").utf8).write(to: dir.appending("k.key"))
        let signing = try PublisherSigningKey.load(from: dir.appending("k.key"))
        var dumped = ""
        dump(signing, to: &dumped)
        for shown in [signing.description, String(describing: signing), String(reflecting: signing), dumped] {
            #expect(!shown.contains("nWGxne") && !shown.lowercased().contains("9d61b1"), "\(shown)")
        }
    }

    @Test func malformedKeyFilesNameTheFile() throws {
        let dir = TemporaryDirectory("keys")
        let cases: [(String, [UInt8], String)] = [
            ("empty.key", [], "is not an AssetPack signing key file"),
            ("garbage.key", Array("hello\n".utf8), "is not an AssetPack signing key file"),
            ("short.key", Array("assetpack-ed25519-key:AAAA\n".utf8), "is not an AssetPack signing key file"),
            ("binary.key", testBytes(32), "is not an AssetPack signing key file"),
            ("swapped.key", Array((Self.publicText + "\n").utf8), "holds a public key"),
            ("huge.key", Array((Self.seedText + "\n").utf8) + [UInt8](repeating: 0x20, count: 5000), "too large"),
        ]
        for (name, bytes, expected) in cases {
            try Data(bytes).write(to: dir.appending(name))
            let message = invalidArgument { _ = try PublisherSigningKey.load(from: dir.appending(name)) }
            #expect(message?.contains(dir.appending(name).path) == true, "\(message ?? "")")
            #expect(message?.contains(expected) == true, "\(name): \(message ?? "")")
        }
        try Data((Self.seedText + "\n").utf8).write(to: dir.appending("swapped.pub"))
        let swapped = invalidArgument { _ = try PublisherKey.load(from: dir.appending("swapped.pub")) }
        #expect(swapped?.contains("holds a private signing key") == true)
        #expect(swapped?.contains("nWGxne") == false)
        try Data("assetpack-ed25519-pub:AAAA\n".utf8).write(to: dir.appending("short.pub"))
        let short = invalidArgument { _ = try PublisherKey.load(from: dir.appending("short.pub")) }
        #expect(short?.contains("is not an AssetPack public key file") == true)

        // A missing file or a directory is an I/O error naming the path.
        for path in [dir.appending("missing.key"), dir.url] {
            do {
                _ = try PublisherSigningKey.load(from: path)
                Issue.record("\(path.path) loaded")
            } catch let error as AssetPackError {
                #expect(error.code == .io && error.message.contains(path.path), "\(error)")
            }
        }
    }

    @Test func writingIntoAMissingFolderOrOverADirectorySaysSo() throws {
        let dir = TemporaryDirectory("keys")
        let key = PublisherSigningKey.generate()
        let missing = invalidArgument { try key.write(to: dir.appending("nope/k.key").path) }
        #expect(missing?.contains("does not exist") == true)
        let directory = invalidArgument { try key.publicKey.write(to: dir.path) }
        #expect(directory?.contains("is a directory") == true)
    }
}
