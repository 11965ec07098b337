import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

// Version 4: an entry cut into content-defined chunks, each compressed (when it pays) and
// sealed under the entry's key with a fresh random nonce, or, on an incremental re-pack, each
// chunk whose plaintext digest the previous pack's entry already has copied as it was sealed
// (its tag checked on the way). docs/INCREMENTAL.md argues why no (key, nonce) pair seals two
// plaintexts.

/// An entry of the previous pack whose chunks a re-pack may copy.
struct PreviousEntry {
    let reader: ContainerPackReader
    let entry: ContainerEntry
    /// The previous pack's plaintext digests.
    let digests: PackDigests
    /// Plaintext digest → the chunks (indexes within the entry) holding it, in entry order: the
    /// k-th occurrence of a digest in the new entry reuses the k-th one here, so an unchanged
    /// entry whose plaintext repeats (padding, silence, tiles) keeps every chunk where it was.
    let byDigest: [[UInt8]: [Int]]
    /// The previous pack's signature block, when this re-pack's key signed it and it holds for
    /// the previous header and index: item `k` is the digest of stored chunk `k` as it was
    /// signed, which a signed append lists for a chunk it keeps in place instead of reading it.
    let signed: PackSignature?

    init(reader: ContainerPackReader, entry: ContainerEntry, digests: PackDigests, signed: PackSignature? = nil) {
        self.reader = reader
        self.entry = entry
        self.digests = digests
        self.signed = signed
        var map: [[UInt8]: [Int]] = [:]
        map.reserveCapacity(entry.chunkCount)
        for c in 0..<entry.chunkCount { map[digests.chunk(entry.firstChunk + c), default: []].append(c) }
        byDigest = map
    }

    /// The chunk of the previous entry the `rank`-th occurrence (0-based) of `digest` reuses: its
    /// own, or, when the new entry has more occurrences than the old one, the first (copied again).
    /// `own`: the chunk is this occurrence's alone (an append names it where it is), not the
    /// first one copied again.
    func chunk(for digest: [UInt8], rank: Int) -> (index: Int, own: Bool)? {
        guard let chunks = byDigest[digest] else { return nil }
        return rank < chunks.count ? (chunks[rank], true) : (chunks[0], false)
    }
}

/// What writing one entry produced.
struct WrittenEntry {
    var record: IndexRecordV4
    /// Chunks copied from the previous pack.
    var reusedChunks = 0
    /// Chunks whose boundaries the previous entry's layout gave (``ChunkLayoutGuess``).
    var uncutChunks = 0
    /// Bytes appended to the pack (sealed chunks, copied or new).
    var bytesWritten: UInt64 = 0
    /// The source file's status when it was opened, before it was read (`nil`: not read).
    var status: FileStatus? = nil
}

