import AssetPackContainer
import AssetPackCore
import AssetPackCrypto
import Foundation

// Measures the container backend against the targets in DESIGN.md. Release build only.

func stats(_ xs: [Double]) -> (median: Double, p90: Double) {
    let s = xs.sorted()
    return (s[s.count / 2], s[min(s.count - 1, Int(Double(s.count) * 0.9))])
}

func writeFile(_ url: URL, size: Int, compressible: Bool) {
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let h = try! FileHandle(forWritingTo: url)
    var state: UInt64 = 0x1234_5678
    let line = Array("The quick brown fox jumps over the lazy dog, again and again. 0123456789\n".utf8)
    var written = 0
    while written < size {
        let n = min(1 << 20, size - written)
        var piece = [UInt8](repeating: 0, count: n)
        for i in 0..<n {
            if compressible {
                piece[i] = line[(written + i) % line.count]
            } else {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                piece[i] = UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        h.write(Data(piece))
        written += n
    }
    try! h.close()
}

func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func maxRSS() -> Int {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return u.ru_maxrss * 1024
}

let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("container-bench-\(getpid())")
try! FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: dir) }
let key = PackCredential.key((0..<32).map { UInt8($0) })

/// The publisher key the signed packs are signed with (a fixed seed: throwaway).
let publisher = try! (0..<32).map { UInt8(0x40 + $0) }.withUnsafeBytes { try PublisherSigningKey(seed: $0) }

func pack(
    _ files: [SourceFile], _ name: String, credential: PackCredential = key, compression: CompressionPolicy = .store,
    signed: Bool = false
) -> String {
    var o = PackOptions()
    o.format = .container
    o.credential = credential
    o.compression = compression
    if signed { o.signingKey = publisher }
    let out = dir.appendingPathComponent(name).path
    let w = Stopwatch()
    try! ContainerPackWriter().write(files, to: out, options: o)
    print(String(format: "  wrote %@ in %.2f s", name, w.elapsed))
    return out
}

print("cores: \(ProcessInfo.processInfo.activeProcessorCount)")

// 1. Baseline: AES-256-GCM open of a 64 KiB chunk in place (OpenSSL, as the reader does), one thread.
do {
    let key = secureRandomBytes(32)
    let nonce = [UInt8](repeating: 0, count: 12)
    let gcm = AESGCM()
    let sealed = gcm.seal([UInt8](repeating: 7, count: 64 << 10), nonce: nonce, key: key)
    var buffer = Array(sealed[..<(64 << 10)])
    let tag = Array(sealed[(64 << 10)...])
    var sink = 0
    let n = 2000
    let w = Stopwatch()
    for _ in 0..<n {
        buffer.replaceSubrange(0..<(64 << 10), with: sealed[..<(64 << 10)])
        let ok = buffer.withUnsafeMutableBytes { b in
            tag.withUnsafeBytes { gcm.open(b, tag: $0, nonce: nonce, key: key) }
        }
        sink &+= ok ? 1 : 0
    }
    print(
        String(
            format: "baseline AES-256-GCM open in place 64 KiB (copy included), 1 thread: %.2f GB/s (%d)",
            Double(n * (64 << 10)) / w.elapsed / 1e9, sink & 1))
}

// Baseline: zlib CRC-32 of a 64 KiB buffer, one thread.
do {
    let chunk = [UInt8](repeating: 9, count: 64 << 10)
    var sink: UInt32 = 0
    let w = Stopwatch()
    for _ in 0..<4000 { sink ^= CRC32.checksum(chunk) }
    print(
        String(
            format: "baseline CRC32 (libdeflate) 64 KiB, 1 thread: %.2f GB/s (%d)",
            Double(4000 * (64 << 10)) / w.elapsed / 1e9, sink & 1))
}

