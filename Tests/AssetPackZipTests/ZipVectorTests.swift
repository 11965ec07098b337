import AssetPackCore
import AssetPackCrypto
import AssetPackTestSupport
import AssetPackZip
import Foundation
import Testing

/// Archives written by libzip 1.7.3 and 7-Zip 26.02 (Vectors/README.md), read in both
/// configurations: WinZip AES-128/192/256 (AE-1 and AE-2), unencrypted deflate and stored
/// entries, through every AES keystream backend the build has. ZipCrypto decodes where libzip is
/// linked and is refused by name where it is not.
@Suite struct ZipVectorTests {
    static let expected: [String: (size: Int, sha256: String)] = [
        "hello.txt": (15, "df1896fca5c7d2117072c0a803741f69144136afd388d0964f9f728f4fe71211"),
        "text.txt": (6370, "f93c3605b6b9a1c0d66685cc518dc5277ff04f31b136caec96c4b43c68d1cb1b"),
        "random.bin": (3000, "4ca3a2f34d496c92f63cda165c1c8f250261d2b72eca637b5c272883d1304a01"),
    ]
    static let archives = [
        "libzip-aes128.zip", "libzip-aes192.zip", "libzip-aes256.zip", "libzip-plain.zip", "7zip-aes128.zip",
        "7zip-aes256.zip", "7zip-plain.zip",
    ]

    static func path(_ name: String) throws -> String {
        try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil)).appendingPathComponent(name).path
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: archives)
    func everyEntryReadsToItsKnownDigest(archive: String) throws {
        let reader = try ZipPackReader(path: Self.path(archive), credential: .password("vector password"))
        #expect(Set(reader.entries.map(\.path)) == Set(Self.expected.keys))
        for (name, want) in Self.expected {
            let (bytes, timing) = try reader.readTimed(name)
            #expect(bytes.count == want.size, "\(archive) \(name)")
            #expect(Self.hex(SHA256Hasher.digest(bytes)) == want.sha256, "\(archive) \(name)")
            #expect(timing.decoder == (archive.contains("plain") ? "native" : "bulk-aes"), "\(archive) \(name)")
            var streamed: [UInt8] = []
            try reader.stream(name) { streamed.append(contentsOf: $0) }
            #expect(streamed == bytes, "\(archive) \(name), streamed")
        }
    }

    @Test(arguments: ["libzip-aes256.zip", "7zip-aes128.zip"])
    func aWrongPasswordIsReportedAsSuch(archive: String) throws {
        let reader = try ZipPackReader(path: Self.path(archive), credential: .password("not it"))
        let error = #expect(throws: AssetPackError.self) { try reader.read("text.txt") }
        #expect(error?.code == .wrongPassword)
    }

    /// A flipped byte of an unencrypted entry's data: only the CRC catches it, and it does, in the
    /// whole read and the stream alike.
    @Test func aFlippedByteInAnUnencryptedEntryFailsItsCRC() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.path("7zip-plain.zip"))))
        let reader = try ZipPackReader(path: Self.path("7zip-plain.zip"), credential: nil)
        let span = try #require(reader.storedSpan("random.bin"))
        bytes[Int(span.upperBound) - 100] ^= 0x01
        let dir = TemporaryDirectory()
        let damaged = dir.appending("damaged.zip").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let broken = try ZipPackReader(path: damaged, credential: nil)
        let error = #expect(throws: AssetPackError.self) { try broken.read("random.bin") }
        #expect(error?.code == .integrityFailure)
        #expect(error?.message.contains("CRC") == true, "\(String(describing: error))")
        #expect(throws: AssetPackError.self) { try broken.stream("random.bin") { _ in } }
        #expect(try broken.read("hello.txt").count == 15)
    }

    @Test func zipCryptoDecodesWithLibzipAndIsRefusedByNameWithoutIt() throws {
        let reader = try ZipPackReader(
            path: Self.path("libzip-zipcrypto.zip"), credential: .password("vector password"))
        #expect(reader.entry("text.txt")?.encryption == .zipCrypto)
        #if SystemLibraries
        for (name, want) in Self.expected {
            #expect(Self.hex(SHA256Hasher.digest(try reader.read(name))) == want.sha256, "\(name)")
        }
        #else
        let error = #expect(throws: AssetPackError.self) { try reader.read("text.txt") }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("ZipCrypto") == true)
        #expect(error?.message.contains("--encryption aes256") == true)
        #endif
    }
}
