import AssetPack
import AssetPackRemote
import Foundation

/// Runs the per-entry read benchmark behind `assetpack perf`.
///
/// Method: every pack is opened once; every entry is then read through the public
/// `PackReader.readTimed(_:)` — one warm-up read, then `iterations` measured reads — with the
/// backends interleaved: for each iteration, for each entry, every backend reads it once, the
/// order alternating between consecutive (iteration, entry) pairs so drift (thermal, page
/// cache, other processes) hits all backends alike. Nothing is cached between reads: each
/// read decrypts, inflates and verifies anew. A sample is the wall time around one
/// `readTimed` call (monotonic clock). After the timed phase, each pack is read once more
/// on its own with the resident-memory high-water mark reset, for its peak memory.
public enum PerfRunner {
    /// A pack to measure.
    struct Subject {
        var label: String
        var reader: any PackReader
        var pack: PerfPack
        var byPath: [String: EntryInfo]
    }

    /// Runs the benchmark.
    /// - Returns: The report.
    /// - Throws: `AssetPackError` (packing, opening, or a read that fails verification:
    ///   a perf run never reports numbers for bytes that did not verify).
    public static func run(_ configuration: PerfConfiguration) throws -> PerfReport {
        let started = Date()
        let wall = Stopwatch()
        let loadAtStart = loadAverage()
        guard configuration.iterations >= 1 else {
            throw AssetPackError(.invalidArgument, "iterations must be at least 1")
        }
        guard configuration.warmupReads >= 0 else {
            throw AssetPackError(.invalidArgument, "warm-up reads must not be negative")
        }
        let work = try makePrivateTemporaryDirectory(parent: configuration.workParent)
        defer { if !configuration.keepWorkDirectory { try? FileManager.default.removeItem(at: work) } }

        var subjects: [Subject] = []
        var inputKind: String
        var inputDescription: String
        var credentialKind: String
        var packOptionsRecord: [String: String]?
        /// The options this run packed with (`nil` for `--pack`: a pack does not record its level).
        var packedWith: PackOptions?

        switch configuration.input {
        case .packs(let urls):
            guard !urls.isEmpty else { throw AssetPackError(.invalidArgument, "no packs to measure") }
            inputKind = "packs"
            inputDescription = urls.map { $0.isFileURL ? $0.path : $0.absoluteString }.joined(separator: ", ")
            credentialKind = describe(configuration.credential, generated: false)
            var labels: Set<String> = []
            for (i, url) in urls.enumerated() {
                report(configuration, "open \(url.lastPathComponent)", i, urls.count)
                let remote = !url.isFileURL
                let signed =
                    try !configuration.trustedKeys.isEmpty && (remote || AssetPacks.signature(at: url.path) != nil)
                let watch = Stopwatch()
                let source = try AssetPacks.source(location: remote ? url.absoluteString : url.path)
                let reader = try AssetPacks.open(
                    source, credential: configuration.credential, trustedKeys: signed ? configuration.trustedKeys : [])
                let openWall = watch.elapsed
                let base = reader.format.rawValue + (signed ? "-signed" : "") + (remote ? "-remote" : "")
                var label = base
                var n = 2
                while labels.contains(label) {
                    label = "\(base)-\(n)"
                    n += 1
                }
                labels.insert(label)
                subjects.append(
                    subject(
                        label, reader, url, size: source.size, packSeconds: nil, installSeconds: nil,
                        openWall: openWall))
                if configuration.compareLibzipDecoder && !remote,
                    let other = try crossCheckSubject(
                        label, url, reader.format, configuration.credential, packSeconds: nil, installSeconds: nil)
                {
                    subjects.append(other)
                }
            }
        case .source, .corpus:
            let source: URL
            if case .corpus(let corpus) = configuration.input {
                inputKind = "corpus"
                inputDescription = corpus.rawValue
                source = work.appendingPathComponent("corpus", isDirectory: true)
                report(configuration, "corpus", 0, 1)
                try corpus.write(to: source)
                report(configuration, "corpus", 1, 1)
            } else if case .source(let url) = configuration.input {
                inputKind = "source"
                inputDescription = url.path
                source = url
            } else {
                preconditionFailure("unreachable")
            }
            let credential: PackCredential
            if let given = configuration.credential {
                if case .key = given {
                    throw AssetPackError(
                        .invalidArgument,
                        "a raw key cannot encrypt a zip pack; give a password (or none, for a generated one)")
                }
                credential = given
                credentialKind = describe(given, generated: false)
            } else {
                credential = .password(generatedPassword())
                credentialKind = describe(credential, generated: true)
            }
            let installer = PrivateInstaller(directory: work.appendingPathComponent("installed", isDirectory: true))
            let packDir = work.appendingPathComponent("packs", isDirectory: true)
            try FileManager.default.createDirectory(at: packDir, withIntermediateDirectories: true)
            var base = configuration.packOptions
            base.credential = credential
            packedWith = base
            packOptionsRecord = [
                "encryption": base.zip.encryption.rawValue, "compression": base.compression.rawValue,
                "level": base.level.rawValue, "container_codec": base.container.codec.rawValue,
                "container_chunk_size": String(base.container.chunkSize), "include_hidden": String(base.includeHidden),
            ]
            // The default format is the baseline, every other registered format a candidate.
            let others = AssetPacks.formats.map(\.format).filter { $0 != AssetPacks.defaultFormat }
            for format in [AssetPacks.defaultFormat] + others {
                var options = base
                options.format = format
                let label = format.rawValue
                let progress = configuration.progress
                options.progress = { p in progress?(PerfProgress(phase: "pack \(label)", done: p.done, total: p.total))
                }
                let output = packDir.appendingPathComponent("perf.\(try AssetPacks.driver(for: format).fileExtension)")
                let summary = try AssetPacks.pack(source: source, to: output, options: options)
                report(configuration, "install \(label)", 0, 1)
                let installWatch = Stopwatch()
                let installed = try installer.install(output)
                let installSeconds = installWatch.elapsed
                try? FileManager.default.removeItem(at: output)
                let watch = Stopwatch()
                let reader = try AssetPacks.open(installed.path.path, credential: credential)
                let openWall = watch.elapsed
                subjects.append(
                    subject(
                        label, reader, installed.path, packSeconds: summary.seconds, installSeconds: installSeconds,
                        openWall: openWall))
                if configuration.compareLibzipDecoder,
                    let other = try crossCheckSubject(
                        label, installed.path, format, credential, packSeconds: summary.seconds,
                        installSeconds: installSeconds)
                {
                    subjects.append(other)
                }
            }
        }

        // Entries matched by path across packs; sorted by size, then path.
        var sizes: [String: UInt64] = [:]
        for s in subjects { for e in s.reader.entries where sizes[e.path] == nil { sizes[e.path] = e.size } }
        let paths = sizes.keys.sorted { (sizes[$0]!, $0) < (sizes[$1]!, $1) }

        // Warm-up, with the independent checks: our own CRC-32 of the bytes against the pack's
        // stored CRC and against every other backend's bytes for the same path.
        var checkFailures: [String: Set<String>] = [:]  // label → paths that failed
        var decoders: [String: [String: String]] = [:]  // label → path → decoder
        for (i, path) in paths.enumerated() {
            if i % 64 == 0 { report(configuration, "warm-up", i, paths.count) }
            var crcs: [String: UInt32] = [:]
            for s in subjects {
                guard let info = s.byPath[path] else { continue }
                for w in 0..<max(configuration.warmupReads, 1) {
                    let (bytes, timing) = try s.reader.readTimed(path)
                    decoders[s.label, default: [:]][path] = timing.decoder
                    if w == 0 {
                        let crc = CRC32.checksum(bytes)
                        crcs[s.label] = crc
                        if bytes.count != Int(info.size) || (info.crc32 != nil && info.crc32 != crc) {
                            checkFailures[s.label, default: []].insert(path)
                        }
                    }
                }
            }
            if Set(crcs.values).count > 1 {
                for label in crcs.keys { checkFailures[label, default: []].insert(path) }
            }
        }
        report(configuration, "warm-up", paths.count, paths.count)

        // Timed phase, interleaved.
        struct Samples {
            var seconds: [Double] = []
            var total: [Double] = []
            var lookup: [Double] = []
            var keyDerivation: [Double] = []
            var decrypt: [Double] = []
            var crc: [Double] = []
            var bytesIn: [UInt64] = []
            var verified = true
        }
        var samples: [[Samples]] = Array(
            repeating: Array(repeating: Samples(), count: subjects.count), count: paths.count)
        let steps = configuration.iterations * paths.count
        for iteration in 0..<configuration.iterations {
            for (p, path) in paths.enumerated() {
                let step = iteration * paths.count + p
                if step % 32 == 0 { report(configuration, "measure", step, steps) }
                let forward = (iteration + p) % 2 == 0
                for k in 0..<subjects.count {
                    let b = forward ? k : subjects.count - 1 - k
                    let s = subjects[b]
                    guard let info = s.byPath[path] else { continue }
                    // Keep the pack's bytes in the page cache: some hosts reclaim idle page cache within
                    // seconds (DAMON pageout), and a large entry is read again only after all the others.
                    if info.storedSize >= Self.rewarmThreshold { _ = try s.reader.readTimed(path) }
                    let watch = Stopwatch()
                    let (bytes, timing) = try s.reader.readTimed(path)
                    let elapsed = watch.elapsed
                    let macChecked =
                        info.encryption == .aes128 || info.encryption == .aes192
                        || info.encryption == .aes256 || info.encryption == .aes256GCM
                    samples[p][b].seconds.append(elapsed)
                    samples[p][b].total.append(timing.total)
                    samples[p][b].lookup.append(timing.lookup)
                    samples[p][b].keyDerivation.append(timing.keyDerivation)
                    samples[p][b].decrypt.append(timing.decrypt)
                    samples[p][b].crc.append(timing.crc)
                    samples[p][b].bytesIn.append(timing.bytesIn)
                    if bytes.count != Int(info.size) || !(timing.crcChecked || macChecked) {
                        samples[p][b].verified = false
                    }
                }
            }
        }
        report(configuration, "measure", steps, steps)

        // Peak memory: each pack alone, every entry once, high-water mark reset first.
        let canReset = MemoryProbe.resetPeak()
        for i in subjects.indices {
            report(configuration, "memory \(subjects[i].label)", 0, 1)
            let before = MemoryProbe.read()
            if canReset { MemoryProbe.resetPeak() }
            for path in paths where subjects[i].byPath[path] != nil {
                _ = try subjects[i].reader.readTimed(path)
            }
            if let after = MemoryProbe.read(), let before {
                subjects[i].pack.readPeakRSSBytes = after.peak
                subjects[i].pack.readPeakRSSDeltaBytes = Int64(after.peak) - Int64(canReset ? before.rss : before.peak)
            }
        }

        var entries: [PerfEntry] = []
        entries.reserveCapacity(paths.count)
        for (p, path) in paths.enumerated() {
            var backends: [String: PerfBackendStats] = [:]
            for (b, s) in subjects.enumerated() {
                guard let info = s.byPath[path] else { continue }
                let x = samples[p][b]
                let sorted = x.seconds.sorted()
                let median = PerfStatistics.quantile(sorted: sorted, 0.5)
                let m = { (v: [Double]) in PerfStatistics.quantile(v, 0.5) }
                let ok = x.verified && !(checkFailures[s.label]?.contains(path) ?? false)
                backends[s.label] = PerfBackendStats(
                    reads: sorted.count, minSeconds: sorted.first ?? .nan, medianSeconds: median,
                    p90Seconds: PerfStatistics.quantile(sorted: sorted, 0.9), maxSeconds: sorted.last ?? .nan,
                    mbPerS: median > 0 ? Double(info.size) / median / 1e6 : .nan,
                    parts: PerfParts(
                        totalSeconds: m(x.total), lookupSeconds: m(x.lookup), keyDerivationSeconds: m(x.keyDerivation),
                        decryptSeconds: m(x.decrypt), crcSeconds: m(x.crc),
                        bytesIn: x.bytesIn.sorted()[x.bytesIn.count / 2]),
                    crcOk: ok, decoder: decoders[s.label]?[path] ?? "", storedSize: info.storedSize,
                    compression: Self.codec(info.compression, in: s.pack.format, packedWith: packedWith))
            }
            entries.append(PerfEntry(path: path, size: sizes[path]!, backends: backends))
        }

        let labels = subjects.map(\.label)
        let baseline = labels.first(where: { $0 == "zip" }) ?? labels.first
        let candidate =
            labels.first(where: { $0 == "container" && $0 != baseline }) ?? labels.first(where: { $0 != baseline })
        let settings = PerfSettings(
            iterations: configuration.iterations, warmupReads: max(configuration.warmupReads, 1), backends: labels,
            baseline: baseline, candidate: candidate, order: "interleaved",
            input: inputKind, inputDescription: inputDescription, credential: credentialKind,
            packOptions: packOptionsRecord,
            memoryMethod: canReset
                ? "VmHWM from /proc/self/status after writing 5 to /proc/self/clear_refs, one solo pass per pack; delta against VmRSS before the pass"
                : "VmHWM from /proc/self/status (high-water mark could not be reset; delta against VmHWM before the pass)",
            startedAt: ISO8601DateFormatter().string(from: started), wallSeconds: 0, command: configuration.command)
        var result = PerfReport(
            entries: entries, packs: Dictionary(uniqueKeysWithValues: subjects.map { ($0.label, $0.pack) }),
            machine: PerfMachine.current(probeToolchain: configuration.probeToolchain), settings: settings,
            summary: nil)
        if let baseline, let candidate {
            result.summary = summarize(
                entries, baseline: baseline, candidate: candidate,
                opens: (result.packs[baseline]?.openSeconds, result.packs[candidate]?.openSeconds))
        }
        result.settings.wallSeconds = wall.elapsed
        result.settings.loadAverage = [loadAtStart, loadAverage()].compactMap { $0 }
        return result
    }

