import AssetPackCore
import Crypto
import Foundation

/// AES-256-GCM with a 96-bit nonce and a 128-bit tag, sealing and opening in place, through
/// swift-crypto (BoringSSL off Apple platforms, CryptoKit on them). One instance per thread: it
/// keeps the last key it was given as a `SymmetricKey`, so a chunk loop under one entry key makes
/// it once.
///
/// The buffers are handed to swift-crypto without a copy (`Data(bytesNoCopy:)`); what it returns
/// is copied back into the caller's buffer once (docs/PERFORMANCE.md, "swift-crypto").
package final class AESGCM {
    /// Key bytes.
    package static let keySize = 32
    /// Nonce bytes.
    package static let nonceSize = 12
    /// Tag bytes.
    package static let tagSize = 16

    private var lastKey: [UInt8] = []
    private var symmetricKey: SymmetricKey?

    package init() {}

    private func key(_ bytes: [UInt8]) -> SymmetricKey {
        if let symmetricKey, bytes == lastKey { return symmetricKey }
        let made = SymmetricKey(data: bytes)
        (lastKey, symmetricKey) = (bytes, made)
        return made
    }

    /// Encrypts `buffer` in place and writes the tag into `tag`.
    package func seal(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer, nonce: [UInt8], key: [UInt8],
        authenticating aad: [UInt8] = []
    ) {
        precondition(key.count == Self.keySize && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        do {
            let box = try AES.GCM.seal(
                borrowed(UnsafeRawBufferPointer(buffer)), using: self.key(key), nonce: AES.GCM.Nonce(data: nonce),
                authenticating: aad)
            box.ciphertext.withUnsafeBytes { buffer.copyMemory(from: $0) }
            box.tag.withUnsafeBytes { tag.copyMemory(from: $0) }
        } catch {
            // A 32-byte key and a 12-byte nonce cannot be refused; only memory can run out.
            allocationFailed("AES.GCM.seal: \(error)")
        }
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
    /// - Returns: `false` if the tag does not match (the buffer is then left as it was).
    package func open(
        _ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: [UInt8], key: [UInt8],
        authenticating aad: [UInt8] = []
    ) -> Bool {
        precondition(key.count == Self.keySize && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        guard
            let box = try? AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: borrowed(UnsafeRawBufferPointer(buffer)),
                tag: borrowed(tag)),
            let plain = try? AES.GCM.open(box, using: self.key(key), authenticating: aad)
        else { return false }
        plain.withUnsafeBytes { buffer.copyMemory(from: $0) }
        return true
    }

    /// Whether `sealed` (ciphertext ‖ tag) authenticates under `key` and `nonce`, `sealed` left as
    /// it is: the ciphertext is decrypted in `scratch` (at least its size), which is then garbage.
    package func authenticates(
        _ sealed: UnsafeRawBufferPointer, nonce: [UInt8], key: [UInt8], scratch: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard sealed.count >= Self.tagSize, sealed.count - Self.tagSize <= scratch.count else { return false }
        let payload = sealed.count - Self.tagSize
        let ciphertext = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<payload])
        ciphertext.copyMemory(from: UnsafeRawBufferPointer(rebasing: sealed[0..<payload]))
        return open(ciphertext, tag: UnsafeRawBufferPointer(rebasing: sealed[payload...]), nonce: nonce, key: key)
    }

    /// Authenticates and decrypts `sealed`, laid out as nonce ‖ ciphertext ‖ tag (swift-crypto's
    /// combined form, handed over without a copy), and passes the plaintext to `body` (valid only
    /// within it).
    /// - Returns: `nil` if the tag does not match (then `body` is not called).
    package func open<R>(
        combined sealed: UnsafeRawBufferPointer, key: [UInt8], authenticating aad: [UInt8] = [],
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R? {
        precondition(key.count == Self.keySize && sealed.count >= Self.nonceSize + Self.tagSize)
        guard let box = try? AES.GCM.SealedBox(combined: borrowed(sealed)),
            let plain = try? AES.GCM.open(box, using: self.key(key), authenticating: aad)
        else { return nil }
        return try plain.withUnsafeBytes { try body($0) }
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

/// `bytes` as `Data` without a copy, valid while `bytes` is (the calls above use it only within).
func borrowed(_ bytes: UnsafeRawBufferPointer) -> Data {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return Data() }
    return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
}
