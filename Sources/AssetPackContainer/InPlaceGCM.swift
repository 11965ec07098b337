import AssetPackCore
internal import CLibcrypto
import Crypto

/// AES-256-GCM decryption in place, through the system OpenSSL's EVP interface.
///
/// swift-crypto's `AES.GCM.open` copies the ciphertext into a `SealedBox` and returns a new
/// `Data`, which the reader then copies into its output: two extra passes over every byte,
/// which cost as much as the decryption itself on a 64 MiB read. Reading the ciphertext
/// straight into the output and opening it there removes both. Packs are still sealed with
/// swift-crypto; both sides are standard AES-256-GCM (96-bit nonce, 128-bit tag, no AAD for
/// chunks), and the test vectors pin them to each other.
///
/// One instance per thread: the context is reused across chunks.
final class InPlaceGCM {
    private let context: OpaquePointer

    init() {
        guard let ctx = EVP_CIPHER_CTX_new() else { allocationFailed("EVP_CIPHER_CTX_new") }
        context = ctx
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Authenticates and decrypts `buffer` in place.
    /// - Returns: `false` if the tag does not match (the buffer then holds unauthenticated
    ///   bytes that must not be used).
    func open(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: AES.GCM.Nonce, key: SymmetricKey
    ) -> Bool {
        precondition(tag.count == 16 && buffer.count < Int(Int32.max))
        let initialised = key.withUnsafeBytes { k in
            nonce.withUnsafeBytes { n in
                EVP_DecryptInit_ex(
                    context, EVP_aes_256_gcm(), nil, k.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    n.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard initialised == 1 else { return false }
        var produced: Int32 = 0
        if buffer.count > 0 {
            let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard EVP_DecryptUpdate(context, p, &produced, p, Int32(buffer.count)) == 1 else { return false }
        }
        guard
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tag.baseAddress!))
                == 1
        else { return false }
        var tail = [UInt8](repeating: 0, count: 16)
        return EVP_DecryptFinal_ex(context, &tail, &produced) == 1
    }
}
