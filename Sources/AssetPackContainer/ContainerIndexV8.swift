import AssetPackCore
import AssetPackCrypto
import Foundation
import Synchronization

/// Version 8's index, read in place (docs/FORMAT.md, "Version 8: the index read in place"): a
/// lookup table of fixed-size records, a hash table and a string table, which the reader keeps
/// as the bytes it decrypted and reads where they are. Opening costs a fixed amount plus
/// decrypting the table; a lookup is a hash and one or two probes; an entry is decoded (and
/// checked) when it is read or listed, never all of them at open.
///
/// Layout of the table (little-endian): a 36-byte head (`u8 chunking method, 3 zero bytes,
/// u32 min, u32 avg, u32 max, u32 entryCount, u32 chunkCount, u32 hashSlots, u32 maxProbe,
/// u32 stringsLength`), then `entryCount` 44-byte entry records, `chunkCount` 36-byte chunk
/// records, `hashSlots` `u32` slots and the strings. The digests a re-pack compares (each entry's
/// and each chunk's plaintext SHA-256) are sealed apart and decrypted only when asked for.
///
/// The table is opened a segment at a time, when something first reads it (docs/FORMAT.md,
/// "Version 8", and docs/PERFORMANCE.md, "Segments opened when first read"): opening the pack
/// decrypts the segment holding the head, a lookup the ones holding its slot, record, path and
/// chunk records, and each segment is authenticated by its own tag before any byte of it is
/// used. Whatever reads the whole table (a listing, `verify`, a re-pack) opens every segment
/// first (``loadAll()``). The one place an unread segment's failure can surface is therefore a
/// throwing call: a lookup, a read, a check.
package final class IndexTable: @unchecked Sendable {
    static let headSize = 36
    static let entrySize = 44
    static let chunkSize = 36
    /// Plaintext bytes per sealed segment of the index region (the last may be shorter).
    static let segmentSize = 1 << 20

    /// Opens table segment `j` into the buffer it is given (its plaintext, authenticated), or throws.
    typealias SegmentOpener = @Sendable (_ segment: Int, _ into: UnsafeMutableRawBufferPointer) throws -> Void

    /// The table, owned: each segment is written once, when it is opened (under ``opening``),
    /// and only read after its flag in ``ready`` says so (safe to read from many threads).
    private let base: UnsafeMutableRawBufferPointer
    /// One flag per segment: set (release) once the segment is decrypted and authenticated.
    private let ready: UnsafeMutablePointer<Atomic<Bool>>
    private let segmentCount: Int
    /// Opens the segments not read yet; `nil` for a table given whole.
    private let opener: SegmentOpener?
    /// Held while segments are opened (one opener at a time; reads of ready segments never wait).
    private let opening = NSLock()
    /// Segments that failed authentication, and how: a later read of one fails the same way at
    /// once, not by decrypting its megabyte again (a read error, which may pass, is not kept).
    private let failed = Mutex<[Int: AssetPackError]>([:])
    /// From how many missing segments ``loadAll()`` opens them on every core.
    private let parallelFrom: Int
    /// Entries (the pack's own records included) and chunks.
    let count: Int
    let chunkCount: Int
    let chunking: ChunkingParameters
    private let slots: Int
    private let maxProbe: Int
    private let chunksAt: Int
    private let hashAt: Int
    private let stringsAt: Int
    private let stringsLength: Int
    /// The data region chunks must lie in.
    let data: Range<UInt64>
    /// The sealed digest section, decrypted on first use.
    private let loadDigests: @Sendable () throws -> [UInt8]
    private let digestCache = Mutex<[UInt8]?>(nil)

    /// What the head says, checked (``IndexTable/init(taking:chunkShift:data:limits:digests:)``).
    private struct Head {
        var chunking: ChunkingParameters
        var count, chunkCount, slots, maxProbe, stringsLength: Int
    }

    private static func head(_ table: UnsafeMutableRawBufferPointer, chunkShift: UInt8, limits: ReadLimits) throws
        -> Head
    {
        func fail(_ why: String) -> AssetPackError {
            AssetPackError(.integrityFailure, "container index is corrupt (\(why))")
        }
        guard table.count >= headSize else { throw fail("shorter than its head") }
        func u32(_ at: Int) -> Int { Int(table.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian) }
        let method = table[0]
        guard method == ChunkingParameters.fastCDC else {
            throw AssetPackError(.unsupportedFormat, "container chunking method \(method) is not supported")
        }
        guard table[1] == 0, table[2] == 0, table[3] == 0 else { throw fail("reserved bytes") }
        let head = Head(
            chunking: ChunkingParameters(min: u32(4), avg: u32(8), max: u32(12)), count: u32(16),
            chunkCount: u32(20), slots: u32(24), maxProbe: u32(28), stringsLength: u32(32))
        guard head.chunking.isValid(maxShift: chunkShift) else { throw fail("chunk bounds") }
        try limits.checkDeclaredEntries(UInt64(head.count))
        guard head.slots.nonzeroBitCount == 1, head.slots > head.count, head.maxProbe >= 1,
            head.maxProbe <= head.slots, head.chunkCount >= head.count
        else { throw fail("hash table") }
        // Each term is below 2^38 (counts are u32s): no overflow.
        let size = headSize + head.count * entrySize + head.chunkCount * chunkSize + 4 * head.slots + head.stringsLength
        guard size == table.count else { throw fail("section sizes") }
        return head
    }

    /// Takes `table` (allocated by the caller, freed with this object, or here when it is
    /// refused), whole and decrypted, after checking its head: the chunking bounds, the counts
    /// against `limits`, and the sections filling it exactly. Nothing per entry.
    convenience init(
        taking table: UnsafeMutableRawBufferPointer, chunkShift: UInt8, data: Range<UInt64>, limits: ReadLimits,
        digests: @escaping @Sendable () throws -> [UInt8]
    ) throws {
        try self.init(
            buffer: table, opener: nil, parallelFrom: .max, chunkShift: chunkShift, data: data, limits: limits,
            digests: digests)
    }

    /// A table of `length` bytes whose segments `opener` opens when they are first read: the
    /// first (the head's) now, and the head checked as ``init(taking:chunkShift:data:limits:digests:)``
    /// checks it.
    /// - Parameter parallelFrom: ``loadAll()`` opens this many missing segments or more on every core.
    /// - Throws: What `opener` throws for the first segment; the head's errors.
    convenience init(
        length: Int, opener: @escaping SegmentOpener, parallelFrom: Int, chunkShift: UInt8, data: Range<UInt64>,
        limits: ReadLimits, digests: @escaping @Sendable () throws -> [UInt8]
    ) throws {
        guard length >= Self.headSize else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (shorter than its head)")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 16)
        do {
            try opener(0, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(length, Self.segmentSize)]))
        } catch {
            buffer.deallocate()
            throw error
        }
        try self.init(
            buffer: buffer, opener: opener, parallelFrom: parallelFrom, chunkShift: chunkShift, data: data,
            limits: limits, digests: digests)
    }

    /// `buffer`, its first segment (every segment when `opener` is `nil`) opened.
    private init(
        buffer table: UnsafeMutableRawBufferPointer, opener: SegmentOpener?, parallelFrom: Int, chunkShift: UInt8,
        data: Range<UInt64>, limits: ReadLimits, digests: @escaping @Sendable () throws -> [UInt8]
    ) throws {
        let head: Head
        do { head = try Self.head(table, chunkShift: chunkShift, limits: limits) } catch {
            table.deallocate()  // no property is set yet, so no deinit runs
            throw error
        }
        base = table
        segmentCount = max(1, (table.count + Self.segmentSize - 1) / Self.segmentSize)
        ready = .allocate(capacity: segmentCount)
        for j in 0..<segmentCount { (ready + j).initialize(to: Atomic(opener == nil || j == 0)) }
        self.opener = opener
        self.parallelFrom = parallelFrom
        self.data = data
        loadDigests = digests
        chunking = head.chunking
        count = head.count
        chunkCount = head.chunkCount
        slots = head.slots
        maxProbe = head.maxProbe
        stringsLength = head.stringsLength
        chunksAt = Self.headSize + count * Self.entrySize
        hashAt = chunksAt + chunkCount * Self.chunkSize
        stringsAt = hashAt + 4 * slots
    }

    deinit {
        base.deallocate()
        ready.deinitialize(count: segmentCount)
        ready.deallocate()
    }

    // MARK: - Segments

    /// Whether every segment `range` (bytes of the table) touches is open.
    private func isReady(_ range: Range<Int>) -> Bool {
        guard !range.isEmpty else { return true }
        for j in (range.lowerBound / Self.segmentSize)...((range.upperBound - 1) / Self.segmentSize)
        where !ready[j].load(ordering: .acquiring) {
            return false
        }
        return true
    }

    /// Opens the segments `range` (bytes inside the table) touches that are not open yet.
    /// - Throws: `.integrityFailure` for a segment that fails authentication, `.io`.
    @inline(__always) func ensure(_ range: Range<Int>) throws {
        if isReady(range) { return }
        try open((range.lowerBound / Self.segmentSize)...((range.upperBound - 1) / Self.segmentSize))
    }

    /// Every segment, opened (on every core from ``parallelFrom`` missing ones): for whatever
    /// reads the whole table.
    /// - Throws: As ``ensure(_:)``.
    func loadAll() throws {
        if isReady(0..<base.count) { return }
        try open(0...(segmentCount - 1))
    }

    private func open(_ segments: ClosedRange<Int>) throws {
        guard let opener else { preconditionFailure("a table given whole has every segment open") }
        try opening.withLock {
            let missing = segments.filter { !ready[$0].load(ordering: .acquiring) }
            if let known = failed.withLock({ f in missing.first { f[$0] != nil }.map { f[$0]! } }) { throw known }
            let tasks = missing.count >= parallelFrom ? max(1, min(missing.count, ContainerPackReader.cores)) : 1
            try concurrently(tasks) { task in
                for m in share(task, of: tasks, count: missing.count) {
                    let j = missing[m]
                    let start = j * Self.segmentSize
                    do {
                        try opener(
                            j,
                            UnsafeMutableRawBufferPointer(
                                rebasing: base[start..<min(base.count, start + Self.segmentSize)]))
                    } catch let error as AssetPackError where error.code == .integrityFailure {
                        failed.withLock { $0[j] = error }
                        throw error
                    }
                    ready[j].store(true, ordering: .releasing)
                }
            }
        }
    }

    // MARK: - Raw fields

    // Every raw read is of an open segment: the callers open them first (``ensure(_:)``), which
    // the debug builds the tests run check on every read.
    @inline(__always) private func u8(_ at: Int) -> UInt8 {
        assert(isReady(at..<at + 1), "segment of byte \(at) not open")
        return base[at]
    }
    @inline(__always) private func u16(_ at: Int) -> Int {
        assert(isReady(at..<at + 2), "segment of byte \(at) not open")
        return Int(base.loadUnaligned(fromByteOffset: at, as: UInt16.self).littleEndian)
    }
    @inline(__always) private func u32(_ at: Int) -> UInt32 {
        assert(isReady(at..<at + 4), "segment of byte \(at) not open")
        return base.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian
    }
    @inline(__always) private func u64(_ at: Int) -> UInt64 {
        assert(isReady(at..<at + 8), "segment of byte \(at) not open")
        return base.loadUnaligned(fromByteOffset: at, as: UInt64.self).littleEndian
    }
    private func entryAt(_ i: Int) -> Int { Self.headSize + i * Self.entrySize }
    private func chunkAt(_ k: Int) -> Int { chunksAt + k * Self.chunkSize }

    /// Entry `i`'s path bytes (their segments opened), or `nil` when its record points outside
    /// the strings or is empty.
    /// - Throws: As ``ensure(_:)``.
    func pathBytes(_ i: Int) throws -> UnsafeRawBufferPointer? {
        let at = entryAt(i)
        try ensure(at..<at + 6)
        let offset = Int(u32(at)), length = u16(at + 4)
        guard length > 0, offset <= stringsLength, length <= stringsLength - offset else { return nil }
        let bytes = stringsAt + offset..<stringsAt + offset + length
        try ensure(bytes)
        return UnsafeRawBufferPointer(rebasing: base[bytes])
    }

    func offset(_ k: Int) -> UInt64 { u64(chunkAt(k)) }
    func plainStart(_ k: Int) -> UInt64 { u64(chunkAt(k) + 8) }
    func plainLength(_ k: Int) -> UInt32 { u32(chunkAt(k) + 16) }
    func payload(_ k: Int) -> UInt32 { u32(chunkAt(k) + 20) }
    func nonce(_ k: Int) -> [UInt8] {
        let at = chunkAt(k) + 24
        assert(isReady(at..<at + 12), "segment of byte \(at) not open")
        return Array(UnsafeRawBufferPointer(rebasing: base[at..<at + 12]))
    }

    // MARK: - Lookup

    /// FNV-1a (64-bit) of a path's UTF-8 bytes: the hash table's function (docs/FORMAT.md).
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 { PathHash.fnv1a(bytes) }

    /// The position of the entry whose path is exactly `path`'s bytes: at most `maxProbe`
    /// slots from the path's hash, each naming an entry whose path is compared.
    /// - Throws: As ``ensure(_:)``, for a segment the lookup reads.
    func position(of path: String) throws -> Int? {
        var path = path
        return try path.withUTF8 { try position(ofBytes: UnsafeRawBufferPointer($0)) }
    }

    func position(ofBytes wanted: UnsafeRawBufferPointer) throws -> Int? {
        var failure: (any Error)?
        let found = PathSlots.find(
            wanted, slotCount: slots, maxProbe: maxProbe,
            slot: { s in
                let at = hashAt + 4 * s
                guard failure == nil else { return 0 }  // an empty slot: the probe ends
                do { try ensure(at..<at + 4) } catch {
                    failure = error
                    return 0
                }
                return u32(at)
            }
        ) { i in
            guard i < count else { return false }
            do {
                // The length first: a slot's other entries are told apart without their strings.
                let at = entryAt(i)
                try ensure(at + 4..<at + 6)
                guard u16(at + 4) == wanted.count else { return false }
                prefetchEntry(at)
                return try pathBytes(i)?.elementsEqual(wanted) == true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return found
    }

    /// Starts loading what ``entry(_:)`` reads besides record `at` (the previous record's chunk
    /// fields and the first chunk record) while the lookup compares the path: the misses of a
    /// large table then overlap instead of following one another (docs/PERFORMANCE.md, "Three
    /// misses, not four"). A hint: of the table, only the record's `firstChunk` is read, and not
    /// when its segment is not open yet (no byte is used before its tag is checked).
    @inline(__always) private func prefetchEntry(_ at: Int) {
        guard let start = base.baseAddress, at + 24 <= base.count, isReady(at + 20..<at + 24) else { return }
        if at >= Self.headSize + Self.entrySize { prefetchCacheLine(start + at - Self.entrySize + 20) }
        let first = Int(u32(at + 20))
        if first < chunkCount { prefetchCacheLine(start + chunkAt(first)) }
    }

    /// Whether the table, sorted as its writer sorts it, cannot hold a path starting with
    /// `prefix`: its first path sorts after every such path. Reads one record and one path, where
    /// a lookup of an absent path probes a run of slots and the records they name (an unsorted
    /// table, which only a holder of the key could seal and `verify` refuses, may hide such a
    /// path from this answer, as its writer could have left it out).
    /// - Throws: As ``ensure(_:)``.
    func holdsNothing(withPrefix prefix: [UInt8]) throws -> Bool {
        guard count > 0 else { return true }
        guard let first = try pathBytes(0) else { return false }
        return !first.starts(with: prefix) && !first.lexicographicallyPrecedes(prefix)
    }

    /// The run of positions whose paths start with `prefix` (the table is sorted by path bytes):
    /// two binary searches. A table not sorted (only a holder of the key could seal one) gives
    /// a wrong run, never a crash.
    /// - Throws: As ``ensure(_:)``, for a segment the searches read.
    func run(withPrefix prefix: [UInt8]) throws -> Range<Int> {
        func firstNotBefore(_ key: [UInt8]) throws -> Int {
            var lo = 0, hi = count
            while lo < hi {
                let mid = (lo + hi) / 2
                let bytes = try pathBytes(mid) ?? UnsafeRawBufferPointer(start: nil, count: 0)
                if bytes.lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        let low = try firstNotBefore(prefix)
        var upper = prefix
        // The first key after every path starting with `prefix` (prefix ends in '/': 0x2F + 1).
        upper[upper.count - 1] += 1
        return low..<max(low, try firstNotBefore(upper))
    }

    // MARK: - Entries

    /// Entry `i`, its record and its chunks checked as decodeV4 checks them at open: a path of
    /// valid UTF-8 inside the strings, a known codec and scale, its chunks after the previous
    /// entry's (so chunk `k` is the signature's item `k`), each inside the data, within the
    /// chunk bounds, covering the entry's bytes in order.
    /// - Throws: `.integrityFailure`, `.unsupportedFormat` for an unknown codec.
    func entry(_ i: Int) throws -> ContainerEntry {
        precondition(i >= 0 && i < count)
        let at = entryAt(i)
        try ensure((i == 0 ? at : at - Self.entrySize)..<at + Self.entrySize)  // the previous record's too
        guard let bytes = try pathBytes(i), let path = String(validating: bytes, as: UTF8.self) else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (entry \(i)'s path)")
        }
        func corrupt(_ why: String) -> AssetPackError {
            AssetPackError(.integrityFailure, "container index is corrupt (\(why))", path: path)
        }
        guard let codec = ChunkCodec(rawValue: u8(at + 6)) else {
            throw AssetPackError(.unsupportedFormat, "chunk codec \(u8(at + 6)) is not supported", path: path)
        }
        let scale = u8(at + 7)
        guard scale <= ChunkingParameters.largeScale else { throw corrupt("chunk scale") }
        let bounds = chunking.scaled(scale)
        let size = u64(at + 8), crc = u32(at + 16)
        let first = Int(u32(at + 20)), chunks = Int(u32(at + 24))
        guard size <= UInt64(Int.max >> 1) else { throw corrupt("entry size") }
        let previousEnd = i == 0 ? 0 : Int(u32(at - Self.entrySize + 20)) + Int(u32(at - Self.entrySize + 24))
        guard chunks >= 1, size > 0 || chunks == 1, first == previousEnd, first <= chunkCount - chunks,
            i < count - 1 || first + chunks == chunkCount
        else { throw corrupt("chunk table") }
        try ensure(chunkAt(first)..<chunkAt(first + chunks))
        let tag = UInt64(ContainerFormat.tagSize)
        var plain: UInt64 = 0, stored: UInt64 = 0, largest = 0
        var anyCompressed = false
        for c in 0..<chunks {
            let k = first + c
            let length = plainLength(k), payload = payload(k), offset = offset(k)
            let n = payload & ~ChunkTable.compressedBit
            let compressed = payload & ChunkTable.compressedBit != 0
            if size == 0 {
                guard length == 0, payload == 0 else { throw corrupt("chunk length") }
            } else {
                let lower = c == chunks - 1 ? 1 : bounds.min
                guard Int(length) >= lower, Int(length) <= bounds.max else {
                    throw corrupt("chunk \(c) is \(length) bytes, outside the chunk bounds")
                }
            }
            if compressed {
                guard codec != .none, n > 0, n < length else { throw corrupt("chunk length") }
                anyCompressed = true
            } else {
                guard n == length else { throw corrupt("chunk length") }
            }
            guard plainStart(k) == plain else { throw corrupt("chunk \(c) does not start where the last ended") }
            // n < 2^31, so this cannot overflow for an offset below the data's end.
            guard offset >= data.lowerBound, offset < data.upperBound, UInt64(n) + tag <= data.upperBound - offset
            else { throw corrupt("chunk \(c) lies outside the data") }
            plain += UInt64(length)
            stored += UInt64(n) + tag
            largest = max(largest, Int(n) + Int(tag))
            guard plain <= size else { throw corrupt("chunks exceed the entry size") }
        }
        guard plain == size else { throw corrupt("chunks do not cover the entry") }
        guard anyCompressed == (codec != .none) else { throw corrupt("codec") }
        let keyID = Array(UnsafeRawBufferPointer(rebasing: base[at + 28..<at + 44]))
        let info = EntryInfo(
            path: path, size: size, storedSize: stored, compression: codec.compression, encryption: .aes256GCM,
            crc32: crc)
        return ContainerEntry(
            info: info, id: UInt32(i), keyID: keyID, sha256: nil, offset: offset(first), chunkCount: chunks,
            starts: nil, firstChunk: first, codec: codec, largestChunk: largest, scale: scale)
    }

    /// Entry `i` as a listing shows it, without failing: a damaged record (which a read of it
    /// refuses) lists with what can be decoded of it.
    /// A record in a segment that fails to open lists as an empty path of no bytes (a read of it,
    /// and the `verify` or `list` that checks the index first, say why).
    func info(_ i: Int) -> EntryInfo {
        if let e = try? entry(i) { return e.info }
        let at = entryAt(i)
        guard (try? ensure(at..<at + Self.entrySize)) != nil else {
            return EntryInfo(path: "", size: 0, storedSize: 0, compression: .store, encryption: .aes256GCM, crc32: nil)
        }
        let path = (try? pathBytes(i))?.map { String(decoding: $0, as: UTF8.self) } ?? ""
        return EntryInfo(
            path: path, size: u64(at + 8), storedSize: 0, compression: .store, encryption: .aes256GCM,
            crc32: u32(at + 16))
    }

    // MARK: - Digests

    /// Entry `i`'s plaintext SHA-256 and chunk `k`'s, from the digest section (decrypted once).
    /// - Throws: `.integrityFailure` when the section fails authentication or has the wrong size.
    func digests() throws -> IndexDigests {
        if let cached = digestCache.withLock({ $0 }) { return IndexDigests(bytes: cached, entries: count) }
        let bytes = try loadDigests()
        guard bytes.count == 32 * (count + chunkCount) else {
            throw AssetPackError(.integrityFailure, "container index is corrupt (digest section size)")
        }
        digestCache.withLock { $0 = bytes }
        return IndexDigests(bytes: bytes, entries: count)
    }

    /// Every check ``entry(_:)`` makes, for every entry, and what no single read checks: the
    /// paths strictly sorted (so none repeats), every slot naming an entry found from its
    /// path within `maxProbe`, and no two chunks sharing a byte. What `verify` runs.
    func checkAll() throws {
        try loadAll()
        var previous: UnsafeRawBufferPointer?
        for i in 0..<count {
            _ = try entry(i)
            let bytes = try pathBytes(i)!
            if let previous, !previous.lexicographicallyPrecedes(bytes) {
                throw AssetPackError(.integrityFailure, "container index is corrupt (paths unsorted or repeated)")
            }
            previous = bytes
        }
        for i in 0..<count {
            let bytes = try pathBytes(i)!
            guard try position(ofBytes: bytes) == i else {
                throw AssetPackError(
                    .integrityFailure, "container index is corrupt (the hash table does not find an entry)",
                    path: String(decoding: bytes, as: UTF8.self))
            }
        }
        var table = ChunkTable()
        table.reserve(chunkCount)
        for k in 0..<chunkCount {
            table.offsets.append(offset(k))
            table.payloads.append(payload(k))
        }
        try table.checkNoOverlap(tag: UInt64(ContainerFormat.tagSize))
    }
}

/// The digest section of a version-8 index: `32 × entryCount` bytes of entry digests, then
/// `32 × chunkCount` of chunk digests.
struct IndexDigests {
    let bytes: [UInt8]
    let entries: Int
    func entry(_ i: Int) -> [UInt8] { Array(bytes[32 * i..<32 * i + 32]) }
    func chunk(_ k: Int) -> [UInt8] { Array(bytes[32 * (entries + k)..<32 * (entries + k) + 32]) }
}

extension ChunkTable {
    /// The chunk records of a version-8 index, read in place.
    init(inPlace table: IndexTable) { inPlace = table }
}
