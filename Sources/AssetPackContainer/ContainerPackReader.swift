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
public final class ContainerPackReader: PackReader {
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
    /// Every entry, sorted by path (UTF-8 byte order).
    public let entries: [EntryInfo]
    /// Seconds spent opening the pack, key derivation included.
    public let openSeconds: Double
    /// The trusted key that signed the pack, when the reader was given trusted keys.
    public let publisher: PublisherKey?
    /// What the verified signature states about the release, when the reader was given trusted keys.
    public let release: PackRelease?
    /// The paths this patch pack deletes from the packs below it (its `.assetpack/deleted`
    /// entry, read and checked at open), sorted by UTF-8 bytes; empty for most packs.
    public let deletedPaths: [String]
    /// Where the deletion record is in ``records``, if the pack has one.
    private let deletionPosition: Int?
    /// Where the pack's zstd dictionary (``PackDictionary``) is in ``records``, if it has one.
    private let dictionaryPosition: Int?
    /// The pack's zstd dictionary, read and checked at open (codec 3 entries decode with it).
    let zstdDictionary: [UInt8]?
    /// Where the pack's bytes come from.
    package let source: any ByteSource
    /// Every entry's record, in index order (what an incremental re-pack reuses).
    let records: [ContainerEntry]
    /// Version 4: every chunk's lengths, place, nonce and digest (empty before version 4).
    let chunks: ChunkTable
    /// Version 4: how the writer cut entries into chunks.
    let chunking: ChunkingParameters?
    /// Reusable zstd decoders (allocating one costs more than decoding a small chunk), without
    /// and with the pack's dictionary.
    private let zstdDecoders = DecoderPool()
    private let dictionaryDecoders = DecoderPool()
    private let index: EntryIndex<Int>
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
    private let limits: ReadLimits
    /// With trusted keys: the verified signature block, whose items are every sealed chunk's
    /// SHA-256 in index order (records, then their chunks; since version 6 not the file's
    /// order), and where each record's chunks start in that list.
    private let signed: (block: PackSignature, firstChunk: [Int])?

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
            if let position = opened.deletionPosition {
                try limits.checkDeletionRecord(opened.records[position].info)  // before it is read
                deleted = try DeletionRecord.decode(opened.readRecord(position), limits: limits) {
                    opened.index.lookup($0) != nil
                }
            }
            // Version 4 and 5 only: before them no codec could name a dictionary.
            if let position = opened.dictionaryPosition, opened.records[position].codec != nil {
                let record = opened.records[position]
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
        let record = records[position]
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
        deletionPosition = opened.deletionPosition
        dictionaryPosition = opened.dictionaryPosition
        zstdDictionary = dictionary?.bytes
        if let decoder = dictionary?.decoder { dictionaryDecoders.give(decoder, keeping: 1) }
        source = opened.source
        records = opened.records
        chunks = opened.chunks
        chunking = opened.chunking
        index = opened.index
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
            let (entries, index, reserved) = try Self.visibleEntries(records)
            self.deletionPosition = reserved.deletion
            self.dictionaryPosition = reserved.dictionary
            self.keys = keys
            self.header = header
            self.records = records
            self.index = index
            self.entries = entries
            self.chunkShift = Int(header.chunkShift)
            self.limits = limits
            if let block {
                var first: [Int] = []
                first.reserveCapacity(records.count)
                var total = 0
                for i in records.indices {  // by index: `for r in records` would copy (and retain) each record
                    first.append(total)
                    total += records[i].chunkCount
                }
                guard total == block.itemCount else {
                    throw AssetPackError(
                        .untrusted,
                        "the signed manifest lists \(block.itemCount) chunks and the index \(total)")
                }
                self.signed = (block, first)
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

    private static func load(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trusted: [PublisherKey]
    ) throws -> (
        ContainerHeader, ContainerKeys, [ContainerEntry], (chunks: ChunkTable, chunking: ChunkingParameters?),
        PackSignature?
    ) {
        let fileSize = source.size
        guard try ContainerHeader.recognizes(source) else {
            throw AssetPackError(.unsupportedFormat, "not an AssetPack container")
        }
        let (headerBytes, header) = try ContainerHeader.read(from: source)
        let tag = UInt64(ContainerFormat.tagSize)
        let (end, overflow) = header.indexOffset.addingReportingOverflow(header.indexLength)
        let nonceSize = UInt64(header.version == 1 ? 0 : ContainerFormat.indexNonceSize)
        let isSigned = header.isSigned
        // Where this pack ends: the file's end, or (versions 6, 7) its generation's.
        let packEnd = try header.packEnd(fileSize: fileSize)
        guard header.indexOffset >= header.dataStart, header.indexLength >= nonceSize + 4 + tag,
            !overflow, end <= packEnd, isSigned || end == packEnd
        else {
            throw AssetPackError(.integrityFailure, "container is truncated or has trailing data")
        }
        guard header.indexLength <= limits.maxIndexSize else {
            throw AssetPackError(
                .limitExceeded, "index of \(header.indexLength) bytes exceeds the limit \(limits.maxIndexSize)")
        }
        let trailer = try trailerLength(header, fileSize: packEnd)
        // The signature block after the index is bounded too (before a server is asked for it).
        guard UInt64(trailer) <= limits.maxIndexSize else {
            throw AssetPackError(
                .limitExceeded,
                "the container's index and signature (from offset \(header.indexOffset)) exceed the index limit")
        }
        // The index and signature block, kept for the reader's life (fetched at once from a server).
        try source.retain(header.indexOffset..<packEnd)
        var sealed = try preadArray(source, count: Int(header.indexLength), at: header.indexOffset)
        let block =
            trusted.isEmpty
            ? nil
            : try checkSignature(
                source, header: header, headerBytes: headerBytes, sealedIndex: sealed, trusted: trusted)
        try block?.release.checkNotExpired(now: Date())
        if isSigned && trusted.isEmpty {
            // Read as an unsigned pack; the block's structure must still fill the rest of the file.
            let trailer = try preadArray(source, count: trailer, at: end)
            _ = try trailer.withUnsafeBytes { try PackSignature.parse($0, kind: .container, trusted: []) }
        }
        guard let credential else {
            throw AssetPackError(.missingPassword, "this pack is encrypted; a password or key is needed")
        }
        try header.checkKDF(limits)

        let keys = ContainerKeys(master: try ContainerKeys.master(credential, header: header), salt: header.salt)
        guard
            HMACSHA256.isValid(header.commitment, for: header.committedBytes(), key: keys.commitmentKey)
        else {
            // The other slot committed under this key: the key is right and this slot is damaged
            // (a crafted higher generation, say), which is damage (exit 4), not a wrong password.
            if header.isAppendable,
                let otherBytes = try? preadArray(
                    source, count: ContainerFormat.slotSize, at: UInt64((1 - header.slot) * ContainerFormat.slotStride)),
                let other = try? otherBytes.withUnsafeBytes({ try ContainerHeader.parse($0) }),
                other.salt == header.salt, other.kdf == header.kdf, other.params == header.params,
                HMACSHA256.isValid(other.commitment, for: other.committedBytes(), key: keys.commitmentKey)
            {
                throw AssetPackError(
                    .integrityFailure,
                    "container header is corrupt (header slot \(header.slot) fails its commitment, while the other slot's holds under this key)"
                )
            }
            throw AssetPackError(.wrongPassword, "wrong password or key (or a damaged header)")
        }

        let nonce = header.version == 1 ? indexNonceV1 : Array(sealed.prefix(Int(nonceSize)))
        sealed.removeFirst(Int(nonceSize))
        guard
            let plain = AESGCM().open(
                sealed, nonce: nonce, key: keys.indexKey(version: header.version), authenticating: headerBytes)
        else {
            throw AssetPackError(.integrityFailure, "container index failed authentication")
        }
        if header.hasChunkTable {
            let v4 = try plain.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: header.chunkShift, data: header.dataStart..<header.indexOffset,
                    offsets: header.isAppendable, limits: limits)
            }
            return (header, keys, v4.entries, (v4.chunks, v4.chunking), block)
        }
        let records = try plain.withUnsafeBytes {
            try ContainerIndex.decode(
                $0, version: header.version, chunkShift: header.chunkShift, dataEnd: header.indexOffset,
                limits: limits)
        }
        return (header, keys, records, (ChunkTable(), nil), block)
    }