extension ContainerPackWriter {
    /// Appends one entry's sealed chunks at `pos`; returns its index record and what was reused.
    /// `inPlace` (a version-6 append to the previous pack's own file): a reused chunk stays where
    /// it is and the record names its offset; only new chunks are written, and the tags of the
    /// chunks left in place are checked only with `checksKept`.
    func writeEntryV4(
        _ file: SourceFile, keyID: [UInt8], key: [UInt8], codec: ChunkCodec, policy: CompressionPolicy,
        previous: PreviousEntry?, inPlace: Bool = false, checksKept: Bool = true, buffers: ChunkBuffers,
        to fd: FileDescriptor,
        at pos: inout UInt64, digests: inout [UInt8]?, progress: (UInt64) -> Void
    ) throws -> WrittenEntry {
        let src = try Self.openSource(file)
        defer { try? src.close() }
        let status: FileStatus
        do { status = try src.status() } catch { throw error.io("cannot stat \(file.diskPath)") }
        let size = status.size
        try sourceOpened(file)
        let signing = digests != nil
        var out = WrittenEntry(
            record: IndexRecordV4(
                path: file.path, size: size, crc: 0, codec: .none, keyID: keyID, sha256: [], chunks: []),
            status: status)
        var compress = codec == .none ? false : policy.decisionByName(file)  // nil: decided by a sample
        var carry = 0  // bytes at the front of `plain` read but not yet cut
        var read: UInt64 = 0
        var crc: UInt32 = 0
        // In place: the previous chunks this entry already names where they are (a chunk whose
        // plaintext recurs is named once; its other occurrences are written again, as sealed).
        var kept = Set<UInt64>()
        // How often each plaintext digest occurred so far in this entry (ranks for reuse).
        var occurrences: [[UInt8]: Int] = [:]
        var guess = ChunkLayoutGuess(previous)
        while true {
            let want = Int(min(UInt64(buffers.plain.count - carry), size - read))
            let available = carry + want
            let final = read + UInt64(want) == size
            // The batch's bytes `filled..<end`, from the file (the batch starts `carry` bytes before
            // `read`): all of them, or "file shrank".
            let front = read - UInt64(carry)
            var filled = carry
            // `inParts`: on every core (not from a task that already is on one).
            func fill(_ range: Range<Int>, inParts: Bool) throws {
                guard !range.isEmpty else { return }
                let buffer = UnsafeMutableRawBufferPointer(rebasing: buffers.plain[range])
                let at = front + UInt64(range.lowerBound)
                guard try readBatch(src, buffer, at: at, of: file, inParts: inParts) == range.count else {
                    throw AssetPackError(.io, "file shrank while it was being packed", path: file.path)
                }
            }
            if compress == nil {
                try fill(filled..<min(available, CompressionPolicy.sampleSize), inParts: true)
                filled = max(filled, min(available, CompressionPolicy.sampleSize))
                let sample = UnsafeRawBufferPointer(
                    rebasing: buffers.plain[0..<min(available, CompressionPolicy.sampleSize)])
                compress = buffers.samplePays(sample, policy: policy)
            }
            // Compressed entries are cut into larger chunks (they compress smaller and decode faster;
            // a changed chunk still downloads as compressed bytes). Decided by the first batch.
            out.record.scale = compress == true ? ChunkingParameters.largeScale : 0
            let chunker = compress == true ? buffers.largeChunker : buffers.chunker
            // The chunks where the previous entry's were, whose bytes are the same: not cut, and
            // each compared as it is read (while its bytes are in the core's cache).
            let batch = UnsafeRawBufferPointer(rebasing: buffers.plain[0..<available])
            let run =
                try guess?.verified(
                    batch, from: filled, read: { try fill($0, inParts: false) }, final: final,
                    scale: out.record.scale, buffers: buffers)
                ?? ChunkLayoutGuess.Run()
            // The rest of the batch.
            try fill(max(filled, run.read)..<available, inParts: true)
            read += UInt64(want)
            var cuts = run.cuts
            out.uncutChunks += run.cuts.count
            var at = run.end
            // Cut the rest of the batch, on every core. An empty file is one empty chunk.
            if !run.waits {
                let rest = UnsafeRawBufferPointer(rebasing: batch[at...])
                for length in chunker.cuts(rest, final: final, parts: ContainerPackReader.cores) {
                    cuts.append((at, length))
                    at += length
                }
            }
            if size == 0 { cuts = [(0, 0)] }
            let lastReused = try sealBatch(
                cuts, known: run.digests, damaged: guess?.damaged ?? [],
                compress: compress == true ? codec : .none, codec: codec, key: key, policy: policy,
                previous: previous, inPlace: inPlace && !checksKept, occurrences: &occurrences, buffers: buffers,
                signing: signing)
            if !run.waits, cuts.count > run.cuts.count { guess?.resume(after: lastReused) }
            // In file order: compact the sealed chunks, record them, append them.
            var w = 0
            for (j, cut) in cuts.enumerated() {
                let slot = buffers.slot(cut.start, j)
                let length = Int(buffers.results[j].payload & ~ChunkTable.compressedBit) + ContainerFormat.tagSize
                var record = buffers.results[j]
                if inPlace, buffers.reused[j], kept.insert(record.offset).inserted {
                    // Kept where the previous generation has it: nothing to write.
                } else {
                    if w != slot {
                        memmove(buffers.sealed.baseAddress! + w, buffers.sealed.baseAddress! + slot, length)
                    }
                    record.offset = pos + UInt64(w)
                    w += length
                }
                crc = CRC32.combine(crc, buffers.crcs[j], secondLength: cut.length)
                out.record.chunks.append(record)
                if buffers.reused[j] { out.reusedChunks += 1 }
                if signing { digests! += buffers.sealedDigests[j * 32..<j * 32 + 32] }
            }
            if final {
                // The entry's last batch (most entries' only one; a final batch is cut to its end):
                // written at once, as nothing of this entry is left to overlap it with.
                try buffers.finishWrites()
                try pwriteAll(fd, UnsafeRawBufferPointer(rebasing: buffers.sealed[0..<w]), at: pos)
            } else {
                try buffers.writeBehind(w, to: fd, at: pos)
            }
            pos += UInt64(w)
            out.bytesWritten += UInt64(w)
            carry = available - at
            if carry > 0 {
                memmove(buffers.plain.baseAddress!, buffers.plain.baseAddress! + at, carry)
            }
            if final && carry == 0 { break }
            progress(read - UInt64(carry))
        }
        try buffers.finishWrites()
        var extra: UInt8 = 0
        let more: Int
        do { more = try withUnsafeMutableBytes(of: &extra) { try src.pread(into: $0, at: size) } } catch let e as Errno
        {
            throw e.io("cannot read \(file.diskPath)")
        }
        guard more == 0 else { throw AssetPackError(.io, "file grew while it was being packed", path: file.path) }
        out.record.crc = crc
        out.record.sha256 = ContainerFormat.entryDigest(size: size, chunks: out.record.chunks)
        let anyCompressed = out.record.chunks.contains { $0.payload & ChunkTable.compressedBit != 0 }
        out.record.codec = anyCompressed ? codec : .none
        return out
    }

