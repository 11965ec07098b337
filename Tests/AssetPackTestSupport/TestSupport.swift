import AssetPackCore
import Foundation

/// A directory under the system temporary directory, removed when released.
public final class TemporaryDirectory: @unchecked Sendable {
    /// The directory.
    public let url: URL
    /// The directory's path.
    public var path: String { url.path }

    /// Creates a fresh, empty directory.
    public init(_ label: String = "assetpack-test") {
        var template = Array((NSTemporaryDirectory() + "/\(label)-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        url = URL(
            fileURLWithPath: String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A path inside the directory.
    public func appending(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes files (relative path → bytes), creating folders as needed.
    @discardableResult
    public func write(_ files: [String: [UInt8]], under folder: String = "") throws -> URL {
        let root = folder.isEmpty ? url : url.appendingPathComponent(folder)
        for (path, bytes) in files {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: file)
        }
        return root
    }
}

/// Deterministic pseudo-random bytes, so failures reproduce.
public func testBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var rng = SplitMix64(seed: seed &+ 0x9E37_79B9_7F4A_7C15)
    var out = [UInt8](repeating: 0, count: count)
    var i = 0
    while i < count {
        let z = rng.next()
        for b in 0..<8 where i < count {
            out[i] = UInt8(truncatingIfNeeded: z >> (8 * UInt64(b)))
            i += 1
        }
    }
    return out
}

/// Compressible text-like bytes.
public func textBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    let words = ["asset", "pack", "level", "{\"id\": ", "tile", "enemy", "\n", "sprite", "0.5, ", "true"]
    var out: [UInt8] = []
    out.reserveCapacity(count)
    let noise = testBytes(count / 4 + 1, seed: seed)
    var i = 0
    while out.count < count {
        out.append(contentsOf: words[Int(noise[i % noise.count]) % words.count].utf8)
        i += 1
    }
    return Array(out.prefix(count))
}

/// A representative asset tree: empty, 1-byte, 19-byte, 20-byte, large, compressible,
/// non-ASCII and nested entries.
public func sampleTree() -> [String: [UInt8]] {
    [
        "empty.txt": [],
        "one.bin": [0x42],
        "nineteen.txt": Array("nineteen bytes here".utf8),
        "twenty.txt": Array("twenty bytes here!!!".utf8),
        "big/random.bin": testBytes(300_000, seed: 7),
        "big/text.json": textBytes(200_000, seed: 3),
        "images/logo.png": testBytes(5_000, seed: 9),
        "naïve café/日本語.txt": Array("non-ASCII name\n".utf8),
        "a/b/c/d/deep.txt": Array("deep\n".utf8),
    ]
}

/// Runs the built `assetpack` binary.
public enum CLI {
    /// The result of one run.
    public struct Run: Sendable {
        /// Exit status.
        public var status: Int32
        /// Standard output bytes.
        public var stdout: [UInt8]
        /// Standard error text.
        public var stderr: String
        /// Whether the process was ended by a signal (a crash, or our timeout) rather than exiting.
        public var signaled: Bool
        /// Whether the run was killed for exceeding its time limit.
        public var timedOut: Bool
        /// Standard output as text.
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// The binary: `$ASSETPACK_BIN`, else `assetpack` beside the test bundle.
    public static var binary: URL {
        if let explicit = ProcessInfo.processInfo.environment["ASSETPACK_BIN"] { return URL(fileURLWithPath: explicit) }
        var dir = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("assetpack")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return argv0.appendingPathComponent("assetpack")
    }

