import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// What a re-pack decides about the pack at the output: whether it may append to it (version 6),
/// what an append keeps, and the slot and lock work of an append.
extension ContainerPackWriter {
    /// The dead bytes of a generation whose index is `records` and whose chunks lie in
    /// `dataStart..<indexOffset` (``DeadBytes``): everything there no chunk of it occupies.
    static func deadRanges(_ records: [IndexRecordV4], dataStart: UInt64, indexOffset: UInt64) -> [Range<UInt64>] {
        var live: [Range<UInt64>] = []
        live.reserveCapacity(records.reduce(0) { $0 + $1.chunks.count })
        for r in records {
            for c in r.chunks {
                live.append(
                    c.offset..<c.offset + UInt64(c.payload & ~ChunkTable.compressedBit)
                        + UInt64(ContainerFormat.tagSize))
            }
        }
        return DeadBytes.ranges(outside: live, in: dataStart..<indexOffset)
    }

    /// The dead bytes of `pack`'s current generation (none before version 6). The chunk table is
    /// read as it is (version 8 checks a chunk's offset when its entry is read, and an installer
    /// asks this of a pack it has not verified yet): an offset whose end overflows reaches to the
    /// end, and the verification that follows refuses such a pack.
    /// - Throws: `.integrityFailure` for an index segment that fails authentication, `.io`.
    static func deadRanges(_ pack: ContainerPackReader) throws -> [Range<UInt64>] {
        guard pack.header.isAppendable else { return [] }
        try pack.loadWholeIndex()
        let live = (0..<pack.chunks.count).map { k in
            let at = pack.chunks.offset(k)
            let (end, overflow) = at.addingReportingOverflow(
                UInt64(pack.chunks.payloadLength(k)) + UInt64(ContainerFormat.tagSize))
            return at..<(overflow ? .max : end)
        }
        return DeadBytes.ranges(outside: live, in: pack.header.dataStart..<pack.header.indexOffset)
    }

    /// Zeroes the dead bytes `dead` of the pack open as `fd` and syncs: after the generation that
    /// leaves them dead is committed (its slot synced), never before, since the previous
    /// generation's readers need them until then.
    static func zeroDead(_ fd: FileDescriptor, _ dead: [Range<UInt64>], _ output: String) throws {
        guard !dead.isEmpty else { return }
        do {
            for range in dead { try fd.zero(range) }
            try fd.fsync()
        } catch {
            throw AssetPackError(
                .io,
                "\(output): the new version is written, but \(DeadBytes.count(dead)) bytes of what it removed or replaced could not be zeroed (\(error)); pack it again to finish"
            )
        }
    }

    /// After a re-pack that found nothing to change: dead bytes of `pack` that are not zero yet
    /// (a re-pack or an update cut off between its commit and its zeroing, or appended by 0.3,
    /// which kept earlier indexes) are zeroed, when that keeps the pack what it is: unsigned, or
    /// signed over a data digest of the region with them zero. Returns the bytes zeroed.
    /// A file with another name, or one this process may not write, is left as it is, as an
    /// append would leave it.
    static func finishZeroing(_ pack: ContainerPackReader, output: String) throws -> UInt64 {
        let dead = try deadRanges(pack)
        guard !dead.isEmpty, FileSystem.isSoleWritableFile(output), try !DeadBytes.areZero(dead, in: pack.source)
        else { return 0 }
        if let block = try ContainerPackReader.signature(pack.source) {
            let zeroed = ZeroedByteSource(pack.source, zeroing: dead)
            let data = pack.header.dataStart..<pack.header.indexOffset
            guard try SHA256Hasher.digest(of: zeroed, data) == block.dataDigest else { return 0 }
        }
        guard let fd = try lockUnchanged(output, previous: pack.header, mode: .readWrite) else { return 0 }
        defer { try? fd.close() }  // and with it the lock
        try zeroDead(fd, dead, output)
        return DeadBytes.count(dead)
    }