    /// Digests and CRCs, then per chunk: a copy of the previous pack's sealed chunk with the same
    /// plaintext digest (tag checked), or the chunk compressed (when `compress` is a codec and it
    /// pays) and sealed under a fresh random nonce. Chunks are shared among the cores, in two
    /// passes: the digests first, then (after each chunk's occurrence rank is counted, in order,
    /// in `occurrences`) the copies and seals.
    ///
    /// A compressed chunk is copied only from an entry of the same `codec` (the one this entry
    /// records): a zstd frame in an entry that says deflate would not decode.
    ///
    /// `known`: the digests of the first chunks, already hashed (their CRC-32s are in
    /// `buffers.crcs`). `damaged`: previous chunks found damaged, never reused.
    /// - Returns: The previous chunk (index within its entry) the batch's last chunk reuses, if any.
    private func sealBatch(
        _ cuts: [(start: Int, length: Int)], known: [[UInt8]], damaged: Set<Int>, compress: ChunkCodec,
        codec: ChunkCodec, key: [UInt8], policy: CompressionPolicy, previous: PreviousEntry?, inPlace: Bool,
        occurrences: inout [[UInt8]: Int], buffers: ChunkBuffers, signing: Bool
    ) throws -> Int? {
        let total = cuts.reduce(0) { $0 + $1.length }
        let tasks = ChunkBuffers.tasks(chunks: cuts.count, bytes: total)
        let tagSize = ContainerFormat.tagSize
        let nonces = random(12 * cuts.count)
        func share(_ task: Int) -> Range<Int> { AssetPackCore.share(task, of: tasks, count: cuts.count) }
        // Pass 1, in parallel: each chunk's digest and CRC (the entry's digest is made of the
        // chunks' digests: ContainerFormat.entryDigest).
        var digests = known + [[UInt8]](repeating: [], count: cuts.count - known.count)
        try digests.withUnsafeMutableBufferPointer { out in
            try concurrently(tasks) { task in
                for j in share(task) where j >= known.count {
                    let plain = UnsafeRawBufferPointer(
                        rebasing: buffers.plain[cuts[j].start..<cuts[j].start + cuts[j].length])
                    out[j] = SHA256Hasher.digest(plain)
                    buffers.crcs[j] = CRC32.checksum(plain)
                }
            }
        }
        // In order: the previous chunk each occurrence of a digest reuses.
        var reuse = [(index: Int, own: Bool)?](repeating: nil, count: cuts.count)
        if let previous {
            for j in cuts.indices {
                let rank = occurrences[digests[j], default: 0]
                occurrences[digests[j]] = rank + 1
                reuse[j] = previous.chunk(for: digests[j], rank: rank)
                if let old = reuse[j], damaged.contains(old.index) { reuse[j] = nil }
            }
        }
        // Pass 2, in parallel: copy or seal.
        try concurrently(tasks) { task in
            for j in share(task) {
                let (start, length) = cuts[j]
                let plain = UnsafeRawBufferPointer(rebasing: buffers.plain[start..<start + length])
                let digest = digests[j]
                let dest = buffers.sealed.baseAddress! + buffers.slot(start, j)
                // In place (an append), a chunk this occurrence keeps where it is is not read: it
                // is not moved or copied, so its tag is left to every read, as it was before the
                // re-pack (docs/INCREMENTAL.md, "Which kept chunks are checked"). A signature
                // lists its sealed digest: the one the previous signature lists, when this key
                // signed it, else read.
                let listed = inPlace && reuse[j]?.own == true && signing ? previous?.signed : nil
                if let previous, let (old, own) = reuse[j],
                    previous.reader.plainLength(previous.entry, old) == length,
                    previous.entry.codec == codec || !previous.reader.isCompressed(previous.entry, old),
                    let copied = try inPlace && own && (!signing || listed != nil)
                        ? 0
                        : previous.reader.copySealedChunk(
                            previous.entry, old,
                            into: UnsafeMutableRawBufferPointer(start: dest, count: length + tagSize),
                            gcm: buffers.gcm(task), scratch: buffers.scratch(task), check: !(inPlace && own))
                {
                    let k = previous.entry.firstChunk + old
                    buffers.results[j] = ChunkRecord(
                        offset: previous.reader.chunks.offset(k), plainLength: UInt32(length),
                        payload: previous.reader.chunks.payload(k), nonce: previous.reader.chunks.nonce(k),
                        digest: digest)
                    buffers.reused[j] = true
                    if let listed {
                        buffers.storeDigest(j, listed.item(k))
                    } else if signing {
                        buffers.storeSealedDigest(j, UnsafeRawBufferPointer(start: dest, count: copied))
                    }
                    continue
                }
                // Compress straight into the chunk's slot; a chunk that does not shrink within the
                // policy's limit is copied there as it is. Then seal in place, the tag after it.
                var packed: Int?
                if compress != .none, length > 0 {
                    let limit = policy.deflateLimit(length)
                    if limit > 0 {
                        packed = buffers.compress(
                            plain, codec: compress, task: task,
                            into: UnsafeMutableRawBufferPointer(start: dest, count: limit))
                    }
                }
                let count = packed ?? length
                if packed == nil, count > 0 { dest.copyMemory(from: plain.baseAddress!, byteCount: count) }
                let nonce = Array(nonces[12 * j..<12 * j + 12])
                buffers.gcm(task).seal(
                    UnsafeMutableRawBufferPointer(start: dest, count: count),
                    tag: UnsafeMutableRawBufferPointer(start: dest + count, count: tagSize),
                    nonce: nonce, key: key)
                buffers.results[j] = ChunkRecord(
                    plainLength: UInt32(length),
                    payload: UInt32(count) | (packed == nil ? 0 : ChunkTable.compressedBit),
                    nonce: nonce, digest: digest)
                buffers.reused[j] = false
                if signing { buffers.storeSealedDigest(j, UnsafeRawBufferPointer(start: dest, count: count + tagSize)) }
            }
        }
        return reuse.last??.index
    }

