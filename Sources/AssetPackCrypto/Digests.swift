import AssetPackCore
import Crypto
import Foundation

/// SHA-256 (FIPS 180-4), incremental, through swift-crypto.
package final class SHA256Hasher {
    private var hasher = SHA256()

    package init() {}

    /// Starts over, as a new hasher.
    package func reset() { hasher = SHA256() }

    /// Adds `bytes` to the hash.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        hasher.update(bufferPointer: bytes)
    }

    /// Adds `bytes` to the hash.
    package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// SHA-256 of `bytes`.
    package static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// SHA-256 of `bytes`.
    package static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var one = SHA256()
        if bytes.count > 0 { one.update(bufferPointer: bytes) }
        return Array(one.finalize())
    }

    /// The 32-byte digest of what was added; the hasher must be reset before it is used again.
    package func finalize() -> [UInt8] { Array(hasher.finalize()) }
}

extension SHA256Hasher {
    /// SHA-256 of the bytes `range` of the file open as `fd`, read in 1 MiB pieces.
    /// - Throws: `.io` (naming `path`) when a read fails or ends early.
    package static func digest(of fd: FileDescriptor, _ range: Range<UInt64>, path: String) throws -> [UInt8] {
        try digest(of: FileByteSource(borrowing: fd, name: path, size: range.upperBound), range)
    }

    /// SHA-256 of `prefix` followed by the bytes `range` of `source`, read in 1 MiB pieces.
    /// - Throws: What the source throws.
    package static func digest(of source: any ByteSource, _ range: Range<UInt64>, after prefix: [UInt8] = [])
        throws -> [UInt8]
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(min(1 << 20, max(1, range.count))), alignment: 64)
        defer { buffer.deallocate() }
        let hasher = SHA256Hasher()
        hasher.update(prefix)
        var at = range.lowerBound
        while at < range.upperBound {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: buffer[0..<Int(min(UInt64(buffer.count), range.upperBound - at))])
            try source.readExactly(into: piece, at: at)
            hasher.update(UnsafeRawBufferPointer(piece))
            at += UInt64(piece.count)
        }
        return hasher.finalize()
    }
}

/// HMAC-SHA-256 (RFC 2104), through swift-crypto.
package enum HMACSHA256 {
    /// The 32-byte authentication code of `data` under `key`.
    package static func authenticationCode(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// Whether `code` is the authentication code of `data` under `key`, compared in constant time.
    package static func isValid(_ code: [UInt8], for data: [UInt8], key: [UInt8]) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: data, using: SymmetricKey(data: key))
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
package func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.count == b.count
        && a.withUnsafeBytes { x in b.withUnsafeBytes { y in constantTimeEqual(x, y, count: a.count) } }
}

/// `count` bytes from the system's cryptographically secure generator (`getrandom` on Linux,
/// `SecRandomCopyBytes` on Apple platforms: Swift's `SystemRandomNumberGenerator`).
package func secureRandomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var at = 0
        while at < count {
            var word = generator.next()
            let take = min(8, count - at)
            withUnsafeBytes(of: &word) {
                buffer.baseAddress!.advanced(by: at).update(
                    from: $0.bindMemory(to: UInt8.self).baseAddress!, count: take)
            }
            at += take
        }
        initialized = count
    }
}
