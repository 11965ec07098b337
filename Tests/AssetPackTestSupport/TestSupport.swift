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

/// Configuration file `index` of a game-like tree: `lines` lines (150: about 5 KB) of keys drawn
/// from one vocabulary every file shares, each with a value of its own, as a game's unit or level
/// files are. Many of them are what the container's zstd dictionary is trained on.
public func configFile(_ index: Int, lines: Int = 150) -> [UInt8] {
    let picks = testBytes(3 * lines, seed: UInt64(1000 + index))
    var text = "[unit_type]\n"
    for k in 0..<lines {
        let word = configVocabulary[(Int(picks[3 * k]) << 8 | Int(picks[3 * k + 1])) % configVocabulary.count]
        let value = Int(picks[3 * k + 2]) * (index + 1) % 1000
        text += "    " + word + "=" + String(value) + "\n"
    }
    return Array((text + "[/unit_type]\n").utf8)
}

/// The 200 keys ``configFile(_:lines:)`` draws on.
private let configVocabulary: [String] = {
    let parts = [
        "hit", "point", "move", "ment", "type", "cost", "race", "level", "ability", "attack", "range", "melee",
        "blade", "pierce", "impact", "fire", "cold", "arcane", "defense", "village", "castle",
    ]
    let seeds = testBytes(400, seed: 77)
    return (0..<200).map { (k: Int) -> String in
        let first: String = parts[Int(seeds[2 * k]) % parts.count]
        let second: String = parts[Int(seeds[2 * k + 1]) % parts.count]
        return first + "_" + second + String(k % 7)
    }
}()