    /// The bytes of `previous`'s live chunks whose plaintext is in none of `digests` (the new
    /// pack's chunks): content a re-pack removed or replaced.
    static func liveBytes(_ previous: ContainerPackReader, notIn digests: SortedDigests) throws -> UInt64 {
        var bytes: UInt64 = 0
        let old = try previous.digests()
        for k in 0..<previous.chunks.count where !digests.contains(InlineBytes(old.chunk(k))) {
            bytes += UInt64(previous.chunks.payloadLength(k)) + UInt64(ContainerFormat.tagSize)
        }
        return bytes
    }

    /// Whether `previous` holds exactly `records` (every chunk kept, in the same order, with the
    /// same nonces and offsets) and would be signed the same way: the same key and release, or
    /// unsigned. A pack older than version 8 is rewritten as version 8.
    static func holds(
        _ previous: ContainerPackReader, exactly records: [IndexRecordV4], options: PackOptions, output: String
    ) throws -> Bool {
        guard previous.records.count == records.count, previous.header.isAppendable else { return false }
        // A pack older than version 8 is rewritten as version 8 (its index read in place).
        guard previous.header.hasIndexInPlace else { return false }
        let digests = try previous.digests()
        for (i, new) in records.enumerated() {
            let old = try previous.records.record(i)
            guard old.info.path == new.path, old.keyID == new.keyID, digests.entry(old, is: new.sha256),
                old.codec == new.codec, old.chunkCount == new.chunks.count
            else { return false }
            for (c, chunk) in new.chunks.enumerated() {
                let k = old.firstChunk + c
                guard previous.chunks.payload(k) == chunk.payload, previous.chunks.nonce(k) == chunk.nonce,
                    previous.chunks.offset(k) == chunk.offset
                else {
                    return false
                }
            }
        }
        let block = try ContainerPackReader.signature(previous.source)
        guard let key = options.signingKey else { return block == nil }
        guard let block, block.publisher == key.publicKey else { return false }
        let wanted = try options.release(for: output)
        return block.release.name == wanted.name && block.release.version == wanted.version
            && block.release.expires == wanted.expires && !block.release.isLegacy
    }

    /// Where and how a re-pack may append to `previous`, the pack at the output, when `dead`
    /// bytes of its data region would be named by no entry after the append (its earlier
    /// versions', ``earlierBytes(_:)``, and the entries the re-pack removes): a version-6 or -7
    /// pack whose data region stays more than half live; else `nil` (a rewrite, which also
    /// compacts). So the file stays under twice its live size and the last change.
    static func appendable(_ previous: ContainerPackReader, dead: UInt64) -> ContainerHeader? {
        // The last generation a u64 counts cannot be appended to: a rewrite starts again at 1.
        guard previous.header.isAppendable, previous.header.generation < .max else { return nil }
        let data = previous.header.indexOffset - previous.header.dataStart
        return dead >= data - min(dead, data) ? nil : previous.header
    }

