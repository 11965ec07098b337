import AssetPack
import Foundation

/// The result of one `assetpack perf` run: per-entry read timings for every backend measured,
/// per-pack costs, the machine and the settings. Encodes to the JSON schema documented in
/// `docs/PERFORMANCE.md` (snake_case keys, seconds as numbers, sizes in bytes).
public struct PerfReport: Codable, Sendable, Equatable {
    /// Report schema version; bumped when a key changes meaning or disappears.
    public var schemaVersion: Int = 1
    /// One record per entry path (the union over all packs), sorted by size then path.
    public var entries: [PerfEntry]
    /// Per backend label (`zip`, `container`, …): what it cost to make, open and read the pack.
    public var packs: [String: PerfPack]
    /// Where the numbers were measured.
    public var machine: PerfMachine
    /// How they were measured.
    public var settings: PerfSettings
    /// Headline comparison of `settings.baseline` against `settings.candidate`, when both exist.
    public var summary: PerfSummary?

    /// Creates a report.
    public init(
        entries: [PerfEntry], packs: [String: PerfPack], machine: PerfMachine, settings: PerfSettings,
        summary: PerfSummary?
    ) {
        self.entries = entries
        self.packs = packs
        self.machine = machine
        self.settings = settings
        self.summary = summary
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case entries, packs, machine, settings, summary
    }

    /// The backend labels in measurement order (baseline first).
    public var backends: [String] { settings.backends }
}

/// One entry path and its timings per backend.
public struct PerfEntry: Codable, Sendable, Equatable {
    /// The entry's path inside the packs.
    public var path: String
    /// Uncompressed size in bytes.
    public var size: UInt64
    /// The size class label (`<=4KiB`, `<=64KiB`, `<=1MiB`, `<=16MiB`, `>16MiB`).
    public var sizeClass: String
    /// Timings keyed by backend label. A backend whose pack lacks the entry has no key.
    public var backends: [String: PerfBackendStats]

    /// Creates an entry record.
    public init(path: String, size: UInt64, backends: [String: PerfBackendStats]) {
        self.path = path
        self.size = size
        self.sizeClass = PerfSizeClass(size: size).label
        self.backends = backends
    }

    enum CodingKeys: String, CodingKey {
        case path, size, backends
        case sizeClass = "size_class"
    }
}

/// Statistics of the measured reads of one entry through one backend.
///
/// Each sample is the wall time of one `readTimed(_:)` call on an already open pack, taken
/// with a monotonic clock around the call (so it includes everything the caller waits for).
public struct PerfBackendStats: Codable, Sendable, Equatable {
    /// Number of measured reads (the warm-up read is not counted).
    public var reads: Int
    /// Fastest read, seconds.
    public var minSeconds: Double
    /// Median read (linear interpolation between the two middle samples), seconds.
    public var medianSeconds: Double
    /// 90th percentile read (linear interpolation), seconds.
    public var p90Seconds: Double
    /// Slowest read, seconds.
    public var maxSeconds: Double
    /// Throughput on the median: entry size / median, in MB/s (10^6 bytes per second).
    public var mbPerS: Double
    /// Medians of the reader's own timing record, per part.
    public var parts: PerfParts
    /// Whether every read verified: no error, the expected byte count, the reader checked the
    /// CRC-32 or a MAC/tag, and the warm-up bytes' CRC-32 (computed here, independently)
    /// matches the pack's stored CRC and the other backends' bytes.
    public var crcOk: Bool
    /// Which decoder produced the bytes (from the timing record, e.g. `bulk-aes`, `libzip`, `container`).
    public var decoder: String
    /// Bytes the entry occupies in the pack.
    public var storedSize: UInt64
    /// The codec, with its level when the run packed the entry: `store`, `deflate 10`, `zstd 12`
    /// (`deflate`, `zstd` for packs given with `--pack`: a pack does not record the level).
    public var compression: String

    /// Creates a statistics record.
    public init(
        reads: Int, minSeconds: Double, medianSeconds: Double, p90Seconds: Double, maxSeconds: Double,
        mbPerS: Double, parts: PerfParts, crcOk: Bool, decoder: String, storedSize: UInt64, compression: String
    ) {
        self.reads = reads
        self.minSeconds = minSeconds
        self.medianSeconds = medianSeconds
        self.p90Seconds = p90Seconds
        self.maxSeconds = maxSeconds
        self.mbPerS = mbPerS
        self.parts = parts
        self.crcOk = crcOk
        self.decoder = decoder
        self.storedSize = storedSize
        self.compression = compression
    }

