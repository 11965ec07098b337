import AssetPackCore
import AssetPackCrypto
import Foundation
import Synchronization

// Sealed chunks a re-pack keeps without reading their source: an entry whose source file the
// status cache says is unchanged (kept whole), and the chunks of an append that has to become a
// rewrite (copied into the new file). Nothing here seals: kept chunks keep their key, nonce and
// ciphertext (docs/INCREMENTAL.md, "Why reuse never reuses a nonce with different plaintext").

extension ContainerPackWriter {
    /// Keeps `old` (an entry of the previous pack whose source is unchanged) whole: in place its
    /// chunks stay where they are (an append names them); in a rewrite they are copied into `fd`
    /// from `pos`, each tag checked on the way. Signed packs get each sealed chunk's SHA-256.
    /// - Returns: The entry, or `nil` when a chunk's tag does not check (a damaged previous pack:
    ///   the caller packs the entry from its source; nothing was committed).
    func keepEntry(
        _ old: PreviousEntry, path: String, inPlace: Bool, keys: ContainerKeys, buffers: ChunkBuffers,
        to fd: FileDescriptor, at pos: inout UInt64, digests: inout [UInt8]?
    ) throws -> WrittenEntry? {
        let e = old.entry, reader = old.reader
        guard let keyID = e.keyID, let sha256 = e.sha256, let crc = e.info.crc32 else { return nil }
        var chunks = (0..<e.chunkCount).map { c -> ChunkRecord in
            let k = e.firstChunk + c
            return ChunkRecord(
                offset: reader.chunks.offset(k), plainLength: reader.chunks.plainLength(k),
                payload: reader.chunks.payload(k), nonce: reader.chunks.nonce(k), digest: old.digests.chunk(k))
        }
        var written: UInt64 = 0
        if inPlace {
            // Nothing moves: the bytes a reader of the previous generation reads, under the same
            // record. A signature lists each sealed chunk's digest: the previous signature's, when
            // this key signed it, else a signed pack reads them.
            if digests != nil, let signed = old.signed {
                for c in 0..<e.chunkCount { digests! += signed.item(e.firstChunk + c) }
            } else if digests != nil {
                var unused: UInt64 = 0
                guard
                    try Self.copySealed(
                        &chunks, check: nil, from: reader.source, buffers: buffers, to: nil, at: &unused,
                        digests: &digests)
                else { return nil }
            }
        } else {
            let key = keys.entryKeyV4(keyID: keyID)
            var at = pos
            guard
                try Self.copySealed(
                    &chunks, check: { _ in key }, from: reader.source, buffers: buffers, to: fd, at: &at,
                    digests: &digests)
            else { return nil }
            written = at - pos
            pos = at
        }
        let record = IndexRecordV4(
            path: path, size: e.info.size, crc: crc, codec: e.codec ?? .none, scale: e.scale, keyID: keyID,
            sha256: sha256, chunks: chunks)
        return WrittenEntry(record: record, reusedChunks: chunks.count, bytesWritten: written)
    }

