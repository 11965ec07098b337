import AssetPackCore

/// How a version-4 container cuts entries into chunks, as its index declares it: content-defined
/// boundaries (``ContentChunker``) with these bounds, or, for an entry whose chunk scale is 1
/// (compressed entries: larger chunks compress smaller and decode faster), with the minimum and
/// average doubled and the same maximum. Every chunk but an entry's last is `min...max` bytes; the
/// last is `1...max` (an empty entry has one empty chunk).
package struct ChunkingParameters: Sendable, Equatable {
    /// Chunking method 1: FastCDC with Core's gear table (docs/FORMAT.md, "Content-defined chunks").
    static let fastCDC: UInt8 = 1
    package var min: Int
    package var avg: Int
    package var max: Int

    /// The bounds for a target average: a quarter and four times it (FastCDC's usual spread).
    package init(average: Int) {
        self.init(min: average / 4, avg: average, max: average * 4)
    }

    package init(min: Int, avg: Int, max: Int) {
        self.min = min
        self.avg = avg
        self.max = max
    }

    /// The chunk scale of compressed entries: minimum and average doubled, the maximum kept.
    ///
    /// Not a larger maximum: zstd picks its parameters by input size, and above 256 KiB its level
    /// 12 switches to a faster table that compresses worse (measured: 8.35 MB for 64 MiB of text
    /// in 256 KiB chunks, 9.25 MB in 320 KiB or 1 MiB ones; docs/PERFORMANCE.md, "zstd levels").
    static let largeScale: UInt8 = 1

    /// The header's chunk shift for these bounds: the largest chunk any entry may have.
    var headerShift: UInt8 { UInt8(max.trailingZeroBitCount) }

    /// The bounds of an entry of chunk scale `scale` (0 or 1).
    func scaled(_ scale: UInt8) -> ChunkingParameters {
        ChunkingParameters(min: min << Int(scale), avg: avg << Int(scale), max: max)
    }

    /// Whether a reader accepts these bounds for a pack whose header declares `maxShift`.
    func isValid(maxShift: UInt8) -> Bool {
        min >= 64 && min <= avg && 2 * avg <= max && avg.nonzeroBitCount == 1 && max == 1 << Int(maxShift)
    }
}

/// The codec of a version-4 entry's compressed chunks, as its index records it.
package enum ChunkCodec: UInt8, Sendable {
    /// Every chunk stored.
    case none = 0
    /// Raw deflate (RFC 1951).
    case deflate = 1
    /// One zstd frame per chunk (RFC 8878), no dictionary, no checksum.
    case zstd = 2
    /// One zstd frame per chunk, compressed with the pack's dictionary (the reserved entry
    /// `.assetpack/zstd-dictionary`, ``PackDictionary``); no dictionary id in the frame, no checksum.
    case zstdDictionary = 3

    var compression: EntryCompression {
        switch self {
        case .none: .store
        case .deflate: .deflate
        case .zstd, .zstdDictionary: .zstd
        }
    }

    /// Whether the chunks are zstd frames (with or without the pack's dictionary).
    var isZstd: Bool { self == .zstd || self == .zstdDictionary }
}

/// Every sealed chunk of a version-4 to -7 pack, in file order, as parallel arrays (one element
/// per chunk; an entry's chunks are `firstChunk..<firstChunk + chunkCount`), or a version-8
/// pack's chunk records read in place (``IndexTable``). Read through the accessors, which serve both.
package struct ChunkTable: Sendable {
    /// Where the chunk's plaintext starts in its entry.
    var plainStarts: [UInt64] = []
    /// The chunk's plaintext length.
    var plainLengths: [UInt32] = []
    /// File offset of the sealed chunk (payload then tag).
    var offsets: [UInt64] = []
    /// Payload length (without the tag); bit 31 set when compressed with the entry's codec.
    var payloads: [UInt32] = []
    /// The chunk's random 12-byte AES-GCM nonce.
    var nonces: [UInt8] = []
    /// SHA-256 of the chunk's plaintext (what a re-pack matches unchanged chunks by).
    var digests: [UInt8] = []
    /// Version 8: the index the chunk records are read from (the arrays above are then empty).
    var inPlace: IndexTable?

    static let compressedBit: UInt32 = 0x8000_0000

    var count: Int { inPlace?.chunkCount ?? plainStarts.count }

    mutating func reserve(_ n: Int) {
        plainStarts.reserveCapacity(n)
        plainLengths.reserveCapacity(n)
        offsets.reserveCapacity(n)
        payloads.reserveCapacity(n)
        nonces.reserveCapacity(12 * n)
        digests.reserveCapacity(32 * n)
    }

    func plainStart(_ k: Int) -> UInt64 { inPlace?.plainStart(k) ?? plainStarts[k] }
    func plainLength(_ k: Int) -> UInt32 { inPlace?.plainLength(k) ?? plainLengths[k] }
    func offset(_ k: Int) -> UInt64 { inPlace?.offset(k) ?? offsets[k] }
    func payload(_ k: Int) -> UInt32 { inPlace?.payload(k) ?? payloads[k] }
    func nonce(_ k: Int) -> [UInt8] { inPlace?.nonce(k) ?? Array(nonces[12 * k..<12 * k + 12]) }
    func isCompressed(_ k: Int) -> Bool { payload(k) & Self.compressedBit != 0 }
    func payloadLength(_ k: Int) -> Int { Int(payload(k) & ~Self.compressedBit) }
}

