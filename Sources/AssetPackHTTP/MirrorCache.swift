import AssetPackCore
import Foundation

// The cache: bytes of entry data beyond `cacheLimit` are evicted, least recently used first, by
// punching holes in the mirror file; pinned ranges (the structure) and ranges being read stay.

extension RemoteMirror {
    func touch(_ range: Range<UInt64>) {
        if pinned.contains(range) { return }
        recent.removeAll { $0 == range }
        recent.append(range)
    }

    /// Punches out the least recently used ranges while unpinned bytes exceed the limit.
    func evict() {
        var held = present.total - pinned.overlap(with: present)
        var spared: [Range<UInt64>] = []
        defer { recent.insert(contentsOf: spared, at: 0) }
        while held > options.cacheLimit, recent.count > 1 {
            let victim = recent.removeFirst()
            if inUse.keys.contains(where: { $0.overlaps(victim) }) {
                spared.append(victim)  // being read: evicted later, not under the reader
                continue
            }
            for part in present.intersection(victim) {
                // Only the unpinned parts: a span may share a page-sized edge with the structure.
                var pieces = RangeSet([part])
                for pin in pinned.ranges { pieces.remove(pin) }
                for piece in pieces.ranges {
                    punchHole(piece)
                    present.remove(piece)
                    held -= piece.upperBound - piece.lowerBound
                }
            }
        }
    }

    /// Gives the range's disk blocks back (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`
    /// on Linux; elsewhere the bytes stay on disk, only forgotten).
    private func punchHole(_ range: Range<UInt64>) {
        // A hole not punched only keeps bytes on disk: the range is forgotten all the same.
        try? fd.punchHole(range)
    }
}
