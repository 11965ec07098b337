import AssetPackCore
internal import CLibcrypto

// The primitives WinZip AES is built from, which its format fixes: raw AES block encryption
// (its counter is little-endian, so no standard CTR mode fits) and a streaming HMAC-SHA-1.

// Algorithm objects fetched once per process; OpenSSL reference-counts them and they are immutable.
nonisolated(unsafe) private let hmacAlgorithm = EVP_MAC_fetch(nil, "HMAC", nil)
nonisolated(unsafe) private let ecbCiphers: [Int: OpaquePointer?] = [
    16: EVP_CIPHER_fetch(nil, "AES-128-ECB", nil),
    24: EVP_CIPHER_fetch(nil, "AES-192-ECB", nil),
    32: EVP_CIPHER_fetch(nil, "AES-256-ECB", nil),
]

/// AES block encryption (ECB, no padding) of whole blocks in place. One thread at a time.
package final class AESBlockEncryptor {
    private let context: OpaquePointer

    /// A 16-, 24- or 32-byte key.
    /// - Throws: `.unsupportedFormat` for another key length or when OpenSSL refuses it.
    package init(key: UnsafeRawBufferPointer) throws {
        guard let c = EVP_CIPHER_CTX_new() else { allocationFailed("EVP_CIPHER_CTX_new") }
        context = c
        guard let cipher = ecbCiphers[key.count] ?? nil,
            EVP_EncryptInit_ex2(c, cipher, key.bindMemory(to: UInt8.self).baseAddress, nil, nil) == 1,
            EVP_CIPHER_CTX_set_padding(c, 0) == 1
        else { throw AssetPackError(.unsupportedFormat, "OpenSSL: cannot set up AES-\(key.count * 8)-ECB") }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Encrypts `buffer` (a multiple of 16 bytes) in place.
    package func encryptBlocks(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count % 16 == 0 && buffer.count < Int(Int32.max))
        guard let base = buffer.baseAddress else { return }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        let ok = EVP_EncryptUpdate(context, bytes, &written, bytes, Int32(buffer.count))
        precondition(ok == 1 && written == Int32(buffer.count), "OpenSSL AES-ECB failed")
    }
}

/// HMAC-SHA-1 over data fed in pieces. One thread at a time.
package final class HMACSHA1Stream {
    private let context: OpaquePointer

    /// - Throws: `.unsupportedFormat` when OpenSSL cannot set HMAC-SHA-1 up.
    package init(key: UnsafeRawBufferPointer) throws {
        guard let m = EVP_MAC_CTX_new(hmacAlgorithm) else { allocationFailed("EVP_MAC_CTX_new") }
        context = m
        var digest = Array("SHA1".utf8CString)
        let ok = digest.withUnsafeMutableBufferPointer { d in
            let params = [
                OSSL_PARAM_construct_utf8_string(
                    UnsafeRawPointer(("digest" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self),
                    d.baseAddress, 0),
                OSSL_PARAM_construct_end(),
            ]
            return EVP_MAC_init(m, key.bindMemory(to: UInt8.self).baseAddress, key.count, params)
        }
        guard ok == 1 else { throw AssetPackError(.unsupportedFormat, "OpenSSL: cannot set up HMAC-SHA1") }
    }

    deinit { EVP_MAC_CTX_free(context) }

    /// Feeds `buffer` to the MAC.
    package func update(_ buffer: UnsafeRawBufferPointer) {
        guard let p = buffer.baseAddress, buffer.count > 0 else { return }
        guard EVP_MAC_update(context, p.assumingMemoryBound(to: UInt8.self), buffer.count) == 1 else {
            allocationFailed("EVP_MAC_update")
        }
    }

    /// The 20-byte MAC of everything fed. Call once.
    package func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        var length = 0
        let ok = EVP_MAC_final(context, &out, &length, out.count)
        precondition(ok == 1 && length == 20, "OpenSSL HMAC-SHA1 final failed")
        return out
    }
}

/// Whether the first `count` bytes of `a` and `b` are equal, in time that depends on `count` only.
package func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, count: Int) -> Bool {
    precondition(a.count >= count && b.count >= count)
    return count == 0 || CRYPTO_memcmp(a.baseAddress, b.baseAddress, count) == 0
}