    /// Runs `assetpack` (or `executable`) with `arguments`, the password (if any) in `$ASSETPACK_PASSWORD`,
    /// extra environment, and no terminal on standard input.
    public static func run(
        _ arguments: [String], password: String? = nil, environment: [String: String] = [:], timeout: Double = 120,
        executable: String? = nil
    ) throws -> Run {
        let process = Process()
        process.executableURL = executable.map { URL(fileURLWithPath: $0) } ?? binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "ASSETPACK_PASSWORD")
        if let password { env["ASSETPACK_PASSWORD"] = password }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let timedOut = Counter()
        let watchdog = DispatchWorkItem {
            timedOut.increment()
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        // Drain both pipes concurrently so a large output cannot deadlock the child.
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        watchdog.cancel()
        return Run(
            status: process.terminationStatus, stdout: [UInt8](outData),
            stderr: String(decoding: errData, as: UTF8.self),
            signaled: process.terminationReason == .uncaughtSignal, timedOut: timedOut.value > 0)
    }
}

extension CLI {
    /// What an interrupted run left.
    public struct Interrupted: Sendable {
        /// Whether a temporary (a name starting with `.assetpack-tmp-`) appeared before the signal.
        public var sawTemporary: Bool
        /// Whether the process died of exactly `signal`.
        public var diedOfSignal: Bool
        /// The folder's names afterwards, sorted.
        public var left: [String]
        /// Everything the process wrote to stderr (on a terminal: the screen, `\n` as `\r\n`).
        public var stderr: String
    }

