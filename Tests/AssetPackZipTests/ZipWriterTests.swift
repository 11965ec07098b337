import AssetPackCore
import AssetPackTestSupport
@testable import AssetPackZip
import Foundation
import Testing

/// Packs `tree` with `writer` and returns the pack's path.
func writeZip(
    _ tree: [String: [UInt8]], in dir: TemporaryDirectory, writer: ZipPackWriter = ZipPackWriter(),
    encryption: PackEncryption = .aes256, compression: CompressionPolicy = .auto, password: String = "s3cret",
    name: String = "out.zip", fresh: Bool = false, progress: (@Sendable (PackProgress) -> Void)? = nil
) throws -> (path: String, report: PackWriteReport) {
    let source = dir.appending("src")
    try? FileManager.default.removeItem(at: source)
    _ = try dir.write(tree, under: "src")
    // A fixed modification time, so that two packs of one tree are comparable byte for byte.
    let fixed = Date(timeIntervalSince1970: 1_700_000_000)
    for name in tree.keys {
        try FileManager.default.setAttributes(
            [.modificationDate: fixed], ofItemAtPath: source.appendingPathComponent(name).path)
    }
    var options = PackOptions()
    options.zip.encryption = encryption
    options.compression = compression
    options.credential = .password(password)
    options.fresh = fresh
    options.progress = progress
    let output = dir.appending(name).path
    let report = try writer.write(SourceTree.scan(root: source, includeHidden: false), to: output, options: options)
    return (output, report)
}

/// A writer whose thresholds are small, so that small test files take the piece paths.
func smallPieceWriter() -> ZipPackWriter {
    var writer = ZipPackWriter()
    writer.pieceSize = 64 << 10
    writer.wholeEntryLimit = 256 << 10
    writer.memoryBudget = 512 << 10
    return writer
}

/// Every entry of `tree` reads back identically through both decoders, and nothing else is listed.
func expectReadsBack(_ path: String, _ tree: [String: [UInt8]], password: String? = "s3cret") throws {
    let credential = password.map { PackCredential.password($0) }
    let reader = try ZipPackReader(path: path, credential: credential)
    let libzip = try ZipPackReader(path: path, credential: credential, decoder: .libzip)
    #expect(reader.entries.map(\.path) == tree.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    for (name, bytes) in tree {
        #expect(try reader.read(name) == bytes, "\(name)")
        #expect(try libzip.read(name) == bytes, "libzip: \(name)")
        var streamed: [UInt8] = []
        try reader.stream(name) { streamed.append(contentsOf: $0) }
        #expect(streamed == bytes, "streamed \(name)")
    }
}

@Suite struct ZipWriterTests {
    static let sizes = [0, 1, 15, 16, 17, 19, 20, 65_535, 65_536, 65_537, 3 << 20 | 5]

    static func sizedTree() -> [String: [UInt8]] {
        var tree: [String: [UInt8]] = [:]
        for (i, size) in sizes.enumerated() {
            tree["text/\(size).txt"] = textBytes(size, seed: UInt64(i + 1))
            tree["random/\(size).bin"] = testBytes(size, seed: UInt64(i + 100))
        }
        tree["naïve/日本.txt"] = Array("non-ASCII name\n".utf8)
        return tree
    }

    @Test(arguments: [PackEncryption.aes256, .none], [CompressionPolicy.auto, .store, .deflate])
    func roundTripsEverySize(encryption: PackEncryption, compression: CompressionPolicy) throws {
        let dir = TemporaryDirectory()
        let tree = Self.sizedTree()
        for (k, writer) in [ZipPackWriter(), smallPieceWriter()].enumerated() {
            let (path, report) = try writeZip(
                tree, in: dir, writer: writer, encryption: encryption, compression: compression, name: "\(k).zip")
            #expect(report == PackWriteReport(reused: 0, packed: tree.count))
            try expectReadsBack(path, tree, password: encryption == .none ? nil : "s3cret")
            let reader = try ZipPackReader(path: path, credential: .password("s3cret"))
            for entry in reader.entries {
                #expect(entry.encryption == (encryption == .none ? .none : .aes256))
                // AE-2 (no CRC) below 20 bytes, AE-1 (CRC and MAC) from 20 on; plain entries always have a CRC.
                #expect((entry.crc32 != nil) == (encryption == .none || entry.size >= 20), "\(entry.path)")
                let incompressible = entry.path.hasPrefix("random/") || entry.size < 32
                switch compression {
                case .store: #expect(entry.compression == .store)
                case .deflate, .auto:
                    // Deflate is kept only where it pays; random bytes are always stored.
                    if incompressible { #expect(entry.compression == .store, "\(entry.path)") }
                    if entry.path.hasPrefix("text/"), entry.size >= 1024 {
                        #expect(entry.compression == .deflate, "\(entry.path)")
                    }
                }
            }
        }
    }

    @Test func mediaExtensionsAreStoredUnderAuto() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.png": textBytes(10_000), "b.txt": textBytes(10_000)]
        let (path, _) = try writeZip(tree, in: dir)
        let reader = try ZipPackReader(path: path, credential: .password("s3cret"))
        #expect(reader.entry("a.png")?.compression == .store)
        #expect(reader.entry("b.txt")?.compression == .deflate)
    }

