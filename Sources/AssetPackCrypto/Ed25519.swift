import AssetPackCore
internal import CLibcrypto

// Ed25519 (RFC 8032, pure: no pre-hash, no context) through OpenSSL 3's EVP_PKEY interface, for
// publisher-signed packs. Nothing here is hand-written: key generation, public-key derivation,
// signing and verification are OpenSSL's.
//
// Failure policy, as for the rest of the module: an OpenSSL call that can fail only when memory
// is exhausted stops through `allocationFailed`; a key of the wrong length throws
// `.invalidArgument` (every 32-byte string is a valid seed, and OpenSSL checks a public key's
// point only when it verifies); a signature that does not verify, has the wrong length or was
// checked against a malformed public key makes `isValidSignature` return `false`.

/// An Ed25519 private key: a 32-byte seed, kept inside OpenSSL (`EVP_PKEY`, which wipes it when
/// freed) rather than in a Swift array that copies could leave behind.
package struct Ed25519PrivateKey: Sendable {
    /// Seed bytes.
    package static let seedSize = 32

    private let key: PKey

    /// A new random key (`EVP_PKEY_generate`, seeded from OpenSSL's DRBG).
    package init() {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "ED25519", nil) else {
            allocationFailed("EVP_PKEY_CTX_new_from_name(ED25519)")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_generate(ctx, &generated) == 1, let generated else {
            fatalError("EVP_PKEY_generate(ED25519) failed: the system has no entropy source or no memory")
        }
        key = PKey(generated)
    }

    /// The key with this seed (RFC 8032's 32-byte "secret key"), copied into OpenSSL.
    /// - Throws: `.invalidArgument` unless `seed` is 32 bytes.
    package init(seed: UnsafeRawBufferPointer) throws {
        guard seed.count == Self.seedSize, let base = seed.baseAddress else {
            throw AssetPackError(.invalidArgument, "an Ed25519 private key is 32 bytes, not \(seed.count)")
        }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        guard let made = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, bytes, seed.count) else {
            allocationFailed("EVP_PKEY_new_raw_private_key(ED25519)")
        }
        key = PKey(made)
    }

    /// The key with this seed.
    /// - Throws: `.invalidArgument` unless `seed` is 32 bytes.
    package init(seed: [UInt8]) throws {
        self = try seed.withUnsafeBytes { try Ed25519PrivateKey(seed: $0) }
    }

    /// A fresh copy of the 32-byte seed. The caller owns it: wipe it with `cleanse` when done.
    package var seed: [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.seedSize)
        var length = out.count
        guard EVP_PKEY_get_raw_private_key(key.pointer, &out, &length) == 1, length == Self.seedSize else {
            allocationFailed("EVP_PKEY_get_raw_private_key")
        }
        return out
    }

    /// The public key derived from the seed.
    package var publicKey: Ed25519PublicKey {
        var out = [UInt8](repeating: 0, count: Ed25519PublicKey.size)
        var length = out.count
        guard EVP_PKEY_get_raw_public_key(key.pointer, &out, &length) == 1, length == Ed25519PublicKey.size else {
            allocationFailed("EVP_PKEY_get_raw_public_key")
        }
        return Ed25519PublicKey(checkedBytes: out)
    }

    /// The 64-byte signature of `message` (`EVP_DigestSign` with no digest: Ed25519 hashes the
    /// message itself). Ed25519 is deterministic: one key and one message give one signature.
    package func signature(for message: UnsafeRawBufferPointer) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { allocationFailed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, nil, nil, key.pointer) == 1 else { allocationFailed("EVP_DigestSignInit") }
        var out = [UInt8](repeating: 0, count: Ed25519PublicKey.signatureSize)
        var length = out.count
        let ok = withNonNullBase(message) { EVP_DigestSign(ctx, &out, &length, $0, message.count) }
        guard ok == 1, length == Ed25519PublicKey.signatureSize else { allocationFailed("EVP_DigestSign(ED25519)") }
        return out
    }

    /// The 64-byte signature of `message`.
    package func signature(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { signature(for: $0) }
    }
}

