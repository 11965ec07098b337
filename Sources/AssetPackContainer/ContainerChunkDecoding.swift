import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation
import Synchronization

/// Decrypting and decoding chunks: AES-GCM, then deflate or zstd, into the caller's buffer.
extension ContainerPackReader {
    // MARK: - Chunks

    static let cores = ProcessInfo.processInfo.activeProcessorCount

    func plainLength(_ e: ContainerEntry, _ c: Int) -> Int {
        if e.codec != nil { return Int(chunks.plainLength(e.firstChunk + c)) }
        return c == e.chunkCount - 1 ? Int(e.info.size - (UInt64(c) << chunkShift)) : 1 << chunkShift
    }

    /// Where chunk `c`'s plaintext starts in its entry.
    func plainStart(_ e: ContainerEntry, _ c: Int) -> UInt64 {
        e.codec != nil ? chunks.plainStart(e.firstChunk + c) : UInt64(c) << chunkShift
    }

    /// The chunk of `e` that holds plaintext byte `offset` (< the entry's size): a division for
    /// fixed-size chunks, a binary search of the chunk table for content-defined ones.
    func chunk(of e: ContainerEntry, containing offset: UInt64) -> Int {
        guard e.codec != nil else { return Int(offset >> chunkShift) }
        var lo = e.firstChunk, hi = e.firstChunk + e.chunkCount  // the answer is in lo..<hi
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if chunks.plainStart(mid) <= offset { lo = mid } else { hi = mid }
        }
        return lo - e.firstChunk
    }

    /// The AES-GCM nonce of chunk `c` of `e`: stored in a version-4 index, derived before.
    func nonce(_ e: ContainerEntry, _ c: Int) -> [UInt8] {
        if e.codec != nil { return chunks.nonce(e.firstChunk + c) }
        return chunkNonce(
            entry: e.keyID == nil ? e.id : 0, chunk: UInt32(c), final: c == e.chunkCount - 1,
            deflated: storedChunk(e, c).length - ContainerFormat.tagSize < plainLength(e, c))
    }

    /// Whether chunk `c` of `e` is compressed (with the entry's codec; deflate before version 4).
    func isCompressed(_ e: ContainerEntry, _ c: Int) -> Bool {
        if e.codec != nil { return chunks.isCompressed(e.firstChunk + c) }
        return storedChunk(e, c).length - ContainerFormat.tagSize < plainLength(e, c)
    }

    /// Decrypts chunks `range` of `e` into `out`, which holds the entry's bytes
    /// `[base, base + out.count)`. Chunks wholly inside `out` are decrypted in place, the
    /// others through a temporary chunk. Chunk CRCs go to `crcs[c - range.lowerBound]`.
    /// - Returns: CPU seconds spent decrypting and computing CRCs, summed over threads.
    func decode(
        _ e: ContainerEntry, _ key: [UInt8], _ range: Range<Int>,
        into out: UnsafeMutableRawBufferPointer, base: UInt64, crcs: UnsafeMutablePointer<UInt32>?
    ) throws -> (decrypt: Double, crc: Double) {
        let maxPlain = min(1 << chunkShift, Int(e.info.size))
        let parallel = range.count >= 4 && out.count >= 256 << 10
        let tasks = parallel ? min(range.count, Self.cores * 4) : 1
        let times = UnsafeMutableBufferPointer<(Double, Double)>.allocate(capacity: tasks)
        times.initialize(repeating: (0, 0))
        defer { times.deallocate() }
        let outEnd = base + UInt64(out.count)
        try concurrently(tasks) { task in
            let lo = range.lowerBound + range.count * task / tasks
            let hi = range.lowerBound + range.count * (task + 1) / tasks
            let scratch = UnsafeMutableRawBufferPointer.allocate(
                byteCount: AESGCM.nonceSize + maxPlain + ContainerFormat.tagSize, alignment: 64)
            defer { scratch.deallocate() }
            let gcm = AESGCM()
            let hasher = signed == nil ? nil : SHA256Hasher()
            var temp: UnsafeMutableRawBufferPointer?
            defer { temp?.deallocate() }
            var zstd: Zstd.Decompressor?
            let primed = e.codec == .zstdDictionary
            defer { if let zstd { give(zstd, primed: primed) } }
            let decoder = {
                if zstd == nil { zstd = try self.takeZstd(primed: primed) }
                return zstd!
            }
            var dec = 0.0, crcTime = 0.0
            for c in lo..<hi {
                let start = plainStart(e, c)
                let len = plainLength(e, c)
                let end = start + UInt64(len)
                let inPlace = start >= base && end <= outEnd
                let dest: UnsafeMutableRawBufferPointer
                if inPlace {
                    dest = UnsafeMutableRawBufferPointer(rebasing: out[Int(start - base)..<Int(end - base)])
                } else {
                    if temp == nil { temp = .allocate(byteCount: maxPlain, alignment: 64) }
                    dest = UnsafeMutableRawBufferPointer(rebasing: temp![0..<len])
                }
                try Stopwatch.time(&dec) {
                    try openChunk(
                        e, key, c, gcm: gcm, hasher: hasher, scratch: scratch, zstd: decoder, into: dest)
                }
                if let crcs {
                    crcs[c - range.lowerBound] = Stopwatch.time(&crcTime) {
                        CRC32.checksum(UnsafeRawBufferPointer(dest))
                    }
                }
                if !inPlace {
                    let from = max(start, base), to = min(end, outEnd)
                    UnsafeMutableRawBufferPointer(rebasing: out[Int(from - base)..<Int(to - base)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: dest[Int(from - start)..<Int(to - start)]))
                }
            }
            times[task] = (dec, crcTime)
        }
        return times.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
    }

    /// Reads, authenticates and (if deflated) inflates chunk `c` of `e` into `dest`.
    ///
    /// A stored chunk's ciphertext is read straight into `dest` and opened there; a deflated
    /// one is opened in `scratch` and inflated into `dest`. A signed pack read with trusted keys
    /// first compares the sealed chunk's SHA-256 (through `hasher`) with the signed one.
    func openChunk(
        _ e: ContainerEntry, _ key: [UInt8], _ c: Int, gcm: AESGCM, hasher: SHA256Hasher?,
        scratch: UnsafeMutableRawBufferPointer, zstd: () throws -> Zstd.Decompressor,
        into dest: UnsafeMutableRawBufferPointer
    ) throws {
        let plainLen = dest.count
        let tagSize = ContainerFormat.tagSize
        let (offset, stored) = storedChunk(e, c)
        let payload = stored - tagSize
        let compressed = isCompressed(e, c)
        guard compressed ? payload < plainLen : payload == plainLen else {
            throw AssetPackError(.integrityFailure, "chunk \(c) has the wrong length", path: e.info.path)
        }
        // The sealed chunk (payload ‖ tag, adjacent in the file) is read in one call behind its
        // nonce: swift-crypto's combined form, opened without a copy; the plaintext it returns
        // is copied into `dest` once, or inflated straight from it.
        let nonceSize = AESGCM.nonceSize
        let combined = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<nonceSize + stored])
        let sealed = UnsafeMutableRawBufferPointer(rebasing: combined[nonceSize...])
        try readExactly(source, sealed, at: offset)
        if let hasher, let block = signed {
            hasher.reset()
            hasher.update(UnsafeRawBufferPointer(sealed))
            guard block.item(e.firstChunk + c, is: hasher.finalize()) else {
                throw AssetPackError(
                    .untrusted, "chunk \(c) is not the one its publisher signed", path: e.info.path)
            }
        }
        nonce(e, c).withUnsafeBytes { combined.copyMemory(from: $0) }
        let opened: Void? = try gcm.open(combined: UnsafeRawBufferPointer(combined), key: key) { plain in
            guard compressed else {
                dest.copyMemory(from: plain)
                return
            }
            do {
                if e.codec?.isZstd == true {
                    try zstd().decompress(plain, into: dest)
                } else {
                    try RawDeflate.decompress(plain, into: dest)
                }
            } catch let error as AssetPackError {
                throw error.naming(e.info.path)
            }
        }
        guard opened != nil else {
            throw AssetPackError(
                .integrityFailure, "chunk \(c) failed authentication" + replacedSinceOpen(), path: e.info.path)
        }
    }

    /// After a chunk failed its check: when the file now holds a later generation than the one
    /// this reader opened, a re-pack or an update in place zeroed what it removed or replaced
    /// (docs/FORMAT.md, "Version 6"), which says why; else nothing. Local files only (a remote
    /// source would make a request of it).
    func replacedSinceOpen() -> String {
        guard let now = header.generationNow(in: source) else { return "" }
        return
            " (the pack was re-packed or updated after it was opened, generation \(header.generation) → \(now), "
            + "and what the new version removed or replaced is gone: open the pack again)"
    }

    /// A zstd decoder from the reader's pool (a new one when all are in use), `primed` with the
    /// pack's dictionary (codec 3).
    /// - Throws: `.integrityFailure` for a codec-3 entry in a pack without a dictionary.
    func takeZstd(primed: Bool) throws -> Zstd.Decompressor {
        guard primed else { return zstdDecoders.take() ?? Zstd.Decompressor() }
        guard let zstdDictionary else {
            throw AssetPackError(
                .integrityFailure, "an entry compressed with the pack's dictionary, and the pack has none")
        }
        return try dictionaryDecoders.take() ?? Zstd.Decompressor(dictionary: zstdDictionary)
    }

    /// Returns `decoder` to its pool, which keeps one per concurrent task at most.
    func give(_ decoder: Zstd.Decompressor, primed: Bool) {
        (primed ? dictionaryDecoders : zstdDecoders).give(decoder, keeping: Self.cores * 4)
    }
}

/// Idle zstd decoders. A decoder serves one thread at a time; the pool hands each to one taker.
final class DecoderPool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [Zstd.Decompressor] = []

    func take() -> Zstd.Decompressor? {
        lock.lock()
        defer { lock.unlock() }
        return idle.popLast()
    }

    func give(_ decoder: Zstd.Decompressor, keeping most: Int) {
        lock.lock()
        defer { lock.unlock() }
        if idle.count < most { idle.append(decoder) }
    }
}
