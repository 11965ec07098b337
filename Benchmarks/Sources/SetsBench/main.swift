// make bench-sets: a 4 KiB read through a PackSet of 10 packs × 1,000 entries against the same
// read from the one pack that serves it, and opening the set against opening its 10 packs one by
// one. Container packs with a raw key (no KDF: the open is the index and the merge, nothing else).
import AssetPack
import Foundation

let packs = 10
let perPack = 1000
let entrySize = 4096
let rounds = 21
let readsPerRound = 2000

let root = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : ".build/bench-sets")
try? FileManager.default.removeItem(at: root)
try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
let key = (0..<32).map { UInt8($0) }
var options = PackOptions()
options.format = .container
options.credential = .key(key)
options.compression = .store

// Pack i: 500 paths every pack has (the last one serves them) and 500 of its own.
var paths: [String] = []
for i in 0..<packs {
    let source = root.appendingPathComponent("src\(i)")
    for j in 0..<perPack {
        let path = j < perPack / 2 ? "shared/\(j).bin" : "pack\(i)/\(j).bin"
        let file = source.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        var bytes = [UInt8](repeating: UInt8(i), count: entrySize)
        bytes[0] = UInt8(j & 0xFF)
        try Data(bytes).write(to: file)
    }
    let pack = root.appendingPathComponent("pack\(i).apack")
    try AssetPacks.pack(source: source, to: pack, options: options)
    paths.append(pack.path)
}

func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let set = try PackSet(opening: paths, credentials: [.key(key)])
let top = try AssetPacks.open(paths[packs - 1], credential: .key(key))
let probe = ["shared/7.bin", "pack\(packs - 1)/700.bin", "pack0/600.bin"]
let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: entrySize, alignment: 64)
defer { buffer.deallocate() }
for path in probe {
    let serving = set.member(serving: path)!.reader
    var one: [Double] = []
    var through: [Double] = []
    for _ in 0..<rounds {  // interleaved, so drift hits both alike
        one.append(
            try time { for _ in 0..<readsPerRound { try serving.read(path, into: buffer) } } / Double(readsPerRound))
        through.append(
            try time { for _ in 0..<readsPerRound { try set.read(path, into: buffer) } } / Double(readsPerRound))
    }
    print(
        String(
            format: "read 4 KiB %-18@ one pack %6.2f µs   set of %d %6.2f µs   ratio %.3f×", path as NSString,
            median(one) * 1e6, packs, median(through) * 1e6, median(through) / median(one)))
}
_ = top

var oneByOne: [Double] = []
var asSet: [Double] = []
var merge: [Double] = []
for _ in 0..<rounds {
    oneByOne.append(try time { for p in paths { _ = try AssetPacks.open(p, credential: .key(key)) } })
    var opened: PackSet?
    asSet.append(try time { opened = try PackSet(opening: paths, credentials: [.key(key)]) })
    _ = opened!.entries.count  // the merged list, built when first listed (not at open)
    merge.append(opened!.mergeSeconds)
}
print(
    String(
        format:
            "open %d packs one by one %7.2f ms   as one set %7.2f ms (its list merged when first listed: %.2f ms, %d entries)   ratio %.3f×",
        packs, median(oneByOne) * 1e3, median(asSet) * 1e3, median(merge) * 1e3, set.entries.count,
        median(asSet) / median(oneByOne)))
print(
    "medians of \(rounds) rounds (\(readsPerRound) reads each); \(packs) container packs × \(perPack) entries of 4 KiB, raw key"
)