    enum CodingKeys: String, CodingKey {
        case reads, parts, decoder, compression
        case minSeconds = "min_seconds"
        case medianSeconds = "median_seconds"
        case p90Seconds = "p90_seconds"
        case maxSeconds = "max_seconds"
        case mbPerS = "mb_per_s"
        case crcOk = "crc_ok"
        case storedSize = "stored_size"
    }
}

/// Medians of the parts of `EntryTiming`, in seconds, over the measured reads.
public struct PerfParts: Codable, Sendable, Equatable {
    /// The reader's own `total` (call to return, inside the reader).
    public var totalSeconds: Double
    /// Finding the entry by path.
    public var lookupSeconds: Double
    /// Deriving the entry key (zip: PBKDF2 per entry; container: HKDF subkey).
    public var keyDerivationSeconds: Double
    /// Decrypting, authenticating and inflating.
    public var decryptSeconds: Double
    /// Computing and comparing the CRC-32.
    public var crcSeconds: Double
    /// Median bytes read from the pack per read.
    public var bytesIn: UInt64

    /// Creates a parts record.
    public init(
        totalSeconds: Double, lookupSeconds: Double, keyDerivationSeconds: Double, decryptSeconds: Double,
        crcSeconds: Double, bytesIn: UInt64
    ) {
        self.totalSeconds = totalSeconds
        self.lookupSeconds = lookupSeconds
        self.keyDerivationSeconds = keyDerivationSeconds
        self.decryptSeconds = decryptSeconds
        self.crcSeconds = crcSeconds
        self.bytesIn = bytesIn
    }

    enum CodingKeys: String, CodingKey {
        case totalSeconds = "total_seconds"
        case lookupSeconds = "lookup_seconds"
        case keyDerivationSeconds = "key_derivation_seconds"
        case decryptSeconds = "decrypt_seconds"
        case crcSeconds = "crc_seconds"
        case bytesIn = "bytes_in"
    }
}

/// What one pack cost: to write, to install, to open, and in memory while being read.
public struct PerfPack: Codable, Sendable, Equatable {
    /// The pack's format (sniffed from its magic bytes).
    public var format: PackFormat
    /// The file that was read (the installed copy when the run packed a source directory).
    public var path: String
    /// The pack's size in bytes.
    public var sizeBytes: UInt64
    /// Number of entries.
    public var entryCount: Int
    /// Seconds `AssetPacks.pack` took (scan, compress, encrypt, write); `nil` for `--pack`.
    public var packSeconds: Double?
    /// Seconds `PrivateInstaller.install` took; `nil` for `--pack`.
    public var installSeconds: Double?
    /// The reader's `openSeconds`: parsing, and for the container the password KDF.
    public var openSeconds: Double
    /// Wall time of `AssetPacks.open` (sniffing, reader construction), seconds.
    public var openWallSeconds: Double
    /// Peak resident memory (VmHWM, bytes) during a solo pass reading every entry of this
    /// pack once, after resetting the high-water mark; `nil` where /proc is unavailable.
    public var readPeakRSSBytes: UInt64?
    /// `readPeakRSSBytes` minus the resident memory just before that pass (VmRSS).
    public var readPeakRSSDeltaBytes: Int64?
    /// Largest entry of the pack in bytes, for comparison with the peak delta.
    public var largestEntryBytes: UInt64

    /// Creates a pack record.
    public init(
        format: PackFormat, path: String, sizeBytes: UInt64, entryCount: Int, packSeconds: Double?,
        installSeconds: Double?, openSeconds: Double, openWallSeconds: Double, readPeakRSSBytes: UInt64?,
        readPeakRSSDeltaBytes: Int64?, largestEntryBytes: UInt64
    ) {
        self.format = format
        self.path = path
        self.sizeBytes = sizeBytes
        self.entryCount = entryCount
        self.packSeconds = packSeconds
        self.installSeconds = installSeconds
        self.openSeconds = openSeconds
        self.openWallSeconds = openWallSeconds
        self.readPeakRSSBytes = readPeakRSSBytes
        self.readPeakRSSDeltaBytes = readPeakRSSDeltaBytes
        self.largestEntryBytes = largestEntryBytes
    }

    enum CodingKeys: String, CodingKey {
        case format, path
        case sizeBytes = "size_bytes"
        case entryCount = "entry_count"
        case packSeconds = "pack_seconds"
        case installSeconds = "install_seconds"
        case openSeconds = "open_seconds"
        case openWallSeconds = "open_wall_seconds"
        case readPeakRSSBytes = "read_peak_rss_bytes"
        case readPeakRSSDeltaBytes = "read_peak_rss_delta_bytes"
        case largestEntryBytes = "largest_entry_bytes"
    }
}

