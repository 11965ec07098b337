import AssetPackCore
import Foundation

extension RemoteMirror {
    /// Merges `missing` pieces whose gap is at most `gap` and splits the result into requests of
    /// at most `maxRequest` bytes.
    package static func plan(_ missing: [Range<UInt64>], gap: UInt64, maxRequest: UInt64) -> [Range<UInt64>] {
        var merged: [Range<UInt64>] = []
        for range in missing.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = merged.last, range.lowerBound <= last.upperBound + gap {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        // Equal pieces of at most `maxRequest` (a 8 MiB + 2 KiB range is one request, not two).
        return merged.flatMap { range -> [Range<UInt64>] in
            let length = range.upperBound - range.lowerBound
            let pieces = max(1, (length + maxRequest * 5 / 4 - 1) / (maxRequest * 5 / 4))
            return (0..<pieces).map { i in
                range.lowerBound + length * i / pieces..<range.lowerBound + length * (i + 1) / pieces
            }
        }
    }
}