    /// Reads `buffer.count` bytes of `fd` at `offset` into `buffer`, in parts on every core when
    /// `inParts` and there are megabytes of them: a batch's read is a copy out of the page cache
    /// on one core (~1.4 ms for 8 MiB here), which the other core would otherwise wait for.
    /// - Returns: The bytes read before the first short part (the whole buffer: all were there).
    private func readBatch(
        _ fd: FileDescriptor, _ buffer: UnsafeMutableRawBufferPointer, at offset: UInt64, of file: SourceFile,
        inParts: Bool
    ) throws -> Int {
        let parts = inParts && buffer.count >= 2 << 20 ? ContainerPackReader.cores : 1
        if parts == 1 {
            do { return try fd.preadFully(into: buffer, at: offset) } catch {
                throw error.io("cannot read \(file.diskPath)")
            }
        }
        var got = [Int](repeating: 0, count: parts)
        let bounds = (0...parts).map { buffer.count * $0 / parts }
        try got.withUnsafeMutableBufferPointer { got in
            try concurrently(parts) { k in
                let part = UnsafeMutableRawBufferPointer(rebasing: buffer[bounds[k]..<bounds[k + 1]])
                do { got[k] = try fd.preadFully(into: part, at: offset + UInt64(bounds[k])) } catch let e as Errno {
                    throw e.io("cannot read \(file.diskPath)")
                }
            }
        }
        for k in 0..<parts where got[k] < bounds[k + 1] - bounds[k] { return bounds[k] + got[k] }
        return buffer.count
    }
}

