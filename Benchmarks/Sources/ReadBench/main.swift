import AssetPack
import Foundation

// Reads entries of one pack through the AssetPack library, in whichever configuration this binary
// was built (the default or the portable one: `make bench-portable` builds and runs both on the
// same packs, alternately). Prints each entry's median whole-read time and throughput.
//
//   ReadBench PACK ITERATIONS ENTRY... (credential: $ASSETPACK_KEY_FILE or $ASSETPACK_PASSWORD)

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let iterations = Int(arguments[1]), iterations > 0 else {
    FileHandle.standardError.write(Data("usage: ReadBench PACK ITERATIONS ENTRY...\n".utf8))
    exit(2)
}
let environment = ProcessInfo.processInfo.environment
let credential: PackCredential? =
    try environment["ASSETPACK_KEY_FILE"].map { try PackCredential.keyFile($0) }
    ?? environment["ASSETPACK_PASSWORD"].map { .password($0) }
let watch = Stopwatch()
let reader = try AssetPacks.open(arguments[0], credential: credential)
print(String(format: "%@  open %.2f ms", (arguments[0] as NSString).lastPathComponent, watch.elapsed * 1000))
for entry in arguments[2...] {
    var times: [Double] = []
    var size = 0
    for _ in 0..<iterations {
        let w = Stopwatch()
        size = try reader.read(entry).count
        times.append(w.elapsed)
    }
    let median = times.sorted()[times.count / 2]
    let rate = Double(size) / median / Double(1 << 30)
    let shown = median >= 1e-3 ? String(format: "%.2f ms", median * 1000) : String(format: "%.1f µs", median * 1e6)
    print(String(format: "  %@: %d bytes, median %@ (%.2f GiB/s) of %d", entry, size, shown, rate, iterations))
}