    /// The stored bytes (payload and tag) of `previous`'s entries whose paths none of `sources`
    /// (sorted by path bytes) has, the pack's own records aside; 0 without a look when `removed`
    /// (their count) is 0.
    static func storedBytes(_ previous: ContainerPackReader, notIn sources: [SourceFile], removed: Int) throws -> UInt64
    {
        guard removed > 0 else { return 0 }
        var bytes: UInt64 = 0
        for i in 0..<previous.records.count {
            let e = try previous.records.record(i)
            guard !DeletionRecord.isReserved(e.info.path) else { continue }
            var lo = 0
            var hi = sources.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if sources[mid].path.utf8.lexicographicallyPrecedes(e.info.path.utf8) { lo = mid + 1 } else { hi = mid }
            }
            if lo < sources.count, sources[lo].path == e.info.path { continue }
            for k in e.firstChunk..<e.firstChunk + e.chunkCount {
                bytes += UInt64(previous.chunks.payloadLength(k)) + UInt64(ContainerFormat.tagSize)
            }
        }
        return bytes
    }

    /// The generation a re-pack writes after the pack `previous` (`nil`: none, or older than
    /// version 6): the next one, which an append needs (readers take the higher slot); a rewrite
    /// counts on too, except after the last one a u64 holds (only a holder of the key could have
    /// sealed it), where it starts again at 1 instead of trapping.
    static func generation(after previous: ContainerHeader?, appending: Bool) -> UInt64 {
        guard let previous, previous.isAppendable else { return 1 }
        precondition(!appending || previous.generation < .max, "appendable() refuses the last generation")
        return previous.generation < .max ? previous.generation + 1 : 1
    }

    /// The bytes of `pack`'s data region its index does not name (earlier versions': chunks,
    /// indexes, signature blocks); 0 before version 6.
    static func earlierBytes(_ pack: ContainerPackReader) -> UInt64 {
        guard pack.header.isAppendable else { return 0 }
        let live = (0..<pack.chunks.count).reduce(UInt64(0)) {
            $0 + UInt64(pack.chunks.payloadLength($1)) + UInt64(ContainerFormat.tagSize)
        }
        let data = pack.header.indexOffset - pack.header.dataStart
        return data - min(live, data)
    }

    /// Appends a generation to the pack at `output` in place: lets `fill` write the new chunks,
    /// index and signature from the previous generation's end (over what an unfinished append
    /// left there; it cuts the file at its own end) and return the new header slot's bytes,
    /// syncs, writes the slot into the one the previous generation is not in, and syncs again. Until the slot is written
    /// the file is the previous pack (readers ignore bytes past its end), and nothing a reader
    /// of the previous generation reads is written.
    ///
    /// Two re-packs of one pack at once: each holds an exclusive `flock` on the file while it
    /// appends, and appends only if the file still holds the generation it read (`previous`), so
    /// the second fails, writing nothing, instead of appending over the first.
    static func append(
        to output: String, after previous: ContainerHeader, wipingPrevious: Bool,
        _ fill: (FileDescriptor) throws -> [UInt8], committed afterCommit: (FileDescriptor) throws -> Void = { _ in }
    ) throws {
        let previousEnd = previous.end, slot = 1 - previous.slot
        let fd: FileDescriptor
        do { fd = try .open(output, .readWrite) } catch { throw error.io("cannot open \(output)") }
        defer { try? fd.close() }  // and with it the lock
        do { try fd.lockExclusive() } catch { throw error.io("cannot lock \(output)") }
        let status: FileStatus
        do { status = try fd.status() } catch { throw error.io("cannot stat \(output)") }
        // Still the file at the output (not one a rewrite renamed away), holding exactly the
        // header the re-pack read (salt and commitment included: a rewrite with --fresh restarts
        // at generation 1 too).
        let named = try? FileSystem.stat(output)
        let now = try? ContainerHeader.read(from: FileByteSource(borrowing: fd, name: output, size: status.size)).header
        guard named?.inode == status.inode, named?.device == status.device, let now, now == previous else {
            throw changedWhileRepacking(output)
        }
        // An interrupt (Ctrl-C) before the slot is written cuts this file back, too.
        TemporaryFiles.registerAppend(output, descriptor: fd, size: previousEnd)
        do {
            let headerBytes = try fill(fd)
            do { try fd.fsync() } catch { throw error.io("cannot sync \(output)") }
            // One 128-byte write inside one 4 KiB block (a sector-atomic write on the disks we
            // know): a slot written in part needs a power cut in the middle of it, fails its check,
            // and readers then refuse the pack rather than read the previous generation
            // (docs/FORMAT.md, "Version 6"); re-running the pack rewrites it.
            let committed = try TemporaryFiles.commitAppend(output) {
                try pwriteAll(fd, headerBytes, at: UInt64(slot * ContainerFormat.slotStride))
            }
            // Cut back by an interrupt: the process is about to die of it.
            guard committed else { throw AssetPackError(.io, "interrupted: \(output) was not changed") }
        } catch {
            // Leave the file as it was: the previous generation, and nothing after it. Not touched
            // when nothing was appended (Linux's ftruncate sets the modification time even to the
            // same size, and a server's ETag is made of it: a re-pack with nothing changed must
            // leave it).
            TemporaryFiles.forgetAppend(output)
            if (try? fd.status().size) != previousEnd { try? fd.truncate(to: previousEnd) }
            throw error
        }
        // The new generation is whole on the disk before its slot names it; a failure here leaves
        // one generation or the other, each whole, so nothing is cut.
        do { try fd.fsync() } catch { throw error.io("cannot sync \(output)") }
        // Then the previous generation's slot is wiped (zeros: no slot there), so nothing leads a
        // reader back to it: a damaged new slot is refused, never read as the older version
        // (docs/SECURITY.md, "Rollback through an older slot"). A crash before this leaves two
        // valid slots, of which readers take the newer.
        // Best effort: the new generation is committed, and a reader takes the newer of two
        // valid slots, so a failure here does not make the re-pack a failure.
        if wipingPrevious { try? wipeSlot(fd, previous.slot, output) }
        // Then what the new generation removed or replaced is zeroed (with the lock still held).
        try afterCommit(fd)
    }

    /// Overwrites header slot `slot` of the pack open as `fd` with zeros and syncs.
    static func wipeSlot(_ fd: FileDescriptor, _ slot: Int, _ output: String) throws {
        let zeros = [UInt8](repeating: 0, count: ContainerFormat.slotSize)
        try pwriteAll(fd, zeros, at: UInt64(slot * ContainerFormat.slotStride))
        do { try fd.fsync() } catch { throw error.io("cannot sync \(output)") }
    }

    /// Before a rewrite renames its pack over `output`: an exclusive lock on the file there (the
    /// caller holds it until after the rename, as an append holds it while it appends), so that
    /// no append writes into a file being replaced; and when the re-pack read that pack
    /// (`previous`; not with `--fresh`), it must still hold that header, so that a rewrite never
    /// replaces a generation another re-pack appended meanwhile. `nil` (no lock) when there is
    /// no file.
    /// `mode`: `.readWrite` for a caller that then writes into the file (finishing a zeroing).
    static func lockUnchanged(
        _ output: String, previous: ContainerHeader?, mode: FileDescriptor.AccessMode = .readOnly
    ) throws -> FileDescriptor? {
        guard let fd = try? FileDescriptor.open(output, mode) else { return nil }
        do {
            do { try fd.lockExclusive() } catch { throw error.io("cannot lock \(output)") }
            guard let previous else { return fd }
            let status: FileStatus
            do { status = try fd.status() } catch { throw error.io("cannot stat \(output)") }
            // Still the file at the output: another re-pack may have renamed its pack there while
            // this one waited for the lock on the file it replaced (which keeps the old header).
            let named = try? FileSystem.stat(output)
            let now = try? ContainerHeader.read(from: FileByteSource(borrowing: fd, name: output, size: status.size))
                .header
            guard named?.inode == status.inode, named?.device == status.device, now == previous else {
                throw changedWhileRepacking(output)
            }
            return fd
        } catch {
            try? fd.close()
            throw error
        }
    }

    static func changedWhileRepacking(_ output: String) -> AssetPackError {
        AssetPackError(.io, "\(output) changed while it was being re-packed (another pack of it?); pack it again")
    }
}

/// The plaintext digests of a pack's chunks, sorted and searched by bisection: what a rewrite
/// counts the content it dropped against. A `Set` of a million was 84 MB, built from a 40 MB
/// array, at the rewrite's peak; this is the 40 MB.
struct SortedDigests {
    private var digests: [InlineBytes] = []

    init() {}

    init(_ records: [IndexRecordV4]) {
        digests.reserveCapacity(records.reduce(0) { $0 + $1.chunks.count })
        for r in records { for c in r.chunks { digests.append(c.$digest) } }
        digests.sort(by: Self.precedes)
    }

    func contains(_ digest: InlineBytes) -> Bool {
        var lo = 0, hi = digests.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if digests[mid] == digest { return true }
            if Self.precedes(digests[mid], digest) { lo = mid + 1 } else { hi = mid }
        }
        return false
    }

    private static func precedes(_ a: InlineBytes, _ b: InlineBytes) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.lexicographicallyPrecedes(y) } }
    }
}
