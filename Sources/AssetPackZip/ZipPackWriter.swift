import AssetPackCore
import AssetPackCrypto
internal import CLibzip
import Foundation

/// Writes zip packs: WinZip AES-256 by default, no encryption, or ZipCrypto on request.
///
/// AES-256 and unencrypted packs are written by our own code (see docs/ZIP-WRITER.md for why
/// libzip cannot take finished entries): entries are compressed with libdeflate and encrypted
/// with OpenSSL on every core, and written in path order through `AtomicFile` (a temporary file
/// beside the output, synced, renamed). Names are UTF-8 with the UTF-8 flag set. A reserved
/// entry, `.assetpack/manifest`, records each entry's size and SHA-256 so that the next pack to
/// the same output copies unchanged entries as they are (see ``write(_:to:options:)``).
///
/// ZipCrypto packs are written by libzip (we do not implement that cipher), into a temporary
/// file whose name starts with `AtomicFile.temporaryPrefix`.
package struct ZipPackWriter: PackWriter {
    /// libdeflate's level (the table behind the choice is in docs/ZIP-WRITER.md).
    package var level: Int32 = CompressionPolicy.packLevel
    /// Test hook: derive every AES salt from this seed, so the output is byte-for-byte
    /// reproducible. Never for real packs: a salt must not repeat under one password.
    package var fixedSaltSeed: UInt64?
    /// Entries up to this size that are deflated are read and compressed whole (libdeflate has
    /// no streaming interface); larger ones are deflated in ``pieceSize`` pieces with zlib.
    package var wholeEntryLimit = 64 << 20
    /// Entries above this size that are stored are read, encrypted and written in pieces of
    /// this size (a multiple of 16, so each piece starts on an AES block).
    package var pieceSize = 4 << 20
    /// Most bytes of work started and not yet written (tasks beyond it wait).
    package var memoryBudget = 96 << 20
    /// Threads that compress and encrypt.
    package var workers = ZipPackWriter.cores

    /// The processor count, read once (not on every writer's creation).
    private static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Creates a writer.
    package init() {}

    /// Writes `files` as a zip pack at `output`, atomically.
    ///
    /// - Throws: `.missingPassword` when encryption is requested without a password,
    ///   `.invalidArgument` for a raw key, an empty password, an entry path that is not
    ///   normalised, repeated, too long or inside `.assetpack/`; `.io` when reading or writing fails.
    @discardableResult
    package func write(_ files: [SourceFile], to output: String, options: PackOptions) throws -> PackWriteReport {
        let password: String?
        switch (options.zip.encryption, options.credential) {
        case (.none, _): password = nil
        case (_, .password(let p)?): password = p
        case (_, .key?): throw AssetPackError(.invalidArgument, "zip packs take a password, not a raw key")
        case (_, nil): throw AssetPackError(.missingPassword, "a password is needed to encrypt the pack")
        }
        try ReadLimits.default.checkPackable(files)
        if let password, password.isEmpty {
            throw AssetPackError(.invalidArgument, "the password is empty")
        }
        let sorted = files.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        for (i, f) in sorted.enumerated() {
            guard !f.path.isEmpty, f.path.utf8.count <= Int(UInt16.max), EntryPath.normalize(f.path) == f.path else {
                throw AssetPackError(.invalidArgument, "entry path is empty, too long or not normalised", path: f.path)
            }
            guard !ZipManifest.isReserved(f.path) || f.path == DeletionRecord.entryName else {
                throw AssetPackError(
                    .invalidArgument, "paths below \(ZipManifest.folder) are reserved for the pack's manifest",
                    path: f.path)
            }
            if i > 0, sorted[i - 1].path.utf8.elementsEqual(f.path.utf8) {
                throw AssetPackError(.invalidArgument, "duplicate entry path", path: f.path)
            }
        }
        if options.zip.encryption == .zipCrypto {
            return try LibzipZipCryptoWriter.write(sorted, to: output, password: password!, options: options)
        }
        let encoder = ZipEntryEncoder(
            encrypted: password != nil, password: Array((password ?? "").utf8), policy: options.compression,
            level: level, saltSeed: fixedSaltSeed)
        // The pack already at the output, if it opens with this password: its unchanged entries are
        // copied as they are. Read before the new pack replaces it (the descriptor stays valid).
        let previous = options.fresh ? nil : PreviousPack.open(output, encoder: encoder)
        let pack = ZipPackJob(
            writer: self, files: sorted, encoder: encoder, previous: previous, progress: options.progress)
        return try AtomicFile.write(output) { fd in
            let report = try pack.run(to: fd, path: output)
            if let key = options.signingKey {
                try ZipSignature.sign(
                    FileDescriptor(rawValue: fd), path: output, key: key, release: try options.release(for: output))
            }
            return report
        }
    }
}