    /// The entries a caller sees (all but the reserved `.assetpack/` ones), their index, and
    /// where the deletion record and the dictionary are.
    private static func visibleEntries(_ records: [ContainerEntry]) throws -> (
        [EntryInfo], EntryIndex<Int>, (deletion: Int?, dictionary: Int?)
    ) {
        let corrupt = AssetPackError(.integrityFailure, "container index is corrupt (equivalent paths)")
        let reserved = records.indices.filter { DeletionRecord.isReserved(records[$0].info.path) }
        if reserved.isEmpty {  // the common case, in one pass
            guard let index = EntryIndex(positionsOf: records.map(\.info.path)) else { throw corrupt }
            return (records.map(\.info), index, (nil, nil))
        }
        var index = EntryIndex<Int>(capacity: records.count)
        var entries: [EntryInfo] = []
        for i in records.indices where !DeletionRecord.isReserved(records[i].info.path) {
            guard index.insert(records[i].info.path, i) else { throw corrupt }
            entries.append(records[i].info)
        }
        let deletion = reserved.first { records[$0].info.path == DeletionRecord.entryName }
        let dictionary = reserved.first { records[$0].info.path == PackDictionary.entryName }
        return (entries, index, (deletion, dictionary))
    }

    /// `true`: each chunk is authenticated by its AES-GCM tag before it is handed over.
    public func authenticatesEachPiece(_ path: String) -> Bool { true }

