import AssetPackCore
import Crypto
import CryptoExtras
import Foundation

/// Key derivation through swift-crypto: HKDF-SHA-256 (RFC 5869), scrypt (RFC 7914) and PBKDF2
/// (RFC 8018) with HMAC-SHA-256 or HMAC-SHA-1.
package enum KeyDerivation {
    /// Why a password KDF refused its parameters (scrypt: memory or cost beyond the limits given;
    /// PBKDF2: an iteration count that is not 1 to `Int32.max`, the range the formats allow).
    package struct Refused: Error {}

    /// HKDF-Extract with SHA-256: the 32-byte pseudorandom key.
    package static func hkdfExtract(inputKeyMaterial ikm: [UInt8], salt: [UInt8]) -> [UInt8] {
        Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt))
    }

    /// HKDF-Expand with SHA-256: `count` bytes of output keying material.
    package static func hkdfExpand(pseudoRandomKey prk: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        bytes(HKDF<SHA256>.expand(pseudoRandomKey: prk, info: info, outputByteCount: count))
    }

    /// scrypt with N = `n`, block size `r`, parallelism `p`, using at most `maxMemory` bytes.
    package static func scrypt(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64, maxMemory: UInt64, count: Int
    ) throws -> [UInt8] {
        guard n <= UInt64(Int.max), r <= UInt64(Int.max), p <= UInt64(Int.max), maxMemory <= UInt64(Int.max) else {
            throw Refused()
        }
        // swift-crypto 4.5.2's `KDF.Scrypt.deriveKey` does not pass `maxMemory` on (it gives
        // BoringSSL 128·N·r·p plus a page, whatever is asked), so the bound is checked here, as
        // BoringSSL would: N + p + 1 blocks of 128·r bytes.
        let (blocks, o1) = n.addingReportingOverflow(p &+ 1)
        let (blockBytes, o2) = r.multipliedReportingOverflow(by: 128)
        let (needed, o3) = blocks.multipliedReportingOverflow(by: blockBytes)
        guard p < .max, !o1, !o2, !o3, needed <= maxMemory else { throw Refused() }
        do {
            return bytes(
                try KDF.Scrypt.deriveKey(
                    from: password, salt: salt, outputByteCount: count, rounds: Int(n), blockSize: Int(r),
                    parallelism: Int(p), maxMemory: Int(maxMemory)))
        } catch { throw Refused() }
    }

    /// PBKDF2 with HMAC-SHA-256.
    package static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, count: Int) throws -> [UInt8] {
        try pbkdf2(password: password, salt: salt, iterations: iterations, count: count, hash: .sha256)
    }

    /// PBKDF2 with HMAC-SHA-1 (WinZip AES's KDF, fixed by that format: one per zip entry written or read).
    package static func pbkdf2SHA1(password: [UInt8], salt: [UInt8], iterations: Int, count: Int) throws -> [UInt8] {
        try pbkdf2(password: password, salt: salt, iterations: iterations, count: count, hash: .insecureSHA1)
    }

    /// PBKDF2 through swift-crypto's `KDF.Insecure.PBKDF2` with the iteration count the format
    /// names (`unsafeUncheckedRounds`: the formats fix it, WinZip AES at 1000); 0.43 ms for
    /// WinZip AES's 1000 iterations and 66 bytes here, as fast as nettle was and four times
    /// OpenSSL 3.0's `PKCS5_PBKDF2_HMAC` (docs/PERFORMANCE.md, "swift-crypto").
    private static func pbkdf2(
        password: [UInt8], salt: [UInt8], iterations: Int, count: Int, hash: KDF.Insecure.PBKDF2.HashFunction
    ) throws -> [UInt8] {
        guard iterations > 0, iterations <= Int(Int32.max), count >= 0 else { throw Refused() }
        if count == 0 { return [] }
        do {
            return bytes(
                try KDF.Insecure.PBKDF2.deriveKey(
                    from: password, salt: salt, using: hash, outputByteCount: count, unsafeUncheckedRounds: iterations))
        } catch { throw Refused() }
    }

    private static func bytes(_ key: SymmetricKey) -> [UInt8] { key.withUnsafeBytes { Array($0) } }
}
