import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Versioned, expiring signatures through the library (docs/SECURITY.md, "Rollback and freeze"):
/// the release a trusted reader exposes, expired and tampered packs refused at open, and the
/// installer's rollback record, with an injected clock.
@Suite struct ReleaseTests {
    let dir = TemporaryDirectory("release")
    let publisher = PublisherSigningKey.generate()
    let stranger = PublisherSigningKey.generate()

    /// 2099-01-01T00:00:00Z.
    static let expiry = Date(timeIntervalSince1970: 4_070_908_800)

    /// A pack signed by `key` (default: `publisher`) with release `version`, `expires` and `name`.
    func pack(
        _ format: PackFormat, version: UInt64, expires: Date? = nil, name: String? = nil,
        key: PublisherSigningKey? = nil, legacy: Bool = false, file: String? = nil, content: String = "v"
    ) throws -> URL {
        let label = UUID().uuidString
        let source = try dir.write(
            ["a.txt": Array("release \(content)".utf8), "b.bin": testBytes(9000)], under: "src-\(label)")
        var options = PackOptions.forTests
        options.format = format
        options.credential = .password("pw")
        options.signingKey = key ?? publisher
        options.releaseVersion = version
        options.releaseExpires = expires
        options.releaseName = name
        options.legacySignature = legacy
        let folder = dir.appending("out-\(label)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let out = folder.appendingPathComponent(file ?? "assets.pack")
        try AssetPacks.pack(source: source, to: out, options: options)
        return out
    }

    func installer(_ clock: Date = Date(), allowRollback: Bool = false, keys: [PublisherKey]? = nil)
        -> PrivateInstaller
    {
        var installer = PrivateInstaller(
            directory: dir.appending("home"), trustedKeys: keys ?? [publisher.publicKey, stranger.publicKey],
            allowRollback: allowRollback)
        installer.clock = { clock }
        return installer
    }

    func refusal(_ body: () throws -> Void) -> AssetPackError? {
        do {
            try body()
            return nil
        } catch let error as AssetPackError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aTrustedReaderExposesTheSignedRelease(format: PackFormat) throws {
        let url = try pack(format, version: 9, expires: Self.expiry, name: "levels")
        let size = try FileSystem.stat(url.path).size
        let reader = try AssetPacks.open(url.path, credential: .password("pw"), trustedKeys: [publisher.publicKey])
        #expect(reader.release == PackRelease(name: "levels", version: 9, expires: Self.expiry, size: size))
        #expect(try AssetPacks.open(url.path, credential: .password("pw")).release == nil, "nothing checked")
        // The default name is the output's file name without its extension.
        let unnamed = try pack(format, version: 1, file: "fonts-2.pack")
        let opened = try AssetPacks.open(unnamed.path, credential: .password("pw"), trustedKeys: [publisher.publicKey])
        #expect(opened.release?.name == "fonts-2" && opened.release?.expires == nil)
    }

    @Test(arguments: [PackFormat.zip, .container])
    func anExpiredPackIsRefusedByATrustedReader(format: PackFormat) throws {
        let expired = try pack(format, version: 1, expires: Date(timeIntervalSince1970: 1_000_000_000))
        let error = refusal {
            _ = try AssetPacks.open(expired.path, credential: .password("pw"), trustedKeys: [publisher.publicKey])
        }
        #expect(error?.code == .untrusted, "\(String(describing: error))")
        #expect(error?.message.contains("expired at 2001-09-09T01:46:40Z") == true, "\(String(describing: error))")
        // Without trusted keys a signature, expired or not, is not looked at.
        #expect(try AssetPacks.open(expired.path, credential: .password("pw")).read("a.txt") == Array("release v".utf8))
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aTamperedReleaseFieldFailsTheSignature(format: PackFormat) throws {
        let url = try pack(format, version: 3, expires: Self.expiry, name: "assets")
        let original = [UInt8](try Data(contentsOf: url))
        let magic: [UInt8] = [0x41, 0x50, 0x53, 0x49, 0x47, 0x00, 0x0D, 0x0A]
        let at = try #require(
            (0...(original.count - magic.count)).last { original[$0..<$0 + magic.count].elementsEqual(magic) })
        #expect(original[at + 8] == 2, "block version 2")
        // Version, expiry, size, name length and the name's 6 bytes.
        for field in 74..<(99 + 6) {
            var bytes = original
            bytes[at + field] ^= 0x04
            let altered = dir.appending("altered-\(field).pack")
            try Data(bytes).write(to: altered)
            let open = refusal {
                _ = try AssetPacks.open(altered.path, credential: .password("pw"), trustedKeys: [publisher.publicKey])
            }
            let install = refusal {
                try installer().install(altered, as: "altered.pack")
            }
            for (label, error) in [("open", open), ("install", install)] {
                #expect(
                    error?.code == .untrusted || (field == 98 && error?.code == .integrityFailure),
                    "byte \(field), \(label): \(String(describing: error))")
            }
        }
    }

    @Test(arguments: [PackFormat.zip, .container])
    func theInstallerRefusesRollbackUnlessAllowed(format: PackFormat) throws {
        let v5 = try pack(format, version: 5)
        let v3 = try pack(format, version: 3)
        try installer().install(v5, as: "assets.pack")
        let error = refusal { try installer().install(v3, as: "assets.pack") }
        #expect(error?.code == .untrusted)
        #expect(error?.message == "rollback: assets version 3 is older than the installed version 5")
        // Under another installed name, and after the pack was removed: the same record decides.
        try FileManager.default.removeItem(at: dir.appending("home/assets.pack"))
        #expect(refusal { try installer().install(v3, as: "other.pack") }?.code == .untrusted)
        // The same name signed by another publisher is another line of the record.
        try installer().install(try pack(format, version: 1, key: stranger), as: "stranger.pack")

        let rolledBack = try installer(allowRollback: true).install(v3, as: "assets.pack")
        #expect(rolledBack.copied)
        // An allowed rollback lowers the record: the next release above it installs.
        try installer().install(try pack(format, version: 4), as: "assets.pack")
        #expect(refusal { try installer().install(v3, as: "assets.pack") }?.message.contains("version 4") == true)
    }

    @Test func oneVersionWithOtherBytesIsRefused() throws {
        let first = try pack(.container, version: 2, content: "one")
        let second = try pack(.container, version: 2, content: "two")
        try installer().install(first, as: "assets.pack")
        #expect(try !installer().install(first, as: "assets.pack").copied, "the same pack again")
        let error = refusal { try installer().install(second, as: "assets.pack") }
        #expect(error?.code == .untrusted)
        #expect(
            error?.message.contains("a new release must have a higher version") == true, "\(String(describing: error))")
        try installer(allowRollback: true).install(second, as: "assets.pack")
        // Unversioned packs (version 0) are never recorded: each update installs, until a versioned one.
        try installer().install(try pack(.container, version: 0, name: "free", content: "a"), as: "free.pack")
        try installer().install(try pack(.container, version: 0, name: "free", content: "b"), as: "free.pack")
        try installer().install(try pack(.container, version: 1, name: "free"), as: "free.pack")
        let unversioned = refusal {
            try installer().install(try pack(.container, version: 0, name: "free", content: "c"), as: "free.pack")
        }
        #expect(unversioned?.message == "rollback: free version 0 is older than the installed version 1")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func expiryIsCheckedAgainstTheInstallersClock(format: PackFormat) throws {
        let url = try pack(format, version: 1, expires: Self.expiry)
        let late = refusal { try installer(Self.expiry, allowRollback: true).install(url, as: "assets.pack") }
        #expect(late?.code == .untrusted)
        #expect(
            late?.message == "the publisher's signature of assets version 1 expired at 2099-01-01T00:00:00Z",
            "\(String(describing: late))")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/assets.pack").path), "nothing installed")
        #expect(try installer(Self.expiry.addingTimeInterval(-1)).install(url, as: "assets.pack").copied)
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aVersionOneSignatureIsVersionZeroWithoutAName(format: PackFormat) throws {
        let legacy = try pack(format, version: 0, legacy: true)
        let reader = try AssetPacks.open(legacy.path, credential: .password("pw"), trustedKeys: [publisher.publicKey])
        #expect(reader.release == .legacy)
        // Accepted while no versioned release of its publisher was installed…
        try installer().install(legacy, as: "assets.pack")
        try installer().install(try pack(format, version: 0, legacy: true, content: "2"), as: "assets.pack")
        // …by any name: another publisher's versioned release does not count.
        try installer().install(try pack(format, version: 8, name: "else", key: stranger), as: "else.pack")
        try installer().install(try pack(format, version: 0, legacy: true, content: "3"), as: "assets.pack")
        try installer().install(try pack(format, version: 2, name: "fonts"), as: "fonts.pack")
        let error = refusal {
            try installer().install(try pack(format, version: 0, legacy: true, content: "4"), as: "assets.pack")
        }
        #expect(error?.code == .untrusted)
        #expect(
            error?.message.hasPrefix(
                "rollback: a version-1 signature (no name, version 0) is older than the installed fonts version 2")
                == true, "\(String(describing: error))")
    }

    @Test func withoutTrustedKeysNoReleaseIsChecked() throws {
        let v5 = try pack(.zip, version: 5)
        let expired = try pack(.zip, version: 3, expires: Date(timeIntervalSince1970: 1_000_000_000))
        let open = installer(keys: [])
        try open.install(v5, as: "assets.pack")
        #expect(try open.install(expired, as: "assets.pack").copied)
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/.assetpack.releases").path))
    }

    @Test func aDamagedRecordRefusesRatherThanForgets() throws {
        try installer().install(try pack(.zip, version: 5), as: "assets.pack")
        try Data("{not json".utf8).write(to: dir.appending("home/.assetpack.releases"))
        let error = refusal { try installer().install(try pack(.zip, version: 6), as: "assets.pack") }
        #expect(error?.code == .integrityFailure && error?.message.contains(".assetpack.releases") == true)
    }
}