/// A unit of work for the threads: whole entries `entries` (a batch), or piece `piece` of one entry.
private struct Task: Sendable {
    var entries: Range<Int>
    var piece: Int?
    /// Source bytes it reads.
    var bytes: UInt64
}

/// How one entry is produced.
private enum EntryPlan: Sendable {
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
private final class PieceState: @unchecked Sendable {
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
private enum TaskOutput: @unchecked Sendable {
    case entries([EncodedEntry])
    /// One piece: its stored bytes (ciphertext, or deflate output still to encrypt), and the
    /// CRC-32 and length of its plaintext.
    case piece(OwnedBuffer, crc: UInt32, length: Int)
}

/// One run of the writer over one output.
private struct ZipPackJob {
    /// Most entries and source bytes in one batch of small whole entries.
    static let batchEntries = 32
    static let batchBytes: UInt64 = 1 << 20

    let writer: ZipPackWriter
    let files: [SourceFile]
    let encoder: ZipEntryEncoder
    let previous: PreviousPack?
    let progress: (@Sendable (PackProgress) -> Void)?

    /// Runs every task and writes the pack to `fd`.
    func run(to fd: Int32, path: String) throws -> PackWriteReport {
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
        let encoder = encoder
        let files = files
        let level = writer.level
        let wholePlans = plans
        let taskList = tasks
        let queue = OrderedWorkQueue<TaskOutput>(count: tasks.count, budget: writer.memoryBudget) { t in
            Int(taskList[t].bytes) + 4096 * taskList[t].entries.count
        }
        queue.start(workers: writer.workers, context: { ZipWorkerContext(level: level) }) { t, worker in
            let task = taskList[t]
            if let k = task.piece {
                let entry = task.entries.lowerBound
                return try Self.runPiece(
                    files[entry], entry: entry, piece: k, plan: wholePlans[entry], pieceSize: piece, encoder: encoder)
            }
            return .entries(
                try task.entries.map { entry in
                    guard case .whole(let decision) = wholePlans[entry] else { preconditionFailure() }
                    return try Self.runWhole(
                        files[entry], entry: entry, decision: decision, encoder: encoder, worker: worker)
                })
        }
        defer { queue.finish() }

        let out = PackFileWriter(fd: fd, path: path)
        var records: [ZipEntryRecord] = []
        var manifest: [ZipManifest.Record] = []
        records.reserveCapacity(files.count + 1)
        let bytesTotal = files.reduce(UInt64(0)) { $0 + $1.size }
        var bytesDone: UInt64 = 0
        var batch: [EncodedEntry] = []
        var batchStart = 0
        var report = PackWriteReport()
        for (i, file) in files.enumerated() {
            var record: ZipEntryRecord
            let sha: [UInt8]
            let storedSHA: [UInt8]
            switch plans[i] {
            case .reuse(let candidate):
                record = candidate.record
                record.offset = out.position
                try out.copy(from: previous!.fd, offset: candidate.rawOffset, length: candidate.rawLength)
                sha = candidate.manifest.sha256
                storedSHA = candidate.manifest.storedSHA256
                bytesDone += file.size
                report.reused += 1
                report.reusedBytes += file.size
            case .whole:
                if i == tasks[firstTask[i]].entries.lowerBound {
                    guard case .entries(let taken) = try queue.take(firstTask[i]) else { preconditionFailure() }
                    batch = taken
                    batchStart = i
                }
                let encoded = batch[i - batchStart]
                record = encoded.record
                record.offset = out.position
                try out.append(record.localHeader())
                try out.append(encoded.data.bytes)
                sha = encoded.sha256
                storedSHA = encoded.storedSHA256
                bytesDone += file.size
                report.packed += 1
            case .storedPieces(let state), .deflatedPieces(let state):
                var deflated = false
                if case .deflatedPieces = plans[i] { deflated = true }
                (record, sha, storedSHA) = try writePieces(
                    file, index: i, state: state, deflated: deflated, firstTask: firstTask[i], queue: queue, to: out
                ) { done in
                    progress?(
                        PackProgress(
                            done: i, total: files.count, path: file.path, bytesDone: bytesDone + done,
                            bytesTotal: bytesTotal))
                }
                bytesDone += file.size
                report.packed += 1
            }
            records.append(record)
            manifest.append(
                ZipManifest.Record(
                    path: file.path, size: file.size, sha256: sha, crc32: record.storedCRC, storedSHA256: storedSHA))
            progress?(
                PackProgress(
                    done: i + 1, total: files.count, path: file.path, bytesDone: bytesDone, bytesTotal: bytesTotal))
        }
        records.append(try writeManifest(ZipManifest(records: manifest), to: out))
        try writeDirectory(records, to: out)
        try out.finish()
        return report
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
            let context = ZipWorkerContext(level: writer.level)
            deflate = policy.samplePays(
                sample.bytes, compressor: context.compressor, scratch: context.sampleScratch.mutableBytes)
        }
        let pieces = (size + writer.pieceSize - 1) / writer.pieceSize
        if deflate == true {
            return size <= writer.wholeEntryLimit
                ? .whole(deflate: true) : .deflatedPieces(PieceState(count: pieces, mtime: mtime))
        }
        return .storedPieces(PieceState(count: pieces, mtime: mtime))
    }

