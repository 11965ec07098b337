import AssetPackCore
import AssetPackCrypto
import Foundation

/// Writes AssetPack container packs (chunked AES-256-GCM, see `docs/FORMAT.md`).
///
/// Entries are streamed: each file is read in batches of chunks, and the chunks of a batch
/// are deflated (where the policy asks and it pays) and sealed in parallel, then appended to
/// a temporary file next to the output. The encrypted index and the header are written last;
/// the file is synced and renamed into place.
package struct ContainerPackWriter: PackWriter {
    /// Test hook: a fixed per-pack salt makes the output deterministic. Never reuse a salt
    /// for different content: keys and nonces derive from it.
    var fixedSalt: [UInt8]?

    /// A writer; the KDF and chunk size come from `options.container`.
    package init() {}

    /// Writes `files` as a container pack at `output`, atomically.
    ///
    /// Uses `options.credential` (`.password` runs `options.container.kdf`, `.key` must be 32
    /// bytes), `options.container.chunkSize`, `options.compression` and `options.progress`;
    /// ignores `options.format` and `options.zip`.
    /// - Throws: `.missingPassword` without a credential; `.invalidArgument` for a bad key,
    ///   empty password, chunk size, KDF parameters or entry path; `.io` for file errors
    ///   (including a source file that changes size while it is packed).
    @discardableResult
    package func write(_ files: [SourceFile], to output: String, options: PackOptions) throws -> PackWriteReport {
        guard let credential = options.credential else {
            throw AssetPackError(.missingPassword, "a container pack needs a password or key")
        }
        try ReadLimits.default.checkPackable(files)
        let cs = options.container.chunkSize
        guard cs.nonzeroBitCount == 1, (4096...(16 << 20)).contains(cs) else {
            throw AssetPackError(.invalidArgument, "chunk size \(cs) is not a power of two from 4 KiB to 16 MiB")
        }
        let sorted = files.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        guard sorted.count <= Int(UInt32.max) else { throw AssetPackError(.invalidArgument, "too many files") }
        for (i, f) in sorted.enumerated() {
            guard !f.path.isEmpty, f.path.utf8.count <= Int(UInt16.max), EntryPath.normalize(f.path) == f.path else {
                throw AssetPackError(.invalidArgument, "entry path is empty, too long or not normalised", path: f.path)
            }
            if i > 0, sorted[i - 1].path.utf8.elementsEqual(f.path.utf8) {
                throw AssetPackError(.invalidArgument, "duplicate entry path", path: f.path)
            }
        }

        var header = ContainerHeader(
            kdf: .none, chunkShift: UInt8(cs.trailingZeroBitCount), params: [0, 0, 0],
            salt: fixedSalt ?? secureRandomBytes(32),
            indexOffset: 0, indexLength: 0)
        switch credential {
        case .key(let key):
            guard key.count == 32 else {
                throw AssetPackError(.invalidArgument, "a container key must be 32 bytes, not \(key.count)")
            }
        case .password(let password):
            guard !password.isEmpty else { throw AssetPackError(.invalidArgument, "empty password") }
            switch options.container.kdf {
            case .scrypt(let logN, let r, let p): (header.kdf, header.params) = (.scrypt, [UInt32(logN), r, p])
            case .pbkdf2SHA256(let n): (header.kdf, header.params) = (.pbkdf2SHA256, [n, 0, 0])
            }
            do { try header.checkKDF(.default) } catch let e as AssetPackError {
                throw AssetPackError(.invalidArgument, "KDF parameters unreadable with default limits: \(e.message)")
            }
        }
        let keys = ContainerKeys(master: try ContainerKeys.master(credential, header: header), salt: header.salt)

        try AtomicFile.write(output) { fd in
            let buffers = Buffers(chunkShift: Int(header.chunkShift))
            defer { buffers.free() }
            var pos = UInt64(ContainerFormat.headerSize)
            var records: [IndexRecord] = []
            records.reserveCapacity(sorted.count)
            for (i, file) in sorted.enumerated() {
                let id = UInt32(i)
                let deflate = try options.compression.shouldDeflate(file)
                records.append(
                    try writeEntry(
                        file, id: id, key: keys.entryKey(id), deflate: deflate, buffers: buffers, to: fd, at: &pos))
                options.progress?(PackProgress(done: i + 1, total: sorted.count, path: file.path))
            }

            let index = ContainerIndex.encode(records)
            header.indexOffset = pos
            header.indexLength = UInt64(index.count + ContainerFormat.tagSize)
            let committed = header.committedBytes()
            let headerBytes = committed + keys.commitment(committed)
            let sealedIndex = AESGCM().seal(index, nonce: indexNonce, key: keys.indexKey, authenticating: headerBytes)
            try pwriteAll(fd, sealedIndex, at: pos)
            try pwriteAll(fd, headerBytes, at: 0)
        }
        return PackWriteReport(packed: sorted.count)
    }

    /// Appends one entry's sealed chunks at `pos`; returns its index record.
    private func writeEntry(
        _ file: SourceFile, id: UInt32, key: [UInt8], deflate: Bool, buffers: Buffers,
        to fd: Int32, at pos: inout UInt64
    ) throws -> IndexRecord {
        let src = open(file.url.path, O_RDONLY | O_CLOEXEC)
        guard src >= 0 else { throw FileOutput.error("cannot open \(file.url.path)") }
        defer { close(src) }
        var st = stat()
        guard fstat(src, &st) == 0 else { throw FileOutput.error("cannot stat \(file.url.path)") }
        let size = UInt64(st.st_size)
        let shift = buffers.chunkShift, cs = 1 << shift, slot = cs + ContainerFormat.tagSize
        let chunks = size == 0 ? 1 : Int((size - 1) >> shift) + 1
        guard chunks <= Int(UInt32.max) + 1 else {
            throw AssetPackError(.invalidArgument, "file too large for the chunk size", path: file.path)
        }
        var lengths: [UInt32] = []
        lengths.reserveCapacity(chunks)
        var crc: UInt32 = 0
        var first = 0
        while first < chunks {
            let n = min(buffers.batch, chunks - first)
            let bytes = Int(min(size - (UInt64(first) << shift), UInt64(n) << shift))
            try readFully(src, UnsafeMutableRawBufferPointer(rebasing: buffers.plain[0..<bytes]), file: file)
            let tasks = n >= 2 && bytes >= 256 << 10 ? min(n, ContainerPackReader.cores * 4) : 1
            try concurrently(tasks) { task in
                for j in (n * task / tasks)..<(n * (task + 1) / tasks) {
                    let c = first + j
                    let plain = UnsafeRawBufferPointer(
                        rebasing: buffers.plain[j * cs..<j * cs + min(cs, bytes - j * cs)])
                    buffers.crcs[j] = CRC32.checksum(plain)
                    var packed: [UInt8]?
                    if deflate, plain.count > 0 {
                        let z = RawDeflate.compress(plain)
                        if z.count < plain.count { packed = z }
                    }
                    let nonce = chunkNonce(entry: id, chunk: UInt32(c), final: c == chunks - 1, deflated: packed != nil)
                    // Copy the payload into its slot and seal it there, tag right after it.
                    let dest = buffers.sealed.baseAddress! + j * slot
                    let count = packed?.count ?? plain.count
                    if let packed {
                        packed.withUnsafeBytes { dest.copyMemory(from: $0.baseAddress!, byteCount: count) }
                    } else if count > 0 {
                        dest.copyMemory(from: plain.baseAddress!, byteCount: count)
                    }
                    buffers.gcm(task).seal(
                        UnsafeMutableRawBufferPointer(start: dest, count: count),
                        tag: UnsafeMutableRawBufferPointer(start: dest + count, count: ContainerFormat.tagSize),
                        nonce: nonce, key: key)
                    buffers.lengths[j] = UInt32(count) | (packed == nil ? 0 : ContainerIndex.deflatedBit)
                }
            }
            var w = 0
            for j in 0..<n {
                let stored = Int(buffers.lengths[j] & ~ContainerIndex.deflatedBit) + ContainerFormat.tagSize
                if w != j * slot {
                    memmove(buffers.sealed.baseAddress! + w, buffers.sealed.baseAddress! + j * slot, stored)
                }
                w += stored
                crc = CRC32.combine(crc, buffers.crcs[j], secondLength: min(cs, bytes - j * cs))
                lengths.append(buffers.lengths[j])
            }
            try pwriteAll(fd, UnsafeRawBufferPointer(rebasing: buffers.sealed[0..<w]), at: pos)
            pos += UInt64(w)
            first += n
        }
        var extra: UInt8 = 0
        guard read(src, &extra, 1) == 0 else {
            throw AssetPackError(.io, "file grew while it was being packed", path: file.path)
        }
        let anyDeflated = lengths.contains { $0 & ContainerIndex.deflatedBit != 0 }
        return IndexRecord(
            path: file.path, size: size, crc: crc, chunkLengths: anyDeflated ? lengths : nil
        )
    }

    private func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, file: SourceFile) throws {
        var done = 0
        while done < buffer.count {
            let n = read(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileOutput.error("cannot read \(file.url.path)")
            }
            if n == 0 { throw AssetPackError(.io, "file shrank while it was being packed", path: file.path) }
            done += n
        }
    }
}

