#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackHTTP
import AssetPackCore
import AssetPackRemote
import AssetPackTestSupport
import Testing

/// The remote mirror's bookkeeping: which bytes are held, and how missing ones become requests.
@Suite struct RangeSetTests {
    /// A set built from random inserts and removes agrees with a plain array of flags.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func agreesWithAFlagArray(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var set = RangeSet()
        var flags = [Bool](repeating: false, count: 300)
        for _ in 0..<200 {
            let a = UInt64.random(in: 0..<300, using: &rng), b = UInt64.random(in: 0..<300, using: &rng)
            let range = min(a, b)..<max(a, b)
            if Bool.random(using: &rng) {
                set.insert(range)
                for i in range { flags[Int(i)] = true }
            } else {
                set.remove(range)
                for i in range { flags[Int(i)] = false }
            }
            #expect(set.total == UInt64(flags.filter { $0 }.count))
            // Sorted, disjoint, not touching.
            #expect(zip(set.ranges, set.ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
            let probe = min(a, b)..<min(300, max(a, b) + 7)
            let missing = set.missing(in: probe)
            #expect(missing.reduce(0) { $0 + $1.count } == probe.filter { !flags[Int($0)] }.count)
            #expect(set.contains(probe) == probe.allSatisfy { flags[Int($0)] })
        }
    }

    @Test func planMergesCloseGapsAndSplitsLargeRangesEvenly() {
        let plan = RemoteMirror.plan([0..<10, 15..<20, 100..<110], gap: 5, maxRequest: 1000)
        #expect(plan == [0..<20, 100..<110])
        let big = RemoteMirror.plan([0..<(8 << 20) + 2048], gap: 0, maxRequest: 8 << 20)
        #expect(big.count == 1, "a range a little over the request size is not split off a tiny tail")
        let huge = RemoteMirror.plan([0..<(40 << 20)], gap: 0, maxRequest: 8 << 20)
        #expect(huge.count == 4 && huge.first?.lowerBound == 0 && huge.last?.upperBound == 40 << 20)
        #expect(zip(huge, huge.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        #expect(huge.allSatisfy { $0.count <= (8 << 20) * 5 / 4 })
    }
}
#endif
