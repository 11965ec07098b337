import AssetPackCore
import AssetPackCrypto

/// The previous entry's chunk layout, as a guess at where a re-packed entry's chunks end, so that
/// the unchanged stretches of a changed large file are hashed but not cut.
///
/// A boundary of ``ContentChunker`` depends only on the bytes of its chunk, counted from the
/// chunk's start (its hash covers the 64 bytes before it, and no chunk is shorter than 64). So
/// when a chunk starts at position `p` of the new file and the bytes `[p, p + L)` are those of a
/// previous chunk of length `L` cut with the same bounds, cutting from `p` ends that chunk at
/// `p + L` too: the guess, once its bytes are checked, is the cut. Two exceptions: the previous
/// entry's last chunk ended where its file did, so it is taken only where the new file ends at
/// the same place; and a chunk whose bytes differ is cut from its start, as every byte after it in
/// the batch is (`ContainerPackWriter.writeEntryV4`).
///
/// The bytes are checked against the previous chunk's: a chunk stored uncompressed is read,
/// authenticated and decrypted, and compared (AES-GCM here runs ~2.4 GB/s of a core with the
/// read, SHA-256 ~1.4 GB/s); a compressed one by its SHA-256 against the previous pack's digest.
/// Either way the new record takes the previous digest, which is the digest of these bytes: the
/// index that lists it is authenticated, and so is the chunk's tag (an attacker who cannot seal
/// under the pack's key cannot make other bytes open). Neither the cut's scan nor a hash of the
/// chunk is spent (a 64 MiB entry's were 29 % and 34 % of a re-pack's CPU, `perf record`). A
/// previous pack cut by some other writer with other boundaries gives a layout that is still
/// valid (every chunk within the bounds the reader checks), only not the one a fresh pack would
/// cut.
struct ChunkLayoutGuess {
    let previous: PreviousEntry
    /// The previous chunk (index within its entry) guessed to start where the batch starts.
    var next: Int?
    /// The previous entry's key.
    private let key: [UInt8]

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
        var end = 0
        /// Whether the rest of the batch is left uncut for the next one: every guess held and the
        /// next previous chunk does not fit in what is left (`next` names it).
        var waits = false
    }

    /// Checks the guessed chunks at the front of `batch` (a chunk starts at its first byte) and
    /// returns those whose bytes are the previous ones', hashing them and their CRC-32s on
    /// `tasks` threads. `final`: the batch ends where the file does. `scale`: the entry's chunk
    /// scale (a guess is taken only from an entry cut with the same bounds).
    mutating func verified(
        _ batch: UnsafeRawBufferPointer, final: Bool, scale: UInt8, buffers: ChunkBuffers
    ) throws -> Run {
        var run = Run()
        guard var k = next, scale == previous.entry.scale else {
            next = nil
            return run
        }
        let e = previous.entry, reader = previous.reader
        var guessed: [(start: Int, length: Int, chunk: Int)] = []
        var p = 0
        while k < e.chunkCount, guessed.count < buffers.chunkCapacity {
            let length = reader.plainLength(e, k)
            let last = k == e.chunkCount - 1
            guard length > 0, p + length <= batch.count, !last || (final && p + length == batch.count) else { break }
            guessed.append((p, length, k))
            p += length
            k += 1
        }
        guard !guessed.isEmpty else {
            // Nothing fits (a batch but the last holds several of the largest chunks): cut it all.
            next = nil
            return run
        }
        let total = p
        let tasks = guessed.count >= 2 && total >= 256 << 10 ? min(guessed.count, ContainerPackReader.cores * 4) : 1
        var held = [Bool](repeating: false, count: guessed.count)
        var digests = [[UInt8]](repeating: [], count: guessed.count)
        try held.withUnsafeMutableBufferPointer { held in
            try digests.withUnsafeMutableBufferPointer { digests in
                try concurrently(tasks) { task in
                    for j in (guessed.count * task / tasks)..<(guessed.count * (task + 1) / tasks) {
                        let g = guessed[j]
                        let plain = UnsafeRawBufferPointer(rebasing: batch[g.start..<g.start + g.length])
                        let digest = previous.digests.chunk(e.firstChunk + g.chunk)
                        if reader.isCompressed(e, g.chunk) {
                            guard SHA256Hasher.digest(plain) == digest else { continue }
                        } else {
                            guard
                                try reader.chunk(
                                    e, g.chunk, is: plain, gcm: buffers.gcm(task), key: key,
                                    scratch: buffers.scratch(task))
                            else { continue }
                        }
                        held[j] = true
                        digests[j] = digest
                        buffers.crcs[j] = CRC32.checksum(plain)
                    }
                }
            }
        }
        let good = held.firstIndex(of: false) ?? guessed.count
        run.cuts = guessed[..<good].map { ($0.start, $0.length) }
        run.digests = Array(digests[..<good])
        run.end = good == 0 ? 0 : guessed[good - 1].start + guessed[good - 1].length
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