/// What a previous chunk is to the bytes it is compared with.
enum ChunkComparison {
    /// It opens, to these bytes.
    case same
    /// It opens to other bytes, or has another length.
    case different
    /// Its tag fails, or it could not be read.
    case damaged
}

extension ContainerPackReader {
    /// Copies chunk `c` of `e` as sealed (payload and tag) into `dest`, after checking its tag
    /// (decrypting into `scratch`, which holds at least a chunk; not with `check` false, for a
    /// chunk that stays where it is); `nil` when the tag does not check
    /// (a damaged previous pack: the chunk is sealed afresh) or the chunk does not fit.
    /// - Returns: The bytes copied.
    func copySealedChunk(
        _ e: ContainerEntry, _ c: Int, into dest: UnsafeMutableRawBufferPointer, gcm: AESGCM,
        scratch: UnsafeMutableRawBufferPointer, check: Bool = true
    ) throws -> Int? {
        let (offset, length) = storedChunk(e, c)
        guard length <= dest.count, length - ContainerFormat.tagSize <= scratch.count else { return nil }
        let sealed = UnsafeMutableRawBufferPointer(rebasing: dest[0..<length])
        try readExactly(source, sealed, at: offset)
        guard
            !check
                || gcm.authenticates(
                    UnsafeRawBufferPointer(sealed), nonce: nonce(e, c), key: keys.entryKey(e), scratch: scratch)
        else { return nil }
        return length
    }

    /// Chunk `c` of `e`, stored uncompressed, against `plain`: its sealed bytes are read into
    /// `scratch` (at least the sealed chunk), opened there (tag checked) and compared.
    func compare(
        _ e: ContainerEntry, _ c: Int, with plain: UnsafeRawBufferPointer, gcm: AESGCM, key: [UInt8],
        scratch: UnsafeMutableRawBufferPointer
    ) -> ChunkComparison {
        let (offset, length) = storedChunk(e, c)
        let tagSize = ContainerFormat.tagSize
        guard !isCompressed(e, c), length - tagSize == plain.count, length <= scratch.count else { return .different }
        let sealed = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length])
        guard (try? readExactly(source, sealed, at: offset)) != nil else { return .damaged }
        let payload = UnsafeMutableRawBufferPointer(rebasing: sealed[0..<plain.count])
        let tag = UnsafeRawBufferPointer(rebasing: sealed[plain.count...])
        guard gcm.open(payload, tag: tag, nonce: nonce(e, c), key: key) else { return .damaged }
        let same = plain.count == 0 || memcmp(payload.baseAddress!, plain.baseAddress!, plain.count) == 0
        return same ? .same : .different
    }
}

