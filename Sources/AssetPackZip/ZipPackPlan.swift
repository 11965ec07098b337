import AssetPackCore
import AssetPackCrypto
import Foundation

// Planning a zip pack run: which entries are copied from the previous pack (unchanged source,
// intact stored bytes), which are produced whole or in pieces, and the task list the worker
// threads run.

extension ZipPackJob {
    /// A unit of work for the threads: whole entries `entries` (a batch), or piece `piece` of one entry.
    struct Task: Sendable {
        var entries: Range<Int>
        var piece: Int?
        /// Source bytes it reads.
        var bytes: UInt64
    }

    /// How one entry is produced.
    enum EntryPlan: Sendable {
        /// One task reads, compresses and encrypts it whole (`deflate`: as `CompressionPolicy.decisionByName`,
        /// or `true` once a sample said it pays).
        case whole(deflate: Bool?)
        /// Pieces read, CRC'd, hashed and encrypted by the tasks; the writer MACs and writes them.
        case storedPieces(PieceState)
        /// Pieces read and deflated (zlib, pigz-style) by the tasks; the writer encrypts, MACs, writes.
        case deflatedPieces(PieceState)
        /// Copied as it is from the previous pack (its source is unchanged).
        case reuse(PreviousPack.Candidate)
    }

    /// What the pieces of one entry share: the running SHA-256 (taken in piece order), the keys.
    final class PieceState: @unchecked Sendable {
        let count: Int
        let mtime: (UInt16, UInt16)
        let hasher = SHA256Hasher()
        let turnstile = Turnstile()
        private let lock = NSLock()
        private var derived: WinZipAESEntryKeys?

        init(count: Int, mtime: (UInt16, UInt16)) {
            self.count = count
            self.mtime = mtime
        }

        /// The entry's keys, derived by whichever thread asks first.
        func keys(_ make: () throws -> WinZipAESEntryKeys) throws -> WinZipAESEntryKeys {
            lock.lock()
            defer { lock.unlock() }
            if let derived { return derived }
            let k = try make()
            derived = k
            return k
        }
    }

    /// A task's output.
    enum TaskOutput: @unchecked Sendable {
        case entries([EncodedEntry])
        /// One piece: its stored bytes (ciphertext, or deflate output still to encrypt), and the
        /// CRC-32 and length of its plaintext.
        case piece(OwnedBuffer, crc: UInt32, length: Int)
    }

    /// Plans the run: how each entry is produced (reused, whole, in pieces), the task list, and
    /// the first task of each entry.
    func schedule() throws -> (plans: [EntryPlan], tasks: [Task], firstTask: [Int]) {
        let reusable = try unchangedEntries()
        // Plan: which entries go whole and which in pieces, and the task list.
        var plans: [EntryPlan] = []
        // A task is a batch of small whole entries (one handoff between threads costs more than
        // a small entry), one larger whole entry, or one piece.
        var tasks: [Task] = []
        var firstTask: [Int] = []
        plans.reserveCapacity(files.count)
        let piece = writer.pieceSize
        precondition(piece > 0 && piece % 16 == 0, "pieceSize must be a positive multiple of 16")
        for (i, file) in files.enumerated() {
            let plan = try reusable[i].map { EntryPlan.reuse($0) } ?? plan(file)
            plans.append(plan)
            switch plan {
            case .reuse: firstTask.append(tasks.count)
            case .whole:
                if let last = tasks.last, last.piece == nil, last.entries.upperBound == i,
                    last.entries.count < Self.batchEntries, last.bytes + file.size <= Self.batchBytes
                {
                    tasks[tasks.count - 1].entries = last.entries.lowerBound..<(i + 1)
                    tasks[tasks.count - 1].bytes += file.size
                } else {
                    tasks.append(Task(entries: i..<(i + 1), piece: nil, bytes: file.size))
                }
                firstTask.append(tasks.count - 1)
            case .storedPieces(let s), .deflatedPieces(let s):
                firstTask.append(tasks.count)
                for k in 0..<s.count {
                    let length = min(UInt64(piece), file.size - UInt64(k * piece))
                    tasks.append(Task(entries: i..<(i + 1), piece: k, bytes: length))
                }
            }
        }
        return (plans, tasks, firstTask)
    }

    /// The previous pack's entries whose source is unchanged and whose stored bytes are intact:
    /// same path and size as the manifest record, the source file's SHA-256 equal to the record's,
    /// and the stored data's SHA-256 equal to the record's (a damaged old pack never propagates).
    /// Both are hashed on every core. By file index.
    private func unchangedEntries() throws -> [PreviousPack.Candidate?] {
        var reusable = [PreviousPack.Candidate?](repeating: nil, count: files.count)
        guard let previous else { return reusable }
        let candidates: [(index: Int, candidate: PreviousPack.Candidate)] = files.indices.compactMap { i in
            previous.candidates[files[i].path].flatMap { $0.manifest.size == files[i].size ? (i, $0) : nil }
        }
        guard !candidates.isEmpty else { return reusable }
        let sources = files
        let queue = OrderedWorkQueue<Bool>(count: candidates.count, budget: 64 << 20) { _ in 1 << 20 }
        queue.start(workers: writer.workers, context: {}) { k, _ in
            let (index, candidate) = candidates[k]
            let hasher = SHA256Hasher()
            try FileChunks.forEach(sources[index].url, chunkSize: 1 << 20) { hasher.update($0) }
            return hasher.finalize() == candidate.manifest.sha256 && previous.storedDataMatches(candidate)
        }
        defer { queue.finish() }
        for (k, c) in candidates.enumerated() where try queue.take(k) {
            reusable[c.index] = c.candidate
        }
        return reusable
    }

    /// Decides how `file` is produced; samples large files under `.auto`.
    private func plan(_ file: SourceFile) throws -> EntryPlan {
        let size = Int(file.size)
        let policy = encoder.policy
        guard size > writer.pieceSize else { return .whole(deflate: policy.decisionByName(file)) }
        var deflate = policy.decisionByName(file)
        let (fd, mtime) = try SourceReader.open(file)
        defer { try? fd.close() }
        if deflate == nil {
            let sample = OwnedBuffer(capacity: CompressionPolicy.sampleSize)
            try SourceReader.read(fd, file, into: sample.mutableBytes, at: 0)
            let context = ZipWorkerContext(level: CompressionPolicy.packLevel)
            deflate = policy.samplePays(
                sample.bytes, compressor: context.sampler, scratch: context.sampleScratch.mutableBytes)
        }
        let pieces = (size + writer.pieceSize - 1) / writer.pieceSize
        if deflate == true {
            return size <= writer.wholeEntryLimit
                ? .whole(deflate: true) : .deflatedPieces(PieceState(count: pieces, mtime: mtime))
        }
        return .storedPieces(PieceState(count: pieces, mtime: mtime))
    }
}
