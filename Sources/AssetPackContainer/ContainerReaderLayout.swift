import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation
import Synchronization

/// Where an entry's chunks lie in the pack, and which plaintext each covers.
extension ContainerPackReader {
    // MARK: - Layout

    /// The file offset and length of chunk `c` of `e` as stored (payload and tag).
    func storedChunk(_ e: ContainerEntry, _ c: Int) -> (offset: UInt64, length: Int) {
        if e.codec != nil {
            let k = e.firstChunk + c
            return (chunks.offset(k), chunks.payloadLength(k) + ContainerFormat.tagSize)
        }
        if let s = e.starts { return (e.offset + s[c], Int(s[c + 1] - s[c])) }
        let slot = UInt64((1 << chunkShift) + ContainerFormat.tagSize)
        return (e.offset + UInt64(c) * slot, plainLength(e, c) + ContainerFormat.tagSize)
    }

    /// The bytes of chunks `chunks` of `e` as stored: one span, all of them and, from version 6,
    /// whatever lies between (chunks of one entry may lie in any order there).
    func storedChunks(_ e: ContainerEntry, _ chunks: ClosedRange<Int>) -> Range<UInt64> {
        guard header.isAppendable else {
            let first = storedChunk(e, chunks.lowerBound), last = storedChunk(e, chunks.upperBound)
            return first.offset..<last.offset + UInt64(last.length)
        }
        var low = UInt64.max, high: UInt64 = 0
        for c in chunks {
            let (offset, length) = storedChunk(e, c)
            low = min(low, offset)
            high = max(high, offset + UInt64(length))
        }
        return low..<high
    }

    /// The bytes of chunks `chunks` of `e` as stored, in chunk order: one span per run of chunks
    /// that follow each other in the file (version 6: an appended generation's new chunks lie
    /// after the ones it kept).
    func storedRuns(_ e: ContainerEntry, _ chunks: ClosedRange<Int>) -> [Range<UInt64>] {
        guard header.isAppendable else { return [storedChunks(e, chunks)] }
        var runs: [Range<UInt64>] = []
        for c in chunks {
            let (offset, length) = storedChunk(e, c)
            // A small gap (a dead chunk between two kept ones) is fetched with them: one request
            // fewer is worth more than the bytes.
            if let last = runs.last, offset >= last.upperBound, offset - last.upperBound <= Self.runGap {
                runs[runs.count - 1] = last.lowerBound..<offset + UInt64(length)
            } else {
                runs.append(offset..<offset + UInt64(length))
            }
        }
        return runs
    }

    /// The largest gap between two runs of an entry's chunks that ``storedRuns(_:_:)`` reads
    /// across rather than splits at (the streaming window's piece).
    static let runGap: UInt64 = 64 << 10

    /// Every stored byte of `e` (its sealed chunks, tags included), in runs as ``storedRuns(_:_:)``.
    func entrySpans(_ e: ContainerEntry) -> [Range<UInt64>] {
        e.chunkCount == 0 ? [] : storedRuns(e, 0...(e.chunkCount - 1))
    }

    /// The entry's sealed chunks in the pack, or `nil` when there is no such entry.
    package func storedSpan(_ path: String) -> Range<UInt64>? {
        (try? records.position(of: path)).flatMap { try? entrySpan(records.record($0)) }
    }

    /// Every stored byte of `e`: its sealed chunks, tags included.
    func entrySpan(_ e: ContainerEntry) -> Range<UInt64> {
        e.chunkCount == 0 ? e.offset..<e.offset : storedChunks(e, 0...(e.chunkCount - 1))
    }
}