    /// Looks up an entry by path (normalised first).
    public func entry(_ path: String) -> EntryInfo? {
        index.lookup(path).map { records[$0].info }
    }

    private func find(_ path: String) throws -> ContainerEntry {
        guard let i = index.lookup(path) else {
            throw AssetPackError(.entryNotFound, "no such entry", path: path)
        }
        try limits.check(records[i].info)
        return records[i]
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

    // MARK: - Layout

    /// The file offset and length of chunk `c` of `e` as stored (payload and tag).
    func storedChunk(_ e: ContainerEntry, _ c: Int) -> (offset: UInt64, length: Int) {
        if e.codec != nil {
            let k = e.firstChunk + c
            return (chunks.offset[k], chunks.payloadLength(k) + ContainerFormat.tagSize)
        }
        if let s = e.starts { return (e.offset + s[c], Int(s[c + 1] - s[c])) }
        let slot = UInt64((1 << chunkShift) + ContainerFormat.tagSize)
        return (e.offset + UInt64(c) * slot, plainLength(e, c) + ContainerFormat.tagSize)
    }

    /// The bytes of chunks `chunks` of `e` as stored: one span, all of them and, from version 6,
    /// whatever lies between (chunks of one entry may lie in any order there).
    func storedChunks(_ e: ContainerEntry, _ chunks: ClosedRange<Int>) -> Range<UInt64> {
        guard header.isAppendable else {
            let first = storedChunk(e, chunks.lowerBound), last = storedChunk(e, chunks.upperBound)
            return first.offset..<last.offset + UInt64(last.length)
        }
        var low = UInt64.max, high: UInt64 = 0
        for c in chunks {
            let (offset, length) = storedChunk(e, c)
            low = min(low, offset)
            high = max(high, offset + UInt64(length))
        }
        return low..<high
    }

    /// The bytes of chunks `chunks` of `e` as stored, in chunk order: one span per run of chunks
    /// that follow each other in the file (version 6: an appended generation's new chunks lie
    /// after the ones it kept).
    func storedRuns(_ e: ContainerEntry, _ chunks: ClosedRange<Int>) -> [Range<UInt64>] {
        guard header.isAppendable else { return [storedChunks(e, chunks)] }
        var runs: [Range<UInt64>] = []
        for c in chunks {
            let (offset, length) = storedChunk(e, c)
            // A small gap (a dead chunk between two kept ones) is fetched with them: one request
            // fewer is worth more than the bytes.
            if let last = runs.last, offset >= last.upperBound, offset - last.upperBound <= Self.runGap {
                runs[runs.count - 1] = last.lowerBound..<offset + UInt64(length)
            } else {
                runs.append(offset..<offset + UInt64(length))
            }
        }
        return runs
    }

    /// The largest gap between two runs of an entry's chunks that ``storedRuns(_:_:)`` reads
    /// across rather than splits at (the streaming window's piece).
    static let runGap: UInt64 = 64 << 10

    /// Every stored byte of `e` (its sealed chunks, tags included), in runs as ``storedRuns(_:_:)``.
    func entrySpans(_ e: ContainerEntry) -> [Range<UInt64>] {
        e.chunkCount == 0 ? [] : storedRuns(e, 0...(e.chunkCount - 1))
    }

    /// The entry's sealed chunks in the pack, or `nil` when there is no such entry.
    package func storedSpan(_ path: String) -> Range<UInt64>? {
        index.lookup(path).map { entrySpan(records[$0]) }
    }

    /// Every stored byte of `e`: its sealed chunks, tags included.
    func entrySpan(_ e: ContainerEntry) -> Range<UInt64> {
        e.chunkCount == 0 ? e.offset..<e.offset : storedChunks(e, 0...(e.chunkCount - 1))
    }

    // MARK: - Chunks

    static let cores = ProcessInfo.processInfo.activeProcessorCount

    func plainLength(_ e: ContainerEntry, _ c: Int) -> Int {
        if e.codec != nil { return Int(chunks.plainLength[e.firstChunk + c]) }
        return c == e.chunkCount - 1 ? Int(e.info.size - (UInt64(c) << chunkShift)) : 1 << chunkShift
    }

    /// Where chunk `c`'s plaintext starts in its entry.
    func plainStart(_ e: ContainerEntry, _ c: Int) -> UInt64 {
        e.codec != nil ? chunks.plainStart[e.firstChunk + c] : UInt64(c) << chunkShift
    }

    /// The chunk of `e` that holds plaintext byte `offset` (< the entry's size): a division for
    /// fixed-size chunks, a binary search of the chunk table for content-defined ones.
    func chunk(of e: ContainerEntry, containing offset: UInt64) -> Int {
        guard e.codec != nil else { return Int(offset >> chunkShift) }
        var lo = e.firstChunk, hi = e.firstChunk + e.chunkCount  // the answer is in lo..<hi
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if chunks.plainStart[mid] <= offset { lo = mid } else { hi = mid }
        }
        return lo - e.firstChunk
    }

