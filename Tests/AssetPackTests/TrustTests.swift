import AssetPack
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Testing

/// Trusted publisher keys through the public API: `AssetPacks.open`, `AssetLibrary` and
/// `PrivateInstaller`.
@Suite struct TrustTests {
    let dir = TemporaryDirectory("trust")
    let publisher = PublisherSigningKey.generate()
    let successor = PublisherSigningKey.generate()

    func pack(_ format: PackFormat, key: PublisherSigningKey?, name: String) throws -> URL {
        try dir.pack(["a.txt": Array("signed bytes".utf8), "b.bin": testBytes(9000)], format, as: name, signedBy: key)
    }

    @Test(arguments: [PackFormat.zip, .container])
    func installerRefusesUntrustedPacksAndRechecksAfterRotation(format: PackFormat) throws {
        let signed = try pack(format, key: publisher, name: "signed.pack")
        let unsigned = try pack(format, key: nil, name: "unsigned.pack")
        let home = dir.appending("home")
        let installer = PrivateInstaller(directory: home, trustedKeys: [publisher.publicKey])
        do {
            try installer.install(unsigned, as: "assets.pack")
            Issue.record("an unsigned pack was installed")
        } catch let error as AssetPackError {
            #expect(error.code == .untrusted, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("assets.pack").path))
        let first = try installer.install(signed, as: "assets.pack")
        #expect(first.copied && first.publisher == publisher.publicKey)
        #expect(try !installer.install(signed, as: "assets.pack").copied, "idempotent")
        // Installed without trust, then opened by an app that trusts a key: checked again, not assumed.
        let unchecked = PrivateInstaller(directory: dir.appending("home2"))
        #expect(try unchecked.install(unsigned, as: "assets.pack").publisher == nil)
        let strict = PrivateInstaller(directory: dir.appending("home2"), trustedKeys: [publisher.publicKey])
        #expect(throws: AssetPackError.self) { try strict.install(unsigned, as: "assets.pack") }
        // Rotation: an app trusting only the successor key re-checks the install made under the old one.
        let rotated = PrivateInstaller(directory: home, trustedKeys: [successor.publicKey])
        do {
            try rotated.install(signed, as: "assets.pack")
            Issue.record("a pack signed by a key no longer trusted was accepted")
        } catch let error as AssetPackError {
            #expect(error.code == .untrusted, "\(error)")
        }
    }

    @Test(arguments: [PackFormat.zip, .container])
    func libraryOpensOnlyTrustedPacks(format: PackFormat) throws {
        let signed = try pack(format, key: publisher, name: "signed.pack")
        let unsigned = try pack(format, key: nil, name: "unsigned.pack")
        let library = try AssetLibrary.openInstalling(
            bundled: signed,
            installer: PrivateInstaller(directory: dir.appending("lib"), trustedKeys: [publisher.publicKey]),
            credential: .password("pw"))
        #expect(library.reader.publisher == publisher.publicKey)
        #expect(try library.read("a.txt") == Array("signed bytes".utf8))
        #expect(throws: AssetPackError.self) {
            _ = try AssetLibrary(contentsOf: unsigned, credential: .password("pw"), trustedKeys: [publisher.publicKey])
        }
        // Pinned as text in the app's code.
        let pinned = try PublisherKey(text: publisher.publicKey.text)
        let reader = try AssetPacks.open(signed.path, credential: .password("pw"), trustedKeys: [pinned])
        #expect(try reader.read("b.bin") == testBytes(9000))
        #expect(try AssetPacks.open(signed.path, credential: .password("pw")).publisher == nil)
    }

    /// A signing re-pack reuses entries only from a pack the same key signed, whole: bytes
    /// changed in the old pack by someone with the password are never signed afresh.
    @Test(arguments: [PackFormat.zip, .container])
    func signingRepacksReuseOnlyWhatTheKeySigned(format: PackFormat) throws {
        let out = try pack(format, key: publisher, name: "p.pack")
        let source = dir.appending("src-p.pack")  // where the fixture wrote the tree
        var options = PackOptions.forTests
        options.format = format
        options.credential = .password("pw")
        options.signingKey = publisher
        #expect(try AssetPacks.pack(source: source, to: out, options: options).reused == 2)
        options.signingKey = successor
        #expect(try AssetPacks.pack(source: source, to: out, options: options).reused == 0, "another key: fresh")
        #expect(try AssetPacks.pack(source: source, to: out, options: options).reused == 2)
        // One stored byte of the old pack changed: the whole re-pack is fresh, and verifies.
        var bytes = [UInt8](try Data(contentsOf: out))
        bytes[format == .container ? 8192 + 100 : 300] ^= 1  // a container's data starts at 8192
        try Data(bytes).write(to: out)
        #expect(try AssetPacks.pack(source: source, to: out, options: options).reused == 0)
        #expect(
            try AssetPacks.trustedSignature(at: out.path, trusting: [successor.publicKey]).publisher
                == successor.publicKey)
    }
}
