import AssetPackCore
internal import CLibcrypto

// Ed25519 (RFC 8032, pure: no pre-hash, no context) through OpenSSL 3's EVP_PKEY interface, for
// publisher-signed packs, as extensions on Core's two key types (`PublisherSigningKey`,
// `PublisherKey`): there is no key type of this module's own, and no EVP_PKEY outlives a call.
// Nothing here is hand-written: key generation, public-key derivation, signing and verification
// are OpenSSL's.
//
// Failure policy, as for the rest of the module: an OpenSSL call that can fail only when memory
// is exhausted stops through `allocationFailed`; a key of the wrong length throws
// `.invalidArgument` (every 32-byte string is a valid seed, and OpenSSL checks a public key's
// point only when it verifies); a signature that does not verify, has the wrong length or was
// checked against a malformed public key makes `isValidSignature` return `false`.

extension PublisherSigningKey {
    /// The key with this seed (RFC 8032's 32-byte "secret key"; copied, the caller wipes its own
    /// copy), its public key derived by OpenSSL.
    /// - Throws: `.invalidArgument` unless `seed` is 32 bytes.
    package init(seed: UnsafeRawBufferPointer) throws {
        guard seed.count == Self.seedSize, let base = seed.baseAddress else {
            throw AssetPackError(.invalidArgument, "an Ed25519 private key is 32 bytes, not \(seed.count)")
        }
        let key = PKey(privateSeed: base.assumingMemoryBound(to: UInt8.self))
        try self.init(seed: seed, derivedPublicKey: key.publicKey)
    }

    /// A new random key (`EVP_PKEY_generate`, seeded from OpenSSL's DRBG): what `assetpack
    /// keygen` writes.
    package static func generate() -> PublisherSigningKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "ED25519", nil) else {
            allocationFailed("EVP_PKEY_CTX_new_from_name(ED25519)")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_generate(ctx, &generated) == 1, let generated else {
            fatalError("EVP_PKEY_generate(ED25519) failed: the system has no entropy source or no memory")
        }
        let key = PKey(generated)
        let seed = UnsafeMutableRawBufferPointer.allocate(byteCount: seedSize, alignment: 16)
        defer {
            wipeMemory(seed)
            seed.deallocate()
        }
        var length = seed.count
        let base = seed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_PKEY_get_raw_private_key(key.pointer, base, &length) == 1, length == seedSize else {
            allocationFailed("EVP_PKEY_get_raw_private_key")
        }
        // The seed is 32 bytes, so this cannot throw.
        do { return try PublisherSigningKey(seed: UnsafeRawBufferPointer(seed), derivedPublicKey: key.publicKey) } catch
        {
            preconditionFailure("\(error)")
        }
    }

    /// The 64-byte signature of `message` (`EVP_DigestSign` with no digest: Ed25519 hashes the
    /// message itself). Ed25519 is deterministic: one key and one message give one signature.
    /// The seed is copied into an `EVP_PKEY` for the call, which OpenSSL wipes when it frees it.
    package func signature(for message: UnsafeRawBufferPointer) -> [UInt8] {
        let key = withSeed { PKey(privateSeed: $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        guard let ctx = EVP_MD_CTX_new() else { allocationFailed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, nil, nil, key.pointer) == 1 else { allocationFailed("EVP_DigestSignInit") }
        var out = [UInt8](repeating: 0, count: PublisherKey.signatureSize)
        var length = out.count
        let ok = withNonNullBase(message) { EVP_DigestSign(ctx, &out, &length, $0, message.count) }
        guard ok == 1, length == PublisherKey.signatureSize else { allocationFailed("EVP_DigestSign(ED25519)") }
        return out
    }
}

extension PublisherKey {
    /// Bytes of an Ed25519 signature.
    package static let signatureSize = 64

    /// Whether `signature` is this key's Ed25519 signature of `message` (`EVP_DigestVerify`).
    /// - Returns: `false` also for a signature that is not 64 bytes and for a key whose bytes
    ///   OpenSSL refuses (not a point on the curve).
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

    /// The private key with this 32-byte seed, copied into OpenSSL.
    convenience init(privateSeed seed: UnsafePointer<UInt8>) {
        guard let made = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, PublisherSigningKey.seedSize)
        else { allocationFailed("EVP_PKEY_new_raw_private_key(ED25519)") }
        self.init(made)
    }

    /// The public key of this private key.
    var publicKey: PublisherKey {
        var out = [UInt8](repeating: 0, count: PublisherKey.size)
        var length = out.count
        guard EVP_PKEY_get_raw_public_key(pointer, &out, &length) == 1, length == PublisherKey.size else {
            allocationFailed("EVP_PKEY_get_raw_public_key")
        }
        // 32 bytes, so this cannot throw.
        do { return try PublisherKey(rawRepresentation: out) } catch { preconditionFailure("\(error)") }
    }
}

/// Calls `body` with the start of `bytes`, or of a 1-byte dummy when `bytes` is empty (an empty
/// message still needs a pointer that OpenSSL may read zero bytes from).
private func withNonNullBase<R>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> R) -> R {
    if let base = bytes.baseAddress, bytes.count > 0 { return body(base.assumingMemoryBound(to: UInt8.self)) }
    var dummy: UInt8 = 0
    return withUnsafePointer(to: &dummy) { body($0) }
}