    /// Copies the sealed chunks `chunks` name (their `offset` in `source`), in order, to `fd` at
    /// `pos`, which moves on (`fd` `nil`: nothing is written, the chunks are only read for their
    /// digests), a run of chunks lying one after another at a time. From a local file the copy
    /// runs in the kernel (``FileDescriptor/copyRange(_:at:to:at:)``) while another core reads the
    /// same bytes to check the tag of each chunk `check` gives a key for, and to take each sealed
    /// chunk's SHA-256 into `digests` (when not `nil`). Each copied chunk's `offset` becomes its
    /// new one.
    /// - Returns: `false` when a tag does not check: `chunks`, `digests` and `pos` are then as
    ///   they were (bytes may have been written past `pos`).
    static func copySealed(
        _ chunks: inout [ChunkRecord], check: ((Int) -> [UInt8]?)?, from source: any ByteSource,
        buffers: ChunkBuffers, to fd: FileDescriptor?, at pos: inout UInt64, digests: inout [UInt8]?
    ) throws -> Bool {
        try buffers.finishWrites()  // the buffer is free
        let tag = ContainerFormat.tagSize
        // Runs of chunks that lie one after another, each at most a buffer (and its per-chunk slots).
        var runs: [(start: UInt64, length: Int, chunks: Range<Int>)] = []
        var i = 0
        while i < chunks.count {
            let start = chunks[i].offset
            var end = i, length = 0
            while end < chunks.count {
                let n = Int(chunks[end].payload & ~ChunkTable.compressedBit) + tag
                guard chunks[end].offset == start + UInt64(length), length + n <= buffers.sealed.count,
                    end - i < buffers.chunkCapacity
                else { break }
                length += n
                end += 1
            }
            guard end > i else { return false }  // larger than a batch: not a chunk this writer made
            runs.append((start, length, i..<end))
            i = end
        }
        let signing = digests != nil
        let checking = check != nil && (0..<chunks.count).contains { check!($0) != nil }
        let kernel = fd != nil ? (source as? FileByteSource)?.descriptor : nil
        var sealedDigests: [UInt8] = []
        // Reads each run into the buffer, checks its tags (on `tasks` cores) and takes its digests;
        // `written`: then writes it to `fd` too. - Returns: Whether every tag checked.
        func readRuns(tasks cores: Int, writing: Bool) throws -> Bool {
            var at = pos
            for run in runs {
                let bytes = UnsafeMutableRawBufferPointer(rebasing: buffers.sealed[0..<run.length])
                try readExactly(source, bytes, at: run.start)
                let count = run.chunks.count
                let tasks = run.length >= 256 << 10 ? min(count, cores) : 1
                let failed = Atomic<Bool>(false)
                try concurrently(tasks) { task in
                    for j in (count * task / tasks)..<(count * (task + 1) / tasks) {
                        let c = chunks[run.chunks.lowerBound + j]
                        let from = Int(c.offset - run.start)
                        let payload = Int(c.payload & ~ChunkTable.compressedBit)
                        let sealed = UnsafeRawBufferPointer(rebasing: bytes[from..<from + payload + tag])
                        if let key = check?(run.chunks.lowerBound + j),
                            !buffers.gcm(task).authenticates(
                                sealed, nonce: c.nonce, key: key, scratch: buffers.scratch(task))
                        {
                            failed.store(true, ordering: .relaxed)
                        }
                        if signing { buffers.storeSealedDigest(j, sealed) }
                    }
                }
                if failed.load(ordering: .relaxed) { return false }
                if signing { sealedDigests += UnsafeRawBufferPointer(rebasing: buffers.sealedDigests[0..<32 * count]) }
                if writing, let fd {
                    try pwriteAll(fd, UnsafeRawBufferPointer(bytes), at: at)
                    at += UInt64(run.length)
                }
            }
            return true
        }
        if let kernel, let fd {
            // The copy in the kernel on one core; the reads for tags and digests on the other.
            let checked = Atomic<Bool>(true)
            try concurrently(checking || signing ? 2 : 1) { task in
                if task == 1 {
                    if try !readRuns(tasks: 1, writing: false) { checked.store(false, ordering: .relaxed) }
                    return
                }
                var at = pos
                for run in runs {
                    do { try kernel.copyRange(run.length, at: run.start, to: fd, at: at) } catch let error as Errno {
                        throw error.io("cannot copy kept chunks into the pack")
                    }
                    at += UInt64(run.length)
                }
            }
            guard checked.load(ordering: .relaxed) else { return false }
        } else if fd != nil || signing {
            guard try readRuns(tasks: ContainerPackReader.cores * 4, writing: true) else { return false }
        }
        if fd != nil {
            var at = pos
            for run in runs {
                for j in run.chunks { chunks[j].offset = at + (chunks[j].offset - run.start) }
                at += UInt64(run.length)
            }
            pos = at
        }
        if signing { digests! += sealedDigests }
        return true
    }
}