    /// Reads, compresses and encrypts one whole entry, on a worker thread.
    private static func runWhole(
        _ file: SourceFile, entry: Int, decision: Bool?, encoder: ZipEntryEncoder, worker: ZipWorkerContext
    ) throws -> EncodedEntry {
        let (fd, mtime) = try SourceReader.open(file)
        defer { try? fd.close() }
        let size = Int(file.size)
        let buffer = OwnedBuffer(capacity: encoder.head + size + encoder.tail)
        try SourceReader.read(
            fd, file,
            into: UnsafeMutableRawBufferPointer(rebasing: buffer.memory[encoder.head..<(encoder.head + size)]),
            at: 0)
        return try encoder.seal(
            buffer, size: size, path: file.path, saltNumber: entry, mtime: mtime, decision: decision, worker: worker)
    }

    /// Reads piece `k` of an entry and prepares it for the writer, on a worker thread.
    private static func runPiece(
        _ file: SourceFile, entry: Int, piece k: Int, plan: EntryPlan, pieceSize: Int, encoder: ZipEntryEncoder
    ) throws -> TaskOutput {
        switch plan {
        case .whole, .reuse: preconditionFailure("only pieces entries have pieces")
        case .storedPieces(let state):
            var hashed = false
            defer { if !hashed { state.turnstile.skip(k) } }
            let start = k * pieceSize
            let length = min(pieceSize, Int(file.size) - start)
            let buffer = OwnedBuffer(capacity: length)
            try readPiece(file, into: buffer.mutableBytes, at: start)
            let crc = CRC32.checksum(buffer.bytes)
            state.turnstile.inTurn(k) { state.hasher.update(buffer.bytes) }
            hashed = true
            if encoder.encrypted {
                let keys = try state.keys { try encoder.keys(entry) }
                try WinZipAESCounterKeystream(key: keys.encryptionKey, offset: UInt64(start)).apply(buffer.mutableBytes)
            }
            return .piece(buffer, crc: crc, length: length)
        case .deflatedPieces(let state):
            var hashed = false
            defer { if !hashed { state.turnstile.skip(k) } }
            let start = k * pieceSize
            let length = min(pieceSize, Int(file.size) - start)
            let dictionary = min(start, 32 << 10)
            let buffer = OwnedBuffer(capacity: dictionary + length)
            try readPiece(file, into: buffer.mutableBytes, at: start - dictionary)
            let plain = UnsafeRawBufferPointer(rebasing: buffer.bytes[dictionary...])
            let crc = CRC32.checksum(plain)
            state.turnstile.inTurn(k) { state.hasher.update(plain) }
            hashed = true
            let compressed = RawDeflate.compressPiece(
                plain, dictionary: UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<dictionary]),
                final: k == state.count - 1, level: min(encoder.level, 9))
            let out = OwnedBuffer(capacity: compressed.count)
            compressed.withUnsafeBytes { out.memory.copyMemory(from: $0) }
            return .piece(out, crc: crc, length: length)
        }
    }

    private static func readPiece(_ file: SourceFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws
    {
        let (fd, _) = try SourceReader.open(file)
        defer { try? fd.close() }
        try SourceReader.read(fd, file, into: buffer, at: UInt64(offset))
    }

    /// Writes an entry produced in pieces: local header (patched at the end), salt and verifier,
    /// the pieces in order (MAC'd here; encrypted here when deflated), the MAC.
    /// - Returns: The record, the SHA-256 of the plaintext and of the stored data.
    private func writePieces(
        _ file: SourceFile, index: Int, state: PieceState, deflated: Bool, firstTask: Int,
        queue: OrderedWorkQueue<TaskOutput>, to out: PackFileWriter, progress: (UInt64) -> Void
    ) throws -> (record: ZipEntryRecord, sha256: [UInt8], storedSHA256: [UInt8]) {
        var record = encoder.record(
            path: file.path, deflated: deflated, crc: 0, size: file.size, compressedSize: 0, mtime: state.mtime)
        record.offset = out.position
        try out.append(record.localHeader())  // patched below
        let dataStart = out.position
        let keys = encoder.encrypted ? try state.keys { try encoder.keys(index) } : nil
        var data = try StoredData(keys: keys, to: out)
        let keystream = try keys.flatMap { deflated ? try WinZipAESCounterKeystream(key: $0.encryptionKey) : nil }
        var crc: UInt32 = 0
        var done: UInt64 = 0
        for k in 0..<state.count {
            guard case .piece(let buffer, let pieceCRC, let length) = try queue.take(firstTask + k) else {
                preconditionFailure()
            }
            keystream?.apply(buffer.mutableBytes)
            try data.append(buffer.bytes)
            crc = k == 0 ? pieceCRC : CRC32.combine(crc, pieceCRC, secondLength: length)
            done += UInt64(length)
            progress(done)
        }
        var storedSHA = try data.finish()
        record.crc32 = crc
        record.compressedSize = out.position - dataStart
        let sha = state.hasher.finalize()
        let payload = record.compressedSize - UInt64(encoder.head + encoder.tail)
        if deflated, payload > UInt64(encoder.policy.deflateLimit(Int(file.size))) {
            // Deflate did not pay after all (the sample misled): write the entry again, stored,
            // over the same place, under a new salt (a keystream is never used twice).
            try out.rewind(to: dataStart)
            (record, storedSHA) = try rewriteStored(file, record: record, saltNumber: writerSaltNumber(index), to: out)
        }
        try out.patch(record.localHeader(), at: record.offset)
        return (record, sha, storedSHA)
    }

    /// Salt numbers past the entries and the manifest: for entries written a second time.
    private func writerSaltNumber(_ index: Int) -> Int { files.count + 1 + index }

    /// Writes `file` stored at the writer's position (after its header), on this thread.
    /// - Returns: The record and the SHA-256 of the stored data.
    private func rewriteStored(
        _ file: SourceFile, record: ZipEntryRecord, saltNumber: Int, to out: PackFileWriter
    ) throws -> (ZipEntryRecord, storedSHA256: [UInt8]) {
        var record = record
        let dataStart = out.position
        let keys = encoder.encrypted ? try encoder.keys(saltNumber) : nil
        var data = try StoredData(keys: keys, to: out)
        let keystream = try keys.map { try WinZipAESCounterKeystream(key: $0.encryptionKey) }
        let (fd, _) = try SourceReader.open(file)
        defer { try? fd.close() }
        let buffer = OwnedBuffer(capacity: writer.pieceSize)
        var offset: UInt64 = 0
        while offset < file.size {
            buffer.count = Int(min(UInt64(writer.pieceSize), file.size - offset))
            try SourceReader.read(fd, file, into: buffer.mutableBytes, at: offset)
            keystream?.apply(buffer.mutableBytes)
            try data.append(buffer.bytes)
            offset += UInt64(buffer.count)
        }
        let storedSHA = try data.finish()
        record.compression = 0
        record.compressedSize = out.position - dataStart
        return (record, storedSHA)
    }

    /// Writes the manifest entry (stored; encrypted like the others) and returns its record.
    private func writeManifest(_ manifest: ZipManifest, to out: PackFileWriter) throws -> ZipEntryRecord {
        let content = manifest.encoded()
        let buffer = OwnedBuffer(capacity: encoder.head + content.count + encoder.tail)
        content.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(rebasing: buffer.memory[encoder.head...]).copyMemory(from: $0)
        }
        var storing = encoder
        storing.policy = .store
        let encoded = try storing.seal(
            buffer, size: content.count, path: ZipManifest.entryName, saltNumber: files.count, mtime: (0, 0x21),
            decision: false, worker: ZipWorkerContext(level: 1))
        var record = encoded.record
        record.offset = out.position
        try out.append(record.localHeader())
        try out.append(encoded.data.bytes)
        return record
    }

    private func writeDirectory(_ records: [ZipEntryRecord], to out: PackFileWriter) throws {
        let directoryOffset = out.position
        var directory = ZipBytes()
        for r in records {
            r.appendCentralRecord(to: &directory)
            if directory.data.count >= 1 << 20 {
                try out.append(directory.data)
                directory.data.removeAll(keepingCapacity: true)
            }
        }
        try out.append(directory.data)
        try out.append(
            ZipEntryRecord.endOfDirectory(
                count: records.count, directoryOffset: directoryOffset, directorySize: out.position - directoryOffset))
    }
}

