import AssetPackCore
import AssetPackCrypto
import Foundation

// Version 8's index as the writer encodes and seals it, and as a reader opens it: the lookup
// table and the digest section, each sealed in 1 MiB segments (docs/FORMAT.md, "Version 8").

extension ContainerIndex {
    /// The version-8 lookup table and digest section of `records` (sorted by path bytes, each
    /// chunk's offset set): see ``IndexTable``. Both arrays are allocated at their exact sizes
    /// once (a million entries' table is ~100 MB; growing it by doubling held twice that).
    static func encodeV8(_ records: [IndexRecordV4], chunking: ChunkingParameters) -> (
        table: [UInt8], digests: [UInt8]
    ) {
        let count = records.count
        let chunkCount = records.reduce(0) { $0 + $1.chunks.count }
        // The hash table as PathSlots fills it (FNV-1a, linear probing).
        var table = PathSlots(count: count)
        for (i, r) in records.enumerated() {
            var path = r.path
            _ = path.withUTF8 { table.insert(i, bytes: UnsafeRawBufferPointer($0), isSame: { _ in false }) }
        }
        let stringsLength = records.reduce(0) { $0 + $1.path.utf8.count }
        let size =
            IndexTable.headSize + count * IndexTable.entrySize + chunkCount * IndexTable.chunkSize
            + 4 * table.slots.count + stringsLength
        var w = ByteWriter(capacity: size)
        w.u8(ChunkingParameters.fastCDC)
        w.bytes([0, 0, 0])
        w.u32(UInt32(chunking.min))
        w.u32(UInt32(chunking.avg))
        w.u32(UInt32(chunking.max))
        w.u32(UInt32(count))
        w.u32(UInt32(chunkCount))
        w.u32(UInt32(table.slots.count))
        w.u32(UInt32(table.maxProbe))
        w.u32(UInt32(stringsLength))
        // Strings in entry order, after the slots.
        var first = 0, stringAt = 0
        for r in records {
            w.u32(UInt32(stringAt))
            w.u16(UInt16(r.path.utf8.count))
            stringAt += r.path.utf8.count
            w.u8(r.codec.rawValue)
            w.u8(r.scale)
            w.u64(r.size)
            w.u32(r.crc)
            w.u32(UInt32(first))
            w.u32(UInt32(r.chunks.count))
            w.bytes(r.$keyID)
            first += r.chunks.count
        }
        var digests = ByteWriter(capacity: 32 * (count + chunkCount))
        for r in records {
            var plain: UInt64 = 0
            digests.bytes(r.$sha256)
            for c in r.chunks {
                w.u64(c.offset)
                w.u64(plain)
                w.u32(c.plainLength)
                w.u32(c.payload)
                w.bytes(c.$nonce)
                plain += UInt64(c.plainLength)
            }
        }
        for r in records { for c in r.chunks { digests.bytes(c.$digest) } }
        for slot in table.slots { w.u32(slot) }
        for r in records { w.out.append(contentsOf: r.path.utf8) }
        precondition(w.out.count == size, "the version-8 table's size as IndexTable reads it")
        return (w.out, digests.out)
    }

    /// The number of segments `length` plaintext bytes are sealed in.
    static func segments(_ length: Int) -> Int { (length + IndexTable.segmentSize - 1) / IndexTable.segmentSize }

    /// The size of a version-8 index region holding a table of `table` and digests of `digests` bytes.
    static func regionSize(table: Int, digests: Int) -> Int {
        8 + ContainerFormat.indexNonceSize + table + digests + ContainerFormat.tagSize
            * (segments(table) + segments(digests))
    }

    /// Segment `j`'s nonce: the region's nonce with its last four bytes XORed with `j` (LE).
    static func segmentNonce(_ nonce: [UInt8], _ j: Int) -> [UInt8] {
        var n = nonce
        for b in 0..<4 { n[8 + b] ^= UInt8(truncatingIfNeeded: j >> (8 * b)) }
        return n
    }

    /// Segment `j`'s associated data: the header slot as stored, the two lengths and `j`.
    static func segmentAAD(_ headerBytes: [UInt8], table: Int, digests: Int, _ j: Int) -> [UInt8] {
        var w = ByteWriter()
        w.bytes(headerBytes)
        w.u32(UInt32(table))
        w.u32(UInt32(digests))
        w.u32(UInt32(j))
        return w.out
    }

    /// The version-8 index region: `u32 tableLength, u32 digestsLength, nonce[12]`, then the
    /// table and the digests, each sealed in segments of ``IndexTable/segmentSize`` bytes
    /// (ciphertext ‖ tag), numbered on across both.
    static func sealV8(table: [UInt8], digests: [UInt8], nonce: [UInt8], key: [UInt8], headerBytes: [UInt8])
        -> [UInt8]
    {
        var out: [UInt8] = []
        out.reserveCapacity(regionSize(table: table.count, digests: digests.count))
        sealV8(table: table, digests: digests, nonce: nonce, key: key, headerBytes: headerBytes) {
            out.append(contentsOf: $0)
        }
        return out
    }

