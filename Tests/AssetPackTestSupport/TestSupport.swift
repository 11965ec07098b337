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
        url = URL(fileURLWithPath: String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
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
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: file)
        }
        return root
    }
}

/// A tiny deterministic generator (SplitMix64), so failures reproduce.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    /// Creates a generator from a seed.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
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
            status: process.terminationStatus, stdout: [UInt8](outData), stderr: String(decoding: errData, as: UTF8.self),
            signaled: process.terminationReason == .uncaughtSignal, timedOut: timedOut.value > 0)
    }
}

/// Flips one byte of a file in place.
public func flipByte(at offset: Int, in path: String, with mask: UInt8 = 0xFF) throws {
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    bytes[offset] ^= mask
    try Data(bytes).write(to: URL(fileURLWithPath: path))
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