/// An entry's stored data as the writing thread appends it: salt and verifier first, then the
/// ciphertext (MAC'd), then the MAC; everything also goes into the SHA-256 of the stored data.
private struct StoredData {
    private let out: PackFileWriter
    private let mac: HMACSHA1Stream?
    private let digest = SHA256Hasher()

    /// Starts the data: writes the salt and verifier when `keys` are given.
    init(keys: WinZipAESEntryKeys?, to out: PackFileWriter) throws {
        self.out = out
        mac = try keys.map { k in try k.macKey.withUnsafeBytes { try HMACSHA1Stream(key: $0) } }
        if let keys { try write(keys.header) }
    }

    /// Appends ciphertext (or plain data).
    mutating func append(_ bytes: UnsafeRawBufferPointer) throws {
        mac?.update(bytes)
        try write(bytes)
    }

    /// Appends the MAC; returns the SHA-256 of all the stored data.
    func finish() throws -> [UInt8] {
        if let mac { try write(Array(mac.finalize().prefix(WinZipAES.macLength))) }
        return digest.finalize()
    }

    private func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        digest.update(bytes)
        try out.append(bytes)
    }
}

/// Appends to the pack file through a 1 MiB buffer, with positional writes so that a header
/// can be patched later.
private final class PackFileWriter {
    let fd: FileDescriptor
    let path: String
    /// The logical end of the file: where the next byte goes.
    private(set) var position: UInt64 = 0
    private var buffer = [UInt8]()
    private var bufferStart: UInt64 = 0
    private static let capacity = 1 << 20

