/// A set of byte offsets kept as sorted, disjoint, non-adjacent ranges.
package struct RangeSet: Equatable, Sendable, Codable {
    package private(set) var ranges: [Range<UInt64>] = []

    package init() {}

    package init(_ ranges: [Range<UInt64>]) {
        for range in ranges { insert(range) }
    }

    /// Total bytes held.
    package var total: UInt64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Adds `range`, merging it with the ranges it touches.
    @discardableResult
    package mutating func insert(_ range: Range<UInt64>) -> Bool {
        guard !range.isEmpty else { return false }
        var lower = range.lowerBound, upper = range.upperBound
        var kept: [Range<UInt64>] = []
        kept.reserveCapacity(ranges.count + 1)
        var placed = false
        for r in ranges {
            if r.upperBound < lower {
                kept.append(r)
            } else if r.lowerBound > upper {
                if !placed {
                    kept.append(lower..<upper)
                    placed = true
                }
                kept.append(r)
            } else {
                lower = min(lower, r.lowerBound)
                upper = max(upper, r.upperBound)
            }
        }
        if !placed { kept.append(lower..<upper) }
        ranges = kept
        return true
    }

    /// Removes `range`.
    package mutating func remove(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var kept: [Range<UInt64>] = []
        for r in ranges {
            if r.upperBound <= range.lowerBound || r.lowerBound >= range.upperBound {
                kept.append(r)
                continue
            }
            if r.lowerBound < range.lowerBound { kept.append(r.lowerBound..<range.lowerBound) }
            if r.upperBound > range.upperBound { kept.append(range.upperBound..<r.upperBound) }
        }
        ranges = kept
    }

    /// Whether every byte of `range` is held.
    package func contains(_ range: Range<UInt64>) -> Bool {
        range.isEmpty || ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }

    /// The held parts of `range`.
    package func intersection(_ range: Range<UInt64>) -> [Range<UInt64>] {
        ranges.filter { $0.overlaps(range) }.map { $0.clamped(to: range) }
    }

    /// The parts of `range` not held, in order.
    package func missing(in range: Range<UInt64>) -> [Range<UInt64>] {
        var out: [Range<UInt64>] = []
        var cursor = range.lowerBound
        for r in ranges where r.upperBound > cursor && r.lowerBound < range.upperBound {
            if r.lowerBound > cursor { out.append(cursor..<r.lowerBound) }
            cursor = max(cursor, r.upperBound)
            if cursor >= range.upperBound { break }
        }
        if cursor < range.upperBound { out.append(cursor..<range.upperBound) }
        return out
    }

    /// Bytes held by both sets.
    package func overlap(with other: RangeSet) -> UInt64 {
        ranges.reduce(0) { sum, r in
            sum + other.intersection(r).reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }
        }
    }
}
