import AssetPack
import Foundation

// 64 MiB stored AES-256 entry → memory: ZipPackReader's bulk AES path vs libzip's decrypting read,
// interleaved run by run so machine drift hits both alike. Every result is compared with the source.

let size = 64 << 20
let password = "bench password"
let runs = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 9
let dir = FileManager.default.temporaryDirectory.appendingPathComponent("zipaes-bench-\(getpid())")
try FileManager.default.createDirectory(at: dir.appendingPathComponent("src"), withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: dir) }

var x: UInt64 = 0x9E37_79B9_7F4A_7C15  // xorshift: incompressible, deterministic
let original = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
    for i in stride(from: 0, to: size, by: 8) {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        UnsafeMutableRawPointer(buffer.baseAddress!).storeBytes(of: x, toByteOffset: i, as: UInt64.self)
    }
    count = size
}
try Data(original).write(to: dir.appendingPathComponent("src/big.bin"))
var options = PackOptions()
options.credential = .password(password)
options.compression = .store
let pack = dir.appendingPathComponent("big.zip")
try AssetPacks.pack(source: dir.appendingPathComponent("src"), to: pack, options: options)

let readers: [(String, ZipPackReader)] = try ZipPackReader.Decoder.allCases.map {
    ($0.rawValue, try ZipPackReader(path: pack.path, credential: .password(password), decoder: $0))
}
var seconds: [String: [Double]] = [:]
var lastTiming: [String: EntryTiming] = [:]
for run in 0..<runs {
    for (name, reader) in (run % 2 == 0 ? readers : readers.reversed()) {
        let watch = Stopwatch()
        let (bytes, timing) = try reader.readTimed("big.bin")
        seconds[name, default: []].append(watch.elapsed)
        precondition(bytes == original, "\(name) returned wrong bytes")
        lastTiming[name] = timing
    }
}
print(
    "64 MiB stored AES-256 entry, warm page cache, \(runs) interleaved runs, \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
var medians: [String: Double] = [:]
for (name, _) in readers {
    let s = seconds[name]!.sorted()
    let median = s[s.count / 2]
    medians[name] = median
    let t = lastTiming[name]!
    print(
        String(
            format:
                "%-10@ median %7.1f ms  p90 %7.1f ms  %6.0f MB/s   (decoder %@: kdf %.2f ms, decrypt %.1f ms, crc %.1f ms)",
            name, median * 1e3, s[min(s.count - 1, Int(Double(s.count) * 0.9))] * 1e3, Double(size) / median / 1e6,
            t.decoder, t.keyDerivation * 1e3, t.decrypt * 1e3, t.crc * 1e3))
}
print(String(format: "bulk AES speed-up over libzip: %.1fx", medians["libzip"]! / medians["automatic"]!))