/// Per-write batch buffers: plaintext in, sealed chunks out (one slot per chunk).
private final class Buffers {
    let chunkShift: Int
    let batch: Int
    let plain: UnsafeMutableRawBufferPointer
    let sealed: UnsafeMutableRawBufferPointer
    let crcs: UnsafeMutableBufferPointer<UInt32>
    let lengths: UnsafeMutableBufferPointer<UInt32>
    /// One AES-GCM context per concurrent task (a context serves one thread at a time).
    private let ciphers: [AESGCM]

    init(chunkShift: Int) {
        self.chunkShift = chunkShift
        batch = max(2, (8 << 20) >> chunkShift)
        plain = .allocate(byteCount: batch << chunkShift, alignment: 64)
        sealed = .allocate(byteCount: batch * ((1 << chunkShift) + ContainerFormat.tagSize), alignment: 64)
        crcs = .allocate(capacity: batch)
        lengths = .allocate(capacity: batch)
        ciphers = (0..<max(1, ContainerPackReader.cores * 4)).map { _ in AESGCM() }
    }

    /// The cipher context of concurrent task `task`.
    func gcm(_ task: Int) -> AESGCM { ciphers[task] }

    func free() {
        plain.deallocate()
        sealed.deallocate()
        crcs.deallocate()
        lengths.deallocate()
    }
}

private func pwriteAll(_ fd: Int32, _ bytes: [UInt8], at offset: UInt64) throws {
    try bytes.withUnsafeBytes { try pwriteAll(fd, $0, at: offset) }
}

private func pwriteAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws {
    var done = 0
    while done < buffer.count {
        let n = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
        if n < 0 {
            if errno == EINTR { continue }
            throw FileOutput.error("cannot write the pack")
        }
        done += n
    }
}
