import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// Writes AssetPack container packs (chunked AES-256-GCM, format version 2, or 3 when signed; see `docs/FORMAT.md`).
///
/// Entries are streamed: each file is read in batches of chunks, and the chunks of a batch
/// are deflated (where the policy asks and it pays) and sealed in parallel, then appended to
/// a temporary file next to the output. The encrypted index and the header are written last;
/// the file is synced and renamed into place.
///
/// **Incremental.** Unless `options.fresh`, when the output already holds a version-2 or -3 pack
/// that opens with the same credential, KDF and chunk size, the new pack keeps its salt (so its
/// keys) and copies every entry whose path, size and plaintext SHA-256 are unchanged as it is:
/// its sealed chunks (tags checked on the way) and its key id. Changed and new entries get a
/// fresh random key id, so no key ever seals two different plaintexts with one nonce; see
/// docs/INCREMENTAL.md for the argument.
package struct ContainerPackWriter: PackWriter {
    /// Test hook: a fixed per-pack salt makes the output deterministic. Never reuse a salt
    /// for different content: keys and nonces derive from it.
    var fixedSalt: [UInt8]?
    /// Test hook: where key ids and the index nonce come from (the CSPRNG unless a test pins it).
    var random: (Int) -> [UInt8] = secureRandomBytes

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

        let previous = options.fresh ? nil : Self.reusable(at: output, credential: credential, options: options)
        var header: ContainerHeader
        let keys: ContainerKeys
        if let previous {
            header = previous.header
            keys = previous.keys
        } else {
            header = ContainerHeader(
                kdf: .none, chunkShift: UInt8(cs.trailingZeroBitCount), params: [0, 0, 0],
                salt: fixedSalt ?? random(32), indexOffset: 0, indexLength: 0)
            switch credential {
            case .key(let key):
                guard key.count == 32 else {
                    throw AssetPackError(.invalidArgument, "a container key must be 32 bytes, not \(key.count)")
                }
            case .password(let password):
                guard !password.isEmpty else { throw AssetPackError(.invalidArgument, "empty password") }
                (header.kdf, header.params) = Self.kdfFields(options.container.kdf)
                do { try header.checkKDF(.default) } catch let e as AssetPackError {
                    throw AssetPackError(
                        .invalidArgument, "KDF parameters unreadable with default limits: \(e.message)")
                }
            }
            keys = ContainerKeys(master: try ContainerKeys.master(credential, header: header), salt: header.salt)
        }
        header.version = options.signingKey == nil ? ContainerFormat.version : ContainerFormat.signedVersion
        // Signed packs: the SHA-256 of every sealed chunk, in file order (docs/FORMAT.md).
        var chunkDigests: [UInt8]? = options.signingKey == nil ? nil : []
        var reusable: [String: ContainerEntry] = [:]
        for e in previous?.records ?? [] where e.keyID != nil && e.sha256 != nil { reusable[e.info.path] = e }

        var report = PackWriteReport()
        let bytesTotal = sorted.reduce(UInt64(0)) { $0 + $1.size }
        var bytesDone: UInt64 = 0
        try AtomicFile.write(output) { fd in
            let buffers = Buffers(chunkShift: Int(header.chunkShift))
            defer { buffers.free() }
            var pos = UInt64(ContainerFormat.headerSize)
            var records: [IndexRecord] = []
            records.reserveCapacity(sorted.count)
            for (i, file) in sorted.enumerated() {
                let partial = { (done: UInt64) -> Void in
                    options.progress?(
                        PackProgress(
                            done: i, total: sorted.count, path: file.path, bytesDone: bytesDone + done,
                            bytesTotal: bytesTotal))
                }
                if let old = reusable[file.path], let previous,
                    let record = try reuse(
                        old, of: file, from: previous, buffers: buffers, to: fd, at: &pos, digests: &chunkDigests)
                {
                    // (A damaged previous entry is not reused: `reuse` returns nil and it is packed afresh.)
                    records.append(record)
                    report.reused += 1
                    report.reusedBytes += record.size
                    bytesDone += file.size
                } else {
                    let keyID = random(ContainerFormat.keyIDSize)
                    let record = try writeEntry(
                        file, keyID: keyID, key: keys.entryKey(keyID: keyID),
                        policy: options.compression, buffers: buffers, to: fd, at: &pos,
                        digests: &chunkDigests, progress: partial)
                    records.append(record)
                    report.packed += 1
                    bytesDone += file.size
                }
                options.progress?(
                    PackProgress(
                        done: i + 1, total: sorted.count, path: file.path, bytesDone: bytesDone, bytesTotal: bytesTotal)
                )
            }

            let index = ContainerIndex.encode(records)
            let nonce = random(ContainerFormat.indexNonceSize)
            header.indexOffset = pos
            header.indexLength = UInt64(nonce.count + index.count + ContainerFormat.tagSize)
            let committed = header.committedBytes()
            let headerBytes = committed + keys.commitment(committed)
            let sealedIndex = AESGCM().seal(
                index, nonce: nonce, key: keys.indexKey(version: header.version), authenticating: headerBytes)
            let indexRegion = nonce + sealedIndex
            try pwriteAll(fd, indexRegion, at: pos)
            try pwriteAll(fd, headerBytes, at: 0)
            var end = pos + header.indexLength
            if let key = options.signingKey, let chunkDigests {
                // The signed size is the whole file's: the index's end and the block's size.
                var release = try options.release(for: output)
                if !release.isLegacy {
                    release.size = end + UInt64(PackSignature.size(items: chunkDigests.count / 32, release: release))
                }
                let block = PackSignature(
                    kind: .container, publisher: key.publicKey,
                    headDigest: SHA256Hasher.digest(headerBytes + indexRegion),
                    dataDigest: try SHA256Hasher.digest(
                        of: fd, UInt64(ContainerFormat.headerSize)..<pos, path: output),
                    items: chunkDigests, release: release
                ).signed(with: key)
                precondition(release.size.map { $0 == end + UInt64(block.count) } ?? true)
                try pwriteAll(fd, block, at: end)
                end += UInt64(block.count)
            }
            // A reused entry that failed its tag check may have left bytes past the end.
            do { try fd.truncate(to: end) } catch let e as Errno {
                throw e.io("cannot size the pack")
            }
        }
        return report
    }

    /// The header fields of `kdf`.
    private static func kdfFields(_ kdf: ContainerKDF) -> (KDFID, [UInt32]) {
        switch kdf {
        case .scrypt(let logN, let r, let p): (.scrypt, [UInt32(logN), r, p])
        case .pbkdf2SHA256(let n): (.pbkdf2SHA256, [n, 0, 0])
        }
    }

    /// The pack at `output` if an incremental re-pack may reuse its entries: a version-2 or -3
    /// container that opens with `credential` and has the chunk size and KDF `options` ask for.
    /// Anything else (no file, another format, a wrong password, damage) means a full pack.
    private static func reusable(at output: String, credential: PackCredential, options: PackOptions)
        -> ContainerPackReader?
    {
        guard FileManager.default.fileExists(atPath: output),
            let reader = try? ContainerPackReader(path: output, credential: credential),
            reader.header.version >= ContainerFormat.version,
            reader.header.chunkSize == options.container.chunkSize
        else { return nil }
        if case .password = credential {
            let (kdf, params) = kdfFields(options.container.kdf)
            guard reader.header.kdf == kdf, reader.header.params == params else { return nil }
        }
        return reader
    }

    /// Copies `old` from `previous` when `file` still has its size and SHA-256; returns its
    /// record, or nil when the file changed (then nothing was written).
    private func reuse(
        _ old: ContainerEntry, of file: SourceFile, from previous: ContainerPackReader, buffers: Buffers,
        to fd: FileDescriptor, at pos: inout UInt64, digests: inout [UInt8]?
    ) throws -> IndexRecord? {
        guard old.info.size == file.size, let digest = old.sha256, let keyID = old.keyID,
            let crc = old.info.crc32, try Self.sha256(of: file, buffer: buffers.plain) == digest
        else { return nil }
        var at = pos
        var copiedDigests: [UInt8] = []
        let signing = digests != nil
        do {
            try previous.copyStored(
                old,
                to: { bytes in
                    try pwriteAll(fd, bytes, at: at)
                    at += UInt64(bytes.count)
                },
                eachChunk: { sealed in if signing { copiedDigests += SHA256Hasher.digest(sealed) } })
        } catch let error as AssetPackError where error.code == .integrityFailure {
            return nil  // what was copied is overwritten by the fresh entry; the file is cut to size at the end
        }
        pos = at
        digests? += copiedDigests
        let lengths = old.starts.map { starts in
            (0..<old.chunkCount).map { c -> UInt32 in
                let payload = UInt32(starts[c + 1] - starts[c]) - UInt32(ContainerFormat.tagSize)
                let plain = UInt32(
                    min(
                        UInt64(previous.header.chunkSize), old.info.size - UInt64(c) * UInt64(previous.header.chunkSize)
                    ))
                return payload < plain ? payload | ContainerIndex.deflatedBit : payload
            }
        }
        return IndexRecord(
            path: file.path, size: old.info.size, crc: crc, keyID: keyID, sha256: digest, chunkLengths: lengths)
    }

    /// SHA-256 of a source file's bytes, read through `buffer`.
    private static func sha256(of file: SourceFile, buffer: UnsafeMutableRawBufferPointer) throws -> [UInt8] {
        let src = try openSource(file)
        defer { try? src.close() }
        let hasher = SHA256Hasher()
        while true {
            let n: Int
            do { n = try src.read(into: buffer) } catch { throw error.io("cannot read \(file.url.path)") }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        return hasher.finalize()
    }

    private static func openSource(_ file: SourceFile) throws -> FileDescriptor {
        do { return try .open(file.url.path, .readOnly) } catch { throw error.io("cannot open \(file.url.path)") }
    }

    /// Appends one entry's sealed chunks at `pos`; returns its index record.
    private func writeEntry(
        _ file: SourceFile, keyID: [UInt8], key: [UInt8], policy: CompressionPolicy, buffers: Buffers,
        to fd: FileDescriptor, at pos: inout UInt64, digests: inout [UInt8]?, progress: (UInt64) -> Void
    ) throws -> IndexRecord {
        let src = try Self.openSource(file)
        defer { try? src.close() }
        let size: UInt64
        do { size = try src.status().size } catch { throw error.io("cannot stat \(file.url.path)") }
        let shift = buffers.chunkShift, cs = 1 << shift, slot = cs + ContainerFormat.tagSize
        let chunks = size == 0 ? 1 : Int((size - 1) >> shift) + 1
        guard chunks <= Int(UInt32.max) + 1 else {
            throw AssetPackError(.invalidArgument, "file too large for the chunk size", path: file.path)
        }
        var lengths: [UInt32] = []
        lengths.reserveCapacity(chunks)
        var crc: UInt32 = 0
        let hasher = SHA256Hasher()
        var deflate = policy.decisionByName(file)  // nil: decided by a sample of the first batch
        let signing = digests != nil
        var first = 0
        while first < chunks {
            let n = min(buffers.batch, chunks - first)
            let bytes = Int(min(size - (UInt64(first) << shift), UInt64(n) << shift))
            try readFully(src, UnsafeMutableRawBufferPointer(rebasing: buffers.plain[0..<bytes]), file: file)
            hasher.update(UnsafeRawBufferPointer(rebasing: buffers.plain[0..<bytes]))
            if deflate == nil {
                let sample = UnsafeRawBufferPointer(
                    rebasing: buffers.plain[0..<min(bytes, CompressionPolicy.sampleSize)])
                deflate = policy.samplePays(
                    sample, compressor: buffers.compressor(0),
                    scratch: UnsafeMutableRawBufferPointer(rebasing: buffers.sealed[0..<sample.count]))
            }
            let deflating = deflate ?? false
            let tasks = n >= 2 && bytes >= 256 << 10 ? min(n, ContainerPackReader.cores * 4) : 1
            try concurrently(tasks) { task in
                for j in (n * task / tasks)..<(n * (task + 1) / tasks) {
                    let c = first + j
                    let plain = UnsafeRawBufferPointer(
                        rebasing: buffers.plain[j * cs..<j * cs + min(cs, bytes - j * cs)])
                    buffers.crcs[j] = CRC32.checksum(plain)
                    // Deflate straight into the chunk's slot; a chunk that does not shrink within
                    // the policy's limit is copied there as it is. Then seal in place, tag after it.
                    let dest = buffers.sealed.baseAddress! + j * slot
                    var deflated: Int?
                    if deflating, plain.count > 0 {
                        let limit = policy.deflateLimit(plain.count)
                        if limit > 0 {
                            deflated = buffers.compressor(task).compress(
                                plain, into: UnsafeMutableRawBufferPointer(start: dest, count: limit))
                        }
                    }
                    let count = deflated ?? plain.count
                    if deflated == nil, count > 0 { dest.copyMemory(from: plain.baseAddress!, byteCount: count) }
                    let nonce = chunkNonce(
                        entry: 0, chunk: UInt32(c), final: c == chunks - 1, deflated: deflated != nil)
                    buffers.gcm(task).seal(
                        UnsafeMutableRawBufferPointer(start: dest, count: count),
                        tag: UnsafeMutableRawBufferPointer(start: dest + count, count: ContainerFormat.tagSize),
                        nonce: nonce, key: key)
                    buffers.lengths[j] = UInt32(count) | (deflated == nil ? 0 : ContainerIndex.deflatedBit)
                    if signing {
                        let digest = SHA256Hasher.digest(
                            UnsafeRawBufferPointer(start: dest, count: count + ContainerFormat.tagSize))
                        UnsafeMutableRawBufferPointer(rebasing: buffers.digests[j * 32..<j * 32 + 32])
                            .copyBytes(from: digest)
                    }
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
                if signing { digests! += buffers.digests[j * 32..<j * 32 + 32] }
            }
            try pwriteAll(fd, UnsafeRawBufferPointer(rebasing: buffers.sealed[0..<w]), at: pos)
            pos += UInt64(w)
            first += n
            if first < chunks { progress(UInt64(first) << shift) }
        }
        var extra: UInt8 = 0
        let more: Int
        do { more = try withUnsafeMutableBytes(of: &extra) { try src.read(into: $0) } } catch let e as Errno {
            throw e.io("cannot read \(file.url.path)")
        }
        guard more == 0 else { throw AssetPackError(.io, "file grew while it was being packed", path: file.path) }
        let anyDeflated = lengths.contains { $0 & ContainerIndex.deflatedBit != 0 }
        return IndexRecord(
            path: file.path, size: size, crc: crc, keyID: keyID, sha256: hasher.finalize(),
            chunkLengths: anyDeflated ? lengths : nil)
    }

    private func readFully(_ fd: FileDescriptor, _ buffer: UnsafeMutableRawBufferPointer, file: SourceFile) throws {
        let n: Int
        do { n = try fd.readFully(into: buffer) } catch { throw error.io("cannot read \(file.url.path)") }
        if n < buffer.count { throw AssetPackError(.io, "file shrank while it was being packed", path: file.path) }
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
    /// Each chunk's SHA-256 (signed packs), 32 bytes per chunk of the batch.
    let digests: UnsafeMutableRawBufferPointer
    /// One AES-GCM context per concurrent task (a context serves one thread at a time).
    private let ciphers: [AESGCM]
    /// One libdeflate compressor per concurrent task, made when first used.
    private var compressors: [RawDeflate.FastCompressor?]
    private let lock = NSLock()

    init(chunkShift: Int) {
        self.chunkShift = chunkShift
        batch = max(2, (8 << 20) >> chunkShift)
        plain = .allocate(byteCount: batch << chunkShift, alignment: 64)
        sealed = .allocate(byteCount: batch * ((1 << chunkShift) + ContainerFormat.tagSize), alignment: 64)
        crcs = .allocate(capacity: batch)
        lengths = .allocate(capacity: batch)
        digests = .allocate(byteCount: 32 * batch, alignment: 16)
        ciphers = (0..<max(1, ContainerPackReader.cores * 4)).map { _ in AESGCM() }
        compressors = Array(repeating: nil, count: ciphers.count)
    }

    /// The cipher context of concurrent task `task`.
    func gcm(_ task: Int) -> AESGCM { ciphers[task] }

    /// The compressor of concurrent task `task` (allocating libdeflate's state costs more than
    /// compressing a small chunk, so it is kept for the whole pack).
    func compressor(_ task: Int) -> RawDeflate.FastCompressor {
        lock.lock()
        defer { lock.unlock() }
        if let c = compressors[task] { return c }
        let c = RawDeflate.FastCompressor(level: CompressionPolicy.packLevel)
        compressors[task] = c
        return c
    }

    func free() {
        plain.deallocate()
        sealed.deallocate()
        crcs.deallocate()
        lengths.deallocate()
        digests.deallocate()
    }
}

private func pwriteAll(_ fd: FileDescriptor, _ bytes: [UInt8], at offset: UInt64) throws {
    try bytes.withUnsafeBytes { try pwriteAll(fd, $0, at: offset) }
}

private func pwriteAll(_ fd: FileDescriptor, _ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws {
    do { try fd.pwriteAll(buffer, at: offset) } catch { throw error.io("cannot write the pack") }
}