/// Per-write buffers for version-4 entries: a batch of plaintext in, its sealed chunks out.
final class ChunkBuffers {
    let chunker: ContentChunker
    /// Compressed entries' chunker: minimum and average doubled.
    let largeChunker: ContentChunker
    /// Plaintext: a batch plus the tail of the previous one not yet cut.
    let plain: UnsafeMutableRawBufferPointer
    /// Sealed chunks, chunk `j` (starting at plaintext offset `s` of the batch) at `s + 16·j`.
    private(set) var sealed: UnsafeMutableRawBufferPointer
    /// The other sealed buffer: the previous batch's, being written while this one is sealed.
    private var spare: UnsafeMutableRawBufferPointer
    private let writer = WriteBehind()
    /// Per chunk of the batch (each task writes its own chunks' elements): CRC-32, record,
    /// whether it was copied, and its sealed bytes' SHA-256 (signed packs; 32 bytes each).
    let crcs: UnsafeMutableBufferPointer<UInt32>
    let results: UnsafeMutableBufferPointer<ChunkRecord>
    let reused: UnsafeMutableBufferPointer<Bool>
    let sealedDigests: UnsafeMutableRawBufferPointer
    /// The most chunks a batch holds (the per-chunk buffers' length).
    var chunkCapacity: Int { crcs.count }
    private let ciphers: [AESGCM]
    /// One sealed chunk's worth per task, allocated on the task's first reused chunk: where a reused
    /// chunk is decrypted to check its tag (a buffer allocated per chunk was mapped, faulted in
    /// and unmapped again for every chunk over 128 KiB).
    private var scratches: [UnsafeMutableRawBufferPointer?]
    private let scratchSize: Int
    private var deflaters: [RawDeflate.FastCompressor?]
    private var zstds: [Zstd.Compressor?]
    private let level: CompressionLevel
    /// The pack's zstd dictionary, loaded into every zstd compressor (codec 3), or nil (codec 2).
    private let dictionary: [UInt8]?
    private let lock = NSLock()

    /// The plaintext read and cut at a time: 8 MiB.
    static let defaultBatch = 8 << 20

    init(chunking: ChunkingParameters, level: CompressionLevel, dictionary: [UInt8]? = nil, batch: Int = defaultBatch) {
        chunker = ContentChunker(min: chunking.min, avg: chunking.avg, max: chunking.max)
        let large = chunking.scaled(ChunkingParameters.largeScale)
        largeChunker = ContentChunker(min: large.min, avg: large.avg, max: large.max)
        let batch = max(batch, 2 * chunking.max)
        plain = .allocate(byteCount: batch, alignment: 64)
        let most = batch / max(1, chunking.min) + 2
        sealed = .allocate(byteCount: batch + most * ContainerFormat.tagSize, alignment: 64)
        spare = .allocate(byteCount: sealed.count, alignment: 64)
        crcs = .allocate(capacity: most)
        crcs.initialize(repeating: 0)
        results = .allocate(capacity: most)
        results.initialize(repeating: ChunkRecord(plainLength: 0, payload: 0, nonce: [], digest: []))
        reused = .allocate(capacity: most)
        reused.initialize(repeating: false)
        sealedDigests = .allocate(byteCount: 32 * most, alignment: 16)
        ciphers = (0..<max(1, ContainerPackReader.cores * 4)).map { _ in AESGCM() }
        scratchSize = chunking.max + ContainerFormat.tagSize  // a sealed chunk (ChunkLayoutGuess)
        scratches = Array(repeating: nil, count: ciphers.count)
        deflaters = Array(repeating: nil, count: ciphers.count)
        zstds = Array(repeating: nil, count: ciphers.count)
        self.level = level
        self.dictionary = dictionary
    }

    /// How many concurrent tasks share `chunks` chunks of `bytes` plaintext: one for a single
    /// chunk or under 256 KiB, else up to four per core.
    static func tasks(chunks: Int, bytes: Int) -> Int {
        chunks >= 2 && bytes >= 256 << 10 ? min(chunks, ContainerPackReader.cores * 4) : 1
    }

    /// Where chunk `j`, starting at plaintext offset `start` of the batch, is sealed.
    func slot(_ start: Int, _ j: Int) -> Int { start + j * ContainerFormat.tagSize }

    func storeSealedDigest(_ j: Int, _ sealed: UnsafeRawBufferPointer) {
        storeDigest(j, SHA256Hasher.digest(sealed))
    }

    /// Stores `digest` as chunk `j`'s sealed digest.
    func storeDigest(_ j: Int, _ digest: some Collection<UInt8>) {
        UnsafeMutableRawBufferPointer(rebasing: sealedDigests[j * 32..<j * 32 + 32]).copyBytes(from: digest)
    }

    /// The cipher context of concurrent task `task`.
    func gcm(_ task: Int) -> AESGCM { ciphers[task] }

    /// Concurrent task `task`'s scratch buffer (the largest chunk).
    func scratch(_ task: Int) -> UnsafeMutableRawBufferPointer {
        lock.lock()
        defer { lock.unlock() }
        if let s = scratches[task] { return s }
        let s = UnsafeMutableRawBufferPointer.allocate(byteCount: scratchSize, alignment: 64)
        scratches[task] = s
        return s
    }