    init(fd: Int32, path: String) {
        self.fd = FileDescriptor(rawValue: fd)
        self.path = path
        buffer.reserveCapacity(Self.capacity)
    }

    func append(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try append($0) } }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > Self.capacity { try flush() }
        if bytes.count >= Self.capacity {
            try write(bytes, at: position)
            position += UInt64(bytes.count)
            bufferStart = position
            return
        }
        buffer.append(contentsOf: bytes)
        position += UInt64(bytes.count)
    }

    func flush() throws {
        if !buffer.isEmpty { try buffer.withUnsafeBytes { try write($0, at: bufferStart) } }
        buffer.removeAll(keepingCapacity: true)
        bufferStart = position
    }

    /// Overwrites bytes already appended.
    func patch(_ bytes: [UInt8], at offset: UInt64) throws {
        try flush()
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// Moves the end back to `offset` (what follows is overwritten, or cut by ``finish()``).
    func rewind(to offset: UInt64) throws {
        try flush()
        position = offset
        bufferStart = offset
    }

    /// Appends `length` bytes of `source` from `offset`.
    func copy(from source: FileDescriptor, offset: UInt64, length: UInt64) throws {
        try flush()
        let chunk = OwnedBuffer(capacity: Int(min(length, UInt64(Self.capacity))))
        var done: UInt64 = 0
        while done < length {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: chunk.memory[0..<Int(min(length - done, UInt64(chunk.memory.count)))])
            let n: Int
            do { n = try source.preadFully(into: piece, at: offset + done) } catch {
                throw error.io("cannot read the previous pack at \(path)")
            }
            guard n == piece.count else { throw AssetPackError(.io, "the previous pack at \(path) ended early") }
            try write(UnsafeRawBufferPointer(piece), at: position)
            position += UInt64(n)
            done += UInt64(n)
        }
        bufferStart = position
    }

    /// Flushes and cuts the file at the logical end.
    func finish() throws {
        try flush()
        do { try fd.truncate(to: position) } catch { throw error.io("cannot write \(path)") }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        do { try fd.pwriteAll(bytes, at: offset) } catch { throw error.io("cannot write \(path)") }
    }
}

