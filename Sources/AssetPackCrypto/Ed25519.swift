import AssetPackCore
import Crypto
import Foundation

// Ed25519 (RFC 8032, pure: no pre-hash, no context) through swift-crypto's
// `Curve25519.Signing`, for publisher-signed packs, as extensions on Core's two key types
// (`PublisherSigningKey`, `PublisherKey`): there is no key type of this module's own. Nothing
// here is hand-written: key generation, public-key derivation, signing and verification are
// swift-crypto's.
//
// Failure policy, as for the rest of the module: a key of the wrong length throws
// `.invalidArgument` (every 32-byte string is a valid seed); a signature that does not verify,
// has the wrong length or was checked against a malformed public key makes `isValidSignature`
// return `false`.

extension PublisherSigningKey {
    /// The key with this seed (RFC 8032's 32-byte "secret key"; copied, the caller wipes its own
    /// copy), its public key derived by swift-crypto.
    /// - Throws: `.invalidArgument` unless `seed` is 32 bytes.
    package init(seed: UnsafeRawBufferPointer) throws {
        guard seed.count == Self.seedSize,
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: borrowed(seed))
        else {
            throw AssetPackError(.invalidArgument, "an Ed25519 private key is 32 bytes, not \(seed.count)")
        }
        try self.init(
            seed: seed, derivedPublicKey: PublisherKey(rawRepresentation: Array(key.publicKey.rawRepresentation)))
    }

    /// A new random key (from the system's secure generator): what `assetpack keygen` writes.
    package static func generate() -> PublisherSigningKey {
        let key = Curve25519.Signing.PrivateKey()
        var seed = [UInt8](key.rawRepresentation)
        defer { seed.withUnsafeMutableBytes { wipeMemory($0) } }
        do { return try seed.withUnsafeBytes { try PublisherSigningKey(seed: $0) } } catch {
            preconditionFailure("\(error)")  // 32 bytes: cannot throw
        }
    }

    /// The 64-byte signature of `message`. Ed25519 as RFC 8032 defines it is deterministic (one
    /// key and one message give one signature), as BoringSSL computes it; CryptoKit on Apple
    /// platforms adds randomness, which every verifier accepts alike.
    package func signature(for message: UnsafeRawBufferPointer) -> [UInt8] {
        let key = withSeed { seed in
            do { return try Curve25519.Signing.PrivateKey(rawRepresentation: borrowed(seed)) } catch {
                preconditionFailure("a stored seed is 32 bytes: \(error)")
            }
        }
        do { return Array(try key.signature(for: borrowed(message))) } catch {
            allocationFailed("Curve25519.Signing.signature: \(error)")
        }
    }
}

extension PublisherKey {
    /// Bytes of an Ed25519 signature.
    package static let signatureSize = 64

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    /// - Returns: `false` also for a signature that is not 64 bytes and for a key whose bytes
    ///   are not a point on the curve.
    package func isValidSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == Self.signatureSize,
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation)
        else { return false }
        return key.isValidSignature(signature, for: borrowed(message))
    }
}