    /// `plain` compressed with `codec` into `output` by task `task`'s compressor, or nil when
    /// it does not fit (does not pay).
    func compress(
        _ plain: UnsafeRawBufferPointer, codec: ChunkCodec, task: Int, into output: UnsafeMutableRawBufferPointer
    ) -> Int? {
        switch codec {
        case .none: return nil
        case .deflate: return deflater(task).compress(plain, into: output)
        case .zstd, .zstdDictionary:
            // One write has one zstd codec: with the pack's dictionary exactly when it has one.
            precondition(
                (codec == .zstdDictionary) == (dictionary != nil), "zstd codec \(codec) without its dictionary")
            return zstd(task).compress(plain, into: output)
        }
    }

    /// Whether `sample` pays to compress under `policy`: the one `.auto` rule both writers share
    /// (a deflate of the sample at ``CompressionPolicy/packLevel``), whatever the codec and level,
    /// so every codec and level stores and compresses the same entries.
    func samplePays(_ sample: UnsafeRawBufferPointer, policy: CompressionPolicy) -> Bool {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, sample.count), alignment: 16)
        defer { scratch.deallocate() }
        return policy.samplePays(sample, compressor: sampler, scratch: scratch)
    }

    /// The sample's compressor (used by the writer's thread only).
    private lazy var sampler = RawDeflate.FastCompressor(level: CompressionPolicy.packLevel)

    private func deflater(_ task: Int) -> RawDeflate.FastCompressor {
        lock.lock()
        defer { lock.unlock() }
        if let c = deflaters[task] { return c }
        let c = RawDeflate.FastCompressor(level: level.containerDeflateLevel)
        deflaters[task] = c
        return c
    }

    private func zstd(_ task: Int) -> Zstd.Compressor {
        lock.lock()
        defer { lock.unlock() }
        if let c = zstds[task] { return c }
        let c = Zstd.Compressor(level: level.zstdLevel, dictionary: dictionary)
        zstds[task] = c
        return c
    }

    /// Starts writing `sealed[0..<count]` at `offset` in the background, and gives the next batch
    /// the other sealed buffer; first waits for the write before it (and throws its error).
    /// Writing 8 MiB into the page cache takes ~15 ms here, which the next batch's reading,
    /// cutting and sealing now overlap.
    func writeBehind(_ count: Int, to fd: FileDescriptor, at offset: UInt64) throws {
        try writer.finish()
        writer.start(UnsafeRawBufferPointer(rebasing: sealed[0..<count]), to: fd, at: offset)
        swap(&sealed, &spare)
    }

    /// Waits for the write in flight, if any; throws its error.
    func finishWrites() throws { try writer.finish() }

    func free() {
        try? writer.finish()  // never free a buffer still being written
        plain.deallocate()
        sealed.deallocate()
        spare.deallocate()
        crcs.deallocate()
        results.deinitialize()
        results.deallocate()
        reused.deallocate()
        sealedDigests.deallocate()
        for s in scratches { s?.deallocate() }
    }
}

/// One background `pwrite` at a time, for ``ChunkBuffers/writeBehind(_:to:at:)``: whoever starts a
/// write keeps its buffer alive and unchanged until ``finish()`` returns.
final class WriteBehind: @unchecked Sendable {
    private let queue = DispatchQueue(label: "assetpack.container.write-behind")
    private let group = DispatchGroup()
    private let lock = NSLock()
    private var failure: (any Error)?

    func start(_ bytes: UnsafeRawBufferPointer, to fd: FileDescriptor, at offset: UInt64) {
        let base = UInt(bitPattern: bytes.baseAddress), count = bytes.count
        group.enter()
        queue.async { [self] in
            defer { group.leave() }
            let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: base), count: count)
            do { try pwriteAll(fd, bytes, at: offset) } catch {
                lock.lock()
                failure = error
                lock.unlock()
            }
        }
    }

    func finish() throws {
        group.wait()
        lock.lock()
        defer { lock.unlock() }
        if let e = failure {
            failure = nil
            throw e
        }
    }
}
