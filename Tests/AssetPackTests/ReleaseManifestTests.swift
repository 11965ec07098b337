import AssetPack
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Testing

/// The release manifest's canonical form, signature and strict parsing (docs/FORMAT.md,
/// "Release manifest").
@Suite struct ReleaseManifestTests {
    /// RFC 8032 TEST 1's seed: the key of docs/FORMAT.md's vector.
    static func key() throws -> PublisherSigningKey {
        let dir = TemporaryDirectory("manifest-key")
        try Data("assetpack-ed25519-key:nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=\n".utf8)
            .write(to: dir.appending("k.key"))
        return try PublisherSigningKey.load(from: dir.appending("k.key"))
    }

    static func vector() throws -> ReleaseManifest {
        try ReleaseManifest(
            name: "game", version: 7, expires: Date(timeIntervalSince1970: 1_798_761_600),
            packs: [
                .init(
                    name: "base", version: 3, size: 1000, sha256: String(repeating: "ab", count: 32), file: "base.pack"),
                .init(
                    name: "dlc \"forest\"", version: 1, size: 42, sha256: String(repeating: "0f", count: 32),
                    file: "dlc/forest.pack"),
            ])
    }

    /// docs/FORMAT.md's test vector, byte for byte.
    static let vectorText = """
        {
          "assetpack-release": 1,
          "name": "game",
          "version": 7,
          "expires": "2027-01-01T00:00:00Z",
          "publisher": "assetpack-ed25519-pub:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
          "packs": [
            {"name": "base", "version": 3, "size": 1000, "sha256": "abababababababababababababababababababababababababababababababab", "file": "base.pack"},
            {"name": "dlc \\"forest\\"", "version": 1, "size": 42, "sha256": "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f", "file": "dlc/forest.pack"}
          ],
          "signature": "koGqBbWoGGJFgu/lin4tSfg7pYVFqAYt1T3lo3Zqc7n8vvhvK6j/5Wjh4GT4Mn6M/sPtXEzefihCeepIQuTuDw=="
        }

        """

    func refusal(_ data: Data, trusted: [PublisherKey] = []) -> AssetPackError? {
        do {
            _ = try ReleaseManifest.parse(data, trustedKeys: trusted)
            return nil
        } catch { return error as? AssetPackError }
    }

    @Test func theVectorIsByteForByteAndRoundTrips() throws {
        let key = try Self.key()
        let document = try Self.vector().document(signedWith: key)
        let text = String(decoding: document, as: UTF8.self)
        #expect(text == Self.vectorText, "Ed25519 is deterministic: one key and one document, one signature")
        let parsed = try ReleaseManifest.parse(document, trustedKeys: [key.publicKey])
        #expect(parsed.publisher == key.publicKey)
        #expect(parsed.packs == (try Self.vector()).packs && parsed.name == "game" && parsed.version == 7)
        #expect(parsed.expires == Date(timeIntervalSince1970: 1_798_761_600))
        #expect(parsed.packs[1].storedName == "forest-0f0f0f0f0f0f0f0f.pack")
    }

    @Test func anyChangeToTheDocumentIsRefused() throws {
        let key = try Self.key()
        let document = try Self.vector().document(signedWith: key)
        let text = String(decoding: document, as: UTF8.self)
        let variants: [(String, AssetPackError.Code)] = [
            (text.replacingOccurrences(of: "\"version\": 7,", with: "\"version\": 8,"), .untrusted),
            (
                text.replacingOccurrences(of: "\"version\": 7,", with: "\"version\": 7, \"extra\": 1,"),
                .integrityFailure
            ),
            (
                text.replacingOccurrences(of: "\"version\": 7,", with: "\"version\": 7,\n  \"version\": 7,"),
                .integrityFailure
            ),
            (text.replacingOccurrences(of: "\"version\": 7,", with: "\"version\":  7,"), .integrityFailure),
            (text.replacingOccurrences(of: "\"name\": \"game\"", with: "\"name\": \"g\\u0061me\""), .integrityFailure),
            (
                text.replacingOccurrences(
                    of: "  \"name\": \"game\",\n  \"version\": 7,\n", with: "  \"version\": 7,\n  \"name\": \"game\",\n"
                ), .integrityFailure
            ),
            (
                text.replacingOccurrences(of: "\"assetpack-release\": 1", with: "\"assetpack-release\": 2"),
                .unsupportedFormat
            ),
            (String(text.dropLast()), .integrityFailure),
            ("[]", .integrityFailure),
        ]
        for (variant, code) in variants {
            let error = refusal(Data(variant.utf8))
            #expect(error?.code == code, "\(String(describing: error)) for \(variant)")
        }
        let other = try PublisherKey(
            text: "assetpack-ed25519-pub:" + Data(repeating: 9, count: 32).base64EncodedString())
        #expect(refusal(document, trusted: [other])?.code == .untrusted)
        #expect(refusal(document, trusted: [key.publicKey]) == nil)
    }