/// ZipCrypto packs through libzip, which compresses and encrypts inside `zip_close`.
///
/// libzip writes its own temporary file (`NAME.XXXXXX`, a name we cannot know) beside the archive
/// it closes and renames it to NAME. So NAME lies in a temporary directory of ours,
/// `.assetpack-tmp-UUID` beside the output, registered with `TemporaryFiles` before it exists: an
/// interrupted pack removes the directory and everything libzip had in it, and a crash leaves only
/// a `.assetpack-tmp-` name for a sweep. The output is replaced by our rename after `fsync`.
private enum LibzipZipCryptoWriter {
    static func write(_ files: [SourceFile], to output: String, password: String, options: PackOptions) throws
        -> PackWriteReport
    {
        try AtomicFile.checkTarget(output)
        let folder = AtomicFile.folder(of: output)
        let directory = folder + "/" + AtomicFile.temporaryPrefix + UUID().uuidString
        let temporary = directory + "/pack.zip"
        TemporaryFiles.register(directory)  // before it exists: an interrupt removes it
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            TemporaryFiles.forget(directory)
        }
        do { try FileSystem.mkdir(directory, permissions: 0o700) } catch { throw error.io("cannot write \(output)") }
        var code: Int32 = 0
        guard let za = zip_open(temporary, ZIP_CREATE | ZIP_EXCL, &code) else {
            throw LibzipError.make(code, system: errno, context: "cannot create \(output)")
        }
        var closed = false
        defer { if !closed { zip_discard(za) } }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        for file in files {
            var error = zip_error_t()
            zip_error_init(&error)
            defer { zip_error_fini(&error) }
            guard let source = zip_source_file_create(file.url.path, 0, -1, &error) else {
                throw LibzipError.from(&error, path: nil, context: "cannot read \(file.url.path)")
            }
            let index = zip_file_add(za, file.path, source, zip_flags_t(ZIP_FL_ENC_UTF_8))
            guard index >= 0 else {
                zip_source_free(source)
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot add \(file.path)")
            }
            let deflate = try options.compression.decide(file)
            guard zip_set_file_compression(za, UInt64(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0,
                zip_file_set_encryption(za, UInt64(index), UInt16(ZIP_EM_TRAD_PKWARE), password) == 0
            else {
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot configure \(file.path)")
            }
        }
        // libzip compresses and encrypts everything inside zip_close; report its progress.
        let box = ProgressBox(options.progress, total: files.count, bytes: total)
        let context = Unmanaged.passRetained(box)
        defer { context.release() }
        zip_register_progress_callback_with_state(
            za, 0.01,
            { _, fraction, ud in
                guard let ud else { return }
                Unmanaged<ProgressBox>.fromOpaque(ud).takeUnretainedValue().report(fraction)
            }, nil, context.toOpaque())
        guard zip_close(za) == 0 else {
            throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot write \(output)")
        }
        closed = true
        if let key = options.signingKey {
            let fd: FileDescriptor
            do { fd = try .open(temporary, .readWrite) } catch { throw error.io("cannot open \(temporary)") }
            defer { try? fd.close() }
            try ZipSignature.sign(fd, path: output, key: key, release: try options.release(for: output))
        }
        do {
            let fd = try FileDescriptor.open(temporary, .readOnly)
            try fd.closeAfter { () throws(Errno) in try fd.fsync() }
        } catch { throw error.io("cannot sync \(temporary)") }
        do { try FileSystem.rename(temporary, to: output) } catch { throw error.io("cannot rename into \(output)") }
        do {
            let dir = try FileDescriptor.open(folder, .readOnly, options: .directory)
            try dir.closeAfter { () throws(Errno) in try dir.fsync() }
        } catch { throw error.io("cannot sync \(folder)") }
        return PackWriteReport(packed: files.count)
    }
}

private final class ProgressBox {
    let callback: (@Sendable (PackProgress) -> Void)?
    let total: Int
    let bytes: UInt64
    init(_ callback: (@Sendable (PackProgress) -> Void)?, total: Int, bytes: UInt64) {
        self.callback = callback
        self.total = total
        self.bytes = bytes
    }
    func report(_ fraction: Double) {
        callback?(
            PackProgress(
                done: Int(fraction * Double(total)), total: total, path: "writing",
                bytesDone: UInt64(fraction * Double(bytes)), bytesTotal: bytes))
    }
}
