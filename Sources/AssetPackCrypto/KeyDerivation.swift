import AssetPackCore
internal import CLibcrypto
internal import CNettle

/// Key derivation: HKDF-SHA-256 (RFC 5869) and scrypt (RFC 7914) through OpenSSL 3, PBKDF2
/// (RFC 8018) through nettle.
package enum KeyDerivation {
    /// Why a password KDF refused its parameters (scrypt: memory or cost beyond OpenSSL's limits;
    /// PBKDF2: an iteration count that is not 1 to `Int32.max`, the range the formats allow).
    package struct Refused: Error {}

    /// HKDF-Extract with SHA-256: the 32-byte pseudorandom key.
    package static func hkdfExtract(inputKeyMaterial ikm: [UInt8], salt: [UInt8]) -> [UInt8] {
        hkdf(mode: EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key: ikm, salt: salt, info: [], count: 32)
    }

    /// HKDF-Expand with SHA-256: `count` bytes of output keying material.
    package static func hkdfExpand(pseudoRandomKey prk: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        hkdf(mode: EVP_KDF_HKDF_MODE_EXPAND_ONLY, key: prk, salt: [], info: info, count: count)
    }

    /// scrypt with N = `n`, block size `r`, parallelism `p`; OpenSSL may use up to `maxMemory` bytes.
    package static func scrypt(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64, maxMemory: UInt64, count: Int
    ) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = EVP_PBE_scrypt(
            password.withUnsafeBytes { $0.baseAddress?.assumingMemoryBound(to: CChar.self) }, password.count,
            salt, salt.count, n, r, p, maxMemory, &out, count)
        guard ok == 1 else { throw Refused() }
        return out
    }

    /// PBKDF2 with HMAC-SHA-256.
    package static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, count: Int) throws -> [UInt8] {
        try pbkdf2(password: password, salt: salt, iterations: iterations, count: count, nettle_pbkdf2_hmac_sha256)
    }

    /// PBKDF2 with HMAC-SHA-1 (WinZip AES's KDF, fixed by that format: one per zip entry written or read).
    package static func pbkdf2SHA1(password: [UInt8], salt: [UInt8], iterations: Int, count: Int) throws -> [UInt8] {
        try pbkdf2(password: password, salt: salt, iterations: iterations, count: count, nettle_pbkdf2_hmac_sha1)
    }

    /// PBKDF2 through nettle, whose HMAC keeps its keyed inner and outer states and copies them per
    /// iteration: 0.67–0.71 ms for WinZip AES's 1000 iterations and 66 bytes, where OpenSSL 3.0's
    /// `PKCS5_PBKDF2_HMAC` takes 1.9–2.3 ms in a loop (docs/ARCHITECTURE.md, "PBKDF2 from
    /// nettle"). Nettle asserts a nonzero iteration count, so that is refused here first.
    private static func pbkdf2(
        password: [UInt8], salt: [UInt8], iterations: Int, count: Int,
        _ derive: (Int, UnsafePointer<UInt8>?, UInt32, Int, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) ->
            Void
    ) throws -> [UInt8] {
        guard iterations > 0, iterations <= Int(Int32.max), count >= 0 else { throw Refused() }
        var out = [UInt8](repeating: 0, count: count)
        password.withUnsafeBufferPointer { pw in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    derive(pw.count, pw.baseAddress, UInt32(iterations), s.count, s.baseAddress, o.count, o.baseAddress)
                }
            }
        }
        return out
    }

    nonisolated(unsafe) private static let hkdfAlgorithm = EVP_KDF_fetch(nil, "HKDF", nil)

    /// One HKDF call through EVP_KDF with OSSL_PARAMs; the parameter names are static strings,
    /// so the pointers OpenSSL keeps in the parameter array stay valid.
    private static func hkdf(mode: Int32, key: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        guard let algorithm = hkdfAlgorithm, let ctx = EVP_KDF_CTX_new(algorithm) else {
            allocationFailed("EVP_KDF_CTX_new(HKDF)")
        }
        defer { EVP_KDF_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: count)
        var mode = mode
        var key = key, salt = salt, info = info
        var digest = Array("SHA256".utf8CString)
        let ok = withUnsafeMutablePointer(to: &mode) { modePointer in
            key.withUnsafeMutableBytes { k in
                salt.withUnsafeMutableBytes { s in
                    info.withUnsafeMutableBytes { i in
                        digest.withUnsafeMutableBufferPointer { d in
                            var params: [OSSL_PARAM] = [
                                OSSL_PARAM_construct_utf8_string(name("digest"), d.baseAddress, 0),
                                OSSL_PARAM_construct_int(name("mode"), modePointer),
                                OSSL_PARAM_construct_octet_string(name("key"), k.baseAddress, k.count),
                            ]
                            if s.count > 0 {
                                params.append(OSSL_PARAM_construct_octet_string(name("salt"), s.baseAddress, s.count))
                            }
                            if i.count > 0 {
                                params.append(OSSL_PARAM_construct_octet_string(name("info"), i.baseAddress, i.count))
                            }
                            params.append(OSSL_PARAM_construct_end())
                            return EVP_KDF_derive(ctx, &out, count, &params)
                        }
                    }
                }
            }
        }
        guard ok == 1 else { allocationFailed("EVP_KDF_derive(HKDF)") }
        return out
    }

    /// A C string that lives for the whole process.
    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