    @Test func aSampleThatMisleadsEndsStored() throws {
        // Compressible head, random body: the sample says deflate; the whole does not pay.
        let dir = TemporaryDirectory()
        let bytes = textBytes(70_000) + testBytes(2 << 20, seed: 9)
        let tree = ["mixed.bin": bytes]
        for (k, writer) in [ZipPackWriter(), smallPieceWriter()].enumerated() {
            let (path, _) = try writeZip(tree, in: dir, writer: writer, name: "\(k).zip")
            try expectReadsBack(path, tree)
            let reader = try ZipPackReader(path: path, credential: .password("s3cret"))
            #expect(reader.entry("mixed.bin")?.compression == .store)
        }
    }

    @Test func outputIsReproducibleWithFixedSalts() throws {
        let dir = TemporaryDirectory()
        var tree = Self.sizedTree()
        for i in 0..<200 { tree[String(format: "many/%03d.txt", i)] = textBytes(100 + i * 37, seed: UInt64(i)) }
        var outputs: [[UInt8]] = []
        for (k, workers) in [2, 2, 1, 3].enumerated() {
            var writer = k == 3 ? smallPieceWriter() : ZipPackWriter()
            if k == 3 { writer.wholeEntryLimit = 8 << 20 }  // same plans as the default writer
            writer.fixedSaltSeed = 42
            writer.workers = workers
            let (path, _) = try writeZip(tree, in: dir, writer: writer, name: "\(k).zip")
            outputs.append([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        }
        #expect(outputs[0] == outputs[1])
        #expect(outputs[0] == outputs[2])
        #expect(outputs[0] == outputs[3], "stored entries written in pieces differ from whole ones")
        var random = ZipPackWriter()
        random.workers = 2
        let (path, _) = try writeZip(tree, in: dir, writer: random, name: "random.zip")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) != outputs[0])
    }

    @Test func progressIsReportedInOrderFromOneThreadAtATime() throws {
        final class Log: @unchecked Sendable {
            let lock = NSLock()
            var reports: [PackProgress] = []
            var inside = 0
            var overlapped = false
        }
        let log = Log()
        let dir = TemporaryDirectory()
        let tree = Self.sizedTree()
        let (_, _) = try writeZip(tree, in: dir, writer: smallPieceWriter()) { p in
            log.lock.lock()
            log.inside += 1
            if log.inside > 1 { log.overlapped = true }
            log.reports.append(p)
            log.lock.unlock()
            usleep(100)
            log.lock.lock()
            log.inside -= 1
            log.lock.unlock()
        }
        let total = tree.values.reduce(UInt64(0)) { $0 + UInt64($1.count) }
        #expect(!log.overlapped)
        #expect(log.reports.last?.done == tree.count)
        #expect(log.reports.last?.bytesDone == total)
        #expect(log.reports.allSatisfy { $0.bytesTotal == total && $0.total == tree.count })
        #expect(
            zip(log.reports, log.reports.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone && $0.done <= $1.done })
        // Reports within the large entries, not only after each one.
        #expect(log.reports.count > tree.count)
    }

    @Test func aFailedPackLeavesTheOldOutputAndNoTemporaryFile() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.txt": textBytes(5000)]
        let (path, _) = try writeZip(tree, in: dir)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let source = dir.appending("src")
        var files = try SourceTree.scan(root: source, includeHidden: false)
        files[0].size += 1  // the file "changed" after the scan
        var options = PackOptions()
        options.credential = .password("s3cret")
        let error = #expect(throws: AssetPackError.self) {
            try ZipPackWriter().write(files, to: path, options: options)
        }
        #expect(error?.code == .io)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix(AtomicFile.temporaryPrefix)
        }
        #expect(leftovers.isEmpty)
    }

    @Test func moreThan65535EntriesUseZip64() throws {
        let dir = TemporaryDirectory()
        let source = dir.appending("src")
        let count = 66_000
        for folder in 0..<66 {
            let d = source.appendingPathComponent(String(format: "%02d", folder))
            try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            for i in 0..<1000 {
                _ = FileManager.default.createFile(
                    atPath: d.appendingPathComponent("\(i)").path, contents: Data([UInt8(i & 0xFF)]))
            }
        }
        var options = PackOptions()
        options.zip.encryption = .none
        let path = dir.appending("many.zip").path
        try ZipPackWriter().write(SourceTree.scan(root: source, includeHidden: false), to: path, options: options)
        let reader = try ZipPackReader(path: path, credential: nil)
        #expect(reader.entries.count == count)
        #expect(try reader.read("65/999") == [UInt8(999 & 0xFF)])
        #expect(try reader.read("00/0") == [0])
    }
}