// 2. 64 MiB stored entry → memory.
let big = dir.appendingPathComponent("big.bin")
writeFile(big, size: 64 << 20, compressible: false)
let text = dir.appendingPathComponent("text.txt")
writeFile(text, size: 64 << 20, compressible: true)
let bigPack = pack([SourceFile(path: "big.bin", url: big, size: 64 << 20)], "big.apack")
let textPack = pack([SourceFile(path: "text.txt", url: text, size: 64 << 20)], "text.apack", compression: .deflate)
do {
    let r = try! ContainerPackReader(path: bigPack, credential: key)
    let rssBefore = maxRSS()
    _ = try! r.read("big.bin")
    let rssAfter = maxRSS()
    var times: [Double] = []
    var last: EntryTiming?
    for _ in 0..<30 {
        let w = Stopwatch()
        let (b, t) = try! r.readTimed("big.bin")
        times.append(w.elapsed)
        precondition(b.count == 64 << 20)
        last = t
    }
    let s = stats(times)
    print(
        String(
            format: "64 MiB stored → memory: median %.2f GB/s, p90 %.2f GB/s (%.1f ms median)",
            Double(64 << 20) / s.median / 1e9, Double(64 << 20) / s.p90 / 1e9, s.median * 1e3))
    if let t = last {
        print(
            String(
                format:
                    "  last timing: total %.1f ms, decrypt %.1f ms, crc %.1f ms, keyDerivation %.1f µs, lookup %.1f µs",
                t.total * 1e3, t.decrypt * 1e3, t.crc * 1e3, t.keyDerivation * 1e6, t.lookup * 1e6))
    }
    print(
        String(
            format: "  peak RSS growth for the first read: %.1f MiB (entry 64 MiB)",
            Double(rssAfter - rssBefore) / 1048576))
    var streamTimes: [Double] = []
    for _ in 0..<10 {
        let w = Stopwatch()
        var n = 0
        try! r.stream("big.bin") { n += $0.count }
        streamTimes.append(w.elapsed)
    }
    print(
        String(format: "64 MiB stored, stream(): median %.2f GB/s", Double(64 << 20) / stats(streamTimes).median / 1e9))
    var rangeTimes: [Double] = []
    for i in 0..<2000 {
        let w = Stopwatch()
        _ = try! r.readRange("big.bin", offset: UInt64((i * 7919 * 4096) % (60 << 20)), count: 4096)
        rangeTimes.append(w.elapsed)
    }
    print(
        String(
            format: "readRange 4 KiB inside 64 MiB entry: median %.1f µs, p90 %.1f µs", stats(rangeTimes).median * 1e6,
            stats(rangeTimes).p90 * 1e6))
}
do {
    let r = try! ContainerPackReader(path: textPack, credential: key)
    var times: [Double] = []
    for _ in 0..<10 {
        let w = Stopwatch()
        _ = try! r.read("text.txt")
        times.append(w.elapsed)
    }
    let s = stats(times)
    print(
        String(
            format: "64 MiB deflated text → memory: median %.0f MB/s, p90 %.0f MB/s (stored %.1f MiB)",
            Double(64 << 20) / s.median / 1e6, Double(64 << 20) / s.p90 / 1e6, Double(r.entries[0].storedSize) / 1048576
        ))
}

// 3. 10,000 × 4 KiB entries: open time and small-entry reads.
do {
    let src = dir.appendingPathComponent("small")
    try! FileManager.default.createDirectory(at: src, withIntermediateDirectories: true)
    var files: [SourceFile] = []
    for i in 0..<10_000 {
        let u = src.appendingPathComponent("\(i)")
        writeFile(u, size: 4096, compressible: false)
        files.append(SourceFile(path: "assets/group\(i % 100)/image-\(i).png", url: u, size: 4096))
    }
    let p = pack(files, "small.apack")
    var opens: [Double] = []
    let openRuns = CommandLine.arguments.contains("--profile-open") ? 500 : 20
    var cpu: [Double] = []
    for _ in 0..<openRuns {
        let c0 = threadCPU()
        opens.append(try! ContainerPackReader(path: p, credential: key).openSeconds)
        cpu.append(threadCPU() - c0)
    }
    print(
        String(
            format: "open 10,000-entry pack (raw key): median %.2f ms, p90 %.2f ms (thread CPU median %.2f ms)",
            stats(opens).median * 1e3, stats(opens).p90 * 1e3, stats(cpu).median * 1e3))
    let r = try! ContainerPackReader(path: p, credential: key)
    let names = r.entries.map(\.path)
    var times: [Double] = []
    var decrypt: [Double] = [], lookup: [Double] = [], kd: [Double] = [], crc: [Double] = []
    for i in 0..<20_000 {
        let w = Stopwatch()
        let (_, t) = try! r.readTimed(names[(i * 7919) % names.count])
        times.append(w.elapsed)
        decrypt.append(t.decrypt)
        lookup.append(t.lookup)
        kd.append(t.keyDerivation)
        crc.append(t.crc)
    }
    let s = stats(times)
    print(
        String(
            format:
                "4 KiB entry read: median %.1f µs, p90 %.1f µs (medians: lookup %.2f, keyDerivation %.2f, decrypt %.2f, crc %.2f µs)",
            s.median * 1e6, s.p90 * 1e6, stats(lookup).median * 1e6, stats(kd).median * 1e6,
            stats(decrypt).median * 1e6, stats(crc).median * 1e6))
    // Many threads.
    let w = Stopwatch()
    DispatchQueue.concurrentPerform(iterations: 2) { t in
        for i in 0..<20_000 { _ = try! r.read(names[(i * 104_729 + t) % names.count]) }
    }
    print(String(format: "4 KiB entry read, 2 threads: %.0f reads/s", 40_000 / w.elapsed))
}