    // MARK: - Helpers

    /// The 1-minute load average, or `nil` without /proc.
    /// Entries stored at this size or more get an untimed read right before each timed one.
    static let rewarmThreshold: UInt64 = 1 << 20

    static func loadAverage() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Double($0) }
    }

    /// The same pack opened through the other decoder its format offers (a zip through libzip's
    /// own), as a separate backend `LABEL-DECODER`; `nil` when the format has none.
    private static func crossCheckSubject(
        _ label: String, _ url: URL, _ format: PackFormat, _ credential: PackCredential?, packSeconds: Double?,
        installSeconds: Double?
    ) throws -> Subject? {
        let watch = Stopwatch()
        let source = try FileByteSource(path: url.path)
        guard let (name, reader) = try AssetPacks.driver(for: format).crossCheckReader(source, credential: credential)
        else { return nil }
        return subject(
            "\(label)-\(name)", reader, url, packSeconds: packSeconds, installSeconds: installSeconds,
            openWall: watch.elapsed)
    }

    private static func subject(
        _ label: String, _ reader: any PackReader, _ url: URL, size: UInt64? = nil, packSeconds: Double?,
        installSeconds: Double?,
        openWall: Double
    ) -> Subject {
        let size = size ?? (try? FileSystem.stat(url.path).size) ?? 0
        let pack = PerfPack(
            format: reader.format, path: url.isFileURL ? url.path : url.absoluteString, sizeBytes: size,
            entryCount: reader.entries.count,
            packSeconds: packSeconds, installSeconds: installSeconds, openSeconds: reader.openSeconds,
            openWallSeconds: openWall, readPeakRSSBytes: nil, readPeakRSSDeltaBytes: nil,
            largestEntryBytes: reader.entries.map(\.size).max() ?? 0)
        return Subject(
            label: label, reader: reader, pack: pack,
            byPath: Dictionary(reader.entries.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a }))
    }

    private static func report(_ c: PerfConfiguration, _ phase: String, _ done: Int, _ total: Int) {
        c.progress?(PerfProgress(phase: phase, done: done, total: total))
    }

    private static func describe(_ credential: PackCredential?, generated: Bool) -> String {
        switch credential {
        case .none: "none"
        case .password: generated ? "generated-password" : "given-password"
        case .key: "given-key"
        }
    }

    /// 32 random hex digits from the system generator.
    private static func generatedPassword() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &g)) }.joined()
    }

    /// A fresh directory with mode 0700 (mkdtemp), for the throwaway packs.
    static func makePrivateTemporaryDirectory(parent: URL?) throws -> URL {
        var base = parent?.path ?? NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        do {
            let made = try FileSystem.makeTemporaryDirectory(template: base + "/assetpack-perf-XXXXXX")
            return URL(fileURLWithPath: made, isDirectory: true)
        } catch {
            throw error.io("cannot create a temporary directory in \(base)")
        }
    }
}

extension PerfRunner {
    /// An entry's codec with the level it was compressed at, when this run packed it
    /// (`zstd 12`, `deflate 10`), else the codec alone (`store`, `deflate`, `zstd`).
    static func codec(_ compression: EntryCompression, in format: PackFormat, packedWith options: PackOptions?)
        -> String
    {
        guard let level = options?.level else { return compression.rawValue }
        switch compression {
        case .zstd: return "zstd \(level.zstdLevel)"
        case .deflate:
            return "deflate \((try? AssetPacks.driver(for: format).deflateLevel(level)) ?? level.zipDeflateLevel)"
        case .store, .other: return compression.rawValue
        }
    }
}