extension ByteWriter {
    mutating func bytes(_ b: InlineBytes) { b.withUnsafeBytes { out.append(contentsOf: $0) } }
}

/// One chunk as the version-4 writer records it.
struct ChunkRecord {
    /// Versions 6 and 7: the sealed chunk's file offset.
    var offset: UInt64 = 0
    var plainLength: UInt32
    /// Payload length, bit 31 set when compressed.
    var payload: UInt32
    /// The AES-GCM nonce (12 bytes) and the plaintext's SHA-256 (how a re-pack finds the chunk
    /// again), inline.
    @Inline var nonce: [UInt8]
    @Inline var digest: [UInt8]
}

/// What the version-4 writer records about one entry.
struct IndexRecordV4 {
    var path: String
    var size: UInt64
    var crc: UInt32
    var codec: ChunkCodec
    /// 0: the pack's chunk bounds; 1: minimum and average doubled.
    var scale: UInt8 = 0
    /// The entry's key id (16 bytes) and its plaintext's SHA-256, inline.
    @Inline var keyID: [UInt8]
    @Inline var sha256: [UInt8]
    var chunks: [ChunkRecord]
}

/// The version-4 index (docs/FORMAT.md, "Index, version 4"): `u8 chunking, u32 min, u32 avg,
/// u32 max, u32 count`, then per entry `u16 pathLength, path, u64 size, u32 crc32, u8 codec,
/// u8 scale, keyID[16], sha256[32], u32 chunkCount` and per chunk `u32 plainLength, u32 payload (bit 31
/// compressed), nonce[12], sha256[32]`. Versions 6 and 7 put each chunk's `u64 offset` in the
/// file first.
extension ContainerIndex {
    static let chunkRecordSize = 4 + 4 + 12 + 32

    static func encode(_ records: [IndexRecordV4], chunking: ChunkingParameters, offsets: Bool) -> [UInt8] {
        var w = ByteWriter()
        w.u8(ChunkingParameters.fastCDC)
        w.u32(UInt32(chunking.min))
        w.u32(UInt32(chunking.avg))
        w.u32(UInt32(chunking.max))
        w.u32(UInt32(records.count))
        for r in records {
            w.u16(UInt16(r.path.utf8.count))
            w.out.append(contentsOf: r.path.utf8)
            w.u64(r.size)
            w.u32(r.crc)
            w.u8(r.codec.rawValue)
            w.u8(r.scale)
            w.bytes(r.$keyID)
            w.bytes(r.$sha256)
            w.u32(UInt32(r.chunks.count))
            for c in r.chunks {
                if offsets { w.u64(c.offset) }
                w.u32(c.plainLength)
                w.u32(c.payload)
                w.bytes(c.$nonce)
                w.bytes(c.$digest)
            }
        }
        return w.out
    }