    /// The same region, handed to `sink` a piece at a time in order (the length fields and nonce,
    /// then each sealed segment), so the writer never holds the sealed region whole: one
    /// segment's buffer besides the plaintext.
    static func sealV8(
        table: [UInt8], digests: [UInt8], nonce: [UInt8], key: [UInt8], headerBytes: [UInt8],
        into sink: (UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        var w = ByteWriter()
        w.u32(UInt32(table.count))
        w.u32(UInt32(digests.count))
        w.bytes(nonce)
        try w.out.withUnsafeBytes { try sink($0) }
        let gcm = AESGCM()
        let segment = UnsafeMutableRawBufferPointer.allocate(
            byteCount: IndexTable.segmentSize + AESGCM.tagSize, alignment: 64)
        defer { segment.deallocate() }
        var j = 0
        for part in [table, digests] {
            var at = 0
            while at < part.count {
                let length = min(part.count - at, IndexTable.segmentSize)
                part.withUnsafeBytes {
                    segment.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[at..<at + length]))
                }
                gcm.seal(
                    UnsafeMutableRawBufferPointer(rebasing: segment[0..<length]),
                    tag: UnsafeMutableRawBufferPointer(rebasing: segment[length..<length + AESGCM.tagSize]),
                    nonce: segmentNonce(nonce, j), key: key,
                    authenticating: segmentAAD(headerBytes, table: table.count, digests: digests.count, j))
                try sink(UnsafeRawBufferPointer(rebasing: segment[0..<length + AESGCM.tagSize]))
                at += length
                j += 1
            }
        }
    }

    /// Opens the version-8 index region at `region` of `source`: checks its sizes, opens the
    /// table's first segment (its head) and leaves every other segment sealed until a read
    /// reaches it (``IndexTable``), and the digest section until ``IndexTable/digests()`` asks
    /// for it. The ciphertext stays in `source` (a remote one keeps the index region).
    /// - Parameter parallelFrom: ``IndexTable/loadAll()`` opens at least this many missing
    ///   segments on every core (``parallelSegments``; tests pass 1 to open small tables so).
    /// - Throws: `.integrityFailure` for a region of the wrong size or a first segment that fails
    ///   authentication, `.limitExceeded`, `.io`.
    static func openV8(
        _ source: any ByteSource, region: Range<UInt64>, header: ContainerHeader, headerBytes: [UInt8], key: [UInt8],
        limits: ReadLimits, parallelFrom: Int = parallelSegments
    ) throws -> IndexTable {
        let fixed = 8 + ContainerFormat.indexNonceSize
        guard region.count >= fixed else { throw AssetPackError(.integrityFailure, "container index is truncated") }
        let head = try preadArray(source, count: fixed, at: region.lowerBound)
        let tableLength = head.withUnsafeBytes { Int($0.loadUnaligned(as: UInt32.self).littleEndian) }
        let digestsLength = head.withUnsafeBytes {
            Int($0.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian)
        }
        let nonce = Array(head[8..<fixed])
        guard tableLength >= IndexTable.headSize,
            UInt64(regionSize(table: tableLength, digests: digestsLength)) == UInt64(region.count)
        else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (its sizes do not fill the region)")
        }
        let tableAt = region.lowerBound + UInt64(fixed)
        let digestsAt = tableAt + UInt64(tableLength + ContainerFormat.tagSize * segments(tableLength))
        let tableSegments = segments(tableLength)
        let lengths = (table: tableLength, digests: digestsLength)
        let opener: IndexTable.SegmentOpener = { j, piece in
            do {
                try openSegment(
                    source, j, into: piece,
                    at: tableAt + UInt64(j * (IndexTable.segmentSize + ContainerFormat.tagSize)), nonce: nonce,
                    key: key, headerBytes: headerBytes, lengths: lengths, gcm: AESGCM())
            } catch let error as AssetPackError where error.code == .integrityFailure && j > 0 {
                throw updatedSinceOpen(header, source) ?? error
            }
        }
        let loadDigests: @Sendable () throws -> [UInt8] = {
            do {
                return try [UInt8](unsafeUninitializedCapacity: digestsLength) { out, n in
                    try openSegments(
                        source, into: UnsafeMutableRawBufferPointer(out), at: digestsAt,
                        firstSegment: tableSegments, nonce: nonce, key: key, headerBytes: headerBytes,
                        lengths: lengths, parallelFrom: parallelFrom)
                    n = digestsLength
                }
            } catch let error as AssetPackError where error.code == .integrityFailure {
                throw updatedSinceOpen(header, source) ?? error
            }
        }
        return try IndexTable(
            length: tableLength, opener: opener, parallelFrom: parallelFrom, chunkShift: header.chunkShift,
            data: header.dataStart..<header.indexOffset, limits: limits, digests: loadDigests)
    }

    /// Why a segment read after the open fails, when the pack now holds a later generation than
    /// the one opened: a re-pack or an update in place appended one and zeroed the previous
    /// index with the rest (docs/SECURITY.md, "Removed content still readable"). `nil` when it
    /// holds the same one (the segment is damaged).
    private static func updatedSinceOpen(_ header: ContainerHeader, _ source: any ByteSource) -> AssetPackError? {
        guard let now = header.generationNow(in: source) else { return nil }
        return AssetPackError(
            .integrityFailure,
            "the pack was updated after it was opened (generation \(header.generation) → \(now)), and the part of its index this lookup needs is gone: open it again"
        )
    }

    /// The plaintexts and nonce of a version-8 index region sealed under `key` and `headerBytes`
    /// (what ``sealV8(table:digests:nonce:key:headerBytes:)`` made), for tools that re-seal one.
    /// - Throws: `.integrityFailure` as ``openV8(_:region:header:headerBytes:key:limits:)``.
    static func unsealV8(_ region: [UInt8], key: [UInt8], headerBytes: [UInt8]) throws -> (
        table: [UInt8], digests: [UInt8], nonce: [UInt8]
    ) {
        let fixed = 8 + ContainerFormat.indexNonceSize
        guard region.count >= fixed else { throw AssetPackError(.integrityFailure, "container index is truncated") }
        let lengths = region.withUnsafeBytes {
            (
                table: Int($0.loadUnaligned(as: UInt32.self).littleEndian),
                digests: Int($0.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian)
            )
        }
        guard regionSize(table: lengths.table, digests: lengths.digests) == region.count else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (its sizes do not fill the region)")
        }
        let nonce = Array(region[8..<fixed])
        let source = MemoryByteSource(region)
        var table = [UInt8](repeating: 0, count: lengths.table)
        var digests = [UInt8](repeating: 0, count: lengths.digests)
        try table.withUnsafeMutableBytes {
            try openSegments(
                source, into: $0, at: UInt64(fixed), firstSegment: 0, nonce: nonce, key: key, headerBytes: headerBytes,
                lengths: lengths)
        }
        try digests.withUnsafeMutableBytes {
            try openSegments(
                source, into: $0,
                at: UInt64(fixed + lengths.table + ContainerFormat.tagSize * segments(lengths.table)),
                firstSegment: segments(lengths.table), nonce: nonce, key: key, headerBytes: headerBytes,
                lengths: lengths)
        }
        return (table, digests, nonce)
    }

    /// How many segments make a table worth opening on every core: from 32 (32 MiB, about
    /// 300,000 entries) the open is long enough to halve, and the ~1 MB each extra thread's
    /// swift-crypto buffers add to the peak is small beside the table (docs/PERFORMANCE.md,
    /// "Opening at scale": 100,000 entries open in 3.4 ms on one core, 1,000,000 in ~140 → ~70 ms
    /// on two).
    static let parallelSegments = 32

    /// Reads and opens the sealed segments from `at` on, numbered from `firstSegment`, into `out`:
    /// from `parallelFrom` segments on every core, each task a run of whole segments (each has
    /// its own nonce and AAD).
    private static func openSegments(
        _ source: any ByteSource, into out: UnsafeMutableRawBufferPointer, at: UInt64, firstSegment: Int,
        nonce: [UInt8], key: [UInt8], headerBytes: [UInt8], lengths: (table: Int, digests: Int),
        parallelFrom: Int = parallelSegments
    ) throws {
        let size = IndexTable.segmentSize
        let count = (out.count + size - 1) / size
        let tasks = count >= parallelFrom ? max(1, min(count, ContainerPackReader.cores)) : 1
        try concurrently(tasks) { task in
            let gcm = AESGCM()
            for k in share(task, of: tasks, count: count) {
                let done = k * size
                try openSegment(
                    source, firstSegment + k,
                    into: UnsafeMutableRawBufferPointer(rebasing: out[done..<min(out.count, done + size)]),
                    at: at + UInt64(k * (size + ContainerFormat.tagSize)), nonce: nonce, key: key,
                    headerBytes: headerBytes, lengths: lengths, gcm: gcm)
            }
        }
    }

    /// Reads sealed segment `j` (numbered across the table and the digests) from `at` and opens
    /// it into `piece` (its plaintext length).
    /// - Throws: `.integrityFailure` when it fails authentication, `.io`.
    private static func openSegment(
        _ source: any ByteSource, _ j: Int, into piece: UnsafeMutableRawBufferPointer, at: UInt64, nonce: [UInt8],
        key: [UInt8], headerBytes: [UInt8], lengths: (table: Int, digests: Int), gcm: AESGCM
    ) throws {
        try readExactly(source, piece, at: at)
        var tag = [UInt8](repeating: 0, count: ContainerFormat.tagSize)
        try tag.withUnsafeMutableBytes { try readExactly(source, $0, at: at + UInt64(piece.count)) }
        let aad = segmentAAD(headerBytes, table: lengths.table, digests: lengths.digests, j)
        let ok = tag.withUnsafeBytes {
            gcm.open(piece, tag: $0, nonce: segmentNonce(nonce, j), key: key, authenticating: aad)
        }
        guard ok else { throw AssetPackError(.integrityFailure, "container index failed authentication") }
    }
}
