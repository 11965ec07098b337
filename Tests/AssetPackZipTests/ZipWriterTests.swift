import AssetPackCore
import AssetPackTestSupport
@testable import AssetPackZip
import Foundation
import Testing

/// Packs `tree` with `writer` and returns the pack's path.
func writeZip(
    _ tree: [String: [UInt8]], in dir: TemporaryDirectory, writer: ZipPackWriter = ZipPackWriter(),
    encryption: PackEncryption = .aes256, compression: CompressionPolicy = .auto, password: String = "s3cret",
    name: String = "out.zip", fresh: Bool = false, progress: (@Sendable (PackProgress) -> Void)? = nil,
    signingKey: PublisherSigningKey? = nil
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
    options.signingKey = signingKey
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
    #if SystemLibraries  // libzip as the independent reader
    let libzip: ZipPackReader? = try ZipPackReader(path: path, credential: credential, decoder: .libzip)
    #else
    let libzip: ZipPackReader? = nil
    #endif
    #expect(reader.entries.map(\.path) == tree.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    for (name, bytes) in tree {
        #expect(try reader.read(name) == bytes, "\(name)")
        if let libzip { #expect(try libzip.read(name) == bytes, "libzip: \(name)") }
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

    @Test(.slow, arguments: [PackEncryption.aes256, .none], [CompressionPolicy.auto, .store, .deflate])
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
                // libdeflate never shortens text under 32 bytes; zlib (the portable build's) sometimes does.
                let incompressible =
                    entry.path.hasPrefix("random/") || (entry.size < 32 && !BuildConfiguration.isPortable)
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

    @Test(.slow) func outputIsReproducibleWithFixedSalts() throws {
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

    @Test func reservedPathsAreRefused() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write([".assetpack/manifest": [1, 2, 3], "a.txt": [4]], under: "src")
        var options = PackOptions()
        options.credential = .password("s3cret")
        let files = try SourceTree.scan(root: source, includeHidden: true)
        let error = #expect(throws: AssetPackError.self) {
            try ZipPackWriter().write(files, to: dir.appending("x.zip").path, options: options)
        }
        #expect(error?.code == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: dir.appending("x.zip").path))
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

    @Test(.slow) func moreThan65535EntriesUseZip64() throws {
        // 66,000 entries, all read from one source file (creating 66,000 files costs ~40 s here).
        let dir = TemporaryDirectory()
        let source = try dir.write(["one": [42]], under: "src").appendingPathComponent("one")
        let count = 66_000
        let files = (0..<count).map { SourceFile(path: String(format: "e/%05d", $0), url: source, size: 1) }
        var options = PackOptions()
        options.zip.encryption = .none
        let path = dir.appending("many.zip").path
        try ZipPackWriter().write(files, to: path, options: options)
        let reader = try ZipPackReader(path: path, credential: nil)
        #expect(reader.entries.count == count)
        #expect(try reader.read("e/65999") == [42])
        #expect(try reader.read("e/00000") == [42])
        // The end record defers to zip64's: its count field is saturated.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(bytes[(bytes.count - 22)..<(bytes.count - 18)]) == [0x50, 0x4B, 5, 6])
        #expect(Array(bytes[(bytes.count - 12)..<(bytes.count - 10)]) == [0xFF, 0xFF])
        // Signed, the zip64 end records are rebuilt and checked like the 32-bit ones.
        let key = PublisherSigningKey.generate()
        options.signingKey = key
        try ZipPackWriter().write(files, to: path, options: options)
        let signed = try ZipPackReader(path: path, credential: nil, trustedKeys: [key.publicKey])
        #expect(signed.entries.count == count && signed.publisher == key.publicKey)
        #expect(try signed.read("e/65999") == [42])
        #expect(
            try ZipSignature.trustedSignature(FileByteSource(path: path), trusting: [key.publicKey]).publisher
                == key.publicKey)
    }
}

/// Each entry's raw bytes in a zip (local header through the end of its data), by name.
func rawEntries(_ path: String) throws -> [String: [UInt8]] {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let read = { (offset: UInt64, count: Int) -> [UInt8] in Array(bytes[Int(offset)..<(Int(offset) + count)]) }
    let structure = try ZipStructure(fileSize: UInt64(bytes.count), limits: .default, read: read)
    var raw: [String: [UInt8]] = [:]
    for (i, r) in structure.records.enumerated() {
        let dataStart = try structure.checkLocalHeader(i, read: read)
        raw[String(decoding: r.name, as: UTF8.self)] = Array(
            bytes[Int(r.localHeaderOffset)..<Int(dataStart + r.compressedSize)])
    }
    return raw
}

/// The manifest entry of the zip at `path`, from its local header: its compression method (for
/// WinZip AES, the one its 0x9901 extra field names), its stored data, and its uncompressed size.
func manifestEntry(_ path: String) throws -> (method: Int, data: [UInt8], size: Int) {
    let raw = try #require(rawEntries(path)[ZipManifest.entryName])
    let u16 = { (at: Int) in Int(raw[at]) | Int(raw[at + 1]) << 8 }
    let n = u16(26), m = u16(28)
    var method = u16(8)
    var at = 30 + n
    while at + 4 <= 30 + n + m {
        if u16(at) == 0x9901 { method = u16(at + 9) }
        at += 4 + u16(at + 2)
    }
    return (method, Array(raw[(30 + n + m)...]), raw[22..<26].reversed().reduce(0) { $0 << 8 | Int($1) })
}

/// The content of an unencrypted zip's manifest (inflated when deflated).
func manifestContent(_ path: String) throws -> [UInt8] {
    let (method, data, size) = try manifestEntry(path)
    guard method == 8 else { return data }
    var out = [UInt8](repeating: 0, count: size)
    try data.withUnsafeBytes { i in try out.withUnsafeMutableBytes { try RawDeflate.decompress(i, into: $0) } }
    return out
}

/// Sets an entry's CRC-32 in its local and central headers.
func setCRC(_ name: String, _ crc: UInt32, in bytes: inout [UInt8]) {
    let (local, central) = ZipSurgery.headers(named: Array(name.utf8), in: bytes)
    let le = (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
    for h in local { bytes.replaceSubrange((h + 14)..<(h + 18), with: le) }
    for h in central { bytes.replaceSubrange((h + 16)..<(h + 20), with: le) }
}