    /// Parses and validates a version-4 index (version 6: `offsets`, each chunk's file offset
    /// in its record): the chunking bounds, every chunk's lengths against them and its entry's
    /// size and codec, and the chunks in `data`: tiling it in index order (version 4), or each
    /// inside it and no two overlapping (version 6; bytes no chunk names are an older generation's).
    package static func decodeV4(
        _ buf: UnsafeRawBufferPointer, chunkShift: UInt8, data: Range<UInt64>, offsets: Bool, limits: ReadLimits
    ) throws -> (entries: [ContainerEntry], chunks: ChunkTable, chunking: ChunkingParameters) {
        func corrupt(_ why: String, _ path: String? = nil) -> AssetPackError {
            AssetPackError(.integrityFailure, "container index is corrupt (\(why))", path: path)
        }
        var r = ByteReader(buf, structure: "container")
        let method = try r.u8()
        guard method == ChunkingParameters.fastCDC else {
            throw AssetPackError(.unsupportedFormat, "container chunking method \(method) is not supported")
        }
        let chunking = ChunkingParameters(min: Int(try r.u32()), avg: Int(try r.u32()), max: Int(try r.u32()))
        guard chunking.isValid(maxShift: chunkShift) else { throw corrupt("chunk bounds") }
        let count = Int(try r.u32())
        try limits.checkDeclaredEntries(UInt64(count))
        let recordSize = chunkRecordSize + (offsets ? 8 : 0)
        let perEntry = 2 + 8 + 4 + 1 + 1 + ContainerFormat.keyIDSize + 32 + 4 + recordSize
        guard count <= r.remaining / perEntry else { throw corrupt("entry count") }
        let tag = UInt64(ContainerFormat.tagSize)
        var out: [ContainerEntry] = []
        out.reserveCapacity(count)
        var table = ChunkTable()
        table.reserve(count)
        var pos = data.lowerBound
        var previous = UnsafeRawBufferPointer(start: nil, count: 0)
        for id in 0..<count {
            let path = try ContainerIndex.nextPath(&r, after: &previous, first: id == 0)
            let size = try r.u64(), crc = try r.u32(), codecRaw = try r.u8()
            guard let codec = ChunkCodec(rawValue: codecRaw) else {
                throw AssetPackError(.unsupportedFormat, "chunk codec \(codecRaw) is not supported", path: path)
            }
            let scale = try r.u8()
            guard scale <= ChunkingParameters.largeScale else { throw corrupt("chunk scale", path) }
            let bounds = chunking.scaled(scale)
            let keyID = try r.bytes(ContainerFormat.keyIDSize)
            let sha256 = try r.bytes(32)
            guard size <= UInt64(Int.max >> 1) else { throw corrupt("entry size", path) }
            let chunks = Int(try r.u32())
            guard chunks >= 1, size > 0 || chunks == 1, chunks <= r.remaining / recordSize else {
                throw corrupt("chunk table", path)
            }
            let first = table.count
            var plain: UInt64 = 0
            var stored: UInt64 = 0
            var anyCompressed = false
            var largest = 0
            for c in 0..<chunks {
                let at = offsets ? try r.u64() : pos + stored
                let length = try r.u32(), payload = try r.u32()
                let n = payload & ~ChunkTable.compressedBit
                let compressed = payload & ChunkTable.compressedBit != 0
                let last = c == chunks - 1
                if size == 0 {
                    guard length == 0, payload == 0 else { throw corrupt("chunk length", path) }
                } else {
                    let lower = last ? 1 : bounds.min
                    guard Int(length) >= lower, Int(length) <= bounds.max else {
                        throw corrupt("chunk \(c) is \(length) bytes, outside the chunk bounds", path)
                    }
                }
                if compressed {
                    guard codec != .none, n > 0, n < length else { throw corrupt("chunk length", path) }
                    anyCompressed = true
                } else {
                    guard n == length else { throw corrupt("chunk length", path) }
                }
                if offsets {
                    // n < 2^31, so this cannot overflow for an offset below the data's end.
                    guard at >= data.lowerBound, at < data.upperBound, UInt64(n) + tag <= data.upperBound - at else {
                        throw corrupt("chunk \(c) lies outside the data", path)
                    }
                }
                table.plainStarts.append(plain)
                table.plainLengths.append(length)
                table.offsets.append(at)
                table.payloads.append(payload)
                table.nonces.append(contentsOf: try r.raw(12))
                table.digests.append(contentsOf: try r.raw(32))
                plain += UInt64(length)
                stored += UInt64(n) + tag
                largest = max(largest, Int(n) + Int(tag))
                guard plain <= size else { throw corrupt("chunks exceed the entry size", path) }
            }
            guard plain == size else { throw corrupt("chunks do not cover the entry", path) }
            guard anyCompressed == (codec != .none) else { throw corrupt("codec", path) }
            let start = offsets ? table.offsets[first] : pos
            if !offsets {
                let (end, o) = pos.addingReportingOverflow(stored)
                guard !o, end <= data.upperBound else { throw corrupt("entry extends past the data", path) }
                pos = end
            }
            let info = EntryInfo(
                path: path, size: size, storedSize: stored, compression: codec.compression,
                encryption: .aes256GCM, crc32: crc)
            out.append(
                ContainerEntry(
                    info: info, id: UInt32(id), keyID: keyID, sha256: sha256, offset: start, chunkCount: chunks,
                    starts: nil, firstChunk: first, codec: codec, largestChunk: largest, scale: scale))
        }
        guard r.atEnd else { throw corrupt("trailing bytes") }
        if offsets {
            try table.checkNoOverlap(tag: tag)
        } else {
            guard pos == data.upperBound else { throw corrupt("entries do not cover the data") }
        }
        return (out, table, chunking)
    }
}

extension ChunkTable {
    /// Versions 6 and 7: no two sealed chunks share a byte (each is read and authenticated
    /// alone, so an overlap is damage, or a table made to read one chunk's bytes twice).
    /// - Throws: `.integrityFailure`.
    func checkNoOverlap(tag: UInt64) throws {
        let order = offsets.indices.sorted { offsets[$0] < offsets[$1] }
        var end: UInt64 = 0
        for k in order {
            guard offsets[k] >= end else {
                throw AssetPackError(.integrityFailure, "container index is corrupt (two chunks overlap)")
            }
            end = offsets[k] + UInt64(payloadLength(k)) + tag
        }
    }
}
