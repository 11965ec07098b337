import Dispatch

/// Content-defined chunking: cuts a byte stream into chunks whose boundaries depend on the bytes
/// around them, not on their offsets, so an edit moves only the boundaries of the chunks it touches
/// and every other chunk keeps its bytes (and can be reused by a re-pack or skipped by an update).
///
/// The algorithm is FastCDC (W. Xia et al., "FastCDC: a Fast and Efficient Content-Defined Chunking
/// Approach for Data Deduplication", USENIX ATC 2016, Algorithm 1): a gear rolling hash
/// `h = (h << 1) + Gear[byte]`, cut-point skipping (no boundary before `minSize`), and normalized
/// chunking (a stricter mask before `averageSize`, a looser one after, so chunk sizes cluster around
/// the average). Two details are this type's own and are part of the definition, so that a later
/// version of the tool cuts the same boundaries:
///
/// - **The hash at a candidate boundary covers exactly the 64 bytes before it.** A candidate chunk
///   length `L` (`minSize ≤ L < maxSize`) is judged by
///   `h(L) = Σ_{k=0}^{63} Gear[b[L−1−k]] << k  (mod 2^64)`, where `b` are the chunk's bytes.
///   (The shift pushes every older byte out of the 64-bit hash, so rolling from byte `L − 64` gives
///   the same value as rolling from the chunk's start.) A boundary is thus a function of the
///   64 bytes before it and of its distance from the previous boundary, nothing else.
/// - **The masks are contiguous high bits.** `mask(n)` has the `n` bits 63−n … 62 set (bit 63 is
///   never used, and the lowest bit used still depends on 64−n ≥ 40 bytes). With
///   `a = log2(averageSize)` and normalization level `ℓ`, lengths `L < averageSize` cut where
///   `h(L) & mask(a + ℓ) == 0` and lengths `L ≥ averageSize` where `h(L) & mask(a − ℓ) == 0`.
///
/// A chunk ends at the first `L` in `minSize ..< maxSize` whose hash passes, else at `maxSize`; the
/// last chunk of the input ends where the input does. So every chunk but the last is in
/// `minSize ... maxSize` and the last is in `1 ... maxSize`; an empty input has no chunk at all.
///
/// `Gear` is 256 values of ``SplitMix64`` seeded with ``gearSeed``, in order (`Gear[0]` is the first
/// value drawn). The ``standard`` parameters are what container format v4 cuts large entries with;
/// they are fixed forever (a re-pack must cut an unchanged file where the previous version did).
package struct ContentChunker: Sendable, Equatable {
    /// The seed of the gear table: the ASCII bytes "AssetCDC" read big-endian.
    package static let gearSeed: UInt64 = 0x4173_7365_7443_4443

    /// The bytes a boundary's hash covers.
    package static let window = 64

    /// The gear table: 256 consecutive outputs of `SplitMix64(seed: gearSeed)`.
    package static let gear: [UInt64] = {
        var rng = SplitMix64(seed: gearSeed)
        return (0..<256).map { _ in rng.next() }
    }()

    /// What container format v4 uses: 16 KiB minimum, 64 KiB average, 256 KiB maximum, normalization
    /// level 2 (chosen by measurement: docs/PERFORMANCE.md, "Content-defined chunking").
    package static let standard = ContentChunker(min: 16 << 10, avg: 64 << 10, max: 256 << 10, normalization: 2)

    /// No chunk but the last is shorter.
    package let minSize: Int
    /// Where the stricter mask gives way to the looser one (the target mean; a power of two).
    package let averageSize: Int
    /// No chunk is longer: a chunk with no boundary by then is cut here.
    package let maxSize: Int
    /// How many bits the masks differ from `log2(averageSize)` by (0 is plain Gear CDC).
    package let normalization: Int
    /// The mask for lengths below `averageSize`: `mask(log2(averageSize) + normalization)`.
    package let smallMask: UInt64
    /// The mask for lengths from `averageSize` on: `mask(log2(averageSize) − normalization)`.
    package let largeMask: UInt64

    /// `n` contiguous one bits ending at bit 62 (bits 63−n … 62).
    package static func mask(bits n: Int) -> UInt64 {
        precondition(n >= 1 && n <= 62)
        return ((1 << UInt64(n)) - 1) << UInt64(63 - n)
    }

    /// A chunker with the given sizes. `avg` must be a power of two and
    /// `64 ≤ min ≤ avg ≤ max`; `normalization` in `0...3` (and `log2(avg) − normalization ≥ 1`).
    package init(min: Int, avg: Int, max: Int, normalization: Int = 2) {
        precondition(min >= Self.window && min <= avg && avg <= max, "need 64 ≤ min ≤ avg ≤ max")
        precondition(avg.nonzeroBitCount == 1, "the average size must be a power of two")
        let bits = avg.trailingZeroBitCount
        precondition((0...3).contains(normalization) && bits - normalization >= 1 && bits + normalization <= 62)
        minSize = min
        averageSize = avg
        maxSize = max
        self.normalization = normalization
        smallMask = Self.mask(bits: bits + normalization)
        largeMask = Self.mask(bits: bits - normalization)
    }

    /// The length of the chunk that starts at `data[0]`.
    ///
    /// With `final` false, `data` is a prefix of what follows: the answer is `nil` when no boundary
    /// is in `data` yet and it holds fewer than `maxSize` bytes (give it more and ask again; giving at
    /// least `maxSize` bytes, or everything that is left with `final` true, always gets an answer).
    /// With `final` true, `data` is all that is left and the chunk may end at its end. An empty
    /// `data` has no chunk: `nil`. A boundary found never moves when more bytes are given.
    package func cut(_ data: UnsafeRawBufferPointer, final: Bool) -> Int? {
        let count = data.count
        guard count > 0, let base = data.baseAddress else { return nil }
        if count >= minSize {
            let limit = Swift.min(count, maxSize - 1)  // candidate lengths L = i + 1 ≤ limit
            if let length = scan(base.assumingMemoryBound(to: UInt8.self), limit: limit) { return length }
        }
        if count >= maxSize { return maxSize }
        return final ? count : nil
    }

    /// `gear` shifted left by one bit, for rolling two bytes a step.
    private static let gearShifted: [UInt64] = gear.map { $0 << 1 }

    /// The first length `L` in `minSize ... limit` whose hash passes its mask, if any.
    ///
    /// Rolls two bytes a step (FastCDC's 2020 refinement, W. Xia et al., "The Design of Fast
    /// Content-Defined Chunking for Data Deduplication Based Storage Systems", IEEE TPDS 31(9)):
    /// with `a = Gear[b0] << 1`, the hash after `b0` is `(h << 1) + Gear[b0]`, and shifted left once it
    /// is `(h << 2) + a`, whose bits under `mask << 1` are the ones `mask` tests (bit 63 is in no
    /// mask, so nothing is lost); the hash after `b1` is `(h << 2) + (a + Gear[b1])`. Same
    /// boundaries, a shorter dependency chain per byte.
    @inline(__always)
    private func scan(_ bytes: UnsafePointer<UInt8>, limit: Int) -> Int? {
        Self.gear.withUnsafeBufferPointer { table -> Int? in
            Self.gearShifted.withUnsafeBufferPointer { shiftedTable -> Int? in
                let gear = table.baseAddress!
                let gearShifted = shiftedTable.baseAddress!
                var hash: UInt64 = 0
                var i = minSize - Self.window
                // Fill the window: the bytes before the first candidate boundary.
                while i < minSize - 1 {
                    hash = (hash << 1) &+ gear[Int(bytes[i])]
                    i += 1
                }
                // Candidates i + 1 for i in the current `i ..< end`, under `mask`.
                @inline(__always) func run(to end: Int, _ mask: UInt64) -> Int? {
                    let maskShifted = mask << 1
                    while i + 1 < end {
                        let first = gearShifted[Int(bytes[i])]
                        if ((hash << 2) &+ first) & maskShifted == 0 { return i + 1 }
                        hash = (hash << 2) &+ (first &+ gear[Int(bytes[i + 1])])
                        if hash & mask == 0 { return i + 2 }
                        i += 2
                    }
                    if i < end {
                        hash = (hash << 1) &+ gear[Int(bytes[i])]
                        if hash & mask == 0 { return i + 1 }
                        i += 1
                    }
                    return nil
                }
                if let length = run(to: Swift.min(averageSize - 1, limit), smallMask) { return length }
                return run(to: limit, largeMask)
            }
        }
    }

    /// The lengths of the chunks that repeated ``cut(_:final:)`` calls make of `data`, each from where
    /// the previous one ended, until `cut` answers `nil` (with `final` false, the bytes after the
    /// last length are a prefix of the next chunk: give them again with what follows).
    ///
    /// The same answer as the loop of `cut`s, found on `parts` threads at once. A boundary's hash
    /// covers exactly the 64 bytes before it, so whether an end position passes each mask does not
    /// depend on where its chunk starts: the parts find every position that passes the looser mask
    /// (which the stricter one's bits include, so a position that passes the stricter passes it
    /// too), each starting its hash 64 bytes before its range; then one pass over those few
    /// positions (one per 2^(log2(avg) − normalization) bytes) applies the minimum, average and
    /// maximum from each chunk's start, as `cut` does. A 64 MiB entry was cut serially in ~50 ms of CPU
    /// while the other core waited. A part scans at least `minimumPart` positions (tests lower it
    /// to split small inputs).
    package func cuts(_ data: UnsafeRawBufferPointer, final: Bool, parts: Int, minimumPart: Int = 1 << 16) -> [Int] {
        let count = data.count
        guard count > 0, let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
        // Candidate ends e in window...count; part k scans the ends in its slice of that range.
        let first = Self.window, span = count - first + 1
        let parts = span > 0 ? Swift.max(1, Swift.min(parts, span / Swift.max(1, minimumPart))) : 1
        var found = [[Candidate]](repeating: [], count: parts)
        if span > 0 {
            found.withUnsafeMutableBufferPointer { out in
                let out = UncheckedBuffer(out)
                let bytes = UncheckedPointer(base)
                DispatchQueue.concurrentPerform(iterations: parts) { k in
                    let lower = first + span * k / parts, upper = first + span * (k + 1) / parts
                    out.buffer[k] = candidates(bytes.pointer, ends: lower..<upper)
                }
            }
        }
        var lengths: [Int] = []
        lengths.reserveCapacity(count / averageSize + 1)
        var start = 0, part = 0, next = 0  // the first candidate not yet behind `start`
        while start < count {
            let rest = count - start
            var length: Int?
            if rest >= minSize {
                let limit = Swift.min(rest, maxSize - 1)
                // Candidates ending before start + minSize can never be a boundary again.
                search: while part < parts {
                    while next < found[part].count {
                        let c = found[part][next]
                        let l = c.end - start
                        if l > limit { break search }
                        if l >= minSize, l >= averageSize || c.passesSmall {
                            length = l
                            break search
                        }
                        next += 1
                    }
                    part += 1
                    next = 0
                }
            }
            if length == nil {
                if rest >= maxSize {
                    length = maxSize
                } else if final {
                    length = rest
                }
            }
            guard let length else { break }
            lengths.append(length)
            start += length
        }
        return lengths
    }

    /// An end position whose hash passes the looser mask, and whether it passes the stricter one.
    private struct Candidate {
        var end: Int
        var passesSmall: Bool
    }

    /// Every end `e` in `ends` (each ≥ 64) whose 64-byte window hash passes ``largeMask``.
    private func candidates(_ bytes: UnsafePointer<UInt8>, ends: Range<Int>) -> [Candidate] {
        var out: [Candidate] = []
        guard !ends.isEmpty else { return out }
        out.reserveCapacity(ends.count >> (averageSize.trailingZeroBitCount - normalization) + 16)
        Self.gear.withUnsafeBufferPointer { table in
            let gear = table.baseAddress!
            var hash: UInt64 = 0
            var i = ends.lowerBound - Self.window
            while i < ends.lowerBound - 1 {  // the 63 bytes before the first end's last byte
                hash = (hash << 1) &+ gear[Int(bytes[i])]
                i += 1
            }
            let large = largeMask, small = smallMask
            let last = ends.upperBound - 1
            // Two bytes a step, as `scan` rolls them: the hash after the first byte, shifted left
            // once, is tested under the masks shifted left once (18 % less CPU than a byte a
            // step, a 64 MiB entry's candidates in ~37 ms instead of ~44 ms here).
            let largeShifted = large << 1, smallShifted = small << 1
            Self.gearShifted.withUnsafeBufferPointer { shiftedTable in
                let gearShifted = shiftedTable.baseAddress!
                while i + 1 < last {
                    let first = gearShifted[Int(bytes[i])]
                    let once = (hash << 2) &+ first
                    if once & largeShifted == 0 {
                        out.append(Candidate(end: i + 1, passesSmall: once & smallShifted == 0))
                    }
                    hash = (hash << 2) &+ (first &+ gear[Int(bytes[i + 1])])
                    i += 2
                    if hash & large == 0 { out.append(Candidate(end: i, passesSmall: hash & small == 0)) }
                }
            }
            if i < last {  // after byte i, the window ending at i + 1
                hash = (hash << 1) &+ gear[Int(bytes[i])]
                i += 1
                if hash & large == 0 { out.append(Candidate(end: i, passesSmall: hash & small == 0)) }
            }
        }
        return out
    }

    /// The end offset of every chunk of `data`, in order: the last is `data.count`; empty for an
    /// empty input. Chunk `k` is `data[ends[k−1] ..< ends[k]]` (with `ends[−1] = 0`).
    package func boundaries(of data: UnsafeRawBufferPointer) -> [Int] {
        var ends: [Int] = []
        ends.reserveCapacity(data.count / averageSize + 1)
        var offset = 0
        while offset < data.count {
            let rest = UnsafeRawBufferPointer(rebasing: data[offset...])
            offset += cut(rest, final: true)!
            ends.append(offset)
        }
        return ends
    }
}

/// Pointers the parallel scan hands its threads: each writes only its own element.
private struct UncheckedBuffer<T>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<T>
    init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }
}

private struct UncheckedPointer: @unchecked Sendable {
    let pointer: UnsafePointer<UInt8>
    init(_ pointer: UnsafePointer<UInt8>) { self.pointer = pointer }
}
