// make bench-chunks (swift run -c release ChunkBench): chooses the content-defined chunker's
// min/avg/max by measurement. For each candidate, on a 64 MiB SplitMix64-random entry: chunk count
// and the v4 index it costs (52 bytes a chunk), throughput of the cut, and the bytes in chunks that
// differ after three edits (1 byte changed, 4 KiB inserted, 1 MiB appended), each at 16 positions
// around the middle (mean and worst); then, on a 64 MiB JSON-like text, what compressing each chunk
// on its own costs against compressing the entry whole (zstd level 3 through the system libzstd,
// and raw deflate level 6).
import AssetPackCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let mib = 1 << 20
let size = (CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 64 : 64) * mib
let indexBytesPerChunk = 52
let positions = 32

func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var rng = SplitMix64(seed: seed)
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { raw in
        let words = raw.bindMemory(to: UInt64.self)
        for i in 0..<words.count { words[i] = rng.next() }
        for i in (words.count * 8)..<count { raw[i] = UInt8(truncatingIfNeeded: rng.next()) }
    }
    return out
}

/// JSON-like text, as Benchmarks/make-pack-corpus.py writes: tokens and decimal numbers.
func jsonLike(_ count: Int, seed: UInt64) -> [UInt8] {
    let words: [[UInt8]] = [
        "\"name\"", "\"value\"", "\"id\"", "\"position\"", "\"texture\"", "\"enabled\"", "true", "false", "{", "}",
        "[", "]", ":", ",", "\n", "  ",
    ].map { Array($0.utf8) }
    var rng = SplitMix64(seed: seed)
    var out: [UInt8] = []
    out.reserveCapacity(count + 64)
    while out.count < count {
        let r = rng.next()
        out.append(contentsOf: words[Int(r & 15)])
        out.append(contentsOf: String((r >> 8) % 100_000).utf8)
    }
    return Array(out.prefix(count))
}

/// This thread's CPU time: on a shared machine, wall time measures the neighbours too.
func cpuNow() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func ends(_ chunker: ContentChunker, _ data: [UInt8]) -> [Int] {
    data.withUnsafeBytes { chunker.boundaries(of: $0) }
}

/// One hash per chunk (SipHash: the same within this process, which is all a comparison needs).
func chunkHashes(_ data: [UInt8], _ ends: [Int]) -> [Int] {
    data.withUnsafeBytes { raw in
        var start = 0
        return ends.map { end in
            var hasher = Hasher()
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[start..<end]))
            start = end
            return hasher.finalize()
        }
    }
}

/// The chunks of `new` whose bytes are no chunk of the old version: (count, bytes).
func changed(old: Set<Int>, new data: [UInt8], _ chunker: ContentChunker) -> (Int, Int) {
    let e = ends(chunker, data)
    let hashes = chunkHashes(data, e)
    var count = 0
    var bytes = 0
    for (k, h) in hashes.enumerated() where !old.contains(h) {
        count += 1
        bytes += e[k] - (k == 0 ? 0 : e[k - 1])
    }
    return (count, bytes)
}

struct Candidate {
    let min: Int
    let avg: Int
    let max: Int
    let level: Int
    var chunker: ContentChunker { ContentChunker(min: min, avg: avg, max: max, normalization: level) }
    var name: String { "\(min >> 10)K/\(avg >> 10)K/\(max >> 10)K NC\(level)" }
}

let candidates = [
    Candidate(min: 8 << 10, avg: 32 << 10, max: 128 << 10, level: 2),
    Candidate(min: 16 << 10, avg: 64 << 10, max: 256 << 10, level: 1),
    Candidate(min: 16 << 10, avg: 64 << 10, max: 256 << 10, level: 2),
    Candidate(min: 32 << 10, avg: 128 << 10, max: 512 << 10, level: 2),
    Candidate(min: 64 << 10, avg: 256 << 10, max: 1024 << 10, level: 2),
]

let random = randomBytes(size, seed: 0x6368_756E_6B73)
let insert = randomBytes(4096, seed: 7)
let appended = randomBytes(1 << 20, seed: 8)
// Positions around the middle, spread over ±8 MiB, odd offsets so none sits on a round number.
let editAt = (0..<positions).map { size / 2 + ($0 - positions / 2) * (mib / 2 + 4099) }

func fmtKiB(_ bytes: Double) -> String { String(format: "%.0f", bytes / 1024) }

