import AssetPackCore
import AssetPackCrypto
import Foundation

/// WinZip AES key strength, as named by the `0x9901` extra field and by libzip.
package enum WinZipAESKeyStrength: UInt8, Sendable, CaseIterable {
    /// AES-128: 8-byte salt.
    case aes128 = 1
    /// AES-192: 12-byte salt.
    case aes192 = 2
    /// AES-256: 16-byte salt.
    case aes256 = 3

    /// The strength from the `0x9901` extra field's strength byte (1, 2 or 3).
    package init?(strengthByte: UInt8) { self.init(rawValue: strengthByte) }

    /// The strength from a libzip encryption method (`ZIP_EM_AES_128/192/256`), `nil` for others.
    package init?(libzipMethod: UInt16) {
        // ZIP_EM_AES_128/192/256 are 0x0101-0x0103: 0x0100 plus the strength byte.
        guard libzipMethod >> 8 == 1, let strength = Self(rawValue: UInt8(truncatingIfNeeded: libzipMethod)) else {
            return nil
        }
        self = strength
    }

    /// AES key length in bytes (16, 24, 32).
    package var keyLength: Int { 8 + 8 * Int(rawValue) }
    /// Salt length in bytes (8, 12, 16): half the key length.
    package var saltLength: Int { keyLength / 2 }
    /// Bytes before the ciphertext: salt and the 2-byte password verifier.
    package var headerLength: Int { saltLength + WinZipAES.verifierLength }
    /// Bytes an entry's stored data adds to its (compressed) payload: header and MAC.
    package var overhead: Int { headerLength + WinZipAES.macLength }
    /// The matching libzip method (`ZIP_EM_AES_*`).
    package var libzipMethod: UInt16 { UInt16(0x0100 + Int(rawValue)) }
    /// The matching entry encryption.
    package var entryEncryption: EntryEncryption {
        switch self {
        case .aes128: .aes128
        case .aes192: .aes192
        case .aes256: .aes256
        }
    }
}

/// Constants of the WinZip AES format (AE-1/AE-2).
package enum WinZipAES {
    /// PBKDF2-HMAC-SHA1(password, salt, 1000) → encryption key ‖ MAC key ‖ 2-byte verifier, the
    /// derivation both the reader and the writer run. The caller wipes the result (`wipeMemory`).
    /// - Throws: `.unsupportedFormat` if the KDF refuses (it does not for these parameters).
    package static func derive(password: [UInt8], salt: [UInt8], strength: WinZipAESKeyStrength) throws -> [UInt8] {
        do {
            return try KeyDerivation.pbkdf2SHA1(
                password: password, salt: salt, iterations: Int(iterations),
                count: 2 * strength.keyLength + verifierLength)
        } catch {
            throw AssetPackError(.unsupportedFormat, "PBKDF2-HMAC-SHA1 refused its parameters")
        }
    }

    /// Length of the password verifier stored after the salt.
    package static let verifierLength = 2
    /// Length of the stored MAC: the first 10 bytes of HMAC-SHA1 over the ciphertext.
    package static let macLength = 10
    /// PBKDF2-HMAC-SHA1 iteration count fixed by the format.
    package static let iterations: Int32 = 1000
}

