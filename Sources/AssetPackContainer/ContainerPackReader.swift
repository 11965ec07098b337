import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation
import Synchronization

/// Reads an AssetPack container pack (chunked AES-256-GCM, see `docs/FORMAT.md`).
///
/// Opening derives the key once (the header's KDF, or none for a raw key), checks the key
/// commitment and decrypts the index. Reads then cost one HKDF-Expand per entry plus AES-GCM
/// per chunk. The reader reads its pack through a byte source (a local file, a remote
/// mirror) and has no mutable state, so it is safe to use from many threads at once.
package final class ContainerPackReader: PackReader {
    /// Always `.container`.
    public var format: PackFormat { .container }

    public var passwordKDF: ContainerKDF? {
        switch header.kdf {
        case .none: nil
        case .scrypt:
            .scrypt(logN: UInt8(truncatingIfNeeded: header.params[0]), r: header.params[1], p: header.params[2])
        case .pbkdf2SHA256: .pbkdf2SHA256(iterations: header.params[0])
        }
    }
    /// Every entry, sorted by path (UTF-8 byte order); from version 8 decoded as it is asked for.
    public let entries: EntryList
    /// Seconds spent opening the pack, key derivation included.
    public let openSeconds: Double
    /// The trusted key that signed the pack, when the reader was given trusted keys.
    public let publisher: PublisherKey?
    /// What the verified signature states about the release, when the reader was given trusted keys.
    public let release: PackRelease?
    /// The paths this patch pack deletes from the packs below it (its `.assetpack/deleted`
    /// entry, read and checked at open), sorted by UTF-8 bytes; empty for most packs.
    public let deletedPaths: [String]
    /// The pack's zstd dictionary, read and checked at open (codec 3 entries decode with it).
    let zstdDictionary: [UInt8]?
    /// Where the pack's bytes come from.
    package let source: any ByteSource
    /// Every entry's record, in index order (what an incremental re-pack reuses): decoded at
    /// open before version 8, read in place from it.
    let records: RecordList
    /// Version 4: every chunk's lengths, place, nonce and digest (empty before version 4).
    let chunks: ChunkTable
    /// Version 4: how the writer cut entries into chunks.
    let chunking: ChunkingParameters?
    /// Reusable zstd decoders (allocating one costs more than decoding a small chunk), without
    /// and with the pack's dictionary.
    let zstdDecoders = DecoderPool()
    let dictionaryDecoders = DecoderPool()
    /// The pack's keys (an incremental re-pack keeps the salt, hence the keys).
    let keys: ContainerKeys
    /// The pack's header.
    package let header: ContainerHeader
    let chunkShift: Int
    /// The largest single read of pack bytes an entry read makes: one sealed chunk.
    package var largestRead: Int { (1 << chunkShift) + ContainerFormat.tagSize }
    /// The largest single read a read of `e` makes: its largest sealed chunk (version 4), or the
    /// pack's chunk size and a tag.
    func largestRead(_ e: ContainerEntry) -> Int { e.codec != nil ? e.largestChunk : largestRead }
    let limits: ReadLimits
    /// With trusted keys: the verified signature block, whose items are every sealed chunk's
    /// SHA-256 in index order (records, then their chunks; since version 6 not the file's
    /// order): chunk `c` of record `e` is item `e.firstChunk + c`.
    let signed: PackSignature?

    /// Opens a container pack.
    /// - Parameters:
    ///   - path: The pack's file path.
    ///   - credential: The password or raw 32-byte key it was written with.
    ///   - limits: Caps on KDF cost, index size, entry count and sizes.
    ///   - trustedKeys: Publisher keys to require a signature from (docs/SECURITY.md). When not
    ///     empty, the pack must be signed by one of them, its header and index must be the signed
    ///     ones (checked before the key derivation), its signature must not have expired, and
    ///     every chunk a read touches must match its signed SHA-256. Empty: a signed pack reads as
    ///     an unsigned one.
    /// - Throws: `AssetPackError`: `.untrusted` (trusted keys given, and the pack is unsigned,
    ///   signed by another key, altered, or its signature expired), `.missingPassword` when `credential` is nil, `.wrongPassword`
    ///   when it does not open the pack, `.limitExceeded` for hostile KDF parameters (before
    ///   running the KDF) or sizes, `.unsupportedFormat` for a non-container file or a newer
    ///   version, `.integrityFailure` for a corrupt or truncated pack, `.io` for file errors.
    public convenience init(
        path: String, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = []
    ) throws {
        let source: FileByteSource
        do { source = try FileByteSource(path: path) } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        try self.init(source: source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    /// Opens the container held by `source` (see ``init(path:credential:limits:trustedKeys:)``).
    /// The header, index and signature block are read (and a remote source keeps them) before
    /// the key derivation.
    ///
    /// A patch pack's deletion record (`.assetpack/deleted`) is read like any entry (decrypted,
    /// authenticated and, with trusted keys, checked against its signed digests) and checked.
    package convenience init(
        source: any ByteSource, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws {
        let watch = Stopwatch()
        let opened = try ContainerPackReader(
            loading: source, credential: credential, limits: limits, trustedKeys: trustedKeys)
        var deleted: [String] = []
        var dictionary: (bytes: [UInt8], decoder: Zstd.Decompressor)?
        do {
            if let position = opened.records.deletion {
                try limits.checkDeletionRecord(try opened.records.record(position).info)  // before it is read
                var lookupFailure: (any Error)?
                deleted = try DeletionRecord.decode(opened.readRecord(position), limits: limits) { path in
                    do { return try opened.records.position(of: path) != nil } catch {
                        lookupFailure = lookupFailure ?? error
                        return false
                    }
                }
                if let lookupFailure { throw lookupFailure }
            }
            // Version 4 and 5 only: before them no codec could name a dictionary.
            // (A damaged version-8 record of it is refused here, at open, as before version 8.)
            if let position = opened.records.dictionary, case let record = try opened.records.record(position),
                record.codec != nil
            {
                guard record.info.size <= UInt64(PackDictionary.readLimit), record.codec == ChunkCodec.none else {
                    throw AssetPackError(
                        .integrityFailure, "the pack's zstd dictionary is compressed or over 1 MiB",
                        path: record.info.path)
                }
                let bytes = try opened.readRecord(position)
                do { dictionary = (bytes, try Zstd.Decompressor(dictionary: bytes)) } catch let e as AssetPackError {
                    throw e.naming(record.info.path)
                }
            }
        } catch {
            throw (error as? AssetPackError)?.untrustedIfUnreadable(trusting: trustedKeys) ?? error
        }
        self.init(opened, deletedPaths: deleted, dictionary: dictionary, seconds: watch.elapsed)
    }

    /// The whole of the pack's own record at `position` (decrypted, authenticated and, with trusted
    /// keys, checked against its signed digests), within the read limits.
    private func readRecord(_ position: Int) throws -> [UInt8] {
        let record = try records.record(position)
        try limits.check(record.info)  // before the allocation
        var bytes = [UInt8](repeating: 0, count: Int(record.info.size))
        try bytes.withUnsafeMutableBytes { _ = try read(record, into: $0, timing: EntryTiming(path: record.info.path)) }
        return bytes
    }

    /// `opened` with its deletion record and dictionary read (the dictionary's first decoder
    /// already made, which checked it).
    private init(
        _ opened: ContainerPackReader, deletedPaths: [String],
        dictionary: (bytes: [UInt8], decoder: Zstd.Decompressor)?,
        seconds: Double
    ) {
        entries = opened.entries
        openSeconds = seconds
        publisher = opened.publisher
        release = opened.release
        self.deletedPaths = deletedPaths
        zstdDictionary = dictionary?.bytes
        if let decoder = dictionary?.decoder { dictionaryDecoders.give(decoder, keeping: 1) }
        source = opened.source
        records = opened.records
        chunks = opened.chunks
        chunking = opened.chunking
        keys = opened.keys
        header = opened.header
        chunkShift = opened.chunkShift
        limits = opened.limits
        signed = opened.signed
    }

    private init(
        loading source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trustedKeys: [PublisherKey]
    ) throws {
        let watch = Stopwatch()
        deletedPaths = []
        zstdDictionary = nil
        self.source = source
        do {
            let (header, keys, records, table, block) = try Self.load(
                source, credential: credential, limits: limits, trusted: trustedKeys)
            self.chunks = table.chunks
            self.chunking = table.chunking
            // Entries below `.assetpack/` are the pack's own (the deletion record, the dictionary):
            // not listed, not found.
            let entries = records.visible
            try records.checkEntryCount(limits)  // what the packer checked, its own records aside
            self.keys = keys
            self.header = header
            self.records = records
            self.entries = entries
            self.chunkShift = Int(header.chunkShift)
            self.limits = limits
            if let block {
                // Version 8 counts its chunks in its head; before it the records are summed.
                var total = table.chunks.inPlace?.chunkCount ?? 0
                if table.chunks.inPlace == nil {
                    for i in 0..<records.count { total += try records.record(i).chunkCount }
                }
                guard total == block.itemCount else {
                    throw AssetPackError(
                        .untrusted,
                        "the signed manifest lists \(block.itemCount) chunks and the index \(total)")
                }
                self.signed = block
                self.publisher = block.publisher
                self.release = block.release
            } else {
                self.signed = nil
                self.publisher = nil
                self.release = nil
            }
        } catch {
            throw (error as? AssetPackError)?.untrustedIfUnreadable(trusting: trustedKeys) ?? error
        }
        openSeconds = watch.elapsed
    }

    /// The entries below `folder`: from version 8 one run of the sorted table, found by binary
    /// search and decoded alone; before it, filtered from ``entries``.
    public func entries(under folder: String) -> [EntryInfo] {
        guard let table = records.table else { return EntryPath.entries(entries, under: folder) }
        let normalized = EntryPath.normalize(folder)
        if normalized.isEmpty { return Array(entries) }
        // A segment the search cannot open lists nothing (`list` checks the index first and says why).
        let run = (try? table.run(withPrefix: Array(normalized.utf8) + [UInt8(ascii: "/")])) ?? 0..<0
        return run.compactMap { i in
            let info = table.info(i)
            return DeletionRecord.isReserved(info.path) ? nil : info
        }
    }

    /// Version 8: every record, the index whole (``IndexTable/checkAll()``) and the digest
    /// section (which no read decrypts); before version 8, done at open.
    public func checkIndex() throws {
        guard let table = records.table else { return }
        try table.checkAll()
        _ = try table.digests()
    }

    /// Opens every segment of a version-8 index (``IndexTable/loadAll()``), for what reads the
    /// whole chunk table (a re-pack, dead bytes, stored identities); before version 8, nothing.
    /// - Throws: `.integrityFailure` for a segment that fails authentication, `.io`.
    func loadWholeIndex() throws { try records.table?.loadAll() }

    /// Every segment of a version-8 index, opened now (``loadWholeIndex()``); before version 8,
    /// nothing (the index was decoded at open).
    public func loadIndex() throws { try loadWholeIndex() }

    /// `true`: each chunk is authenticated by its AES-GCM tag before it is handed over.
    public func authenticatesEachPiece(_ path: String) -> Bool { true }

    /// Looks up an entry by path (normalised first): `nil` also for a record that cannot be
    /// read (``lookup(_:)`` says why).
    public func entry(_ path: String) -> EntryInfo? { try? lookup(path) }

    /// Looks up an entry by path (normalised first).
    /// - Throws: `.integrityFailure` for an index segment that fails authentication or a
    ///   damaged record, `.io`.
    public func lookup(_ path: String) throws -> EntryInfo? {
        try records.position(of: path).map { try records.record($0).info }
    }

    private func find(_ path: String) throws -> ContainerEntry {
        guard let i = try records.position(of: path) else {
            throw AssetPackError(.entryNotFound, "no such entry", path: path)
        }
        let record = try records.record(i)
        try limits.check(record.info)
        return record
    }

    /// Reads a whole entry, authenticated chunk by chunk and CRC-checked, with its timing.
    ///
    /// Chunks are decrypted in parallel straight into the returned buffer; each chunk's CRC-32
    /// is computed while it is hot and the pieces are joined with `CRC32.combine`. The
    /// `decrypt` and `crc` times split the wall time of that parallel phase in proportion to
    /// the CPU time each part took.
    /// - Throws: `.entryNotFound`, `.integrityFailure` (tag, inflate or CRC), `.io`.
    public func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
        let whole = Stopwatch()
        var timing = EntryTiming(path: path)
        timing.decoder = "container"
        let e = try Stopwatch.time(&timing.lookup) { try find(path) }  // one lookup, timed
        let bytes = try [UInt8](unsafeUninitializedCapacity: Int(e.info.size)) { buf, initialized in
            adviseHugePages(UnsafeMutableRawBufferPointer(buf))
            timing = try read(e, into: UnsafeMutableRawBufferPointer(buf), timing: timing, watch: whole)
            initialized = Int(e.info.size)
        }
        return (bytes, timing)
    }

    /// Reads a whole entry into `buffer` as ``readTimed(_:)`` does (chunks decrypted in
    /// parallel in place, CRC-checked).
    @discardableResult
    public func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
        let whole = Stopwatch()
        var t = EntryTiming(path: path)
        t.decoder = "container"
        let e = try Stopwatch.time(&t.lookup) { try find(path) }
        return try read(e, into: buffer, timing: t, watch: whole)
    }

    /// Reads record `e` whole into `buffer` (see ``read(_:into:)``).
    private func read(
        _ e: ContainerEntry, into buffer: UnsafeMutableRawBufferPointer, timing: EntryTiming,
        watch whole: Stopwatch = Stopwatch()
    ) throws -> EntryTiming {
        var t = timing
        t.decoder = "container"
        t.path = e.info.path
        let n = Int(e.info.size)
        guard buffer.count >= n else {
            throw AssetPackError(
                .invalidArgument, "the buffer holds \(buffer.count) bytes; the entry has \(n)", path: e.info.path)
        }
        let key = Stopwatch.time(&t.keyDerivation) { keys.entryKey(e) }
        let crcs = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: e.chunkCount)
        defer { crcs.deallocate() }
        let phase = Stopwatch()
        let out = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n])
        let cpu = try source.access(entrySpans(e), largestRead: largestRead(e)) {
            try decode(e, key, 0..<e.chunkCount, into: out, base: 0, crcs: crcs.baseAddress)
        }
        let wall = phase.elapsed
        let share = cpu.decrypt + cpu.crc > 0 ? cpu.decrypt / (cpu.decrypt + cpu.crc) : 1
        t.decrypt = wall * share
        t.crc = wall * (1 - share)
        let crc = Stopwatch.time(&t.crc) {
            var crc: UInt32 = 0
            for c in 0..<e.chunkCount {
                crc = CRC32.combine(crc, crcs[c], secondLength: Int(plainLength(e, c)))
            }
            return crc
        }
        // The index always records a CRC; a missing one is as wrong as a different one.
        try CRC32.check(crc, expected: e.info.crc32 ?? ~crc, path: e.info.path, authenticated: true)
        t.crcChecked = true
        t.bytesIn = e.info.storedSize
        t.bytesOut = UInt64(n)
        t.total = whole.elapsed
        return t
    }

    /// Streams an entry in pieces of up to one chunk, decrypting a few chunks at a time in
    /// parallel. The CRC-32 is checked at the end: treat what `body` received as tentative
    /// until this returns.
    /// - Throws: `.entryNotFound`, `.integrityFailure`, `.io`, or what `body` throws.
    @discardableResult
    public func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        let whole = Stopwatch()
        var t = EntryTiming(path: path)
        t.decoder = "container"
        let e = try Stopwatch.time(&t.lookup) { try find(path) }
        t.path = e.info.path
        let key = Stopwatch.time(&t.keyDerivation) { keys.entryKey(e) }
        let cs = 1 << chunkShift
        let group = max(1, min(e.chunkCount, Self.cores * 4))
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: group * min(cs, max(1, Int(e.info.size))), alignment: 64)
        defer { buffer.deallocate() }
        let crcs = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: group)
        defer { crcs.deallocate() }
        var crc: UInt32 = 0
        var first = 0
        try source.access(entrySpans(e), largestRead: largestRead(e)) {
            while first < e.chunkCount {
                let last = min(first + group, e.chunkCount)
                let base = plainStart(e, first)
                let bytes = Int((last == e.chunkCount ? e.info.size : plainStart(e, last)) - base)
                let out = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes])
                let phase = Stopwatch()
                let cpu = try decode(e, key, first..<last, into: out, base: base, crcs: crcs.baseAddress)
                let wall = phase.elapsed
                let share = cpu.0 + cpu.1 > 0 ? cpu.0 / (cpu.0 + cpu.1) : 1
                t.decrypt += wall * share
                t.crc += wall * (1 - share)
                var at = 0
                for c in first..<last {
                    let len = plainLength(e, c)
                    crc = CRC32.combine(crc, crcs[c - first], secondLength: len)
                    if len > 0 { try body(UnsafeRawBufferPointer(rebasing: out[at..<at + len])) }
                    at += len
                }
                first = last
            }
        }
        // The index always records a CRC; a missing one is as wrong as a different one.
        try CRC32.check(crc, expected: e.info.crc32 ?? ~crc, path: e.info.path, authenticated: true)
        t.crcChecked = true
        t.bytesIn = e.info.storedSize
        t.bytesOut = e.info.size
        t.total = whole.elapsed
        return t
    }

    /// Reads the entry's bytes `[offset, offset + buffer.count)`, decrypting only the chunks
    /// the range touches. Each chunk is authenticated by its AES-GCM tag; the entry's CRC-32
    /// (which covers the whole entry) is not checked.
    /// - Throws: `.entryNotFound`, `.invalidArgument` when the range is outside the entry,
    ///   `.integrityFailure`, `.io`.
    public func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
        let e = try find(path)
        try e.info.checkRange(offset: offset, count: buffer.count)
        if buffer.isEmpty { return }
        let key = keys.entryKey(e)
        let first = chunk(of: e, containing: offset)
        let last = chunk(of: e, containing: offset + UInt64(buffer.count) - 1)
        _ = try source.access(storedRuns(e, first...last), largestRead: largestRead(e)) {
            try decode(e, key, first..<last + 1, into: buffer, base: offset, crcs: nil)
        }
    }

}