    /// Runs `assetpack ARGS` with the password in `$ASSETPACK_PASSWORD`, waits until a temporary
    /// file appears in `folder` (and, with `terminal`, until the progress bar was drawn), sends
    /// `signal`, and reports what the process and folder show. With `terminal`, stderr is a
    /// pseudo-terminal, so the command draws its progress bar there.
    public static func interruptWhileWriting(
        _ arguments: [String], password: String, in folder: URL, signal: Int32, terminal: Bool = false
    ) throws -> Interrupted {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["ASSETPACK_PASSWORD": password]) { $1 }
        process.standardInput = FileHandle.nullDevice
        let readEnd: Int32
        let writeEnd: Int32
        if terminal {
            (readEnd, writeEnd) = try PseudoTerminal.open()
        } else {
            var ends: [Int32] = [0, 0]
            precondition(pipe(&ends) == 0, "pipe failed")
            readEnd = ends[0]
            writeEnd = ends[1]
        }
        process.standardError = FileHandle(fileDescriptor: writeEnd, closeOnDealloc: false)
        let output = Output()
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(readEnd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }  // EOF, or EIO once a terminal's last writer closed it
                output.append(buffer[..<n])
            }
            output.finish()
        }
        reader.start()
        defer { close(readEnd) }
        do { try process.run() } catch {
            close(writeEnd)
            output.waitUntilFinished()
            throw error
        }
        close(writeEnd)
        let deadline = Date().addingTimeInterval(60)
        var sawTemporary = false
        while Date() < deadline, process.isRunning {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            if names.contains(where: { $0.hasPrefix(".assetpack-tmp-") }) { sawTemporary = true }
            if sawTemporary && (!terminal || output.text.contains("\r[")) { break }
            usleep(2000)
        }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        output.waitUntilFinished()
        return Interrupted(
            sawTemporary: sawTemporary,
            diedOfSignal: process.terminationReason == .uncaughtSignal && process.terminationStatus == signal,
            left: try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted(), stderr: output.text)
    }

    /// A pseudo-terminal pair through glibc's `posix_openpt` family (declared only under
    /// `_XOPEN_SOURCE`, which the Glibc module does not set, so looked up by name).
    private enum PseudoTerminal {
        typealias IntCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

        static func function<T>(_ name: String, as type: T.Type) -> T {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
                preconditionFailure("\(name) not found")
            }
            return unsafeBitCast(symbol, to: type)
        }

        /// The controlling side (read) and the terminal side (a process's stderr).
        static func open() throws -> (Int32, Int32) {
            let primary = function("posix_openpt", as: IntCall.self)(O_RDWR | O_NOCTTY)
            guard primary >= 0, function("grantpt", as: IntCall.self)(primary) == 0,
                function("unlockpt", as: IntCall.self)(primary) == 0
            else { throw CocoaError(.fileReadUnknown) }
            var name = [CChar](repeating: 0, count: 128)
            guard function("ptsname_r", as: NameCall.self)(primary, &name, name.count) == 0 else {
                throw CocoaError(.fileReadUnknown)
            }
            let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let terminal = Glibc.open(path, O_RDWR | O_NOCTTY)
            guard terminal >= 0 else { throw CocoaError(.fileReadUnknown) }
            return (primary, terminal)
        }
    }

    /// Bytes a reader thread collects, read by another.
    private final class Output: @unchecked Sendable {
        private let condition = NSCondition()
        private var bytes: [UInt8] = []
        private var finished = false

        func append(_ more: ArraySlice<UInt8>) {
            condition.lock()
            bytes += more
            condition.unlock()
        }

        func finish() {
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }

        func waitUntilFinished() {
            condition.lock()
            while !finished { condition.wait() }
            condition.unlock()
        }

        var text: String {
            condition.lock()
            defer { condition.unlock() }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// Flips one byte of a file in place.
public func flipByte(at offset: Int, in path: String, with mask: UInt8 = 0xFF) throws {
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    bytes[offset] ^= mask
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Every single-byte flip (`^ 0xFF`) of `original`, each judged by `outcome`: the error code a
/// reader refused it with, or `nil` when it was accepted.
/// - Returns: The offsets whose flip was accepted, and how often each code refused one.
public func flipEveryByte(
    of original: [UInt8], _ outcome: ([UInt8]) throws -> AssetPackError.Code?
) rethrows -> (accepted: [Int], codes: [AssetPackError.Code: Int]) {
    var accepted: [Int] = []
    var codes: [AssetPackError.Code: Int] = [:]
    for i in original.indices {
        var flipped = original
        flipped[i] ^= 0xFF
        if let code = try outcome(flipped) { codes[code, default: 0] += 1 } else { accepted.append(i) }
    }
    return (accepted, codes)
}

/// A thread-safe counter for concurrency tests.
public final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    /// Creates a counter at zero.
    public init() {}
    /// Adds one.
    public func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    /// The current count.
    public var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// Byte-level surgery on zip files, for building damaged and hostile archives in tests.
public enum ZipSurgery {
    /// Offsets of every local header (`PK\u{3}\u{4}`) and central header (`PK\u{1}\u{2}`) whose name is `name`.
    public static func headers(named name: [UInt8], in bytes: [UInt8]) -> (local: [Int], central: [Int]) {
        var local: [Int] = []
        var central: [Int] = []
        var i = 0
        while i + 46 <= bytes.count {
            if bytes[i] == 0x50, bytes[i + 1] == 0x4B {
                if bytes[i + 2] == 3, bytes[i + 3] == 4 {
                    let n = Int(bytes[i + 26]) | Int(bytes[i + 27]) << 8
                    if i + 30 + n <= bytes.count, Array(bytes[(i + 30)..<(i + 30 + n)]) == name { local.append(i) }
                } else if bytes[i + 2] == 1, bytes[i + 3] == 2 {
                    let n = Int(bytes[i + 28]) | Int(bytes[i + 29]) << 8
                    if i + 46 + n <= bytes.count, Array(bytes[(i + 46)..<(i + 46 + n)]) == name { central.append(i) }
                }
            }
            i += 1
        }
        return (local, central)
    }

    /// Renames an entry in place (local and central headers); the new name must have the same byte length.
    public static func rename(_ old: String, to new: [UInt8], in bytes: inout [UInt8]) {
        let oldBytes = Array(old.utf8)
        precondition(oldBytes.count == new.count, "same length only")
        let (local, central) = headers(named: oldBytes, in: bytes)
        precondition(!local.isEmpty && !central.isEmpty, "entry \(old) not found")
        for h in local { bytes.replaceSubrange((h + 30)..<(h + 30 + new.count), with: new) }
        for h in central { bytes.replaceSubrange((h + 46)..<(h + 46 + new.count), with: new) }
    }

    /// Overwrites the declared uncompressed size of an entry (local and central headers).
    public static func setUncompressedSize(_ name: String, _ size: UInt32, in bytes: inout [UInt8]) {
        let (local, central) = headers(named: Array(name.utf8), in: bytes)
        let le = (0..<4).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
        for h in local { bytes.replaceSubrange((h + 22)..<(h + 26), with: le) }
        for h in central { bytes.replaceSubrange((h + 24)..<(h + 28), with: le) }
    }
}

// MARK: - Differential testing: seeded trees with entry sizes around every boundary

/// Seeds for the differential suites.
///
/// - default: ``fixed`` (what `make test` runs);
/// - `ASSETPACK_SEED=N[,M…]`: exactly those seeds (to reproduce a failure);
/// - `ASSETPACK_SOAK_SEEDS=K`: K seeds derived from `ASSETPACK_SOAK_BASE` (default: the clock,
///   printed once), for `make soak`. Every failure message names its own seed.
public enum DifferentialSeeds {
    /// The seeds `make test` runs. Seeds 1 and 2 together put every stream-buffer boundary
    /// size in both text and random content (see ``TreeGenerator``).
    public static let fixed: [UInt64] = [1, 2]

    /// The seeds for this run (computed once per process).
    public static let current: [UInt64] = {
        let env = ProcessInfo.processInfo.environment
        if let list = env["ASSETPACK_SEED"], !list.isEmpty {
            let seeds = list.split(separator: ",").map { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            precondition(seeds.allSatisfy { $0 != nil }, "ASSETPACK_SEED must be a comma-separated list of integers")
            return seeds.map { $0! }
        }
        if let soak = env["ASSETPACK_SOAK_SEEDS"], let count = Int(soak), count > 0 {
            let base = env["ASSETPACK_SOAK_BASE"].flatMap { UInt64($0) } ?? UInt64(Date().timeIntervalSince1970 * 1000)
            FileHandle.standardError.write(
                Data("differential: \(count) soak seeds from ASSETPACK_SOAK_BASE=\(base)\n".utf8))
            var rng = SplitMix64(seed: base)
            // Small numbers are easier to type back in; keep them below 2^32.
            return (0..<count).map { _ in rng.next() >> 32 }
        }
        return fixed
    }()

    /// How to re-run one seed.
    public static func reproduce(_ seed: UInt64, filter: String) -> String {
        "reproduce: ASSETPACK_SEED=\(seed) swift test --filter \(filter)"
    }
}

/// One generated entry.
public struct GeneratedEntry: Sendable {
    /// What the bytes look like.
    public enum Kind: String, Sendable { case text, random }
    /// The entry path (NFC, `/`-separated).
    public var path: String
    /// The bytes.
    public var bytes: [UInt8]
    /// Text (compressible) or random (incompressible).
    public var kind: Kind
    /// CRC-32 of `bytes`.
    public var crc32: UInt32
}

/// A generated asset tree: deterministic per seed.
public struct GeneratedTree: Sendable {
    /// The seed it was generated from.
    public var seed: UInt64
    /// The entries, in generation order.
    public var entries: [GeneratedEntry]
    /// Path → bytes, for `TemporaryDirectory.write`.
    public var files: [String: [UInt8]] { Dictionary(uniqueKeysWithValues: entries.map { ($0.path, $0.bytes) }) }
    /// The entry at `path`.
    public func entry(_ path: String) -> GeneratedEntry? { entries.first { $0.path == path } }

    /// The tree a combination is tested with: the several-MiB entry only where a size that large
    /// changes the code path (WinZip AES: 8 MiB switches whole reads of stored entries to the
    /// two-thread pipeline). Elsewhere it repeats what the 1 MiB entries already cover and was
    /// ~40 % of the suite's time.
    public func tested(with combination: PackCombination) -> GeneratedTree {
        guard combination.format != .zip || combination.encryption != .aes256 else { return self }
        var copy = self
        copy.entries.removeAll { TreeGenerator.largeSizes.contains($0.bytes.count) }
        return copy
    }
}

/// Builds seeded trees whose entry sizes sit on and around every size a reader or writer cares about.
public enum TreeGenerator {
    /// Sizes around small boundaries: empty, one byte, the AES block, a page, the 64 KiB chunk.
    public static let smallBoundaries = [0, 1, 15, 16, 17, 4095, 4096, 4097, 65535, 65536, 65537]
    /// Sizes around the 256 KiB stream buffer and its multiples, and 1 MiB.
    public static let streamBoundaries = [
        262_143, 262_144, 262_145, 524_287, 524_288, 524_289, 786_431, 786_432, 786_433, 1_048_575, 1_048_576,
        1_048_577,
    ]
    /// Several-MiB sizes; 8 MiB is where stored WinZip-AES whole reads switch to the two-thread pipeline.
    public static let largeSizes = [(3 << 20) + 12_345, (8 << 20) - 1, 8 << 20, (8 << 20) + 1]

    /// What to generate.
    public enum Profile: Sendable {
        /// Every boundary, jittered extras, random sizes and one several-MiB entry (library read paths).
        case full
        /// Fewer entries (each one costs a process per read path): the CLI suites.
        case cli
    }

    private static let folders = [
        "", "naïve/", "naïve/日本語/", "a/b/c/d/", "données/niveaux/", "Ünïcödé dir/", "levels/",
    ]
    private static let names = ["naïve", "日本語", "entry", "café", "Ωmega", "file with spaces", "data"]
    private static let extensions = [".txt", ".json", ".bin", ".png"]

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: GeneratedTree] = [:]

    /// The tree for `seed` (generated once per process and profile).
    public static func tree(seed: UInt64, profile: Profile = .full) -> GeneratedTree {
        let key = "\(seed)-\(profile)"
        lock.lock()
        defer { lock.unlock() }
        if let cached = cache[key] { return cached }
        let made = generate(seed: seed, profile: profile)
        cache[key] = made
        return made
    }

    /// The sizes and kinds the tree for `seed` holds, without generating bytes.
    public static func plan(seed: UInt64, profile: Profile = .full) -> [(size: Int, kind: GeneratedEntry.Kind)] {
        var rng = SplitMix64(seed: seed ^ 0xD1FF_E7E4_7141_5EED)
        // Alternate the content kind by seed parity so two consecutive seeds cover both kinds at every
        // boundary; the generator's stream decides everything else.
        func alternating(_ i: Int) -> GeneratedEntry.Kind { (UInt64(i) &+ seed) % 2 == 0 ? .text : .random }
        func anyKind() -> GeneratedEntry.Kind { rng.next() % 2 == 0 ? .text : .random }
        var plan: [(size: Int, kind: GeneratedEntry.Kind)] = []
        switch profile {
        case .full:
            for (i, size) in smallBoundaries.enumerated() { plan.append((size, alternating(i))) }
            for (i, size) in streamBoundaries.enumerated() { plan.append((size, alternating(i))) }
            // Jittered neighbours of random boundaries, and plain random sizes.
            let all = smallBoundaries + streamBoundaries
            for _ in 0..<4 {
                let base = all[Int(rng.next() % UInt64(all.count))]
                let size = max(0, base + Int(rng.next() % 7) - 3)
                plan.append((size, anyKind()))
            }
            for _ in 0..<3 { plan.append((Int(rng.next() % UInt64(2 << 20)), anyKind())) }
            plan.append((largeSizes[Int(seed % UInt64(largeSizes.count))], anyKind()))
        case .cli:
            for size in [0, 1, 16, 17, 4097, 65536] { plan.append((size, anyKind())) }
            let picks = [262_143, 262_144, 262_145, 524_288, 786_432, 1_048_577]
            for (i, size) in picks.enumerated() { plan.append((size, alternating(i))) }
            // The exact stream-buffer multiple in the other kind too.
            plan.append((262_144, alternating(1) == .text ? .random : .text))
            plan.append((Int(rng.next() % UInt64(1 << 20)), anyKind()))
        }
        return plan
    }

    private static func generate(seed: UInt64, profile: Profile) -> GeneratedTree {
        var rng = SplitMix64(seed: seed ^ 0x7EE5_0F_A55E7)
        var entries: [GeneratedEntry] = []
        for (i, (size, kind)) in plan(seed: seed, profile: profile).enumerated() {
            let folder = folders[Int(rng.next() % UInt64(folders.count))]
            let name = names[Int(rng.next() % UInt64(names.count))]
            let ext = extensions[Int(rng.next() % UInt64(extensions.count))]
            let path = "\(folder)\(name)-\(i)\(ext)".precomposedStringWithCanonicalMapping
            let contentSeed = rng.next()
            let bytes = kind == .text ? textBytes(size, seed: contentSeed) : testBytes(size, seed: contentSeed)
            entries.append(GeneratedEntry(path: path, bytes: bytes, kind: kind, crc32: CRC32.checksum(bytes)))
        }
        return GeneratedTree(seed: seed, entries: entries)
    }
}

/// One way to write a pack: format (with encryption or chunk size) × compression.
public struct PackCombination: Sendable, CustomStringConvertible {
    /// The format.
    public var format: PackFormat
    /// Zip encryption (the container is always AES-256-GCM).
    public var encryption: PackEncryption
    /// Container chunk size.
    public var chunkSize: Int
    /// Compression policy.
    public var compression: CompressionPolicy

    /// Every combination: zip × {aes256, zipcrypto, none} and container × {4 KiB, 64 KiB, 1 MiB}, × {auto, deflate, store}.
    public static let all: [PackCombination] = {
        var out: [PackCombination] = []
        for compression in CompressionPolicy.allCases {
            for encryption in [PackEncryption.aes256, .zipCrypto, .none] {
                out.append(
                    PackCombination(format: .zip, encryption: encryption, chunkSize: 64 << 10, compression: compression)
                )
            }
            for chunk in [4 << 10, 64 << 10, 1 << 20] {
                out.append(
                    PackCombination(format: .container, encryption: .aes256, chunkSize: chunk, compression: compression)
                )
            }
        }
        return out
    }()

    /// Whether the pack needs a password.
    public var encrypted: Bool { format == .container || encryption != .none }

    /// Pack options for this combination.
    public func options(password: String) -> PackOptions {
        var options = PackOptions()
        options.format = format
        options.zip.encryption = encryption
        options.compression = compression
        options.container.chunkSize = chunkSize
        options.credential = encrypted ? .password(password) : nil
        return options
    }

    /// For example `zip/aes256/deflate` or `container/64KiB/auto`.
    public var description: String {
        switch format {
        case .zip: "zip/\(encryption.rawValue)/\(compression.rawValue)"
        // The container's, and any other format's.
        default: "\(format.rawValue)/\(chunkSize >> 10)KiB/\(compression.rawValue)"
        }
    }
}

/// Whether `a` and `b` hold the same bytes (memcmp; fast in debug builds, unlike `Array ==`).
public func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
}

/// Describes how `got` differs from `expected`, or `nil` when they are equal.
public func byteDifference(_ got: UnsafeRawBufferPointer, _ expected: [UInt8]) -> String? {
    expected.withUnsafeBytes { exp -> String? in
        if sameBytes(got, exp) { return nil }
        let common = min(got.count, exp.count)
        var first = common
        for i in 0..<common where got[i] != exp[i] {
            first = i
            break
        }
        return "got \(got.count) bytes (CRC-32 \(String(CRC32.checksum(got), radix: 16))), expected \(exp.count) "
            + "(CRC-32 \(String(CRC32.checksum(exp), radix: 16))); first difference at offset \(first)"
    }
}

/// A growable byte buffer that appends with memcpy (for concatenating streamed chunks in debug builds).
public struct ByteSink {
    /// The bytes so far.
    public private(set) var data = Data()
    /// Creates an empty sink with room for `capacity` bytes.
    public init(capacity: Int = 0) { data.reserveCapacity(capacity) }
    /// Appends a chunk.
    public mutating func append(_ chunk: UnsafeRawBufferPointer) {
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        data.append(base.assumingMemoryBound(to: UInt8.self), count: chunk.count)
    }
}
