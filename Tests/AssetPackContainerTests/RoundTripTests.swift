import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

@Suite struct RoundTripTests {
    static let files: [(String, [UInt8])] = [
        ("empty", []),
        ("one", [0x2A]),
        ("nineteen.txt", Array("nineteen bytes here".utf8)),
        ("chunk/exact.bin", noise(4096, seed: 1)),
        ("chunk/plus-one.bin", noise(4097, seed: 2)),
        ("big/multi.bin", noise(3 << 20 + 12345, seed: 3)),
        ("big/text.txt", text(2 << 20 + 7)),
        ("données/été.txt", Array("non-ASCII name".utf8)),
        ("日本/テスト/ファイル.bin", noise(100, seed: 4)),
        ("a/b/c/d/e/f/deep.txt", text(9000)),
    ]

    @Test(.slow, arguments: [CompressionPolicy.auto, .store, .deflate], BuildConfiguration.codecs)
    func roundTrip(_ compression: CompressionPolicy, codec: ContainerCodec) throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.files, compression: compression, codec: codec)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        #expect(reader.format == .container)
        let sortedPaths = Self.files.map(\.0).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(reader.entries.map(\.path) == sortedPaths)
        for (name, expected) in Self.files {
            let info = try #require(reader.entry(name))
            #expect(info.size == UInt64(expected.count))
            #expect(info.encryption == .aes256GCM)
            #expect(info.crc32 == CRC32.checksum(expected))
            if compression == .store { #expect(info.compression == .store) }
            let (got, timing) = try reader.readTimed(name)
            #expect(got == expected, "\(name)")
            #expect(timing.crcChecked && timing.decoder == "container")
            #expect(timing.bytesOut == UInt64(expected.count) && timing.bytesIn == info.storedSize)
            var streamed: [UInt8] = []
            try reader.stream(name) { streamed.append(contentsOf: $0) }
            #expect(streamed == expected, "stream \(name)")
        }
        if compression != .store {
            #expect(reader.entry("big/text.txt")?.compression == (codec == .zstd ? .zstd : .deflate))
            #expect(reader.entry("big/multi.bin")?.compression == .store)  // compression does not pay
        }
    }

    @Test func lookupNormalisesAndMissingEntries() throws {
        let scratch = Scratch()
        let path = try scratch.pack([("dir/é.txt", [1, 2, 3])])
        let reader = try ContainerPackReader(path: path, credential: testKey)
        #expect(try reader.read("dir\\e\u{301}.txt") == [1, 2, 3])
        #expect(reader.contains("dir/é.txt") && !reader.contains("dir/e.txt"))
        expectError(.entryNotFound) { _ = try reader.read("nope") }
        expectError(.entryNotFound) { _ = try reader.readRange("nope", offset: 0, count: 1) }
    }

    @Test(arguments: BuildConfiguration.codecs)
    func readRangeAcrossChunkBorders(codec: ContainerCodec) throws {
        let scratch = Scratch()
        let stored = noise(20 * 4096 + 77, seed: 9)  // compressed policy: chunks of 4 to 64 KiB
        let mixed = text(4096) + noise(4096, seed: 10) + text(3 * 4096 + 5)
        let path = try scratch.pack([("s.bin", stored), ("m.bin", mixed)], compression: .deflate, codec: codec)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        #expect(reader.entry("m.bin")?.compression == (codec == .zstd ? .zstd : .deflate))
        #expect(try #require(reader.records.all().first { $0.info.path == "s.bin" }).chunkCount > 2)
        for (name, data) in [("s.bin", stored), ("m.bin", mixed)] {
            var ranges: [(Int, Int)] = [
                (0, 0), (0, 1), (4095, 2), (4096, 4096), (4000, 9000), (0, data.count), (data.count - 1, 1),
                (data.count, 0),
            ]
            var rng = SystemRandomNumberGenerator()
            for _ in 0..<50 {
                let o = Int.random(in: 0...data.count, using: &rng)
                ranges.append((o, Int.random(in: 0...(data.count - o), using: &rng)))
            }
            for (o, c) in ranges {
                #expect(
                    try reader.readRange(name, offset: UInt64(o), count: c) == Array(data[o..<o + c]),
                    "\(name) \(o)+\(c)")
            }
            expectError(.invalidArgument) { _ = try reader.readRange(name, offset: UInt64(data.count), count: 1) }
            expectError(.invalidArgument) { _ = try reader.readRange(name, offset: 0, count: -1) }
            expectError(.invalidArgument) { _ = try reader.readRange(name, offset: UInt64.max, count: 1) }
        }
    }

    @Test(.slow, arguments: [4096, 64 << 10, 1 << 20])
    func chunkSizes(_ chunkSize: Int) throws {
        let scratch = Scratch()
        let files = [
            ("a", noise(chunkSize * 3 + 1, seed: 5)), ("b", text(chunkSize * 2)), ("c", noise(chunkSize, seed: 6)),
        ]
        let path = try scratch.pack(files, chunkSize: chunkSize)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        for (name, data) in files { #expect(try reader.read(name) == data) }
    }

    @Test func passwordKDFs() throws {
        let scratch = Scratch()
        for (i, kdf) in [ContainerKDF.forTests, .pbkdf2SHA256(iterations: 1000)].enumerated() {
            let path = try scratch.pack(
                [("x", text(100))], name: "p\(i).apack", credential: .password("pässword"),
                kdf: kdf)
            // NFD spelling of the same password opens it too (passwords are NFC-normalised).
            let reader = try ContainerPackReader(path: path, credential: .password("pa\u{308}ssword"))
            #expect(try reader.read("x") == text(100))
            expectError(.wrongPassword) { _ = try ContainerPackReader(path: path, credential: .password("password")) }
            expectError(.wrongPassword) { _ = try ContainerPackReader(path: path, credential: testKey) }
            expectError(.missingPassword) { _ = try ContainerPackReader(path: path, credential: nil) }
        }
    }

    @Test func writerArgumentsAndProgress() throws {
        let scratch = Scratch()
        expectError(.missingPassword) { _ = try scratch.pack([("a", [1])], credential: nil) }
        expectError(.invalidArgument) { _ = try scratch.pack([("a", [1])], credential: .key([1, 2, 3])) }
        expectError(.invalidArgument) { _ = try scratch.pack([("a", [1])], credential: .password("")) }
        expectError(.invalidArgument) { _ = try scratch.pack([("a", [1])], chunkSize: 5000) }
        expectError(.invalidArgument) { _ = try scratch.pack([("a", [1])], chunkSize: 2048) }
        expectError(.invalidArgument) { _ = try scratch.pack([("a", [1]), ("a", [2])]) }
        expectError(.invalidArgument) { _ = try scratch.pack([("/abs", [1])]) }
        expectError(.invalidArgument) {
            _ = try scratch.pack(
                [("a", [1])], credential: .password("x"),
                kdf: .scrypt(logN: 40, r: 8, p: 1))
        }
        // No temporary files left behind by the failures above.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter {
            $0.hasPrefix(".assetpack-tmp-")
        }
        #expect(leftovers.isEmpty)

        let seen = ProgressLog()
        let src = scratch.url.appendingPathComponent("f")
        try Data([1, 2]).write(to: src)
        var options = PackOptions.forTests
        options.credential = testKey
        options.progress = { seen.append($0) }
        let files = ["b", "a", "c"].map { SourceFile(path: $0, url: src, size: 2) }
        try ContainerPackWriter().write(files, to: scratch.url.appendingPathComponent("p.apack").path, options: options)
        #expect(seen.items.map(\.path) == ["a", "b", "c"])
        #expect(seen.items.map(\.done) == [1, 2, 3] && seen.items.allSatisfy { $0.total == 3 })
    }

    @Test(.slow) func concurrentReaders() throws {
        let scratch = Scratch()
        let files: [(String, [UInt8])] = (0..<40).map { i in
            let size = [0, 1, 100, 4096, 70_000, 300_000, 1 << 20][i % 7] + i
            return ("f\(i)", i % 2 == 0 ? noise(size, seed: UInt64(i)) : text(size))
        }
        let path = try scratch.pack(files, chunkSize: 16384)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        let failures = ProgressLog()
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            var rng = SystemRandomNumberGenerator()
            for _ in 0..<60 {
                let (name, data) = files[Int.random(in: 0..<files.count, using: &rng)]
                do {
                    if Bool.random(using: &rng) {
                        if try reader.read(name) != data {
                            failures.append(PackProgress(done: t, total: 0, path: name))
                        }
                    } else {
                        let o = Int.random(in: 0...data.count, using: &rng),
                            c = Int.random(in: 0...(data.count - o), using: &rng)
                        if try reader.readRange(name, offset: UInt64(o), count: c) != Array(data[o..<o + c]) {
                            failures.append(PackProgress(done: t, total: 1, path: name))
                        }
                    }
                } catch {
                    failures.append(PackProgress(done: t, total: 2, path: "\(name): \(error)"))
                }
            }
        }
        #expect(failures.items.isEmpty, "\(failures.items.map(\.path))")
    }
}

/// A thread-safe list (for progress callbacks and failures from many threads).
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [PackProgress] = []
    func append(_ p: PackProgress) { lock.withLock { list.append(p) } }
    var items: [PackProgress] { lock.withLock { list } }
}
