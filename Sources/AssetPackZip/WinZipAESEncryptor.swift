import AssetPackCore
import AssetPackCrypto

// The writing side of WinZip AES (AE-1/AE-2), composed from OpenSSL primitives through
// AssetPackCrypto: PBKDF2-HMAC-SHA1 (1000 iterations) for the keys, AES blocks over WinZip's
// little-endian counter (starting at 1) for the keystream, HMAC-SHA1 over the ciphertext
// truncated to 10 bytes for the MAC. Nothing here is a cipher of its own.

/// The keys of one WinZip AES entry, derived from the password and the entry's salt.
struct WinZipAESEntryKeys {
    /// The salt stored first in the entry's data.
    let salt: [UInt8]
    /// The 2-byte password verifier stored after the salt.
    let verifier: [UInt8]
    /// The AES key (32 bytes for AES-256).
    let encryptionKey: [UInt8]
    /// The HMAC-SHA1 key.
    let macKey: [UInt8]

    /// Derives the keys with PBKDF2-HMAC-SHA1, 1000 iterations (~0.5 ms).
    /// - Throws: `.unsupportedFormat` if OpenSSL refuses (it does not for these parameters).
    init(password: [UInt8], salt: [UInt8], strength: WinZipAESKeyStrength = .aes256) throws {
        precondition(salt.count == strength.saltLength)
        let n = strength.keyLength
        var derived = try WinZipAES.derive(password: password, salt: salt, strength: strength)
        defer { derived.withUnsafeMutableBytes { wipeMemory($0) } }
        self.salt = salt
        encryptionKey = Array(derived[0..<n])
        macKey = Array(derived[n..<(2 * n)])
        verifier = Array(derived[(2 * n)...])
    }

    /// Bytes before the ciphertext: salt and verifier.
    var header: [UInt8] { salt + verifier }
}

/// WinZip AES counter-mode keystream that can start anywhere in an entry: the block counter is
/// little-endian and block `k` of the entry (bytes `16k ..< 16k+16`) is encrypted with counter
/// `k + 1`. Pieces of one entry can therefore be encrypted on different threads, each with its
/// own instance. One thread at a time per instance.
final class WinZipAESCounterKeystream {
    /// Keystream generated per AES call: 1024 blocks.
    private static let batchBytes = 16 << 10
    private let cipher: AESBlockEncryptor
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: batchBytes, alignment: 64)
    /// Where the next ``apply(_:)`` continues.
    private(set) var offset: UInt64

    /// - Parameters:
    ///   - key: The entry's AES key.
    ///   - offset: The byte of the entry's ciphertext the first ``apply(_:)`` starts at.
    init(key: [UInt8], offset: UInt64 = 0) throws {
        cipher = try key.withUnsafeBytes { try AESBlockEncryptor(key: $0) }
        self.offset = offset
    }

    deinit {
        wipeMemory(scratch)
        scratch.deallocate()
    }

    /// XORs `buffer` with the keystream at ``offset`` (encrypts or decrypts in place) and moves on.
    func apply(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        var done = 0
        while done < buffer.count {
            let skip = Int(offset % 16)
            let wanted = min(Self.batchBytes - skip, buffer.count - done)
            let blocks = (skip + wanted + 15) / 16
            var counter = offset / 16 + 1
            for i in 0..<blocks {
                scratch.storeBytes(of: counter.littleEndian, toByteOffset: 16 * i, as: UInt64.self)
                scratch.storeBytes(of: 0, toByteOffset: 16 * i + 8, as: UInt64.self)
                counter += 1
            }
            cipher.encryptBlocks(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<(16 * blocks)]))
            xorBytes(base + done, scratch.baseAddress! + skip, wanted)
            done += wanted
            offset += UInt64(wanted)
        }
    }
}

/// Encrypts a whole entry held in memory: `buffer` is laid out as the entry's stored data,
/// `salt | verifier | payload | MAC`, with the plaintext payload in place; on return it holds
/// the ciphertext and the MAC.
func winZipAESSeal(_ buffer: UnsafeMutableRawBufferPointer, keys: WinZipAESEntryKeys) throws {
    let head = keys.salt.count + WinZipAES.verifierLength
    let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[head..<(buffer.count - WinZipAES.macLength)])
    let header = keys.header
    header.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: head) }
    try WinZipAESCounterKeystream(key: keys.encryptionKey).apply(payload)
    let mac = try keys.macKey.withUnsafeBytes { try HMACSHA1Stream(key: $0) }
    mac.update(UnsafeRawBufferPointer(payload))
    let tag = mac.finalize()
    for i in 0..<WinZipAES.macLength { buffer[buffer.count - WinZipAES.macLength + i] = tag[i] }
}
