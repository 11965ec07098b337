import AssetPackCore
import AssetPackPerf
import Foundation

// Chooses the zstd levels (docs/PERFORMANCE.md, "zstd levels"): compresses the compressible files
// under the given paths per chunk, as the container does (each file cut into chunks of N KiB, a
// chunk that does not shrink by CompressionPolicy.minimumSaving stored), with zstd at each level
// and libdeflate for comparison, and reports bytes, compression speed and decode speed, each in
// MB (10^6 B) of input per CPU second of the one thread that does the work (thread CPU time, so
// other processes on a shared machine do not count). Release build only:
//   swift run -c release ZstdBench [--chunk-kib 64,128,256] [--zstd 1,3,...] [--deflate 2,6,9]
//       [--ext json,lua,...] PATH...
//   swift run -c release ZstdBench --write-perf-corpus DIR   (`assetpack perf --corpus standard`'s tree)

struct Options {
    var chunkKiBs = [64, 128, 256]
    var zstdLevels: [Int32] = [1, 3, 6, 9, 12, 15, 19]
    var deflateLevels: [Int32] = [2, 6, 9]
    var extensions: Set<String> = ["json", "lua", "cfg", "xml", "txt"]
    var paths: [String] = []
    var minSeconds = 0.6

    init(_ args: [String]) {
        var i = 0
        func list(_ s: String) -> [String] { s.split(separator: ",").map(String.init) }
        while i < args.count {
            let a = args[i]
            let next = i + 1 < args.count ? args[i + 1] : ""
            switch a {
            case "--chunk-kib": chunkKiBs = list(next).compactMap { Int($0) }; i += 1
            case "--zstd": zstdLevels = list(next).compactMap { Int32($0) }; i += 1
            case "--deflate": deflateLevels = list(next).compactMap { Int32($0) }; i += 1
            case "--ext": extensions = Set(list(next).map { $0.lowercased() }); i += 1
            case "--min-seconds": minSeconds = Double(next) ?? minSeconds; i += 1
            default: paths.append(a)
            }
            i += 1
        }
    }
}

enum Codec: CustomStringConvertible {
    case zstd(Int32), deflate(Int32)
    var description: String {
        switch self {
        case .zstd(let l): "zstd \(l)"
        case .deflate(let l): "libdeflate \(l)"
        }
    }
}

/// Compresses into `out` within `limit` bytes; nil when it does not fit.
final class AnyCompressor {
    let zstd: Zstd.Compressor?
    let deflate: RawDeflate.FastCompressor?
    init(_ codec: Codec) {
        switch codec {
        case .zstd(let l): (zstd, deflate) = (Zstd.Compressor(level: l), nil)
        case .deflate(let l): (zstd, deflate) = (nil, RawDeflate.FastCompressor(level: l))
        }
    }
    func compress(_ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        zstd?.compress(input, into: out) ?? deflate?.compress(input, into: out)
    }
}

/// Prints a line unbuffered (the table appears row by row even when piped).
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// This thread's CPU seconds: on a shared machine, wall time measures the other processes too.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func files(under paths: [String], extensions: Set<String>) -> [URL] {
    var out: [URL] = []
    for p in paths {
        let url = URL(fileURLWithPath: p)
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir) else { continue }
        if !isDir.boolValue { out.append(url); continue }
        let e = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])!
        for case let f as URL in e where extensions.contains(f.pathExtension.lowercased()) {
            if (try? f.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { out.append(f) }
        }
    }
    return out.sorted { $0.path < $1.path }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--write-perf-corpus", arguments.count == 2 {
    try PerfCorpus.standard.write(to: URL(fileURLWithPath: arguments[1]))
    exit(0)
}
let options = Options(arguments)
guard !options.paths.isEmpty else {
    emit("usage: ZstdBench [--chunk-kib 64,128,256] [--zstd 1,3,..] [--deflate 2,6,9] [--ext json,lua,..] PATH...")
    exit(64)
}
let inputs = files(under: options.paths, extensions: options.extensions).map { try! Data(contentsOf: $0) }
let total = inputs.reduce(0) { $0 + $1.count }
emit("\(inputs.count) files, \(total) bytes (extensions \(options.extensions.sorted().joined(separator: ",")))")
let codecs = options.zstdLevels.map(Codec.zstd) + options.deflateLevels.map(Codec.deflate)
let mb = 1e6

for kib in options.chunkKiBs {
    let cs = kib << 10
    var chunks: [[UInt8]] = []
    for d in inputs {
        var at = 0
        repeat {
            chunks.append([UInt8](d[at..<min(at + cs, d.count)]))
            at += cs
        } while at < d.count
    }
    emit("\n### \(kib) KiB chunks (\(chunks.count) chunks)\n")
    emit("| codec | bytes | ratio | compress MB/s (1 core, CPU time) | decode MB/s (1 core, CPU time) |")
    emit("|---|---:|---:|---:|---:|")
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: cs, alignment: 64)
    defer { scratch.deallocate() }
    for codec in codecs {
        let compressor = AnyCompressor(codec)
        var frames: [[UInt8]?] = []
        // Compression: whole passes until minSeconds, the fastest pass.
        var best = Double.infinity, spent = 0.0
        repeat {
            frames = []
            let t0 = now()
            for c in chunks {
                let limit = CompressionPolicy.auto.deflateLimit(c.count)
                let n =
                    limit > 0
                    ? c.withUnsafeBytes {
                        compressor.compress($0, into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<limit]))
                    }
                    : nil
                frames.append(n.map { Array(UnsafeRawBufferPointer(rebasing: scratch[0..<$0])) })
            }
            let t = now() - t0
            best = min(best, t)
            spent += t
        } while spent < options.minSeconds
        let compressSeconds = best
        let bytes = zip(chunks, frames).reduce(0) { $0 + ($1.1?.count ?? $1.0.count) }
        // Decoding: a stored chunk is a copy; the fastest of whole passes over minSeconds.
        let zd = Zstd.Decompressor()
        best = .infinity
        spent = 0
        repeat {
            let t0 = now()
            for (c, f) in zip(chunks, frames) {
                let out = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<c.count])
                if let f {
                    try! f.withUnsafeBytes { input in
                        if case .zstd = codec {
                            try zd.decompress(input, into: out)
                        } else {
                            try RawDeflate.decompress(input, into: out)
                        }
                    }
                } else {
                    c.withUnsafeBytes { out.copyMemory(from: $0) }
                }
            }
            let t = now() - t0
            best = min(best, t)
            spent += t
        } while spent < options.minSeconds
        // The last pass's output must be the last chunk.
        precondition(
            chunks.last.map { c in c.withUnsafeBytes { memcmp($0.baseAddress!, scratch.baseAddress!, c.count) == 0 } }
                ?? true)
        emit(
            "| \(codec) | \(bytes) | \(String(format: "%.2f", Double(total) / Double(bytes))) | "
                + "\(String(format: "%.0f", Double(total) / compressSeconds / mb)) | "
                + "\(String(format: "%.0f", Double(total) / best / mb)) |")
    }
}
