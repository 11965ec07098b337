import AssetPackCore
import AssetPackCrypto
import Foundation
import Testing

/// Ed25519 through OpenSSL on Core's key types: RFC 8032's vectors, and what must not verify.
@Suite struct Ed25519Tests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var secretKey: String
        var publicKey: String
        var message: String
        var signature: String
        var testDescription: String { name }
    }

    /// RFC 8032, section 7.1, TEST 1, 2 and 3 (secret key = the 32-byte seed).
    static let vectors = [
        Vector(
            name: "TEST 1 (empty message)",
            secretKey: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", message: "",
            signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                + "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        Vector(
            name: "TEST 2 (1 byte)",
            secretKey: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", message: "72",
            signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        Vector(
            name: "TEST 3 (2 bytes)",
            secretKey: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", message: "af82",
            signature: "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
                + "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }

    static func signingKey(seed: [UInt8]) throws -> PublisherSigningKey {
        try seed.withUnsafeBytes { try PublisherSigningKey(seed: $0) }
    }

    @Test(arguments: vectors) func rfc8032(_ vector: Vector) throws {
        let key = try Self.signingKey(seed: Self.bytes(vector.secretKey))
        #expect(key.withSeed { Array($0) } == Self.bytes(vector.secretKey))
        #expect(key.publicKey.rawRepresentation == Self.bytes(vector.publicKey), "the derived public key")
        let message = Self.bytes(vector.message)
        let signature = key.signature(for: message)
        #expect(signature == Self.bytes(vector.signature))
        let publicKey = try PublisherKey(rawRepresentation: Self.bytes(vector.publicKey))
        #expect(publicKey.isValidSignature(Self.bytes(vector.signature), for: message))
    }

    @Test func generatedKeysSignAndVerify() throws {
        let key = PublisherSigningKey.generate()
        let other = PublisherSigningKey.generate()
        #expect(key.withSeed { Array($0) } != other.withSeed { Array($0) })
        #expect(key.withSeed { $0.count } == 32 && key.publicKey.rawRepresentation.count == 32)
        #expect(key.publicKey != other.publicKey)
        // A key rebuilt from its seed is the same key: generate() stored the public key OpenSSL
        // derives from the seed.
        #expect(try Self.signingKey(seed: key.withSeed { Array($0) }).publicKey == key.publicKey)
        for size in [0, 1, 64, 100_000] {
            let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let signature = key.signature(for: message)
            #expect(signature.count == 64)
            #expect(key.signature(for: message) == signature, "Ed25519 is deterministic")
            #expect(key.publicKey.isValidSignature(signature, for: message))
            #expect(!other.publicKey.isValidSignature(signature, for: message), "another key")
        }
    }

    @Test func everyFlippedBitFailsVerification() throws {
        let vector = Self.vectors[2]
        let message = Self.bytes(vector.message)
        let signature = Self.bytes(vector.signature)
        let publicKey = Self.bytes(vector.publicKey)
        let key = try PublisherKey(rawRepresentation: publicKey)
        for bit in 0..<(message.count * 8) {
            var changed = message
            changed[bit / 8] ^= 1 << (bit % 8)
            #expect(!key.isValidSignature(signature, for: changed), "message bit \(bit)")
        }
        for bit in 0..<(signature.count * 8) {
            var changed = signature
            changed[bit / 8] ^= 1 << (bit % 8)
            #expect(!key.isValidSignature(changed, for: message), "signature bit \(bit)")
        }
        for bit in 0..<(publicKey.count * 8) {
            var changed = publicKey
            changed[bit / 8] ^= 1 << (bit % 8)
            let other = try PublisherKey(rawRepresentation: changed)
            #expect(!other.isValidSignature(signature, for: message), "public key bit \(bit)")
        }
        // A longer or shorter message, and the message signed under another key, fail too.
        #expect(!key.isValidSignature(signature, for: message + [0]))
        #expect(!key.isValidSignature(signature, for: Array(message.dropLast())))
    }

    @Test func malformedKeysAndSignatures() throws {
        for count in [0, 1, 31, 33, 64] {
            #expect(throws: AssetPackError.self) { try Self.signingKey(seed: [UInt8](repeating: 7, count: count)) }
            #expect(throws: AssetPackError.self) {
                try PublisherKey(rawRepresentation: [UInt8](repeating: 7, count: count))
            }
        }
        do {
            _ = try PublisherKey(rawRepresentation: [1, 2, 3])
            Issue.record("a 3-byte public key was accepted")
        } catch let error as AssetPackError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("32 bytes, not 3"))
        }
        let vector = Self.vectors[1]
        let message = Self.bytes(vector.message)
        let signature = Self.bytes(vector.signature)
        let key = try PublisherKey(rawRepresentation: Self.bytes(vector.publicKey))
        for count in [0, 1, 63, 65, 128] {
            let wrong = Array((signature + signature).prefix(count))
            #expect(!key.isValidSignature(wrong, for: message), "a \(count)-byte signature")
        }
        // 32 bytes that are not a point on the curve (y = 2 has no x) verify nothing.
        var notAPoint = [UInt8](repeating: 0, count: 32)
        notAPoint[0] = 2
        #expect(!(try PublisherKey(rawRepresentation: notAPoint)).isValidSignature(signature, for: message))
        // The all-zero signature, and S ≥ L (not canonical), do not verify.
        #expect(!key.isValidSignature([UInt8](repeating: 0, count: 64), for: message))
        var bigS = signature
        for i in 32..<64 { bigS[i] = 0xFF }
        #expect(!key.isValidSignature(bigS, for: message))
    }
}

extension PublisherSigningKey {
    fileprivate func signature(for message: [UInt8]) -> [UInt8] { message.withUnsafeBytes { signature(for: $0) } }
}

extension PublisherKey {
    fileprivate func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        message.withUnsafeBytes { isValidSignature(signature, for: $0) }
    }
}
