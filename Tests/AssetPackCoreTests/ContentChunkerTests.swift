import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

/// The content-defined chunker container format v4 cuts large entries with: its bounds, its fixed
/// definition (golden boundaries an independent Python rendering of the definition also gives),
/// streaming, and locality (an edit changes only the chunks around it).
@Suite struct ContentChunkerTests {
    /// A small chunker, so short inputs have many chunks.
    static let small = ContentChunker(min: 256, avg: 1024, max: 4096)

    /// `count` bytes of consecutive `SplitMix64(seed:)` outputs, each little-endian: the vectors'
    /// input (FORMAT.md states it the same way).
    static func splitMixBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for i in words.indices { words[i] = rng.next().littleEndian }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }

    static func ends(_ chunker: ContentChunker, _ data: [UInt8]) -> [Int] {
        data.withUnsafeBytes { chunker.boundaries(of: $0) }
    }

    /// Every chunk but the last within min...max, the last within 1...max, ending at the input's end.
    static func checkBounds(_ chunker: ContentChunker, _ data: [UInt8], _ label: String) {
        let ends = ends(chunker, data)
        #expect(ends.last == data.count, "\(label)")
        var start = 0
        for (k, end) in ends.enumerated() {
            let length = end - start
            if k < ends.count - 1 {
                #expect(length >= chunker.minSize && length <= chunker.maxSize, "\(label): chunk \(k) is \(length) B")
            } else {
                #expect(length >= 1 && length <= chunker.maxSize, "\(label): last chunk is \(length) B")
            }
            start = end
        }
    }

    /// A chunk's bytes, identified by a hash (equal within one process, all a comparison needs).
    static func chunkKeys(_ data: [UInt8], _ ends: [Int]) -> [Int] {
        var start = 0
        return ends.map { end in
            defer { start = end }
            var hasher = Hasher()
            data.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
            return hasher.finalize()
        }
    }

    /// The chunks of `new` (start, length) whose bytes are no chunk of `old`.
    static func changedChunks(_ chunker: ContentChunker, old: [UInt8], new: [UInt8]) -> [(Int, Int)] {
        changedChunks(chunker, known: Set(chunkKeys(old, ends(chunker, old))), new: new)
    }

    static func changedChunks(_ chunker: ContentChunker, known: Set<Int>, new: [UInt8]) -> [(Int, Int)] {
        let newEnds = ends(chunker, new)
        var out: [(Int, Int)] = []
        for (k, key) in chunkKeys(new, newEnds).enumerated() where !known.contains(key) {
            let start = k == 0 ? 0 : newEnds[k - 1]
            out.append((start, newEnds[k] - start))
        }
        return out
    }

    /// The gear table, the masks and the standard sizes are part of the format: pinned.
    @Test func definitionIsPinned() {
        #expect(ContentChunker.gearSeed == 0x4173_7365_7443_4443)
        #expect(ContentChunker.gear.count == 256)
        #expect(ContentChunker.gear[0] == 0x0E7B_C4C8_1236_6CDA)
        #expect(ContentChunker.gear[1] == 0x7829_352F_146C_819E)
        #expect(ContentChunker.gear[255] == 0x8BBE_7FD8_EAB9_5874)
        #expect(ContentChunker.gear.reduce(0, ^) == 0x833A_EED7_BA7C_BDEF)
        let standard = ContentChunker.standard
        #expect(standard.minSize == 16384 && standard.averageSize == 65536 && standard.maxSize == 262_144)
        #expect(standard.normalization == 2)
        #expect(standard.smallMask == 0x7FFF_E000_0000_0000)  // 18 bits
        #expect(standard.largeMask == 0x7FFE_0000_0000_0000)  // 14 bits
    }

    /// Golden boundaries: 1 MiB of SplitMix64(seed: 26) with the standard chunker, and 64 KiB of
    /// SplitMix64(seed: 27) with 256/1024/4096. scripts/cdc-reference.py, a plain Python rendering of
    /// the definition in ContentChunker's doc comment (rolling from each chunk's start, and summing
    /// the 64-byte window at each candidate), prints the same lists: the definition is pinned, not
    /// just this code.
    @Test func goldenBoundaries() {
        #expect(
            Self.ends(.standard, Self.splitMixBytes(1 << 20, seed: 26)) == [
                73438, 140077, 208106, 274830, 357222, 395979, 491338, 567387, 646240, 701082, 767297, 846132,
                924182, 997835, 1_048_576,
            ])
        #expect(
            Self.ends(Self.small, Self.splitMixBytes(64 << 10, seed: 27)) == [
                1164, 2359, 3436, 4778, 6649, 7935, 9633, 10688, 12334, 13376, 14566, 16082, 17216, 17520, 19019,
                20118, 21667, 22830, 24163, 25099, 26514, 27586, 27917, 29797, 30884, 32148, 35365, 36457, 37731,
                38297, 39736, 40883, 41362, 42534, 44375, 45456, 46618, 48048, 49093, 51355, 52698, 53949, 55233,
                56644, 57685, 58774, 59897, 61044, 62103, 63385, 64452, 65500, 65536,
            ])
    }

    @Test(.slow) func boundsHoldOnRandomZeroAndRepetitiveInput() {
        let pattern = Array(testBytes(1000, seed: 3))
        let inputs: [(String, [UInt8])] = [
            ("random", Self.splitMixBytes(3 << 20, seed: 1)),
            ("zeros", [UInt8](repeating: 0, count: 3 << 20)),
            ("repeated 1000-byte pattern", (0..<3200).flatMap { _ in pattern }),
            ("text", textBytes(3 << 20, seed: 2)),
        ]
        for chunker in [ContentChunker.standard, Self.small] {
            for (label, data) in inputs { Self.checkBounds(chunker, data, label) }
            // Lengths at the edges of the sizes.
            for n in [
                1, 63, chunker.minSize - 1, chunker.minSize, chunker.minSize + 1, chunker.maxSize,
                chunker.maxSize + 1, 2 * chunker.maxSize + 3,
            ] {
                Self.checkBounds(chunker, testBytes(n, seed: UInt64(n)), "random \(n) B")
                Self.checkBounds(chunker, [UInt8](repeating: 0, count: n), "zeros \(n) B")
            }
        }
        // Zeros have no boundary (their hash is the same everywhere and misses): max-size chunks.
        #expect(Self.ends(.standard, [UInt8](repeating: 0, count: 600_000)) == [262_144, 524_288, 600_000])
    }

    @Test func emptyInputHasNoChunk() {
        #expect(Self.ends(.standard, []) == [])
        [UInt8]().withUnsafeBytes { empty in
            #expect(ContentChunker.standard.cut(empty, final: true) == nil)
            #expect(ContentChunker.standard.cut(empty, final: false) == nil)
        }
    }

    /// Without `final`, a prefix with no boundary and fewer than max bytes asks for more; a boundary
    /// found in a prefix is where the whole input has it; max bytes always answer.
    @Test func cutAsksForMoreOnlyWhenItMust() {
        let chunker = Self.small
        let data = testBytes(64 << 10, seed: 9)
        let first = Self.ends(chunker, data)[0]
        data.withUnsafeBytes { raw in
            #expect(chunker.cut(UnsafeRawBufferPointer(rebasing: raw[..<(first - 1)]), final: false) == nil)
            #expect(chunker.cut(UnsafeRawBufferPointer(rebasing: raw[..<(first - 1)]), final: true) == first - 1)
            #expect(chunker.cut(UnsafeRawBufferPointer(rebasing: raw[..<first]), final: false) == first)
            #expect(chunker.cut(raw, final: false) == first)
        }
        let zeros = [UInt8](repeating: 0, count: chunker.maxSize)
        zeros.withUnsafeBytes { raw in
            #expect(chunker.cut(UnsafeRawBufferPointer(rebasing: raw[..<(chunker.maxSize - 1)]), final: false) == nil)
            #expect(chunker.cut(raw, final: false) == chunker.maxSize)
        }
    }

    /// Streaming a file through a small buffer (read a piece, cut what can be cut, keep the rest)
    /// gives the boundaries of one call over the whole input.
    @Test(.slow, arguments: [1000, 4096, 65543, 300_000])
    func streamingThroughSmallBuffersGivesTheSameBoundaries(piece: Int) {
        let data =
            Self.splitMixBytes(1 << 20, seed: 11) + [UInt8](repeating: 0, count: 600_000)
            + Self.splitMixBytes(123_457, seed: 12)
        // (Each `nil` rescans what is pending: 1000-byte pieces cost the standard chunker 256 rescans
        // of up to 256 KiB per chunk, too slow for a debug build; the small one takes every size.)
        for chunker in piece < 4096 ? [Self.small] : [ContentChunker.standard, Self.small] {
            var ends: [Int] = []
            var pending: [UInt8] = []  // read, not yet cut: pending[head...]
            var head = 0
            var consumed = 0  // offset of pending[head]
            var read = 0
            while true {
                let final = read == data.count
                let length = pending.withUnsafeBytes {
                    chunker.cut(UnsafeRawBufferPointer(rebasing: $0[head...]), final: final)
                }
                if let length {
                    consumed += length
                    ends.append(consumed)
                    head += length
                } else if final {
                    break
                } else {
                    pending.removeFirst(head)
                    head = 0
                    let next = min(read + piece, data.count)
                    pending += data[read..<next]
                    read = next
                }
            }
            #expect(ends == Self.ends(chunker, data), "piece \(piece), avg \(chunker.averageSize)")
        }
    }

    /// One byte changed in the middle of a 16 MiB entry changes at most 2 chunks, near the byte.
    @Test(.slow) func oneChangedByteChangesAtMostTwoChunks() {
        let chunker = ContentChunker.standard
        let old = Self.splitMixBytes(16 << 20, seed: 21)
        let known = Set(Self.chunkKeys(old, Self.ends(chunker, old)))
        for at in [8 << 20, (8 << 20) + 123_457, (5 << 20) + 77] {
            var new = old
            new[at] ^= 0x01
            let changed = Self.changedChunks(chunker, known: known, new: new)
            #expect(changed.count >= 1 && changed.count <= 2, "at \(at): \(changed)")
            #expect(changed.allSatisfy { $0.0 <= at + chunker.maxSize && $0.0 + $0.1 > at - chunker.maxSize })
        }
    }

    /// 4 KiB inserted in the middle: only chunks around the insertion differ (at most 3).
    @Test(.slow) func insertionChangesOnlyTheChunksAroundIt() {
        let chunker = ContentChunker.standard
        let old = Self.splitMixBytes(16 << 20, seed: 22)
        let known = Set(Self.chunkKeys(old, Self.ends(chunker, old)))
        let inserted = testBytes(4096, seed: 23)
        for at in [8 << 20, (11 << 20) + 4321] {
            var new = old
            new.insert(contentsOf: inserted, at: at)
            let changed = Self.changedChunks(chunker, known: known, new: new)
            #expect(changed.count >= 1 && changed.count <= 3, "at \(at): \(changed)")
            #expect(changed.allSatisfy { $0.0 <= at + 4096 + chunker.maxSize && $0.0 + $0.1 > at - chunker.maxSize })
            #expect(changed.map(\.1).reduce(0, +) <= 3 * chunker.maxSize)
        }
    }

    /// 1 MiB appended: every boundary but the old last one stays; only chunks from the old last
    /// chunk's start on differ.
    @Test(.slow) func appendingChangesOnlyTheLastChunks() {
        let chunker = ContentChunker.standard
        let old = Self.splitMixBytes(16 << 20, seed: 24)
        let new = old + Self.splitMixBytes(1 << 20, seed: 25)
        let oldEnds = Self.ends(chunker, old)
        let newEnds = Self.ends(chunker, new)
        #expect(Array(newEnds.prefix(oldEnds.count - 1)) == Array(oldEnds.dropLast()))
        let lastStart = oldEnds[oldEnds.count - 2]
        let changed = Self.changedChunks(chunker, old: old, new: new)
        #expect(!changed.isEmpty && changed.allSatisfy { $0.0 >= lastStart })
        #expect(changed.map(\.1).reduce(0, +) <= (1 << 20) + chunker.maxSize)
    }
}