    /// The AES-GCM nonce of chunk `c` of `e`: stored in a version-4 index, derived before.
    func nonce(_ e: ContainerEntry, _ c: Int) -> [UInt8] {
        if e.codec != nil { return chunks.nonce(e.firstChunk + c) }
        return chunkNonce(
            entry: e.keyID == nil ? e.id : 0, chunk: UInt32(c), final: c == e.chunkCount - 1,
            deflated: storedChunk(e, c).length - ContainerFormat.tagSize < plainLength(e, c))
    }

    /// Whether chunk `c` of `e` is compressed (with the entry's codec; deflate before version 4).
    func isCompressed(_ e: ContainerEntry, _ c: Int) -> Bool {
        if e.codec != nil { return chunks.isCompressed(e.firstChunk + c) }
        return storedChunk(e, c).length - ContainerFormat.tagSize < plainLength(e, c)
    }

    /// Decrypts chunks `range` of `e` into `out`, which holds the entry's bytes
    /// `[base, base + out.count)`. Chunks wholly inside `out` are decrypted in place, the
    /// others through a temporary chunk. Chunk CRCs go to `crcs[c - range.lowerBound]`.
    /// - Returns: CPU seconds spent decrypting and computing CRCs, summed over threads.
    private func decode(
        _ e: ContainerEntry, _ key: [UInt8], _ range: Range<Int>,
        into out: UnsafeMutableRawBufferPointer, base: UInt64, crcs: UnsafeMutablePointer<UInt32>?
    ) throws -> (decrypt: Double, crc: Double) {
        let maxPlain = min(1 << chunkShift, Int(e.info.size))
        let parallel = range.count >= 4 && out.count >= 256 << 10
        let tasks = parallel ? min(range.count, Self.cores * 4) : 1
        let times = UnsafeMutableBufferPointer<(Double, Double)>.allocate(capacity: tasks)
        times.initialize(repeating: (0, 0))
        defer { times.deallocate() }
        let outEnd = base + UInt64(out.count)
        try concurrently(tasks) { task in
            let lo = range.lowerBound + range.count * task / tasks
            let hi = range.lowerBound + range.count * (task + 1) / tasks
            let scratch = UnsafeMutableRawBufferPointer.allocate(
                byteCount: AESGCM.nonceSize + maxPlain + ContainerFormat.tagSize, alignment: 64)
            defer { scratch.deallocate() }
            let gcm = AESGCM()
            let hasher = signed == nil ? nil : SHA256Hasher()
            var temp: UnsafeMutableRawBufferPointer?
            defer { temp?.deallocate() }
            var zstd: Zstd.Decompressor?
            let primed = e.codec == .zstdDictionary
            defer { if let zstd { give(zstd, primed: primed) } }
            let decoder = {
                if zstd == nil { zstd = try self.takeZstd(primed: primed) }
                return zstd!
            }
            var dec = 0.0, crcTime = 0.0
            for c in lo..<hi {
                let start = plainStart(e, c)
                let len = plainLength(e, c)
                let end = start + UInt64(len)
                let inPlace = start >= base && end <= outEnd
                let dest: UnsafeMutableRawBufferPointer
                if inPlace {
                    dest = UnsafeMutableRawBufferPointer(rebasing: out[Int(start - base)..<Int(end - base)])
                } else {
                    if temp == nil { temp = .allocate(byteCount: maxPlain, alignment: 64) }
                    dest = UnsafeMutableRawBufferPointer(rebasing: temp![0..<len])
                }
                try Stopwatch.time(&dec) {
                    try openChunk(
                        e, key, c, gcm: gcm, hasher: hasher, scratch: scratch, zstd: decoder, into: dest)
                }
                if let crcs {
                    crcs[c - range.lowerBound] = Stopwatch.time(&crcTime) {
                        CRC32.checksum(UnsafeRawBufferPointer(dest))
                    }
                }
                if !inPlace {
                    let from = max(start, base), to = min(end, outEnd)
                    UnsafeMutableRawBufferPointer(rebasing: out[Int(from - base)..<Int(to - base)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: dest[Int(from - start)..<Int(to - start)]))
                }
            }
            times[task] = (dec, crcTime)
        }
        return times.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
    }