// 3b. Signed (version 3, read trusting the publisher) against unsigned: the same 10,000 × 4 KiB
// entries and the 64 MiB entry, opens and reads interleaved so that noise hits both alike.
do {
    let src = dir.appendingPathComponent("small")
    let files = (0..<10_000).map { i in
        SourceFile(
            path: "assets/group\(i % 100)/image-\(i).png", url: src.appendingPathComponent("\(i)"), size: 4096)
    }
    let unsigned = dir.appendingPathComponent("small.apack").path
    let signed = pack(files, "small-signed.apack", signed: true)
    let trusted = [publisher.publicKey]
    var openU: [Double] = [], openS: [Double] = [], paired: [Double] = []
    for i in 0..<201 {
        // Alternate which goes first, and keep each pair's difference: the machine's noise
        // drifts more between runs than within a pair.
        let u: Double, s: Double
        if i % 2 == 0 {
            u = try! ContainerPackReader(path: unsigned, credential: key).openSeconds
            s = try! ContainerPackReader(path: signed, credential: key, trustedKeys: trusted).openSeconds
        } else {
            s = try! ContainerPackReader(path: signed, credential: key, trustedKeys: trusted).openSeconds
            u = try! ContainerPackReader(path: unsigned, credential: key).openSeconds
        }
        openU.append(u)
        openS.append(s)
        paired.append(s - u)
    }
    print(
        String(
            format:
                "signed open, 10,000 entries: median %.2f ms against %.2f ms unsigned; median paired difference %+.2f ms",
            stats(openS).median * 1e3, stats(openU).median * 1e3, stats(paired).median * 1e3))
    let ru = try! ContainerPackReader(path: unsigned, credential: key)
    let rs = try! ContainerPackReader(path: signed, credential: key, trustedKeys: trusted)
    let names = ru.entries.map(\.path)
    var readU: [Double] = [], readS: [Double] = []
    for i in 0..<20_000 {
        let name = names[(i * 7919) % names.count]
        var w = Stopwatch()
        _ = try! ru.read(name)
        readU.append(w.elapsed)
        w = Stopwatch()
        _ = try! rs.read(name)
        readS.append(w.elapsed)
    }
    print(
        String(
            format: "signed 4 KiB read: median %.1f µs against %.1f µs unsigned (+%.1f µs)",
            stats(readS).median * 1e6, stats(readU).median * 1e6, (stats(readS).median - stats(readU).median) * 1e6))
    let bigSigned = pack([SourceFile(path: "big.bin", url: big, size: 64 << 20)], "big-signed.apack", signed: true)
    let bu = try! ContainerPackReader(path: bigPack, credential: key)
    let bs = try! ContainerPackReader(path: bigSigned, credential: key, trustedKeys: trusted)
    var bigU: [Double] = [], bigS: [Double] = []
    for _ in 0..<15 {
        var w = Stopwatch()
        _ = try! bu.read("big.bin")
        bigU.append(w.elapsed)
        w = Stopwatch()
        _ = try! bs.read("big.bin")
        bigS.append(w.elapsed)
    }
    print(
        String(
            format: "signed 64 MiB read: median %.1f ms against %.1f ms unsigned (%.2f×)",
            stats(bigS).median * 1e3, stats(bigU).median * 1e3, stats(bigS).median / stats(bigU).median))
}

// 4. Key derivation at open (default scrypt, and PBKDF2-SHA256 600k).
do {
    let tiny = dir.appendingPathComponent("tiny")
    writeFile(tiny, size: 10, compressible: true)
    let pw = PackCredential.password("correct horse battery staple")
    let p = pack([SourceFile(path: "t", url: tiny, size: 10)], "scrypt.apack", credential: pw)
    var opens: [Double] = []
    for _ in 0..<5 { opens.append(try! ContainerPackReader(path: p, credential: pw).openSeconds) }
    print(String(format: "open with default scrypt (N=2^15, r=8, p=1): median %.1f ms", stats(opens).median * 1e3))
    var o = PackOptions()
    o.credential = pw
    o.container.kdf = .pbkdf2SHA256(iterations: 600_000)
    let p2 = dir.appendingPathComponent("pbkdf2.apack").path
    try! ContainerPackWriter().write(
        [SourceFile(path: "t", url: tiny, size: 10)], to: p2, options: o)
    opens = []
    for _ in 0..<3 { opens.append(try! ContainerPackReader(path: p2, credential: pw).openSeconds) }
    print(String(format: "open with PBKDF2-SHA256 600,000: median %.1f ms", stats(opens).median * 1e3))
}
