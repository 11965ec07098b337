import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

/// The dead bytes of a pack's data region: found as the complement of its chunks, read as zeros
/// before they are zeroed, and zeroed in place by a punched hole or by zeros written.
@Suite struct DeadBytesTests {
    @Test func theDeadRangesAreWhatNoLiveSpanCovers() {
        #expect(DeadBytes.ranges(outside: [], in: 10..<20) == [10..<20])
        #expect(DeadBytes.ranges(outside: [10..<20], in: 10..<20) == [])
        // Any order; spans touching, reaching outside the region, empty.
        let live: [Range<UInt64>] = [30..<35, 12..<15, 15..<18, 40..<60, 5..<11, 25..<25]
        #expect(DeadBytes.ranges(outside: live, in: 10..<50) == [11..<12, 18..<30, 35..<40])
        #expect(DeadBytes.count([18..<30, 35..<40]) == 17)
    }

    @Test func aZeroedSourceReadsZerosOnlyWhereItSays() throws {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 % 251 + 1) }
        let zeroed: [Range<UInt64>] = [0..<3, 100..<200, 995..<1000]
        let source = ZeroedByteSource(MemoryByteSource(bytes), zeroing: zeroed)
        var expected = bytes
        for r in zeroed {
            expected.replaceSubrange(Int(r.lowerBound)..<Int(r.upperBound), with: repeatElement(0, count: r.count))
        }
        // Reads of every alignment against the ranges' edges.
        for (offset, count) in [(0, 1000), (1, 2), (2, 5), (99, 2), (150, 10), (199, 3), (990, 10), (500, 20)] {
            #expect(try source.bytes(at: UInt64(offset), count: count) == Array(expected[offset..<offset + count]))
        }
        #expect(try DeadBytes.areZero([100..<200], in: source))
        #expect(try !DeadBytes.areZero([99..<200], in: source))
    }

    @Test(arguments: [true, false]) func zeroingChangesOnlyTheRange(punching: Bool) throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("pack").path
        let bytes = testBytes(3 << 20, seed: 5)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = try FileDescriptor.open(path, .readWrite)
        defer { try? fd.close() }
        // Across block edges and a whole MiB piece, and again over what is zero already.
        let ranges: [Range<UInt64>] = [5..<4100, 8192..<(8192 + (1 << 20) + 17), 3_000_000..<3_000_001]
        for r in ranges + ranges { try fd.zero(r, punching: punching) }
        var expected = bytes
        for r in ranges {
            expected.replaceSubrange(Int(r.lowerBound)..<Int(r.upperBound), with: repeatElement(0, count: r.count))
        }
        #expect(try fd.status().size == UInt64(bytes.count))
        let now = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(now == expected)
    }
}
