// make bench-scale: opening packs of 1,000 to 1,000,000 entries, in-process (docs/PERFORMANCE.md,
// "Opening at scale"). Per pack: the open (median of several), a lookup of a random path (median
// over 10,000), and a 4 KiB read after the open (median over 2,000); then a set of 10 packs of
// 100,000 entries against one pack of 100,000 and one of 1,000,000. Containers with a raw key (no
// KDF), zips with a password (their KDF runs per entry read, not at open).
//
// Usage: ScaleBench DIR [SIZES...]   (default 1000 10000 100000 1000000; zips up to 100,000)
// It leaves its packs in DIR (bench-scale.sh then measures whole-process memory on them).
import AssetPack
import AssetPackCore
import Foundation

let arguments = CommandLine.arguments
let root = URL(fileURLWithPath: arguments.count > 1 ? arguments[1] : ".build/bench-scale")
let sizes = arguments.count > 2 ? arguments[2...].compactMap { Int($0) } : [1000, 10_000, 100_000, 1_000_000]
let zipLimit = 100_000
try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
let key = (0..<32).map { UInt8($0) }
try Data(key).write(to: root.appendingPathComponent("key"))
let password = "bench-scale"

// 16 JSON-like files of ~1.2 KB, shared by every entry (entry i holds file i % 16), and one
// 4 KiB probe: packs of a million entries without a million files on the disk.
let sources = root.appendingPathComponent("sources")
try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
let bodies: [SourceFile] = try (0..<16).map { k in
    var text = "{\n"
    var n = 0
    while text.utf8.count < 1150 {
        text += "  \"field\(n)\": \"value \(k * 131 + n * 7)\",\n"
        n += 1
    }
    text += "  \"id\": \(k)\n}\n"
    let url = sources.appendingPathComponent("\(k).json")
    try Data(text.utf8).write(to: url)
    return SourceFile(path: "", url: url, size: UInt64(text.utf8.count))
}
let probeURL = sources.appendingPathComponent("probe.bin")
try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: probeURL)
let probePath = "probe/4k.bin"

/// Entry `i` of a pack whose paths start with `prefix`: 1,000 files per folder.
func path(_ i: Int, _ prefix: String = "") -> String {
    String(format: "%@d%04d/f%07d.json", prefix, i / 1000, i)
}

/// `count` entries in all: `count - 1` JSON files and the probe (a pack of 1,000,000 is at the limit).
func files(_ count: Int, prefix: String = "") -> [SourceFile] {
    var out = (0..<count - 1).map { i in
        var f = bodies[i % 16]
        f.path = path(i, prefix)
        return f
    }
    out.append(SourceFile(path: prefix + probePath, url: probeURL, size: 4096))
    return out.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
}

func credential(_ format: PackFormat) -> PackCredential { format == .container ? .key(key) : .password(password) }

/// Packs `count` entries in `format` unless the pack is already there (re-runs reuse them).
func pack(_ count: Int, _ format: PackFormat, name: String, prefix: String = "") throws -> String {
    let output = root.appendingPathComponent(name)
    if FileManager.default.fileExists(atPath: output.path) { return output.path }
    var options = PackOptions()
    options.format = format
    options.credential = credential(format)
    options.level = .fast
    let watch = Stopwatch()
    _ = try AssetPacks.pack(files(count, prefix: prefix), skipped: [], to: output, options: options, watch: watch)
    FileHandle.standardError.write(Data("packed \(name) in \(String(format: "%.1f", watch.elapsed)) s\n".utf8))
    return output.path
}

func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

struct Row {
    var label: String
    var entries: Int
    var open: Double
    var lookup: Double
    var read4k: Double
}

func measure(_ label: String, entries: Int, opens: Int, _ open: () throws -> any PackReader, prefix: String = "")
    throws -> Row
{
    var openTimes: [Double] = []
    var reader: (any PackReader)?
    for _ in 0..<opens { openTimes.append(try time { reader = try open() }) }
    let r = reader!
    var rng = SplitMix64(seed: 7)
    let wanted = (0..<10_000).map { _ in path(Int(rng.next() % UInt64(entries - 1)), prefix) }
    var lookups: [Double] = []
    for p in wanted {
        let t = time { precondition(r.entry(p) != nil, p) }
        lookups.append(t)
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64)
    defer { buffer.deallocate() }
    var reads: [Double] = []
    for _ in 0..<2000 { reads.append(try time { try r.read(prefix + probePath, into: buffer) }) }
    return Row(label: label, entries: entries, open: median(openTimes), lookup: median(lookups), read4k: median(reads))
}

var rows: [Row] = []
for n in sizes {
    for format in [PackFormat.container, .zip] where format == .container || n <= zipLimit {
        let file = try pack(n, format, name: "\(n).\(format == .container ? "apack" : "zip")")
        rows.append(
            try measure("\(format.rawValue)", entries: n, opens: n >= 1_000_000 ? 7 : 21) {
                try AssetPacks.open(file, credential: credential(format))
            })
    }
}

// A set of 10 packs of 100,000 entries each (paths of their own), against one pack of 100,000.
if sizes.contains(100_000) {
    var members: [String] = []
    for m in 0..<10 { members.append(try pack(100_000, .container, name: "set\(m).apack", prefix: "p\(m)/")) }
    rows.append(
        try measure(
            "container set of 10", entries: 100_000, opens: 11,
            { try PackSet(opening: members, credentials: [.key(key)]) }, prefix: "p0/"))
}

print("| pack | entries | open (median) | lookup (median) | 4 KiB read after open (median) |")
print("|---|---:|---:|---:|---:|")
for r in rows {
    print(
        String(
            format: "| %@ | %d | %.2f ms | %.0f ns | %.1f µs |", r.label as NSString, r.entries, r.open * 1e3,
            r.lookup * 1e9, r.read4k * 1e6))
}
if let one = rows.first(where: { $0.label == "container" && $0.entries == 100_000 }),
    let set = rows.first(where: { $0.label.hasPrefix("container set") })
{
    print(String(format: "set of 10 × 100,000 / one pack of 100,000: open %.2f×", set.open / one.open))
    if let million = rows.first(where: { $0.label == "container" && $0.entries == 1_000_000 }) {
        print(String(format: "set of 10 × 100,000 / one pack of 1,000,000: open %.2f×", set.open / million.open))
    }
}
if let small = rows.first(where: { $0.label == "container" && $0.entries == 1000 }),
    let large = rows.first(where: { $0.label == "container" && $0.entries == 1_000_000 })
{
    print(String(format: "lookup at 1,000,000 / at 1,000 entries (container): %.2f×", large.lookup / small.lookup))
}