print("# ChunkBench: \(size / mib) MiB random entry, edits at \(positions) positions around the middle")
print()
print(
    "| min/avg/max | chunks | mean chunk | chunk under a random byte | index (52 B/chunk) | cut GB/s "
        + "| 1 byte changed: KiB (mean/worst) | 4 KiB inserted: KiB (mean/worst) | 1 MiB appended: KiB "
        + "| chunks changed (1 B / 4 KiB / append, worst) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for candidate in candidates {
    let chunker = candidate.chunker
    var base: [Int] = []
    var times: [Double] = []
    for _ in 0..<7 {
        let start = cpuNow()
        base = ends(chunker, random)
        times.append(cpuNow() - start)
    }
    let seconds = times.min()!  // CPU time, best of 7
    // The mean size of the chunk a random byte falls in (what a small read opens): Σ L² / Σ L.
    var squares = 0.0
    for (k, end) in base.enumerated() {
        let length = Double(end - (k == 0 ? 0 : base[k - 1]))
        squares += length * length
    }
    let old = Set(chunkHashes(random, base))
    var flip: [(Int, Int)] = []
    var ins: [(Int, Int)] = []
    for at in editAt {
        var one = random
        one[at] ^= 0x5A
        flip.append(changed(old: old, new: one, chunker))
        var grown = random
        grown.insert(contentsOf: insert, at: at)
        ins.append(changed(old: old, new: grown, chunker))
    }
    let app = changed(old: old, new: random + appended, chunker)
    func mean(_ xs: [(Int, Int)]) -> Double { Double(xs.map(\.1).reduce(0, +)) / Double(xs.count) }
    func worst(_ xs: [(Int, Int)]) -> Int { xs.map(\.1).max()! }
    func worstCount(_ xs: [(Int, Int)]) -> Int { xs.map(\.0).max()! }
    print(
        "| \(candidate.name) | \(base.count) | \(fmtKiB(Double(size) / Double(base.count))) KiB "
            + "| \(fmtKiB(squares / Double(size))) KiB | \(fmtKiB(Double(base.count * indexBytesPerChunk))) KiB "
            + "| \(String(format: "%.2f", Double(size) / seconds / 1e9)) "
            + "| \(fmtKiB(mean(flip))) / \(fmtKiB(Double(worst(flip)))) "
            + "| \(fmtKiB(mean(ins))) / \(fmtKiB(Double(worst(ins)))) "
            + "| \(fmtKiB(Double(app.1))) "
            + "| \(worstCount(flip)) / \(worstCount(ins)) / \(app.0) |")
}

// Compression: each chunk on its own against the whole entry.
typealias ZSTDCompress = @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeRawPointer?, Int, Int32) -> Int
typealias ZSTDBound = @convention(c) (Int) -> Int
let zstd: (ZSTDCompress, ZSTDBound)? = {
    guard let lib = dlopen("libzstd.so.1", RTLD_NOW), let c = dlsym(lib, "ZSTD_compress"),
        let b = dlsym(lib, "ZSTD_compressBound")
    else { return nil }
    return (unsafeBitCast(c, to: ZSTDCompress.self), unsafeBitCast(b, to: ZSTDBound.self))
}()

func zstdSize(_ piece: UnsafeRawBufferPointer) -> Int {
    guard let (compress, bound) = zstd else { return 0 }
    let out = UnsafeMutableRawPointer.allocate(byteCount: bound(piece.count), alignment: 16)
    defer { out.deallocate() }
    return compress(out, bound(piece.count), piece.baseAddress, piece.count, 3)
}

func deflateSize(_ piece: UnsafeRawBufferPointer) -> Int { RawDeflate.compress(piece, level: 6).count }

/// Compressed sizes of `data` whole and chunk by chunk under each candidate: one table row each.
func compressionRows(_ data: [UInt8]) {
    let count = data.count
    let wholeZstd = data.withUnsafeBytes(zstdSize)
    // deflate's window is 32 KiB: the whole entry at once is the same as 1 MiB pieces.
    let wholeDeflate = data.withUnsafeBytes { raw in
        stride(from: 0, to: count, by: mib).map {
            deflateSize(UnsafeRawBufferPointer(rebasing: raw[$0..<min($0 + mib, count)]))
        }.reduce(0, +)
    }
    print("| min/avg/max | zstd -3 | vs whole entry | deflate -6 | vs whole entry |")
    print("|---|---|---|---|---|")
    print("| whole entry | \(fmtKiB(Double(wholeZstd))) KiB | 1.000 | \(fmtKiB(Double(wholeDeflate))) KiB | 1.000 |")
    let fixed = ("fixed 64K (v3)", Array(stride(from: 64 << 10, to: count, by: 64 << 10)) + [count])
    for (name, e) in [fixed] + candidates.filter({ $0.level == 2 }).map({ ($0.name, ends($0.chunker, data)) }) {
        var z = 0
        var d = 0
        data.withUnsafeBytes { raw in
            var start = 0
            for end in e {
                let piece = UnsafeRawBufferPointer(rebasing: raw[start..<end])
                z += zstdSize(piece)
                d += deflateSize(piece)
                start = end
            }
        }
        print(
            "| \(name) | \(fmtKiB(Double(z))) KiB | \(String(format: "%.3f", Double(z) / Double(wholeZstd))) "
                + "| \(fmtKiB(Double(d))) KiB | \(String(format: "%.3f", Double(d) / Double(wholeDeflate))) |")
    }
    print()
}

print()
print("# Compression, each chunk compressed on its own against the entry compressed whole")
print()
print("## \(size / mib) MiB JSON-like text (as Benchmarks/make-pack-corpus.py writes)")
print()
compressionRows(jsonLike(size, seed: 0x7465_7874))
// Real text with real redundancy: this repository's sources and docs, concatenated in path order.
var corpus: [UInt8] = []
for folder in ["Sources", "Tests", "docs"] {
    let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String }.sorted() ?? []
    for file in files where file.hasSuffix(".swift") || file.hasSuffix(".md") {
        if let bytes = FileManager.default.contents(atPath: folder + "/" + file) { corpus += bytes }
    }
}
if corpus.count > 1 << 20 {
    print("## This repository's Sources/, Tests/ and docs/ (.swift and .md, \(corpus.count >> 10) KiB)")
    print()
    compressionRows(corpus)
}
if zstd == nil { print("(libzstd.so.1 not found: the zstd columns are 0)") }
