import AssetPackCore
import AssetPackCrypto
#if SystemLibraries
import CLibcrypto
#endif
import Testing

/// PBKDF2 through swift-crypto: the RFCs' vectors, agreement with OpenSSL's PKCS5_PBKDF2_HMAC (an
/// independent implementation) on generated inputs, and the refusals of counts the formats never allow.
@Suite struct KeyDerivationTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var password: [UInt8]
        var salt: [UInt8]
        var iterations: Int
        var derived: String
        var testDescription: String { name }
    }

    /// RFC 6070, PBKDF2-HMAC-SHA1 (the 16,777,216-iteration case left out for time).
    static let sha1Vectors = [
        Vector(
            name: "c=1", password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1,
            derived: "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
        Vector(
            name: "c=2", password: Array("password".utf8), salt: Array("salt".utf8), iterations: 2,
            derived: "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
        Vector(
            name: "c=4096", password: Array("password".utf8), salt: Array("salt".utf8), iterations: 4096,
            derived: "4b007901b765489abead49d926f721d065a429c1"),
        Vector(
            name: "c=4096, 25 bytes", password: Array("passwordPASSWORDpassword".utf8),
            salt: Array("saltSALTsaltSALTsaltSALTsaltSALTsalt".utf8), iterations: 4096,
            derived: "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"),
        Vector(
            name: "NUL bytes", password: Array("pass\0word".utf8), salt: Array("sa\0lt".utf8), iterations: 4096,
            derived: "56fa6aa75548099dcc37d7f03425e0c3"),
    ]

    /// RFC 7914, section 11, PBKDF2-HMAC-SHA256.
    static let sha256Vectors = [
        Vector(
            name: "c=1", password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1,
            derived: "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"),
        Vector(
            name: "c=80000", password: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 80000,
            derived: "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
                + "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"),
    ]

    @Test(arguments: sha1Vectors)
    func sha1MatchesRFC6070(_ v: Vector) throws {
        let out = try KeyDerivation.pbkdf2SHA1(
            password: v.password, salt: v.salt, iterations: v.iterations, count: v.derived.utf8.count / 2)
        #expect(hex(out) == v.derived)
    }

    @Test(arguments: sha256Vectors)
    func sha256MatchesRFC7914(_ v: Vector) throws {
        let out = try KeyDerivation.pbkdf2SHA256(
            password: v.password, salt: v.salt, iterations: v.iterations, count: v.derived.utf8.count / 2)
        #expect(hex(out) == v.derived)
    }

    #if SystemLibraries  // OpenSSL is the independent implementation compared against
    /// Lengths that are and are not a multiple of the digest (WinZip AES-256 asks for 66 bytes, four
    /// SHA-1 blocks, the last cut), empty and long passwords and salts, against OpenSSL.
    @Test func agreesWithOpenSSLOnGeneratedInputs() throws {
        var rng = SplitMix64(seed: 0x9BDF_25A1)
        for round in 0..<60 {
            let password = (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let salt = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let iterations = Int.random(in: 1...1200, using: &rng)
            let count = [1, 16, 20, 21, 32, 40, 66, 100][round % 8]
            for sha256 in [false, true] {
                let ours =
                    sha256
                    ? try KeyDerivation.pbkdf2SHA256(
                        password: password, salt: salt, iterations: iterations, count: count)
                    : try KeyDerivation.pbkdf2SHA1(password: password, salt: salt, iterations: iterations, count: count)
                var theirs = [UInt8](repeating: 0, count: count)
                let ok = password.withUnsafeBytes { pw in
                    PKCS5_PBKDF2_HMAC(
                        pw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(pw.count), salt, Int32(salt.count),
                        Int32(iterations), sha256 ? EVP_sha256() : EVP_sha1(), Int32(count), &theirs)
                }
                #expect(ok == 1)
                #expect(
                    ours == theirs, "round \(round), SHA-\(sha256 ? 256 : 1), \(iterations) iterations, \(count) bytes")
            }
        }
    }

    /// Empty passwords and salts (arrays whose buffers may have no base address), against OpenSSL.
    @Test(arguments: [([UInt8](), [UInt8]()), ([], [1, 2, 3]), ([7, 8], [])])
    func emptyPasswordsAndSaltsAgreeWithOpenSSL(password: [UInt8], salt: [UInt8]) throws {
        for (sha256, count) in [(false, 20), (true, 32), (false, 66)] {
            let ours =
                sha256
                ? try KeyDerivation.pbkdf2SHA256(password: password, salt: salt, iterations: 3, count: count)
                : try KeyDerivation.pbkdf2SHA1(password: password, salt: salt, iterations: 3, count: count)
            var theirs = [UInt8](repeating: 0, count: count)
            let ok = password.withUnsafeBytes { pw in
                salt.withUnsafeBytes { s in
                    PKCS5_PBKDF2_HMAC(
                        pw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(pw.count),
                        s.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(s.count), 3,
                        sha256 ? EVP_sha256() : EVP_sha1(), Int32(count), &theirs)
                }
            }
            #expect(ok == 1)
            #expect(ours == theirs, "SHA-\(sha256 ? 256 : 1), \(count) bytes")
        }
    }

    #endif

    /// Zero or negative iterations (which nettle, used before, aborted on) are refused first.
    @Test func refusesIterationCountsNettleWouldAbortOn() throws {
        for iterations in [0, -1, Int(Int32.max) + 1] {
            #expect(throws: KeyDerivation.Refused.self) {
                try KeyDerivation.pbkdf2SHA1(password: [1], salt: [2], iterations: iterations, count: 20)
            }
            #expect(throws: KeyDerivation.Refused.self) {
                try KeyDerivation.pbkdf2SHA256(password: [1], salt: [2], iterations: iterations, count: 32)
            }
        }
        #expect(try KeyDerivation.pbkdf2SHA1(password: [1], salt: [2], iterations: 1, count: 0).isEmpty)
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