/// Decrypts and authenticates one WinZip AES entry's ciphertext with OpenSSL bulk primitives.
///
/// Keys come from PBKDF2-HMAC-SHA1 (1000 iterations); the keystream is AES-ECB over
/// WinZip's little-endian counter blocks (starting at 1), generated in 16 KiB batches;
/// the MAC is HMAC-SHA1 over the ciphertext. ``decrypt(_:)`` may be called with pieces
/// of any length: the MAC and the counter carry on across calls.
///
/// The two halves are separate objects, ``WinZipAESKeystream`` and ``WinZipAESAuthenticator``,
/// each with its own OpenSSL context. A reader that authenticates on one thread and decrypts
/// on another takes them apart with ``split()`` and gives each thread the half it owns.
/// Copies of a decryptor share both halves: use one value per entry, on one thread.
package struct WinZipAESDecryptor {
    private let keystream: WinZipAESKeystream
    private let authenticator: WinZipAESAuthenticator

    /// Derives the entry's keys and checks the password verifier.
    /// - Parameters:
    ///   - password: The password bytes (UTF-8 as the archive's writer encoded them).
    ///   - strength: The entry's key strength.
    ///   - salt: The salt stored at the start of the entry's data (`strength.saltLength` bytes).
    ///   - verifier: The 2-byte password verifier stored after the salt.
    /// - Throws: `.wrongPassword` when the verifier does not match (a wrong password passes
    ///   this check with probability 1/65536 and then fails the MAC); `.integrityFailure`
    ///   for a salt or verifier of the wrong length; `.unsupportedFormat` if OpenSSL fails.
    package init(password: [UInt8], strength: WinZipAESKeyStrength, salt: [UInt8], verifier: [UInt8]) throws {
        guard salt.count == strength.saltLength, verifier.count == WinZipAES.verifierLength else {
            throw AssetPackError(.integrityFailure, "WinZip AES header has the wrong length")
        }
        let keyLength = strength.keyLength
        var derived = try WinZipAES.derive(password: password, salt: salt, strength: strength)
        defer { derived.withUnsafeMutableBytes { wipeMemory($0) } }
        let check = derived.withUnsafeBytes { d in
            verifier.withUnsafeBytes {
                constantTimeEqual(UnsafeRawBufferPointer(rebasing: d[(2 * keyLength)...]), $0, count: 2)
            }
        }
        guard check else { throw AssetPackError(.wrongPassword, "wrong password") }
        (keystream, authenticator) = try derived.withUnsafeBytes { d in
            (
                try WinZipAESKeystream(strength: strength, key: UnsafeRawBufferPointer(rebasing: d[0..<keyLength])),
                try WinZipAESAuthenticator(key: UnsafeRawBufferPointer(rebasing: d[keyLength..<2 * keyLength]))
            )
        }
    }

    /// Authenticates then decrypts `buffer` in place (HMAC over the ciphertext, XOR with keystream).
    ///
    /// Pieces may have any length; the keystream continues where the previous call stopped.
    /// Must not be called after ``verify(mac:)``.
    package func decrypt(_ buffer: UnsafeMutableRawBufferPointer) {
        authenticator.authenticate(UnsafeRawBufferPointer(buffer))
        keystream.apply(buffer)
    }

    /// Feeds ciphertext to the MAC without decrypting it (after an error, when only the MAC is still wanted).
    package func authenticateOnly(_ buffer: UnsafeRawBufferPointer) {
        authenticator.authenticate(buffer)
    }

    /// Checks the stored 10-byte MAC against the HMAC-SHA1 of all ciphertext seen so far.
    /// - Throws: `.integrityFailure` ("HMAC mismatch…") when they differ.
    package func verify(mac: [UInt8]) throws {
        try authenticator.verify(mac: mac)
    }

    /// The two halves, for a caller that runs them on different threads. Use only the halves afterwards.
    package consuming func split() -> (keystream: WinZipAESKeystream, authenticator: WinZipAESAuthenticator) {
        (keystream, authenticator)
    }
}

/// The decrypting half of a WinZip AES entry: an AES-ECB context and the counter-mode keystream.
/// Not thread-safe: one thread at a time.
package final class WinZipAESKeystream {
    /// Keystream generated per AES call: 1024 blocks.
    static let batchBytes = 16 << 10

    private let cipher: AESBlockEncryptor
    private let keystream = UnsafeMutableRawPointer.allocate(byteCount: batchBytes, alignment: 64)
    private var counter: UInt64 = 0  // last counter block used
    private var position = 0  // next unused keystream byte
    private var available = 0  // keystream bytes generated
    /// The key, for the encryptors of a parallel ``apply(_:)`` (swift-crypto backend only).
    private var key: [UInt8]
    /// A buffer at least this large is decrypted on every core (`nil`: never).
    package var parallelThreshold: Int?

    /// Below this, one more thread costs more than it saves.
    static let parallelSegment = 64 << 10

    /// A keystream under `key` (the entry's AES key), its counter at 1.
    package init(strength: WinZipAESKeyStrength, key: UnsafeRawBufferPointer) throws {
        precondition(key.count == strength.keyLength)
        cipher = try AESBlockEncryptor(key: key)
        self.key = Array(key)
        // swift-crypto's keystream (the portable build's: CFB over counter blocks) runs at a
        // sixth of libcrypto's ECB on one core, so it is worth spreading across cores;
        // libcrypto's is not the bottleneck (the MAC is).
        parallelThreshold =
            AESBlockEncryptor.Backend.preferred == .swiftCrypto && ProcessInfo.processInfo.activeProcessorCount > 1
            ? 2 * Self.parallelSegment : nil
    }

    deinit {
        wipeMemory(UnsafeMutableRawBufferPointer(start: keystream, count: Self.batchBytes))
        keystream.deallocate()
        key.withUnsafeMutableBytes { wipeMemory($0) }
    }

    /// XORs `buffer` with the next keystream bytes (decrypts or encrypts in place).
    package func apply(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let p = buffer.baseAddress else { return }
        let count = buffer.count
        var done = 0
        while done < count {
            if position == available {
                if let threshold = parallelThreshold, count - done >= threshold {
                    let blocks = (count - done) / 16
                    applyOnEveryCore(p + done, blocks: blocks)
                    done += 16 * blocks
                    continue
                }
                refill(blocks: min(Self.batchBytes, count - done + 15) / 16)
            }
            let n = min(count - done, available - position)
            xorBytes(p + done, keystream + position, n)
            position += n
            done += n
        }
    }

    /// XORs `blocks` whole blocks at `p` with the keystream's next blocks, the range split
    /// across the cores, each part with an encryptor and batch of its own. Same bytes as the
    /// sequential path (the counter is a pure function of the block's position).
    private func applyOnEveryCore(_ p: UnsafeMutableRawPointer, blocks: Int) {
        let first = counter + 1
        let parts = min(ProcessInfo.processInfo.activeProcessorCount, max(1, 16 * blocks / Self.parallelSegment))
        let perPart = (blocks + parts - 1) / parts
        let key = self.key
        nonisolated(unsafe) let p = p  // each part writes its own blocks only
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let start = part * perPart
            let end = min(blocks, start + perPart)
            guard start < end else { return }
            let batch = UnsafeMutableRawPointer.allocate(byteCount: Self.batchBytes, alignment: 64)
            defer {
                wipeMemory(UnsafeMutableRawBufferPointer(start: batch, count: Self.batchBytes))
                batch.deallocate()
            }
            // A valid key of a valid length: the sequential encryptor was made from it.
            let cipher = try! key.withUnsafeBytes { try AESBlockEncryptor(key: $0) }
            var block = start
            while block < end {
                let n = min(Self.batchBytes / 16, end - block)
                for i in 0..<n {
                    batch.storeBytes(
                        of: (first + UInt64(block + i)).littleEndian, toByteOffset: 16 * i, as: UInt64.self)
                    batch.storeBytes(of: 0, toByteOffset: 16 * i + 8, as: UInt64.self)
                }
                cipher.encryptBlocks(UnsafeMutableRawBufferPointer(start: batch, count: 16 * n))
                xorBytes(p + 16 * block, batch, 16 * n)
                block += n
            }
        }
        counter += UInt64(blocks)
    }

    /// Encrypts the next `blocks` little-endian counter blocks into the keystream buffer.
    private func refill(blocks: Int) {
        for i in 0..<blocks {
            counter += 1
            keystream.storeBytes(of: counter.littleEndian, toByteOffset: 16 * i, as: UInt64.self)
            keystream.storeBytes(of: 0, toByteOffset: 16 * i + 8, as: UInt64.self)
        }
        cipher.encryptBlocks(UnsafeMutableRawBufferPointer(start: keystream, count: 16 * blocks))
        position = 0
        available = 16 * blocks
    }
}