    @Test func aPackNamedTwiceIsRefusedNamingIt() throws {
        let key = try Self.key()
        var manifest = try Self.vector()
        #expect(throws: AssetPackError.self) {
            try ReleaseManifest(name: "game", version: 1, packs: manifest.packs + [manifest.packs[0]])
        }
        manifest.packs.append(manifest.packs[0])  // signed as the publisher wrote it
        let error = refusal(manifest.document(signedWith: key), trusted: [key.publicKey])
        #expect(error?.code == .integrityFailure)
        #expect(error?.message.contains("names pack base twice") == true, "\(String(describing: error))")
    }

    @Test func fieldsAreChecked() throws {
        let pack = ReleaseManifest.Pack(
            name: "p", version: 1, size: 1, sha256: String(repeating: "a", count: 64), file: "p.pack")
        func with(_ change: (inout ReleaseManifest.Pack) -> Void) -> ReleaseManifest.Pack {
            var copy = pack
            change(&copy)
            return copy
        }
        let bad: [ReleaseManifest.Pack] = [
            with { $0.sha256 = String(repeating: "A", count: 64) }, with { $0.file = "../p.pack" },
            with { $0.file = "/etc/p.pack" }, with { $0.file = "a//p.pack" }, with { $0.name = "" },
        ]
        for pack in bad {
            #expect(throws: AssetPackError.self) { try ReleaseManifest(name: "r", version: 1, packs: [pack]) }
        }
        #expect(throws: AssetPackError.self) { try ReleaseManifest(name: "r", version: 1, packs: []) }
        var url = pack
        url.file = "https://cdn.example/p.pack"
        #expect(try ReleaseManifest(name: "r", version: 1, packs: [url]).packs == [url])
    }

    @Test func theSignatureIsNotAPackSignature() throws {
        let release = Array("AssetPack release v1\0".utf8)
        for pack in ["AssetPack signature v1\0", "AssetPack signature v2\0"].map({ Array($0.utf8) }) {
            #expect(!release.starts(with: pack) && !pack.starts(with: release))
        }
    }
}

/// `PrivateInstaller.installRelease(at:)` and `installedRelease()`, the AssetPack product alone.
@Suite struct ReleaseInstallTests {
    let dir = TemporaryDirectory("release-library")

    func pack(_ name: String, seed: UInt64, key: PublisherSigningKey) throws -> URL {
        try dir.pack(
            ["\(name).bin": testBytes(10_000, seed: seed)], .zip, as: "pub/\(name).pack", password: nil, signedBy: key
        ) {
            $0.releaseVersion = 1
        }
    }

    @Test func aReleaseInstallsAndExpiresByTheInstallersClock() throws {
        let key = try ReleaseManifestTests.key()
        let packs = try ["base", "patch"].enumerated().map { i, name in
            try ReleaseManifest.Pack.describing(
                pack(name, seed: UInt64(i), key: key).path, file: "\(name).pack", signedBy: key.publicKey)
        }
        let expires = Date(timeIntervalSince1970: 2_000_000_000)
        let manifest = try ReleaseManifest(name: "game", version: 4, expires: expires, packs: packs)
        let url = dir.appending("pub/game.json")
        try manifest.document(signedWith: key).write(to: url)

        var installer = PrivateInstaller(directory: dir.appending("home"), trustedKeys: [key.publicKey])
        installer.clock = { expires.addingTimeInterval(-1) }
        #expect(try installer.installedRelease() == nil)
        let result = try installer.installRelease(at: url)
        #expect(result.switched && result.copied == ["base", "patch"])
        let installed = try #require(try installer.installedRelease())
        #expect(installed.manifest.version == 4 && installed.packs.map(\.lastPathComponent) == packs.map(\.storedName))
        #expect(
            try AssetPacks.open(installed.packs[1].path, credential: nil, trustedKeys: [key.publicKey]).entries.count
                == 1)

        let again = try installer.installRelease(at: url)
        #expect(!again.switched && again.copied.isEmpty, "installed already: nothing copied")

        installer.clock = { expires }
        #expect(throws: AssetPackError.self) { try installer.installRelease(at: url) }
        installer.allowRollback = true
        #expect(throws: AssetPackError.self, "--allow-rollback never lifts the expiry") {
            try installer.installRelease(at: url)
        }
    }

    @Test func aPackAtAURLNeedsTheRemoteProduct() throws {
        let key = try ReleaseManifestTests.key()
        let pack = ReleaseManifest.Pack(
            name: "p", version: 1, size: 1, sha256: String(repeating: "a", count: 64),
            file: "https://127.0.0.1:1/p.pack")
        let url = dir.appending("r.json")
        try ReleaseManifest(name: "r", version: 1, packs: [pack]).document(signedWith: key).write(to: url)
        let installer = PrivateInstaller(directory: dir.appending("home2"))
        #expect {
            try installer.installRelease(at: url)
        } throws: { error in
            (error as? AssetPackError)?.code == .invalidArgument
                && (error as? AssetPackError)?.message.contains("AssetPackRemote") == true
        }
        #expect(try installer.installedRelease() == nil)
    }
}
