/// Little-endian reads from a buffer, for the format parsers (container header and index, zip
/// directory). A read past the end throws `.integrityFailure` ("<structure> ends early").
package struct ByteReader {
    private let base: UnsafeRawBufferPointer
    private let structure: String
    /// Bytes read so far.
    package private(set) var position = 0

    /// Reads `buffer`, naming `structure` ("container", "zip directory") in errors.
    package init(_ buffer: UnsafeRawBufferPointer, structure: String) {
        base = buffer
        self.structure = structure
    }

    /// Bytes left.
    package var remaining: Int { base.count - position }
    /// Whether every byte was read.
    package var atEnd: Bool { position == base.count }

    @inline(__always) private func need(_ n: Int) throws {
        guard n >= 0, n <= remaining else {
            throw AssetPackError(.integrityFailure, "\(structure) structure ends early")
        }
    }

    package mutating func u8() throws -> UInt8 {
        try need(1)
        defer { position += 1 }
        return base[position]
    }

    package mutating func u16() throws -> UInt16 {
        try need(2)
        defer { position += 2 }
        return UInt16(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt16.self))
    }

    package mutating func u32() throws -> UInt32 {
        try need(4)
        defer { position += 4 }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt32.self))
    }

    package mutating func u64() throws -> UInt64 {
        try need(8)
        defer { position += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// The next `n` bytes, in place (valid as long as the buffer is).
    package mutating func raw(_ n: Int) throws -> UnsafeRawBufferPointer {
        try need(n)
        defer { position += n }
        return UnsafeRawBufferPointer(rebasing: base[position..<position + n])
    }

    /// The next `n` bytes, copied.
    package mutating func bytes(_ n: Int) throws -> [UInt8] { Array(try raw(n)) }

    /// Skips `n` bytes.
    package mutating func skip(_ n: Int) throws {
        try need(n)
        position += n
    }
}
