import AssetPackCore
internal import CLibcrypto
import Crypto
import Foundation

// The primitives WinZip AES is built from, which its format fixes: raw AES block encryption
// (its counter is little-endian, so no standard CTR mode fits) and a streaming HMAC-SHA-1.

// Algorithm objects fetched once per process; OpenSSL reference-counts them and they are immutable.
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

/// HMAC-SHA-1 over a stream, keyed once (WinZip AES authenticates the ciphertext of an entry
/// with it), through swift-crypto.
package final class HMACSHA1Stream {
    private var mac: HMAC<Insecure.SHA1>

    /// - Throws: never for a key of any length (HMAC takes every key); kept for the callers.
    package init(key: UnsafeRawBufferPointer) throws {
        mac = HMAC<Insecure.SHA1>(key: SymmetricKey(data: borrowed(key)))
    }

    /// Adds `buffer` to the code.
    package func update(_ buffer: UnsafeRawBufferPointer) {
        guard buffer.count > 0 else { return }
        mac.update(data: borrowed(buffer))
    }

    /// The 20-byte authentication code.
    package func finalize() -> [UInt8] { Array(mac.finalize()) }
}

/// Whether the first `count` bytes of `a` and `b` are equal, in time that depends only on `count`.
package func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, count: Int) -> Bool {
    precondition(a.count >= count && b.count >= count)
    var difference: UInt8 = 0
    for i in 0..<count { difference |= a[i] ^ b[i] }
    return difference == 0
}
