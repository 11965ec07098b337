import AssetPackCore
import AssetPackCrypto
import Foundation

/// One run of the writer over one output.
struct ZipPackJob {
    /// Most entries and source bytes in one batch of small whole entries.
    static let batchEntries = 32
    static let batchBytes: UInt64 = 1 << 20

    let writer: ZipPackWriter
    let files: [SourceFile]
    let encoder: ZipEntryEncoder
    let previous: PreviousPack?
    let progress: (@Sendable (PackProgress) -> Void)?

    /// Runs every task and writes the pack to `fd`.
    func run(to fd: FileDescriptor, path: String) throws -> PackWriteReport {
        let (plans, tasks, firstTask) = try schedule()
        let piece = writer.pieceSize
        let encoder = encoder
        let files = files
        let level = encoder.level
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