/// The parallel cut (`cuts(_:final:parts:)`, what the container writer uses) against the loop of
/// `cut` calls that defines the boundaries: the same lengths on random, zero and repetitive input,
/// for any number of parts, final or not.
@Suite struct ParallelCutTests {
    static func sequential(_ chunker: ContentChunker, _ data: [UInt8], final: Bool) -> [Int] {
        data.withUnsafeBytes { raw in
            var lengths: [Int] = []
            var at = 0
            while at < raw.count, let l = chunker.cut(UnsafeRawBufferPointer(rebasing: raw[at...]), final: final) {
                lengths.append(l)
                at += l
            }
            return lengths
        }
    }

    @Test func partsCutWhereTheLoopDoes() {
        let chunkers = [
            ContentChunker(min: 256, avg: 1024, max: 4096),
            ContentChunker(min: 64, avg: 64, max: 128, normalization: 0),
            ContentChunker.standard,
        ]
        var rng = SplitMix64(seed: 26)
        let random = (0..<(600 << 10) + 123).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let zeros = [UInt8](repeating: 0, count: 300_001)
        let pattern = (0..<300_007).map { UInt8(truncatingIfNeeded: $0 % 251) }
        for chunker in chunkers {
            // The tiny chunker (a chunk per ~100 bytes) on less: the loop it is checked against is slow here.
            // Sizes around the window, the minimum and the maximum, where an off-by-one would show.
            let edges = [
                1, 63, 64, 65, chunker.minSize - 1, chunker.minSize, chunker.minSize + 1, chunker.maxSize - 1,
                chunker.maxSize, chunker.maxSize + 1,
            ].map { Array(random.prefix($0)) }
            let inputs =
                chunker.minSize < 256
                ? [Array(random.prefix(150_000)), Array(zeros.prefix(1000))] + edges
                : [random, zeros, pattern, Array(random.prefix(200)), Array(random.prefix(70_000)), []] + edges
            for data in inputs {
                for final in [true, false] {
                    let expected = Self.sequential(chunker, data, final: final)
                    // Parts of at least one position split even the smallest inputs; the default 64 Ki do not.
                    for (parts, minimumPart) in [(1, 1 << 16), (2, 1 << 16), (3, 1), (7, 1 << 16), (7, 1), (1000, 1)] {
                        let got = data.withUnsafeBytes {
                            chunker.cuts($0, final: final, parts: parts, minimumPart: minimumPart)
                        }
                        #expect(
                            got == expected,
                            "min \(chunker.minSize), \(data.count) B, final \(final), \(parts) parts of ≥ \(minimumPart): \(got.count) chunks, expected \(expected.count)"
                        )
                    }
                }
            }
        }
    }
}
