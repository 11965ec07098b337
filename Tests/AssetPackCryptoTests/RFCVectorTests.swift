import AssetPackCore
import AssetPackCrypto
import Testing

/// The published vectors of the KDFs the container's keys come from, through swift-crypto:
/// RFC 7914 section 12 (scrypt) and RFC 5869 appendix A.1 (HKDF-SHA-256). (PBKDF2's RFC 6070
/// vectors: `KeyDerivationTests`.)
@Suite struct RFCVectorTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map {
            let at = hex.index(hex.startIndex, offsetBy: $0)
            return UInt8(hex[at..<hex.index(at, offsetBy: 2)], radix: 16)!
        }
    }

    @Test(arguments: [
        (
            "", "", UInt64(16), UInt64(1), UInt64(1),
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
        ),
        (
            "password", "NaCl", 1024, 8, 16,
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        ),
        (
            "pleaseletmein", "SodiumChloride", 16384, 8, 1,
            "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
        ),
    ])
    func scryptMatchesRFC7914(password: String, salt: String, n: UInt64, r: UInt64, p: UInt64, derived: String) throws {
        let out = try KeyDerivation.scrypt(
            password: Array(password.utf8), salt: Array(salt.utf8), n: n, r: r, p: p, maxMemory: 1 << 30, count: 64)
        #expect(Self.hex(out) == derived)
    }

    /// scrypt refuses what needs more memory than it may use (128·r·N bytes and more), as the
    /// container's reader relies on for `ReadLimits.maxKDFMemory`.
    @Test func scryptRefusesMoreMemoryThanAllowed() {
        #expect(throws: KeyDerivation.Refused.self) {
            try KeyDerivation.scrypt(
                password: [1], salt: [2], n: 1 << 14, r: 8, p: 1, maxMemory: 1 << 20, count: 32)
        }
    }

    @Test func hkdfMatchesRFC5869() {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let prk = KeyDerivation.hkdfExtract(inputKeyMaterial: ikm, salt: Self.bytes("000102030405060708090a0b0c"))
        #expect(Self.hex(prk) == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
        let okm = KeyDerivation.hkdfExpand(pseudoRandomKey: prk, info: Self.bytes("f0f1f2f3f4f5f6f7f8f9"), count: 42)
        #expect(
            Self.hex(okm)
                == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }
}

/// AES blocks, WinZip AES's keystream: FIPS-197 appendix C's known answers through both
/// backends, and the two backends agreeing on random batches of every size the decoder uses.
@Suite struct AESBlockTests {
    static let fips: [(key: String, cipher: String)] = [
        ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
        ("000102030405060708090a0b0c0d0e0f1011121314151617", "dda97ca4864cdfe06eaf70a0ec0d7191"),
        ("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "8ea2b7ca516745bfeafc49904b496089"),
    ]

    @Test(arguments: AESBlockEncryptor.Backend.available)
    func fips197KnownAnswers(backend: AESBlockEncryptor.Backend) throws {
        for (key, cipher) in Self.fips {
            var block = RFCVectorTests.bytes("00112233445566778899aabbccddeeff")
            let encryptor = try RFCVectorTests.bytes(key).withUnsafeBytes {
                try AESBlockEncryptor(key: $0, backend: backend)
            }
            block.withUnsafeMutableBytes { encryptor.encryptBlocks($0) }
            #expect(RFCVectorTests.hex(block) == cipher, "AES-\(key.count * 4)")
        }
    }

    #if SystemLibraries  // the portable configuration has one backend
    @Test func bothBackendsGiveTheSameBlocks() throws {
        var rng = SystemRandomNumberGenerator()
        for keySize in [16, 24, 32] {
            let key = (0..<keySize).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let native = try key.withUnsafeBytes { try AESBlockEncryptor(key: $0, backend: .libcrypto) }
            let portable = try key.withUnsafeBytes { try AESBlockEncryptor(key: $0, backend: .swiftCrypto) }
            for blocks in [1, 2, 3, 64, 1024] {
                let plain = (0..<16 * blocks).map { _ in UInt8.random(in: 0...255, using: &rng) }
                var a = plain
                var b = plain
                a.withUnsafeMutableBytes { native.encryptBlocks($0) }
                b.withUnsafeMutableBytes { portable.encryptBlocks($0) }
                #expect(a == b, "AES-\(keySize * 8), \(blocks) blocks")
                #expect(a != plain)
            }
        }
    }
    #endif
}
