import AssetPackCore
internal import CLibcrypto

/// AES-256-GCM with a 96-bit nonce and a 128-bit tag, sealing and opening in place through the
/// system OpenSSL's EVP interface. One instance per thread: the cipher context is reused.
package final class AESGCM {
    /// Key bytes.
    package static let keySize = 32
    /// Nonce bytes.
    package static let nonceSize = 12
    /// Tag bytes.
    package static let tagSize = 16

    private let context: OpaquePointer

    package init() {
        guard let ctx = EVP_CIPHER_CTX_new() else { allocationFailed("EVP_CIPHER_CTX_new") }
        context = ctx
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Encrypts `buffer` in place and writes the tag into `tag`.
    package func seal(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer, nonce: [UInt8], key: [UInt8],
        authenticating aad: [UInt8] = []
    ) {
        precondition(key.count == Self.keySize && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        precondition(buffer.count < Int(Int32.max))
        var ok = EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce)
        var produced: Int32 = 0
        if ok == 1, !aad.isEmpty { ok = EVP_EncryptUpdate(context, nil, &produced, aad, Int32(aad.count)) }
        if ok == 1, buffer.count > 0 {
            let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            ok = EVP_EncryptUpdate(context, p, &produced, p, Int32(buffer.count))
        }
        var tail = [UInt8](repeating: 0, count: 16)
        if ok == 1 { ok = EVP_EncryptFinal_ex(context, &tail, &produced) }
        if ok == 1 { ok = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag.baseAddress) }
        // Encryption with a valid key and nonce cannot fail short of memory exhaustion.
        if ok != 1 { allocationFailed("EVP_aes_256_gcm encrypt") }
    }

    /// Encrypts `plain` and returns ciphertext followed by the tag.
    package func seal(_ plain: [UInt8], nonce: [UInt8], key: [UInt8], authenticating aad: [UInt8] = []) -> [UInt8] {
        var out = plain + [UInt8](repeating: 0, count: Self.tagSize)
        out.withUnsafeMutableBytes { all in
            let cut = all.count - Self.tagSize
            seal(
                UnsafeMutableRawBufferPointer(rebasing: all[..<cut]),
                tag: UnsafeMutableRawBufferPointer(rebasing: all[cut...]), nonce: nonce, key: key, authenticating: aad)
        }
        return out
    }

    /// Authenticates and decrypts `buffer` in place.
    /// - Returns: `false` if the tag does not match (the buffer then holds unauthenticated
    ///   bytes that must not be used).
    package func open(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: [UInt8], key: [UInt8],
        authenticating aad: [UInt8] = []
    ) -> Bool {
        precondition(key.count == Self.keySize && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        precondition(buffer.count < Int(Int32.max))
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return false }
        var produced: Int32 = 0
        if !aad.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &produced, aad, Int32(aad.count)) == 1 else { return false }
        }
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

    /// Opens ciphertext followed by its tag; `nil` if the tag does not match.
    package func open(_ sealed: [UInt8], nonce: [UInt8], key: [UInt8], authenticating aad: [UInt8] = []) -> [UInt8]? {
        guard sealed.count >= Self.tagSize else { return nil }
        var plain = Array(sealed[..<(sealed.count - Self.tagSize)])
        let tag = Array(sealed[(sealed.count - Self.tagSize)...])
        let ok = plain.withUnsafeMutableBytes { p in
            tag.withUnsafeBytes { open(p, tag: $0, nonce: nonce, key: key, authenticating: aad) }
        }
        return ok ? plain : nil
    }
}