    /// Reads, authenticates and (if deflated) inflates chunk `c` of `e` into `dest`.
    ///
    /// A stored chunk's ciphertext is read straight into `dest` and opened there; a deflated
    /// one is opened in `scratch` and inflated into `dest`. A signed pack read with trusted keys
    /// first compares the sealed chunk's SHA-256 (through `hasher`) with the signed one.
    private func openChunk(
        _ e: ContainerEntry, _ key: [UInt8], _ c: Int, gcm: AESGCM, hasher: SHA256Hasher?,
        scratch: UnsafeMutableRawBufferPointer, zstd: () throws -> Zstd.Decompressor,
        into dest: UnsafeMutableRawBufferPointer
    ) throws {
        let plainLen = dest.count
        let tagSize = ContainerFormat.tagSize
        let (offset, stored) = storedChunk(e, c)
        let payload = stored - tagSize
        let compressed = isCompressed(e, c)
        guard compressed ? payload < plainLen : payload == plainLen else {
            throw AssetPackError(.integrityFailure, "chunk \(c) has the wrong length", path: e.info.path)
        }
        // The sealed chunk (payload ‖ tag, adjacent in the file) is read in one call behind its
        // nonce: swift-crypto's combined form, opened without a copy; the plaintext it returns
        // is copied into `dest` once, or inflated straight from it.
        let nonceSize = AESGCM.nonceSize
        let combined = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<nonceSize + stored])
        let sealed = UnsafeMutableRawBufferPointer(rebasing: combined[nonceSize...])
        try readExactly(source, sealed, at: offset)
        if let hasher, let (block, firstChunk) = signed {
            hasher.reset()
            hasher.update(UnsafeRawBufferPointer(sealed))
            guard block.item(firstChunk[Int(e.id)] + c, is: hasher.finalize()) else {
                throw AssetPackError(
                    .untrusted, "chunk \(c) is not the one its publisher signed", path: e.info.path)
            }
        }
        nonce(e, c).withUnsafeBytes { combined.copyMemory(from: $0) }
        let opened: Void? = try gcm.open(combined: UnsafeRawBufferPointer(combined), key: key) { plain in
            guard compressed else {
                dest.copyMemory(from: plain)
                return
            }
            do {
                if e.codec?.isZstd == true {
                    try zstd().decompress(plain, into: dest)
                } else {
                    try RawDeflate.decompress(plain, into: dest)
                }
            } catch let error as AssetPackError {
                throw error.naming(e.info.path)
            }
        }
        guard opened != nil else {
            throw AssetPackError(.integrityFailure, "chunk \(c) failed authentication", path: e.info.path)
        }
    }

    /// A zstd decoder from the reader's pool (a new one when all are in use), `primed` with the
    /// pack's dictionary (codec 3).
    /// - Throws: `.integrityFailure` for a codec-3 entry in a pack without a dictionary.
    private func takeZstd(primed: Bool) throws -> Zstd.Decompressor {
        guard primed else { return zstdDecoders.take() ?? Zstd.Decompressor() }
        guard let zstdDictionary else {
            throw AssetPackError(
                .integrityFailure, "an entry compressed with the pack's dictionary, and the pack has none")
        }
        return try dictionaryDecoders.take() ?? Zstd.Decompressor(dictionary: zstdDictionary)
    }

    /// Returns `decoder` to its pool, which keeps one per concurrent task at most.
    private func give(_ decoder: Zstd.Decompressor, primed: Bool) {
        (primed ? dictionaryDecoders : zstdDecoders).give(decoder, keeping: Self.cores * 4)
    }
}

/// Idle zstd decoders. A decoder serves one thread at a time; the pool hands each to one taker.
private final class DecoderPool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [Zstd.Decompressor] = []

    func take() -> Zstd.Decompressor? {
        lock.lock()
        defer { lock.unlock() }
        return idle.popLast()
    }

    func give(_ decoder: Zstd.Decompressor, keeping most: Int) {
        lock.lock()
        defer { lock.unlock() }
        if idle.count < most { idle.append(decoder) }
    }
}
