#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of a pack's data region that its index names no chunk in: what an appending re-pack
/// removed or replaced, and earlier generations' indexes and signature blocks. A re-pack and an
/// installer's update in place overwrite them with zeros once the new generation is committed
/// (docs/FORMAT.md, "Version 6: appendable packs"), and a signed pack's data digest is of the
/// region with them zero.
package enum DeadBytes {
    /// The parts of `region` that none of `live` covers, in order. `live` may be in any order
    /// and may reach outside `region`; live spans must not overlap each other.
    package static func ranges(outside live: [Range<UInt64>], in region: Range<UInt64>) -> [Range<UInt64>] {
        var dead: [Range<UInt64>] = []
        var at = region.lowerBound
        // A pack written whole lists its chunks in file order: no second copy of a million spans.
        let inOrder = zip(live, live.dropFirst()).allSatisfy { $0.lowerBound <= $1.lowerBound }
        for span in inOrder ? live : live.sorted(by: { $0.lowerBound < $1.lowerBound }) where !span.isEmpty {
            if span.lowerBound > at { dead.append(at..<min(span.lowerBound, region.upperBound)) }
            at = max(at, span.upperBound)
            if at >= region.upperBound { break }
        }
        if at < region.upperBound { dead.append(at..<region.upperBound) }
        return dead.filter { !$0.isEmpty }
    }

    /// The total length of `ranges`.
    package static func count(_ ranges: [Range<UInt64>]) -> UInt64 {
        ranges.reduce(0) { $0 + UInt64($1.count) }
    }

    /// Whether every byte of `ranges` in `source` is zero (read in 1 MiB pieces; a punched hole
    /// reads without touching the disk).
    package static func areZero(_ ranges: [Range<UInt64>], in source: any ByteSource) throws -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        for range in ranges {
            var at = range.lowerBound
            while at < range.upperBound {
                let piece = UnsafeMutableRawBufferPointer(
                    rebasing: buffer[0..<Int(min(UInt64(buffer.count), range.upperBound - at))])
                try source.readExactly(into: piece, at: at)
                if piece.contains(where: { $0 != 0 }) { return false }
                at += UInt64(piece.count)
            }
        }
        return true
    }
}

extension FileDescriptor {
    /// Makes every byte of `range` zero, keeping the file's size: a hole punched in it where the
    /// file system can (Linux: `fallocate` gives the blocks back, and zeroes the parts of blocks
    /// at the ends), else zeros written over each 1 MiB piece that is not zero already (the
    /// dead bytes of earlier re-packs are zeroed again by every re-pack: reads, not writes).
    /// - Parameter punching: `false` writes zeros where a hole could be punched (tests).
    package func zero(_ range: Range<UInt64>, punching: Bool = true) throws(Errno) {
        guard !range.isEmpty else { return }
        #if os(Linux)
        if punching, (try? punchHole(range)) != nil { return }
        #endif
        let count = Int(min(1 << 20, range.count))
        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 64)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 64)
        defer { piece.deallocate() }
        var at = range.lowerBound
        while at < range.upperBound {
            let n = Int(min(UInt64(count), range.upperBound - at))
            let read = try preadFully(into: UnsafeMutableRawBufferPointer(rebasing: piece[0..<n]), at: at)
            if read < n || piece[0..<n].contains(where: { $0 != 0 }) {
                try pwriteAll(UnsafeRawBufferPointer(rebasing: zeros[0..<n]), at: at)
            }
            at += UInt64(n)
        }
    }
}

/// `base` read with the bytes of `zeroed` as zeros: a file whose dead bytes a committed update is
/// about to overwrite, as it will read afterwards (the signed data digest is of that).
package final class ZeroedByteSource: ByteSource {
    private let base: any ByteSource
    private let zeroed: [Range<UInt64>]
    package var size: UInt64 { base.size }
    package var name: String { base.name }

    /// - Parameter zeroed: Sorted, not overlapping.
    package init(_ base: any ByteSource, zeroing zeroed: [Range<UInt64>]) {
        self.base = base
        self.zeroed = zeroed
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        let n = try base.read(into: buffer, at: offset)
        let end = offset + UInt64(n)
        // The first range that ends after `offset`.
        var lo = 0
        var hi = zeroed.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if zeroed[mid].upperBound <= offset { lo = mid + 1 } else { hi = mid }
        }
        var i = lo
        while i < zeroed.count, zeroed[i].lowerBound < end {
            let from = Int(max(zeroed[i].lowerBound, offset) - offset)
            let to = Int(min(zeroed[i].upperBound, end) - offset)
            UnsafeMutableRawBufferPointer(rebasing: buffer[from..<to]).initializeMemory(as: UInt8.self, repeating: 0)
            i += 1
        }
        return n
    }

    package func retain(_ span: Range<UInt64>) throws { try base.retain(span) }

    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        try base.access(spans, largestRead: largestRead, body)
    }
}
