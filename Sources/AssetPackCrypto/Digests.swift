import AssetPackCore
internal import CLibcrypto

/// SHA-256, fed in pieces (one owner at a time).
package final class SHA256Hasher {
    private let context: OpaquePointer

    package init() {
        guard let ctx = EVP_MD_CTX_new() else { allocationFailed("EVP_MD_CTX_new") }
        guard EVP_DigestInit_ex(ctx, EVP_sha256(), nil) == 1 else { allocationFailed("EVP_DigestInit_ex") }
        context = ctx
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Starts a new hash, forgetting what was added.
    package func reset() {
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { allocationFailed("EVP_DigestInit_ex") }
    }

    /// Adds `bytes` to the hash.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
            allocationFailed("EVP_DigestUpdate")
        }
    }

    /// Adds `bytes` to the hash.
    package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The 32-byte SHA-256 of `bytes`.
    package static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// The 32-byte SHA-256 of `bytes`, in one call (`EVP_Digest`).
    package static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        guard EVP_Digest(base, bytes.count, &out, &length, EVP_sha256(), nil) == 1, length == 32 else {
            allocationFailed("EVP_Digest")
        }
        return out
    }

    /// The 32-byte digest of everything added.
    package func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1, length == 32 else {
            allocationFailed("EVP_DigestFinal_ex")
        }
        return out
    }
}

extension SHA256Hasher {
    /// The SHA-256 of bytes `[range)` of `fd` (a writer's own output, hashed to be signed).
    /// - Throws: `.integrityFailure` when the file ends first, `.io` naming `path`.
    package static func digest(of fd: FileDescriptor, _ range: Range<UInt64>, path: String) throws -> [UInt8] {
        try digest(of: FileByteSource(borrowing: fd, name: path, size: range.upperBound), range)
    }

    /// The SHA-256 of bytes `[range)` of `source`, read in 1 MiB pieces (a signed pack's data
    /// region hashed as one stream, or a span of an installed pack).
    /// - Throws: `.integrityFailure` when the pack ends first, and what the source throws.
    package static func digest(of source: any ByteSource, _ range: Range<UInt64>) throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(min(1 << 20, max(1, range.count))), alignment: 64)
        defer { buffer.deallocate() }
        let hasher = SHA256Hasher()
        var at = range.lowerBound
        while at < range.upperBound {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: buffer[0..<Int(min(UInt64(buffer.count), range.upperBound - at))])
            try source.readExactly(into: piece, at: at)
            hasher.update(UnsafeRawBufferPointer(piece))
            at += UInt64(piece.count)
        }
        return hasher.finalize()
    }
}

/// HMAC-SHA-256 and a constant-time comparison.
package enum HMACSHA256 {
    /// The 32-byte HMAC-SHA-256 of `data` under `key`.
    package static func authenticationCode(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let done = HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &out, &length)
        guard done != nil, length == 32 else { allocationFailed("HMAC-SHA-256") }
        return out
    }

    /// Whether `code` is the HMAC-SHA-256 of `data` under `key`, compared in constant time.
    package static func isValid(_ code: [UInt8], for data: [UInt8], key: [UInt8]) -> Bool {
        constantTimeEqual(code, authenticationCode(data, key: key))
    }
}

/// Whether `a` and `b` are equal, in time that depends on their length only (CRYPTO_memcmp).
package func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.count == b.count && (a.isEmpty || CRYPTO_memcmp(a, b, a.count) == 0)
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
package func secureRandomBytes(_ count: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    guard RAND_bytes(&out, Int32(count)) == 1 else { fatalError("RAND_bytes failed: the system has no entropy source") }
    return out
}
