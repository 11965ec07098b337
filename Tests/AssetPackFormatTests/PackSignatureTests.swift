import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation
import Testing

/// Signature block version 2 on its own: the release it binds, every signed byte of it, and the
/// context string that keeps a version-1 signature from passing for a version-2 one.
@Suite struct PackSignatureTests {
    let key = try! Array(repeating: UInt8(3), count: 32).withUnsafeBytes { try PublisherSigningKey(seed: $0) }
    var trusted: [PublisherKey] { [key.publicKey] }

    func block(_ release: PackRelease, items: Int = 2) -> PackSignature {
        PackSignature(
            kind: .zip, publisher: key.publicKey, headDigest: Array(repeating: 1, count: 32),
            dataDigest: Array(repeating: 2, count: 32), items: (0..<32 * items).map { UInt8($0 & 0xFF) },
            release: release)
    }

    func parse(_ bytes: [UInt8], trusted: [PublisherKey]) throws -> PackSignature {
        try bytes.withUnsafeBytes { try PackSignature.parse($0, kind: .zip, trusted: trusted) }
    }

    let release = PackRelease(
        name: "levels-ü", version: 42, expires: Date(timeIntervalSince1970: 4_000_000_000), size: 123_456)

    @Test func versionTwoRoundTripsTheRelease() throws {
        let bytes = block(release).signed(with: key)
        #expect(bytes[8] == 2)
        #expect(bytes.count == PackSignature.size(items: 2, release: release))
        #expect(bytes.count == 235 + "levels-ü".utf8.count + 64)
        #expect(PackSignature.isPossibleSize(UInt64(bytes.count), items: 2))
        let parsed = try parse(bytes, trusted: trusted)
        #expect(parsed.release == release)
        #expect(parsed.items == block(release).items && parsed.headDigest == block(release).headDigest)
        // Without trusted keys only the structure is read, the release all the same.
        #expect(try parse(bytes, trusted: []).release == release)
        // Version 1 still reads, as a legacy release.
        let legacy = block(.legacy).signed(with: key)
        #expect(legacy[8] == 1 && legacy.count == PackSignature.size(items: 2))
        #expect(try parse(legacy, trusted: trusted).release == .legacy)
    }

    @Test func everySignedByteOfTheReleaseIsChecked() throws {
        let bytes = block(release).signed(with: key)
        let nameLength = "levels-ü".utf8.count
        // Version (74..<82), expiry (82..<90), size (90..<98), name length (98), name (99...).
        for offset in 74..<(99 + nameLength) {
            var altered = bytes
            altered[offset] ^= 0x01
            let error = #expect(throws: AssetPackError.self, "byte \(offset)") {
                _ = try parse(altered, trusted: trusted)
            }
            // The length byte moves the signature, so the block no longer even parses.
            let expected: Set<AssetPackError.Code> = offset == 98 ? [.integrityFailure] : [.untrusted]
            #expect(error.map { expected.contains($0.code) } == true, "byte \(offset): \(String(describing: error))")
        }
    }

    @Test func aSignatureUnderTheVersionOneContextDoesNotVerifyAsVersionTwo() throws {
        var bytes = block(release).signed(with: key)
        let signatureAt = 99 + "levels-ü".utf8.count
        let oldContext = Array("AssetPack signature v1\0".utf8)
        let replayed = (oldContext + bytes[0..<signatureAt]).withUnsafeBytes { key.signature(for: $0) }
        bytes.replaceSubrange(signatureAt..<signatureAt + 64, with: replayed)
        let error = #expect(throws: AssetPackError.self) { _ = try parse(bytes, trusted: trusted) }
        #expect(error?.code == .untrusted)
    }

    @Test func malformedVersionTwoBlocksAreRefused() throws {
        let bytes = block(release).signed(with: key)
        var empty = bytes
        empty[98] = 0  // a name of no bytes
        var invalid = bytes
        invalid[99] = 0xFF  // not UTF-8
        var unknown = bytes
        unknown[8] = 3
        for (label, candidate, code) in [
            ("empty name", empty, AssetPackError.Code.integrityFailure),
            ("invalid UTF-8", invalid, .integrityFailure), ("short", Array(bytes.dropLast(1)), .integrityFailure),
            ("cut to the release header", Array(bytes.prefix(99)), .integrityFailure),
            ("unknown version", unknown, .unsupportedFormat),
        ] {
            let error = #expect(throws: AssetPackError.self, "\(label)") { _ = try parse(candidate, trusted: []) }
            #expect(error?.code == code, "\(label): \(String(describing: error))")
        }
    }

    @Test func theSignedSizeIsCompared() throws {
        let parsed = try parse(block(release).signed(with: key), trusted: trusted)
        try parsed.checkSize(123_456)
        let error = #expect(throws: AssetPackError.self) { try parsed.checkSize(123_457) }
        #expect(error?.code == .untrusted && error?.message.contains("123456") == true)
        try block(.legacy).checkSize(1)  // a legacy block states no size
    }

    @Test func releaseNamesAndExpiry() throws {
        try PackRelease.checkName("assets")
        try PackRelease.checkName(String(repeating: "é", count: 127))
        for bad in ["", String(repeating: "é", count: 128), "a\nb", "a\u{202E}b"] {
            #expect(throws: AssetPackError.self, "\(bad.debugDescription)") { try PackRelease.checkName(bad) }
        }
        #expect(PackRelease.defaultName(for: "/x/y/assets.zip") == "assets")
        #expect(PackRelease.defaultName(for: "/x/y/archive.tar.apack") == "archive.tar")
        let expiring = PackRelease(name: "a", version: 1, expires: Date(timeIntervalSince1970: 1000), size: 1)
        try expiring.checkNotExpired(now: Date(timeIntervalSince1970: 999))
        let error = #expect(throws: AssetPackError.self) {
            try expiring.checkNotExpired(now: Date(timeIntervalSince1970: 1000))
        }
        #expect(error?.code == .untrusted)
        #expect(error?.message.contains("expired at 1970-01-01T00:16:40Z") == true, "\(String(describing: error))")
    }
}