/// The machine the numbers come from.
public struct PerfMachine: Codable, Sendable, Equatable {
    /// CPU model (`model name` in /proc/cpuinfo).
    public var cpuModel: String
    /// Logical cores available to the process.
    public var cores: Int
    /// Physical memory in bytes.
    public var memoryBytes: UInt64
    /// Operating system (`PRETTY_NAME` in /etc/os-release).
    public var os: String
    /// Kernel release (`uname -r`).
    public var kernel: String
    /// The Swift compiler that built this binary (compile-time `#if compiler`).
    public var swiftCompiler: String
    /// First line of `swift --version` at run time, when a toolchain is on PATH.
    public var swiftVersion: String?
    /// `release` or `debug`: how this binary was built. Only release numbers mean anything.
    public var buildConfiguration: String

    /// Creates a machine record.
    public init(
        cpuModel: String, cores: Int, memoryBytes: UInt64, os: String, kernel: String, swiftCompiler: String,
        swiftVersion: String?, buildConfiguration: String
    ) {
        self.cpuModel = cpuModel
        self.cores = cores
        self.memoryBytes = memoryBytes
        self.os = os
        self.kernel = kernel
        self.swiftCompiler = swiftCompiler
        self.swiftVersion = swiftVersion
        self.buildConfiguration = buildConfiguration
    }

    enum CodingKeys: String, CodingKey {
        case cores, os, kernel
        case cpuModel = "cpu_model"
        case memoryBytes = "memory_bytes"
        case swiftCompiler = "swift_compiler"
        case swiftVersion = "swift_version"
        case buildConfiguration = "build_configuration"
    }
}

/// How the run measured.
public struct PerfSettings: Codable, Sendable, Equatable {
    /// Measured reads per entry and backend.
    public var iterations: Int
    /// Unmeasured warm-up reads per entry and backend, before the measured ones.
    public var warmupReads: Int
    /// Backend labels in measurement order; the first is the baseline.
    public var backends: [String]
    /// The label ratios are relative to (`zip` normally).
    public var baseline: String?
    /// The label compared against the baseline (`container` normally).
    public var candidate: String?
    /// Always `interleaved`: per iteration, per entry, every backend once, order alternating.
    public var order: String
    /// `source` (a directory packed here), `corpus` (the generated standard corpus) or `packs`.
    public var input: String
    /// The source directory, the corpus name, or the pack files.
    public var inputDescription: String
    /// Where the credential came from: `given-password`, `given-key`, `generated-password`, `none`.
    public var credential: String
    /// Pack settings used when this run packed (`nil` for `--pack`).
    public var packOptions: [String: String]?
    /// Where peak memory comes from.
    public var memoryMethod: String
    /// ISO 8601 time the run started.
    public var startedAt: String
    /// Wall seconds of the whole run.
    public var wallSeconds: Double
    /// The command line, when the CLI made the report.
    public var command: String?
    /// 1-minute load average (/proc/loadavg) when the run started and when it ended. Above the
    /// core count, other processes competed for the CPU and the numbers are noisy.
    public var loadAverage: [Double] = []

    /// Creates a settings record.
    public init(
        iterations: Int, warmupReads: Int, backends: [String], baseline: String?, candidate: String?, order: String,
        input: String, inputDescription: String, credential: String, packOptions: [String: String]?,
        memoryMethod: String, startedAt: String, wallSeconds: Double, command: String?
    ) {
        self.iterations = iterations
        self.warmupReads = warmupReads
        self.backends = backends
        self.baseline = baseline
        self.candidate = candidate
        self.order = order
        self.input = input
        self.inputDescription = inputDescription
        self.credential = credential
        self.packOptions = packOptions
        self.memoryMethod = memoryMethod
        self.startedAt = startedAt
        self.wallSeconds = wallSeconds
        self.command = command
    }

    enum CodingKeys: String, CodingKey {
        case iterations, backends, baseline, candidate, order, input, credential, command
        case warmupReads = "warmup_reads"
        case inputDescription = "input_description"
        case packOptions = "pack_options"
        case memoryMethod = "memory_method"
        case startedAt = "started_at"
        case wallSeconds = "wall_seconds"
        case loadAverage = "load_average"
    }
}

extension PerfReport {
    /// The report as pretty-printed JSON with sorted keys.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try encoder.encode(self)
    }

    /// Decodes a report written by `jsonData()`.
    public static func decode(_ data: Data) throws -> PerfReport {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(PerfReport.self, from: data)
    }
}
