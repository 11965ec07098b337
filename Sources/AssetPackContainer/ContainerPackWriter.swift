import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// Writes AssetPack container packs (format version 4, or 5 when signed; see `docs/FORMAT.md`).
///
/// Entries are streamed: each file is read in batches, cut into content-defined chunks
/// (``ContentChunker``), and the chunks of a batch are compressed (zstd by default, deflate on
/// request, each only where the policy asks and it pays) and sealed in parallel, each under a
/// fresh random nonce, then appended to a temporary file next to the output. The encrypted index
/// and the header are written last; the file is synced and renamed into place.
///
/// **Incremental.** Unless `options.fresh`, when the output already holds a version-4 or -5 pack
/// that opens with the same credential, KDF and chunk size, the new pack keeps its salt (so its
/// keys), every entry keeps its key id, and every chunk whose plaintext SHA-256 the previous
/// entry of that path already has is copied as it was sealed (its tag checked on the way). Only
/// changed chunks are compressed and sealed, under fresh random nonces: no (key, nonce) pair
/// seals two plaintexts; see docs/INCREMENTAL.md for the argument.
package struct ContainerPackWriter: PackWriter {
    /// Test hook: a fixed per-pack salt makes the output deterministic. Never reuse a salt
    /// for different content: keys and nonces derive from it.
    var fixedSalt: [UInt8]?
    /// Test hook: where key ids and the index nonce come from (the CSPRNG unless a test pins it).
    var random: (Int) -> [UInt8] = secureRandomBytes
    /// Test hook: runs after the previous pack was read and before an append locks the file
    /// (where another writer could get in).
    var beforeAppend: () throws -> Void = {}
    /// Test hook: runs after a rewrite wrote its new pack and before it locks the previous one
    /// to rename over it (where another writer could get in).
    var beforeRewrite: () throws -> Void = {}
    /// Test hook: append as the writer of AssetPack 0.2 did: a re-pack that removed or replaced
    /// content appends too (leaving the old chunks in the file), and the previous generation's
    /// header slot is kept. Packs written so are in the field: readers, installers and re-packs
    /// must handle them, and the tests of those make them this way.
    var legacyAppends = false
    /// Test hook: the plaintext a version-4 entry is read and cut in at a time (at least twice
    /// the largest chunk), lowered to put batch edges in small entries.
    var batchBytes = ChunkBuffers.defaultBatch
    /// Test hook: runs when a source file was opened and its size taken, before it is read
    /// (where a file another process writes can change under the writer).
    var sourceOpened: (SourceFile) throws -> Void = { _ in }

    /// A writer; the KDF and chunk size come from `options.container`.
    package init() {}

    /// Writes `files` as a container pack at `output`, atomically.
    ///
    /// Uses `options.credential` (`.password` runs `options.container.kdf`, else the previous
    /// pack's KDF, else the default; `.key` must be 32 bytes), `options.container.chunkSize`,
    /// `options.compression` and `options.progress`; ignores `options.format` and `options.zip`.
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
        guard cs.nonzeroBitCount == 1, (4096...(4 << 20)).contains(cs) else {
            throw AssetPackError(
                .invalidArgument, "chunk size \(cs) is not a power of two from 4 KiB to 4 MiB (the average chunk)")
        }
        guard options.container.codec != .zstd || Zstd.isAvailable || options.compression == .store else {
            throw AssetPackError(
                .invalidArgument,
                "the zstd codec needs libzstd, which this build of AssetPack lacks (the portable configuration): "
                    + "pack with --codec deflate")
        }
        let chunking = ChunkingParameters(average: cs)
        // A scan's list is sorted already and is then shared, not copied (40 MB a million files).
        let byPath = { (a: SourceFile, b: SourceFile) in a.path.utf8.lexicographicallyPrecedes(b.path.utf8) }
        let sorted = zip(files, files.dropFirst()).allSatisfy(byPath) ? files : files.sorted(by: byPath)
        guard sorted.count <= Int(UInt32.max) else { throw AssetPackError(.invalidArgument, "too many files") }
        for (i, f) in sorted.enumerated() {
            guard !f.path.isEmpty, f.path.utf8.count <= Int(UInt16.max), EntryPath.normalize(f.path) == f.path else {
                throw AssetPackError(.invalidArgument, "entry path is empty, too long or not normalised", path: f.path)
            }
            if i > 0, sorted[i - 1].path.utf8.elementsEqual(f.path.utf8) {
                throw AssetPackError(.invalidArgument, "duplicate entry path", path: f.path)
            }
        }

        // Before any source is looked at: its clock reading is what "too recent to trust" counts from.
        let cache = options.sourceStatusCache.map {
            SourceStatusCache(folder: $0, output: output, racyMargin: options.sourceStatusRacyMargin)
        }
        // Without a cache nothing remembered is trusted: every kept chunk's tag is checked, those
        // an append leaves in place too (docs/INCREMENTAL.md, "Which kept chunks are checked").
        let checksKept = cache == nil
        let previous = options.fresh ? nil : try Self.reusable(at: output, credential: credential, options: options)
        var header: ContainerHeader
        let keys: ContainerKeys
        if let previous {
            header = previous.header
            keys = previous.keys
        } else {
            header = ContainerHeader(
                kdf: .none, chunkShift: chunking.headerShift, params: [0, 0, 0],
                salt: fixedSalt ?? random(32), indexOffset: 0, indexLength: 0)
            switch credential {
            case .key(let key):
                guard key.count == 32 else {
                    throw AssetPackError(.invalidArgument, "a container key must be 32 bytes, not \(key.count)")
                }
            case .password(let password):
                guard !password.isEmpty else { throw AssetPackError(.invalidArgument, "empty password") }
                (header.kdf, header.params) = Self.kdfFields(options.container.kdf ?? .default)
                do { try header.checkKDF(.default) } catch let e as AssetPackError {
                    throw AssetPackError(
                        .invalidArgument, "KDF parameters unreadable with default limits: \(e.message)")
                }
            }
            keys = ContainerKeys(master: try ContainerKeys.master(credential, header: header), salt: header.salt)
        }
        header.version = options.signingKey == nil ? ContainerFormat.version : ContainerFormat.signedVersion
        // Signed packs: the SHA-256 of every sealed chunk, in index order (docs/FORMAT.md).
        var chunkDigests: [UInt8]? = options.signingKey == nil ? nil : []
        let previousDigests = try previous?.digests()
        // The previous pack's signature, when this key made it and it holds for the previous
        // header and index: a signed append lists the digests it gives for the chunks it keeps in
        // place, instead of reading them (a 64 MiB read for a one-byte edit). They are the digests
        // of the bytes this key signed; chunks changed on disk since then fail them when read.
        let previousSigned: PackSignature? = previous.flatMap { p in
            guard let key = options.signingKey, p.header.isSigned,
                let (bytes, header) = try? ContainerHeader.read(from: p.source),
                let block = try? ContainerPackReader.checkSignature(
                    p.source, header: header, headerBytes: bytes, trusted: [key.publicKey]),
                block.itemCount == p.chunks.count
            else { return nil }
            return block
        }
        // The previous pack's entry at `path` that a re-pack may reuse (a version-4 or later
        // record, with its digest), looked up in its index as read: collecting them all first
        // cost a million-entry re-pack ~420 MB.
        func reusable(_ path: String) throws -> ContainerEntry? {
            guard let previous, let previousDigests, let i = try previous.records.storedPosition(of: path) else {
                return nil
            }
            var e = try previous.records.record(i)
            guard e.keyID != nil, e.codec != nil else { return nil }
            e.sha256 = previousDigests.entry(e)
            return e
        }
        let codec: ChunkCodec = options.container.codec == .deflate ? .deflate : .zstd
        // The pack's zstd dictionary (PackDictionary): a re-pack keeps the previous pack's as it
        // is, so the chunks it copies still decode, and its lack of one (training reads every
        // small source, unchanged or not, and a new dictionary would change every entry's codec);
        // a full pack trains one on its small files. None at --fast (on Wesnoth, training and its
        // check cost 1.3 s of CPU; docs/PERFORMANCE.md) or when nothing is compressed.
        let dictionary: [UInt8]? =
            codec == .zstd && options.level == .default && options.compression != .store
            ? (previous.map(\.zstdDictionary) ?? PackDictionary.train(sorted, policy: options.compression)) : nil
        let entryCodec: ChunkCodec = dictionary == nil ? codec : .zstdDictionary

        // Version 6: a re-pack appends what changed after the previous generation and switches
        // header slots, unless at least half of the data region would then be dead (earlier
        // versions' and removed entries' bytes) or `options.compact` (then it rewrites the pack
        // whole, compacting it), the previous pack is older than version 6, or the file has
        // another name or is not writable (an append would change the other name's pack too; a
        // rewrite renames a new file).
        // What the previous pack holds of earlier versions: zeros once an append zeroed them,
        // dropped by a rewrite.
        let previousEarlier = previous.map(Self.earlierBytes) ?? 0
        var report = PackWriteReport()
        // The summary's "removed", from the pack already open here: the CLI need not open it again
        // (one more key derivation) to count it.
        // (Counted by looking each source up: a set of a million paths is ~100 MB.)
        report.removed = previous.map { previous in
            previous.entries.count
                - sorted.count {
                    !DeletionRecord.isReserved($0.path) && (try? previous.records.position(of: $0.path)) != nil
                }
        }
        // What a re-pack removed or replaced must not stay readable in the published pack (the
        // password ships inside the app; docs/SECURITY.md, "Removed content"): an append zeroes
        // it once the new generation is committed (`dead`), so an edit, a removal and an
        // addition all append. (A pack appended by 0.2 keeps an earlier slot valid: the new
        // slot goes over it, and its content is zeroed like the rest.)
        let removedBytes =
            try previous.map { try Self.storedBytes($0, notIn: sorted, removed: report.removed ?? 0) } ?? 0
        let soleWritable = FileSystem.isSoleWritableFile(output)
        let appending =
            options.compact || !soleWritable
            ? nil : previous.flatMap { Self.appendable($0, dead: previousEarlier + removedBytes) }
        // A rewrite by the writer's own choice: the dead bytes would have been half the file.
        let halfDead =
            appending == nil && !options.compact && soleWritable
            && previous.map { $0.header.isAppendable && $0.header.generation < .max } == true
        // The dead bytes of the generation an append writes: zeroed after its commit, and zero in
        // its signed data digest.
        var dead: [Range<UInt64>] = []
        var newDigests = SortedDigests()  // the plaintext digests of the pack written, for the summary
        report.dictionaryBytes = dictionary?.count ?? 0
        let bytesTotal = sorted.reduce(UInt64(0)) { $0 + $1.size }
        var bytesDone: UInt64 = 0
        // `dictionaryFile`: the dictionary entry's source, written in path order with the files.
        func writeAll(dictionaryFile: SourceFile?) throws {
            cache?.startOver()  // a rewrite after a failed tag check keeps only what it keeps
            var entries = SourcesInserting(sorted, nil, at: 0)
            if let d = dictionaryFile {
                let at = sorted.firstIndex { !$0.path.utf8.lexicographicallyPrecedes(d.path.utf8) } ?? sorted.count
                if at < sorted.count, sorted[at].path == d.path {
                    throw AssetPackError(.invalidArgument, "the pack's dictionary entry is reserved", path: d.path)
                }
                entries = SourcesInserting(sorted, d, at: at)
            }
            // The index, the signature block and the header slot after the chunks `records` name,
            // which end at `pos`. `appended`: in the previous pack's file, its next generation.
            func finish(_ fd: FileDescriptor, _ records: [IndexRecordV4], _ pos: UInt64, appended: Bool) throws
                -> [UInt8]
            {
                // Only a rewrite of a version-6 pack reports what it dropped (its sorted digests: 40 MB
                // for a million chunks, which a full pack does not need).
                if !appended, previous?.header.isAppendable == true {
                    newDigests = SortedDigests(records)
                }
                let live = records.reduce(UInt64(0)) { sum, r in
                    r.chunks.reduce(sum) {
                        $0 + UInt64($1.payload & ~ChunkTable.compressedBit) + UInt64(ContainerFormat.tagSize)
                    }
                }
                report.earlierBytes = pos - header.dataStart - live
                let index = ContainerIndex.encodeV8(records, chunking: chunking)
                let nonce = random(ContainerFormat.indexNonceSize)
                header.indexOffset = pos
                header.indexLength = UInt64(
                    ContainerIndex.regionSize(table: index.table.count, digests: index.digests.count))
                var end = pos + header.indexLength
                var blockSize = 0
                var release: PackRelease?
                if options.signingKey != nil, let chunkDigests {
                    // The signed size is the pack's: the index's end and the block's size.
                    var wanted = try options.release(for: output)
                    blockSize = PackSignature.size(items: chunkDigests.count / 32, release: wanted)
                    if !wanted.isLegacy { wanted.size = end + UInt64(blockSize) }
                    release = wanted
                }
                // The next generation (a rewrite counts on from the version-6 pack it compacts),
                // in the slot the previous one is not in.
                header.generation = Self.generation(after: previous.map(\.header), appending: appended)
                header.slot = appended ? appending.map { 1 - $0.slot } ?? 0 : 0
                header.end = end + UInt64(blockSize)
                let headerBytes = header.stored(commitment: keys.commitment(header.committedBytes()))
                // Sealed a segment at a time into the file (and the signature's head digest).
                let headHasher = options.signingKey == nil ? nil : SHA256Hasher()
                headHasher?.update(headerBytes)
                var written: UInt64 = 0
                try ContainerIndex.sealV8(
                    table: index.table, digests: index.digests, nonce: nonce,
                    key: keys.indexKey(version: header.version), headerBytes: headerBytes
                ) { piece in
                    try pwriteAll(fd, piece, at: pos + written)
                    headHasher?.update(piece)
                    written += UInt64(piece.count)
                }
                precondition(written == header.indexLength)
                report.bytesWritten += written + UInt64(headerBytes.count)
                if let key = options.signingKey, let chunkDigests, let release, let headHasher {
                    let block = PackSignature(
                        kind: .container, publisher: key.publicKey,
                        headDigest: headHasher.finalize(),
                        dataDigest: try SHA256Hasher.digest(
                            of: ZeroedByteSource(FileByteSource(borrowing: fd, name: output, size: pos), zeroing: dead),
                            header.dataStart..<pos),
                        items: chunkDigests, release: release
                    ).signed(with: key)
                    precondition(block.count == blockSize)
                    try pwriteAll(fd, block, at: end)
                    end += UInt64(block.count)
                    report.bytesWritten += UInt64(block.count)
                }
                // A reused entry that failed its tag check, or an unfinished append before this
                // one, may have left bytes past the end.
                try TemporaryFiles.appendWrite(fd) {
                    do { try fd.truncate(to: end) } catch let e as Errno {
                        throw e.io("cannot size the pack")
                    }
                }
                return headerBytes
            }
            let fill = { (fd: FileDescriptor) throws -> [UInt8] in
                let buffers = ChunkBuffers(
                    chunking: chunking, level: options.level, dictionary: dictionary, batch: batchBytes)
                defer { buffers.free() }
                var pos = appending?.end ?? header.dataStart
                var records: [IndexRecordV4] = []
                records.reserveCapacity(entries.count)
                var i = 0  // files done (the dictionary entry is the pack's own, not counted)
                for file in entries {
                    let isDictionary = dictionaryFile != nil && file.path == PackDictionary.entryName
                    // With a dictionary, the pack's own records are stored: a reader reads them at
                    // open, the dictionary itself among them, before it holds the dictionary.
                    let ownRecord = dictionary != nil && DeletionRecord.isReserved(file.path)
                    let partial = { (done: UInt64) -> Void in
                        options.progress?(
                            PackProgress(
                                done: i, total: sorted.count, path: file.path, bytesDone: bytesDone + done,
                                bytesTotal: bytesTotal))
                    }
                    // An entry of the previous pack keeps its key id, so its unchanged chunks can be
                    // copied; a new entry draws one.
                    let old = try reusable(file.path).flatMap { e in
                        previous.flatMap { p in
                            previousDigests.map {
                                PreviousEntry(reader: p, entry: e, digests: $0, signed: previousSigned)
                            }
                        }
                    }
                    // A source whose status is the one its entry was packed or checked from is
                    // not read: the entry is kept whole. (The cache may hold this writer's digest
                    // of an entry a 0.4 pack kept with its plaintext's SHA-256: `entry(_:is:)`.)
                    var kept: WrittenEntry?
                    // Its chunks stay compressed as they were: only where this pack decodes them
                    // (stored, or this pack's codec: codec 3 only with the dictionary kept), as
                    // `sealBatch` copies a compressed chunk only into an entry of its codec.
                    if let old, !isDictionary, old.entry.codec == ChunkCodec.none || old.entry.codec == entryCodec,
                        let cache, let known = cache.digest(of: file.path, at: file.diskPath),
                        old.digests.entry(old.entry, is: known)
                    {
                        kept = try keepEntry(
                            old, path: file.path, inPlace: appending != nil, keys: keys, buffers: buffers, to: fd,
                            at: &pos, digests: &chunkDigests)
                        if kept != nil { cache.kept(file.path) }
                    }
                    let keyID = old?.entry.keyID ?? random(ContainerFormat.keyIDSize)
                    let written =
                        try kept
                        ?? writeEntryV4(
                            file, keyID: keyID, key: keys.entryKeyV4(keyID: keyID),
                            codec: ownRecord ? .none : entryCodec, policy: options.compression, previous: old,
                            inPlace: appending != nil, checksKept: checksKept, buffers: buffers, to: fd, at: &pos,
                            digests: &chunkDigests, progress: isDictionary ? { _ in } : partial)
                    if let status = written.status, !isDictionary {
                        cache?.remember(file.path, status: status, sha256: written.record.sha256)
                    }
                    records.append(written.record)
                    report.bytesWritten += written.bytesWritten
                    if isDictionary { continue }
                    i += 1
                    if written.reusedChunks == written.record.chunks.count, let old,
                        old.digests.entry(old.entry, is: written.record.sha256)
                    {
                        report.reused += 1
                        report.reusedBytes += written.record.size
                    } else {
                        report.packed += 1
                    }
                    report.reusedChunks += written.reusedChunks
                    report.uncutChunks += written.uncutChunks
                    report.chunks += written.record.chunks.count
                    bytesDone += file.size
                    options.progress?(
                        PackProgress(
                            done: i, total: sorted.count, path: file.path, bytesDone: bytesDone,
                            bytesTotal: bytesTotal)
                    )
                }

                // Nothing changed: the pack at the output already is this pack, but for the index's
                // random nonce. Leave it as it is (same bytes, same file): an installer that asks
                // its server learns so in one request and downloads nothing.
                if let previous, try Self.holds(previous, exactly: records, options: options, output: output) {
                    throw Unchanged()
                }
                // What the previous generation held that this one does not name (removed or
                // replaced chunks, earlier indexes): zeroed once this generation is committed. A
                // pack appended as 0.2 did keeps them (a test's pack of the field).
                if appending != nil, !legacyAppends {
                    dead = Self.deadRanges(records, dataStart: header.dataStart, indexOffset: pos)
                }
                return try finish(fd, records, pos, appended: appending != nil)
            }
            if let appending {
                try beforeAppend()
                try Self.append(
                    to: output, after: appending, wipingPrevious: !legacyAppends, fill,
                    committed: { fd in try Self.zeroDead(fd, dead, output) })
                report.appended = true
                // What this re-pack left dead (the previous generation's dead bytes were zero
                // already, or were zeroed again with these: a 0.2 pack's, a crash's).
                report.zeroedBytes = DeadBytes.count(dead) - min(previousEarlier, DeadBytes.count(dead))
            } else {
                // Held from the check to after the rename: no append runs into the pack replaced.
                var locked: FileDescriptor?
                defer { try? locked?.close() }
                try AtomicFile.write(
                    output,
                    { fd in
                        let headerBytes = try fill(fd)
                        // A new pack's second slot stays empty (zeros, no magic: not a header) until its
                        // first append; the file has no bytes written between the slot and the data.
                        try pwriteAll(fd, headerBytes, at: 0)
                    },
                    verify: { _ in
                        try beforeRewrite()
                        locked = try Self.lockUnchanged(output, previous: previous?.header)
                    })
            }
        }
        func run() throws {
            if let dictionary {
                try TemporaryFiles.withFile(named: "zstd-dictionary", holding: dictionary) { url in
                    try writeAll(
                        dictionaryFile: SourceFile(
                            path: PackDictionary.entryName, url: url, size: UInt64(dictionary.count)))
                }
            } else {
                try writeAll(dictionaryFile: nil)
            }
        }
        do { try run() } catch is Unchanged {
            report.bytesWritten = 0
            report.earlierBytes = previousEarlier
            // A re-pack or update cut off between its commit and its zeroing left dead bytes.
            if let previous, !legacyAppends {
                report.zeroedBytes = try Self.finishZeroing(previous, output: output)
            }
        }
        cache?.save()
        report.unreadSources = cache?.skipped ?? 0
        if !report.appended, report.bytesWritten > 0, let previous, previous.header.isAppendable {
            // Everything of the previous file's data that this pack does not name: earlier
            // versions' (zeros, once appends zero them), and what this re-pack removed or replaced.
            report.droppedBytes = previousEarlier + (try Self.liveBytes(previous, notIn: newDigests))
            report.compacted = halfDead && report.droppedBytes > 0
        }
        return report
    }

    /// Thrown inside the atomic write when the pack would only differ by its index nonce.
    private struct Unchanged: Error {}

    /// The sorted sources with one more inserted at `at` (the pack's dictionary entry), read
    /// through without copying them (a copy was 40 MB of a million files' re-pack).
    private struct SourcesInserting: RandomAccessCollection {
        let files: [SourceFile]
        let extra: SourceFile?
        let at: Int
        init(_ files: [SourceFile], _ extra: SourceFile?, at: Int) {
            (self.files, self.extra, self.at) = (files, extra, at)
        }
        var startIndex: Int { 0 }
        var endIndex: Int { files.count + (extra == nil ? 0 : 1) }
        subscript(i: Int) -> SourceFile {
            guard let extra else { return files[i] }
            return i < at ? files[i] : i == at ? extra : files[i - 1]
        }
    }

    /// The header fields of `kdf`.
    private static func kdfFields(_ kdf: ContainerKDF) -> (KDFID, [UInt32]) {
        switch kdf {
        case .scrypt(let logN, let r, let p): (.scrypt, [UInt32(logN), r, p])
        case .pbkdf2SHA256(let n): (.pbkdf2SHA256, [n, 0, 0])
        }
    }

    /// The pack at `output` if an incremental re-pack may reuse its chunks: a container of
    /// version 4 or later that opens with `credential` and has the chunk size `options` asks
    /// for, and its KDF when `options` names one. Anything else (no file, another format,
    /// damage past the header) means a full pack.
    /// - Throws: ``AssetPackError/outputOpensWithAnotherCredential(_:because:)`` for a container
    ///   that `credential` does not open (or whose header is damaged): it is not replaced.
    private static func reusable(at output: String, credential: PackCredential, options: PackOptions) throws
        -> ContainerPackReader?
    {
        guard FileManager.default.fileExists(atPath: output) else { return nil }
        let opened: ContainerPackReader?
        do { opened = try ContainerPackReader(path: output, credential: credential) } catch let e as AssetPackError
            where e.code == .wrongPassword
        {
            throw AssetPackError.outputOpensWithAnotherCredential(output, because: e)
        } catch { opened = nil }
        // A version-8 record or digest section that fails its checks (which opening leaves to
        // reads) is damage too: checked whole here, since a re-pack decodes every record.
        guard let reader = opened, reader.header.hasChunkTable,
            reader.chunking == ChunkingParameters(average: options.container.chunkSize),
            (try? reader.checkIndex()) != nil
        else { return nil }
        if case .password = credential, let chosen = options.container.kdf {
            let (kdf, params) = kdfFields(chosen)
            guard reader.header.kdf == kdf, reader.header.params == params else { return nil }
        }
        return reader
    }

    static func openSource(_ file: SourceFile) throws -> FileDescriptor {
        try file.openForPacking()
    }
}

func pwriteAll(_ fd: FileDescriptor, _ bytes: [UInt8], at offset: UInt64) throws {
    try bytes.withUnsafeBytes { try pwriteAll(fd, $0, at: offset) }
}

func pwriteAll(_ fd: FileDescriptor, _ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws {
    // Through the interrupt gate: an append cut back by Ctrl-C is not grown again by this write.
    try TemporaryFiles.appendWrite(fd) {
        do { try fd.pwriteAll(buffer, at: offset) } catch let e as Errno { throw e.io("cannot write the pack") }
    }
}
