import AssetPackCore

/// One entry as the reader sees it: public metadata plus where its chunks are.
package struct ContainerEntry: Sendable {
    /// Public metadata.
    let info: EntryInfo
    /// The entry id: its position in the index (version 1 binds it into key and nonces).
    let id: UInt32
    /// Version 2: the random id its key derives from.
    let keyID: [UInt8]?
    /// Versions 2 to 7: SHA-256 of the entry's plaintext (what an incremental re-pack compares;
    /// from version 8 in the digest section, ``PackDigests``).
    var sha256: [UInt8]?
    /// File offset of chunk 0.
    let offset: UInt64
    /// Number of chunks (at least one; an empty entry has one empty chunk).
    let chunkCount: Int
    /// For entries with deflated chunks, `chunkCount + 1` chunk start offsets relative to
    /// `offset`; `nil` when every chunk is stored (then chunks sit at a fixed stride). Versions 1–3.
    let starts: [UInt64]?
    /// Where the entry's chunks start in the reader's ``ChunkTable`` (version 4) and in a
    /// signature's list of chunks (every version).
    var firstChunk = 0
    /// Version 4: the codec of its compressed chunks; `nil` for versions 1–3 (deflate).
    var codec: ChunkCodec? = nil
    /// Version 4: its largest sealed chunk (payload and tag), what a read of it reads at once.
    var largestChunk = 0
    /// Version 4: its chunk scale (``ChunkingParameters/largeScale`` for compressed entries),
    /// which a re-pack that keeps the entry whole records again.
    var scale: UInt8 = 0
}

/// What a version-2 writer recorded about one entry (kept for the index encoder the tests use).
struct IndexRecord {
    var path: String
    var size: UInt64
    var crc: UInt32
    /// The random id the entry's key derives from.
    var keyID: [UInt8]
    /// SHA-256 of the plaintext.
    var sha256: [UInt8]
    /// Per-chunk payload length, bit 31 set for a deflated chunk; `nil` when every chunk is stored.
    var chunkLengths: [UInt32]?
}

/// The index plaintext: `u32 count`, then per entry `u16 pathLength, path (UTF-8), u64 size,
/// u32 crc32, u8 flags`, in version 2 `keyID[16], sha256[32]`, and, when flags bit 0 is set,
/// `u32` per chunk (payload length, bit 31 = deflated).
package enum ContainerIndex {
    static let deflatedBit: UInt32 = 0x8000_0000

    /// The version-2 index of `records`.
    static func encode(_ records: [IndexRecord]) -> [UInt8] {
        var w = ByteWriter()
        w.u32(UInt32(records.count))
        for r in records {
            w.u16(UInt16(r.path.utf8.count))
            w.out.append(contentsOf: r.path.utf8)
            w.u64(r.size)
            w.u32(r.crc)
            w.u8(r.chunkLengths == nil ? 0 : 1)
            w.bytes(r.keyID)
            w.bytes(r.sha256)
            for l in r.chunkLengths ?? [] { w.u32(l) }
        }
        return w.out
    }

    /// The next entry's path (`u16` length, UTF-8 bytes), which must be non-empty, valid UTF-8
    /// and, unless it is the `first`, after `previous` in byte order (so no path is repeated).
    static func nextPath(_ r: inout ByteReader, after previous: inout UnsafeRawBufferPointer, first: Bool) throws
        -> String
    {
        let name = try r.raw(Int(try r.u16()))
        guard name.count > 0, first || previous.lexicographicallyPrecedes(name) else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (paths empty, unsorted or repeated)")
        }
        previous = name
        guard let path = String(validating: name, as: UTF8.self) else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (path is not UTF-8)")
        }
        return path
    }

    /// Parses and validates the index. Every offset is derived, never read: entries tile
    /// `[headerSize, dataEnd)` exactly, in id order.
    package static func decode(
        _ buf: UnsafeRawBufferPointer, version: UInt8 = ContainerFormat.version, chunkShift: UInt8, dataEnd: UInt64,
        limits: ReadLimits
    ) throws -> [ContainerEntry] {
        func corrupt(_ why: String, _ path: String? = nil) -> AssetPackError {
            AssetPackError(.integrityFailure, "container index is corrupt (\(why))", path: path)
        }
        var r = ByteReader(buf, structure: "container")
        let count = Int(try r.u32())
        try limits.checkDeclaredEntries(UInt64(count))
        let v2 = version >= 2
        let perEntry = v2 ? 16 + ContainerFormat.keyIDSize + 32 : 16
        guard count <= r.remaining / perEntry else { throw corrupt("entry count") }
        let cs = UInt64(1) << chunkShift
        let tag = UInt64(ContainerFormat.tagSize)
        var out: [ContainerEntry] = []
        out.reserveCapacity(count)
        var pos = UInt64(ContainerFormat.headerSize)
        var previous = UnsafeRawBufferPointer(start: nil, count: 0)
        var firstChunk = 0  // where the record's chunks start in a signature's list
        for id in 0..<count {
            let path = try ContainerIndex.nextPath(&r, after: &previous, first: id == 0)
            let size = try r.u64(), crc = try r.u32(), flags = try r.u8()
            let keyID = v2 ? try r.bytes(ContainerFormat.keyIDSize) : nil
            let sha256 = v2 ? try r.bytes(32) : nil
            // The per-entry limits are the reader's, checked when the entry is read (ReadLimits.check).
            guard size <= UInt64(Int.max >> 1) else { throw corrupt("entry size", path) }
            let chunks = size == 0 ? 1 : (size - 1) >> chunkShift + 1
            guard chunks <= UInt64(UInt32.max) + 1 else { throw corrupt("too many chunks", path) }
            var stored: UInt64
            var starts: [UInt64]? = nil
            switch flags {
            case 0:
                let (s, o) = size.addingReportingOverflow(chunks * tag)
                guard !o else { throw corrupt("size", path) }
                stored = s
            case 1:
                guard chunks <= UInt64(r.remaining / 4) else { throw corrupt("chunk table", path) }
                var s: [UInt64] = [0]
                s.reserveCapacity(Int(chunks) + 1)
                var payload: UInt64 = 0
                var anyDeflated = false
                for c in 0..<chunks {
                    let v = try r.u32()
                    let n = UInt64(v & ~deflatedBit)
                    let plain = min(cs, size - c * cs)
                    if v & deflatedBit != 0 {
                        guard n > 0, n < plain else { throw corrupt("chunk length", path) }
                        anyDeflated = true
                    } else {
                        guard n == plain else { throw corrupt("chunk length", path) }
                    }
                    payload += n
                    s.append(payload + (c + 1) * tag)
                }
                guard anyDeflated else { throw corrupt("flags", path) }
                stored = s[s.count - 1]
                starts = s
            default:
                throw corrupt("flags", path)
            }
            let (end, o) = pos.addingReportingOverflow(stored)
            guard !o, end <= dataEnd else { throw corrupt("entry extends past the data", path) }
            let info = EntryInfo(
                path: path, size: size, storedSize: stored, compression: starts == nil ? .store : .deflate,
                encryption: .aes256GCM, crc32: crc)
            out.append(
                ContainerEntry(
                    info: info, id: UInt32(id), keyID: keyID, sha256: sha256, offset: pos, chunkCount: Int(chunks),
                    starts: starts, firstChunk: firstChunk))
            firstChunk += Int(chunks)
            pos = end
        }
        guard r.atEnd else { throw corrupt("trailing bytes") }
        guard pos == dataEnd else { throw corrupt("entries do not cover the data") }
        return out
    }
}