/// An Ed25519 public key: 32 bytes.
package struct Ed25519PublicKey: Sendable, Hashable {
    /// Public key bytes.
    package static let size = 32
    /// Signature bytes.
    package static let signatureSize = 64

    /// The 32 bytes (RFC 8032's encoding of the point).
    package let rawRepresentation: [UInt8]

    /// The key with these bytes.
    /// - Throws: `.invalidArgument` unless `bytes` is 32 bytes. Whether they encode a point on the
    ///   curve is checked when verifying: a key that does not verifies nothing.
    package init(rawRepresentation bytes: [UInt8]) throws {
        guard bytes.count == Self.size else {
            throw AssetPackError(.invalidArgument, "an Ed25519 public key is 32 bytes, not \(bytes.count)")
        }
        rawRepresentation = bytes
    }

    fileprivate init(checkedBytes: [UInt8]) { rawRepresentation = checkedBytes }

    /// Whether `signature` is this key's signature of `message` (`EVP_DigestVerify`).
    /// - Returns: `false` also for a signature that is not 64 bytes and for a key whose bytes
    ///   OpenSSL refuses.
    package func isValidSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == Self.signatureSize else { return false }
        guard let made = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, rawRepresentation, Self.size) else {
            return false
        }
        let key = PKey(made)
        guard let ctx = EVP_MD_CTX_new() else { allocationFailed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, nil, nil, key.pointer) == 1 else { return false }
        let ok = withNonNullBase(message) {
            EVP_DigestVerify(ctx, signature, signature.count, $0, message.count)
        }
        // A failed check leaves an error on OpenSSL's per-thread queue; nobody reads it.
        if ok != 1 { ERR_clear_error() }
        return ok == 1
    }

    /// Whether `signature` is this key's signature of `message`.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        message.withUnsafeBytes { isValidSignature(signature, for: $0) }
    }
}

// Bridges between Core's key vocabulary and the OpenSSL keys, for the pack formats and the
// AssetPack module.

extension Ed25519PrivateKey {
    /// The OpenSSL key for a publisher's signing key (its seed is copied into OpenSSL in place).
    package init(_ key: PublisherSigningKey) {
        // A PublisherSigningKey holds exactly 32 bytes, so this cannot throw.
        do { try self = key.withSeed { try Ed25519PrivateKey(seed: $0) } } catch { preconditionFailure("\(error)") }
    }
}

extension Ed25519PublicKey {
    /// The OpenSSL form of a publisher's public key.
    package init(_ key: PublisherKey) { self.init(checkedBytes: key.rawRepresentation) }
}

extension PublisherKey {
    /// The publisher key with these bytes.
    package init(_ key: Ed25519PublicKey) {
        do { try self.init(rawRepresentation: key.rawRepresentation) } catch { preconditionFailure("\(error)") }
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    package func isValidSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer) -> Bool {
        Ed25519PublicKey(self).isValidSignature(signature, for: message)
    }
}

extension PublisherSigningKey {
    /// A new random key from OpenSSL's random generator (what `assetpack keygen` writes).
    package static func generate() -> PublisherSigningKey {
        var seed = Ed25519PrivateKey().seed
        defer { seed.withUnsafeMutableBytes { cleanse($0) } }
        do { return try seed.withUnsafeBytes { try PublisherSigningKey(seed: $0) } } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The public key of this signing key (apps see it as `publicKey`, in the AssetPack module).
    package var verifyingKey: PublisherKey { PublisherKey(Ed25519PrivateKey(self).publicKey) }

    /// The 64-byte Ed25519 signature of `message`.
    package func signature(for message: UnsafeRawBufferPointer) -> [UInt8] {
        Ed25519PrivateKey(self).signature(for: message)
    }
}

/// One owner of an `EVP_PKEY`, freed (and, for a private key, wiped by OpenSSL) with it.
///
/// `@unchecked Sendable`: the key is never modified after it is made. openssl-threads(7): objects
/// are thread-safe as long as the calls made on them do not modify them; signing and verifying
/// make a context of their own per call, which only takes a reference to the key (under its lock).
private final class PKey: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}

/// Calls `body` with the start of `bytes`, or of a 1-byte dummy when `bytes` is empty (an empty
/// message still needs a pointer that OpenSSL may read zero bytes from).
private func withNonNullBase<R>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> R) -> R {
    if let base = bytes.baseAddress, bytes.count > 0 { return body(base.assumingMemoryBound(to: UInt8.self)) }
    var dummy: UInt8 = 0
    return withUnsafePointer(to: &dummy) { body($0) }
}