/// The authenticating half of a WinZip AES entry: HMAC-SHA1 over the ciphertext.
/// Not thread-safe: one thread at a time.
package final class WinZipAESAuthenticator {
    private let mac: HMACSHA1Stream
    private var tag: [UInt8]?

    init(key: UnsafeRawBufferPointer) throws {
        mac = try HMACSHA1Stream(key: key)
    }

    /// Feeds ciphertext to the MAC.
    package func authenticate(_ buffer: UnsafeRawBufferPointer) {
        guard let p = buffer.baseAddress, buffer.count > 0 else { return }
        precondition(tag == nil, "WinZip AES: data fed after the MAC was finalised")
        mac.update(UnsafeRawBufferPointer(start: p, count: buffer.count))
    }

    /// Checks the stored 10-byte MAC against the HMAC-SHA1 of all ciphertext seen so far.
    /// - Throws: `.integrityFailure` when they differ.
    package func verify(mac stored: [UInt8]) throws {
        let computed = finalMAC()
        // The count first: constantTimeEqual requires both buffers to hold `count` bytes.
        let equal =
            stored.count == WinZipAES.macLength
            && computed.withUnsafeBytes { c in
                stored.withUnsafeBytes { constantTimeEqual(c, $0, count: WinZipAES.macLength) }
            }
        guard equal else {
            throw AssetPackError(
                .integrityFailure, "HMAC mismatch: the entry's encrypted data is corrupt or was modified")
        }
    }

    /// The full 20-byte HMAC-SHA1, computed on first use.
    private func finalMAC() -> [UInt8] {
        if let tag { return tag }
        let out = mac.finalize()
        tag = out
        return out
    }
}

/// `dst[i] ^= src[i]` for `count` bytes, 8 bytes per word in an unrolled loop LLVM vectorises
/// (the keystream XOR of both the decoder and the encoder).
@inline(__always)
func xorBytes(_ dst: UnsafeMutableRawPointer, _ src: UnsafeRawPointer, _ count: Int) {
    var i = 0
    while i + 32 <= count {
        let a =
            dst.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            ^ src.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        let b =
            dst.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
            ^ src.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
        let c =
            dst.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
            ^ src.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
        let d =
            dst.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
            ^ src.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
        dst.storeBytes(of: a, toByteOffset: i, as: UInt64.self)
        dst.storeBytes(of: b, toByteOffset: i + 8, as: UInt64.self)
        dst.storeBytes(of: c, toByteOffset: i + 16, as: UInt64.self)
        dst.storeBytes(of: d, toByteOffset: i + 24, as: UInt64.self)
        i += 32
    }
    while i < count {
        dst.storeBytes(
            of: dst.load(fromByteOffset: i, as: UInt8.self) ^ src.load(fromByteOffset: i, as: UInt8.self),
            toByteOffset: i, as: UInt8.self)
        i += 1
    }
}
