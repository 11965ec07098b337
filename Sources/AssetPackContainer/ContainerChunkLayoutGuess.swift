import AssetPackCore
import AssetPackCrypto

/// The previous entry's chunk layout, as a guess at where a re-packed entry's chunks end, so that
/// the unchanged stretches of a changed large file are neither cut nor hashed.
///
/// A boundary of ``ContentChunker`` depends only on the bytes of its chunk, counted from the
/// chunk's start (its hash covers the 64 bytes before it, and no candidate is nearer the start
/// than the minimum length, at least 64). So when a chunk starts at position `p` of the new file
/// and the bytes `[p, p + L)` are those of a previous chunk of length `L` cut with the same
/// bounds, cutting from `p` ends that chunk at `p + L` too: the guess, once its bytes are checked,
/// is the cut. Two exceptions: the previous entry's last chunk ended where its file did, so it is
/// taken only where the new file ends at the same place; and a chunk whose bytes differ is cut
/// from its start, as every byte after it in the batch is (`ContainerPackWriter.writeEntryV4`).
///
/// The bytes are checked against the previous chunk's: a chunk stored uncompressed is read,
/// opened (tag checked) and compared, which costs less than hashing it (docs/INCREMENTAL.md,
/// "Guessed, not cut; compared, not hashed"); a compressed one by its SHA-256 against the
/// previous pack's digest. Either way the new record takes the previous digest, as a re-pack does
/// for every chunk and entry it keeps (docs/SECURITY.md, "What the build reuses"). A chunk whose
/// tag fails is remembered in ``damaged`` and never kept. A previous pack cut by some other
/// writer with other boundaries gives a layout that is still valid (every chunk within the
/// bounds the reader checks), only not the one a fresh pack would cut.
struct ChunkLayoutGuess {
    let previous: PreviousEntry
    /// The previous chunk (index within its entry) guessed to start where the batch starts.
    var next: Int?
    /// The previous entry's key.
    private let key: [UInt8]
    /// Previous chunks (indexes within the entry) found damaged: their tags failed, or they could
    /// not be read. A re-pack must not keep them, even where its hash of the source matches their
    /// digest (``ContainerPackWriter/sealBatch``).
    private(set) var damaged = Set<Int>()

    /// A guess for `previous`, or nil when it has no content-defined chunk table to guess from.
    init?(_ previous: PreviousEntry?) {
        guard let previous, previous.entry.codec != nil, previous.entry.chunkCount > 0 else { return nil }
        self.previous = previous
        next = 0
        key = previous.reader.keys.entryKey(previous.entry)
    }

    /// The chunks at the front of a batch that the guess got right.
    struct Run {
        /// Their places in the batch, in order from its start.
        var cuts: [(start: Int, length: Int)] = []
        /// Their plaintext digests (CRC-32s are in `buffers.crcs`, by position).
        var digests: [[UInt8]] = []
        /// Where they end in the batch.
        var end: Int { cuts.last.map { $0.start + $0.length } ?? 0 }
        /// The bytes at the front of the batch read from the file: those read before, and every
        /// guessed chunk's (each read by the task that compares it).
        var read = 0
        /// Whether the rest of the batch is left uncut for the next one: every guess held and the
        /// next previous chunk does not fit in what is left (`next` names it).
        var waits = false
    }

    /// Checks the guessed chunks at the front of `batch` (a chunk starts at its first byte) and
    /// returns those whose bytes are the previous ones', comparing them (and taking the CRC-32s of
    /// those that match) on every core. `final`: the batch ends where the file does. `scale`: the entry's chunk
    /// scale (a guess is taken only from an entry cut with the same bounds).
    ///
    /// Only the first `from` bytes of `batch` are read yet: each task reads the rest of its guessed
    /// chunks' bytes with `read` (the batch's range to read; it reads all of it or throws) just
    /// before it compares them, so that they are still in its core's cache.
    mutating func verified(
        _ batch: UnsafeRawBufferPointer, from: Int, read: (Range<Int>) throws -> Void, final: Bool,
        scale: UInt8, buffers: ChunkBuffers
    ) throws -> Run {
        var run = Run()
        run.read = from
        guard var k = next, scale == previous.entry.scale else {
            next = nil
            return run
        }
        let e = previous.entry, reader = previous.reader
        var guessed: [(start: Int, length: Int, chunk: Int)] = []
        var p = 0
        while k < e.chunkCount, guessed.count < buffers.chunkCapacity {
            let length = reader.plainLength(e, k)
            guard length > 0, p + length <= batch.count else { break }  // a later batch may hold it
            if k == e.chunkCount - 1, !(final && p + length == batch.count) {
                k = e.chunkCount  // the previous last chunk, where this file does not end: no more guesses
                break
            }
            guessed.append((p, length, k))
            p += length
            k += 1
        }
        guard !guessed.isEmpty else {
            // Nothing fits (a batch but the last holds several of the largest chunks): cut it all.
            next = nil
            return run
        }
        let tasks = ChunkBuffers.tasks(chunks: guessed.count, bytes: p)
        var found = [ChunkComparison](repeating: .different, count: guessed.count)
        var digests = [[UInt8]](repeating: [], count: guessed.count)
        try found.withUnsafeMutableBufferPointer { found in
            try digests.withUnsafeMutableBufferPointer { digests in
                try concurrently(tasks) { task in
                    for j in share(task, of: tasks, count: guessed.count) {
                        let g = guessed[j]
                        if g.start + g.length > from { try read(max(g.start, from)..<g.start + g.length) }
                        let plain = UnsafeRawBufferPointer(rebasing: batch[g.start..<g.start + g.length])
                        let digest = previous.digests.chunk(e.firstChunk + g.chunk)
                        found[j] =
                            reader.isCompressed(e, g.chunk)
                            ? (SHA256Hasher.digest(plain) == digest ? .same : .different)
                            : reader.compare(
                                e, g.chunk, with: plain, gcm: buffers.gcm(task), key: key,
                                scratch: buffers.scratch(task))
                        guard found[j] == .same else { continue }
                        digests[j] = digest
                        buffers.crcs[j] = CRC32.checksum(plain)
                    }
                }
            }
        }
        for (j, g) in guessed.enumerated() where found[j] == .damaged { damaged.insert(g.chunk) }
        run.read = max(from, p)
        let good = found.firstIndex { $0 != .same } ?? guessed.count
        run.cuts = guessed[..<good].map { ($0.start, $0.length) }
        run.digests = Array(digests[..<good])
        if good == guessed.count, k < e.chunkCount, !final {
            run.waits = true
            next = k
        } else {
            next = nil
        }
        return run
    }

    /// After a batch whose tail was cut: the previous chunk after the one the batch's last chunk
    /// reused (`reused`, its index), as the guess for what follows; none without one.
    mutating func resume(after reused: Int?) {
        guard let reused, reused + 1 < previous.entry.chunkCount else {
            next = nil
            return
        }
        next = reused + 1
    }
}
