import CZlib

/// CRC-32 (ISO-HDLC, as in zip and gzip), computed by zlib.
public struct CRC32: Sendable {
    /// The running checksum.
    public private(set) var value: UInt32 = 0

    /// Starts a new checksum.
    public init() {}

    /// Feeds `bytes` into the checksum.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var remaining = bytes.count
        var crc = UInt(value)
        while remaining > 0 {
            let n = min(remaining, Int(UInt32.max >> 1))
            crc = crc32(crc, base, UInt32(n))
            base += n
            remaining -= n
        }
        value = UInt32(truncatingIfNeeded: crc)
    }

    /// Feeds `bytes` into the checksum.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c = CRC32()
        c.update(bytes)
        return c.value
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c = CRC32()
        c.update(bytes)
        return c.value
    }
}
