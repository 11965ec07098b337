import AssetPackCore
#if SystemLibraries
internal import CLibcrypto
#endif
import Crypto
import CryptoExtras
import Foundation

// The primitives WinZip AES is built from, which its format fixes: raw AES block encryption
// (its counter is little-endian, so no standard CTR mode fits) and a streaming HMAC-SHA-1.

#if SystemLibraries
// Algorithm objects fetched once per process; OpenSSL reference-counts them and they are immutable.
nonisolated(unsafe) private let ecbCiphers: [Int: OpaquePointer?] = [
    16: EVP_CIPHER_fetch(nil, "AES-128-ECB", nil),
    24: EVP_CIPHER_fetch(nil, "AES-192-ECB", nil),
    32: EVP_CIPHER_fetch(nil, "AES-256-ECB", nil),
]
#endif

/// AES block encryption (ECB, no padding) of whole blocks in place. One thread at a time.
///
/// Two backends give the same blocks:
/// - ``Backend/libcrypto``: libcrypto's AES-ECB (7.9 GB/s on one core here), where the build has
///   libcrypto: the default configuration's.
/// - ``Backend/swiftCrypto``: swift-crypto has no ECB, but CFB decryption yields it: with
///   IV = B₀ and ciphertext B₁ … Bₙ₋₁ ‖ 0, plaintext block j is E(Bⱼ) XOR (the ciphertext block
///   j), so one `AES._CFB.decrypt` call (one key schedule) gives the whole batch. What a build
///   without libcrypto uses (issue 38: iOS, Android); BoringSSL's CFB runs one block at a time.
/// `ASSETPACK_AES_BLOCKS=swift-crypto` in the environment makes new encryptors use the second,
/// so the end-to-end tests read 7-Zip's and libzip's archives through both.
package final class AESBlockEncryptor {
    /// Where the blocks are encrypted.
    package enum Backend: Sendable {
        #if SystemLibraries
        case libcrypto
        #endif
        case swiftCrypto

        #if SystemLibraries
        /// What new encryptors use: `ASSETPACK_AES_BLOCKS=swift-crypto` or libcrypto.
        package static let preferred: Backend =
            ProcessInfo.processInfo.environment["ASSETPACK_AES_BLOCKS"] == "swift-crypto" ? .swiftCrypto : .libcrypto
        /// Every backend this build has.
        package static let available: [Backend] = [.libcrypto, .swiftCrypto]
        #else
        /// The portable configuration has no libcrypto: swift-crypto's CFB.
        package static let preferred: Backend = .swiftCrypto
        /// Every backend this build has.
        package static let available: [Backend] = [.swiftCrypto]
        #endif
    }

    private let context: OpaquePointer?
    private let key: SymmetricKey?
    /// The batch's ciphertext (swift-crypto backend): blocks 1 … n-1, then a zero block.
    private var shifted: [UInt8] = []

    /// A 16-, 24- or 32-byte key.
    /// - Throws: `.unsupportedFormat` for another key length or when the library refuses it.
    package init(key: UnsafeRawBufferPointer, backend: Backend = .preferred) throws {
        guard [16, 24, 32].contains(key.count) else {
            throw AssetPackError(.unsupportedFormat, "AES keys are 16, 24 or 32 bytes, not \(key.count)")
        }
        switch backend {
        case .swiftCrypto:
            context = nil
            self.key = SymmetricKey(data: borrowed(key))
        #if SystemLibraries
        case .libcrypto:
            self.key = nil
            guard let c = EVP_CIPHER_CTX_new() else { allocationFailed("EVP_CIPHER_CTX_new") }
            context = c
            guard let cipher = ecbCiphers[key.count] ?? nil,
                EVP_EncryptInit_ex2(c, cipher, key.bindMemory(to: UInt8.self).baseAddress, nil, nil) == 1,
                EVP_CIPHER_CTX_set_padding(c, 0) == 1
            else { throw AssetPackError(.unsupportedFormat, "OpenSSL: cannot set up AES-\(key.count * 8)-ECB") }
        #endif
        }
    }

    deinit {
        #if SystemLibraries
        if let context { EVP_CIPHER_CTX_free(context) }
        #endif
    }

    /// Encrypts `buffer` (a multiple of 16 bytes) in place.
    package func encryptBlocks(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count % 16 == 0 && buffer.count < Int(Int32.max))
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        if let key {
            encryptBlocksThroughCFB(buffer, base: base, key: key)
            return
        }
        #if SystemLibraries
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        let ok = EVP_EncryptUpdate(context, bytes, &written, bytes, Int32(buffer.count))
        precondition(ok == 1 && written == Int32(buffer.count), "OpenSSL AES-ECB failed")
        #endif
    }

    private func encryptBlocksThroughCFB(
        _ buffer: UnsafeMutableRawBufferPointer, base: UnsafeMutableRawPointer, key: SymmetricKey
    ) {
        let count = buffer.count
        if shifted.count != count { shifted = [UInt8](repeating: 0, count: count) }
        shifted.withUnsafeMutableBytes { c in
            c.baseAddress!.copyMemory(from: base + 16, byteCount: count - 16)
            c.baseAddress!.advanced(by: count - 16).initializeMemory(as: UInt8.self, repeating: 0, count: 16)
        }
        do {
            let iv = try AES._CFB.IV(ivBytes: UnsafeRawBufferPointer(rebasing: buffer[0..<16]))
            let plain = try AES._CFB.decrypt(shifted, using: key, iv: iv)
            plain.withUnsafeBytes { (p: UnsafeRawBufferPointer) in
                shifted.withUnsafeBytes { (c: UnsafeRawBufferPointer) in
                    for i in 0..<count { buffer[i] = p[i] ^ c[i] }
                }
            }
        } catch {
            preconditionFailure("AES-CFB refused a valid key and IV: \(error)")
        }
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
