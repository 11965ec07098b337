import AssetPackCore
import Foundation
import Testing

@testable import AssetPackContainer

/// Incremental re-packs of the container (format version 2): unchanged entries are copied as
/// they are, changed and new ones get fresh key ids, and anything that cannot be reused safely
/// is packed afresh.
@Suite struct IncrementalTests {
    /// A source tree on disk that can be edited between packs.
    final class Tree {
        let scratch = Scratch()
        var root: URL { scratch.url.appendingPathComponent("src") }
        var output: String { scratch.url.appendingPathComponent("out.apack").path }

        init(_ files: [String: [UInt8]]) throws {
            for (path, bytes) in files { try set(path, bytes) }
        }

        func set(_ path: String, _ bytes: [UInt8]) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }

        func remove(_ path: String) throws { try FileManager.default.removeItem(at: root.appendingPathComponent(path)) }

        @discardableResult
        func pack(
            credential: PackCredential = testKey, fresh: Bool = false, chunkSize: Int = 4096,
            kdf: ContainerKDF = cheapKDF, compression: CompressionPolicy = .auto
        ) throws -> PackWriteReport {
            var options = PackOptions()
            options.format = .container
            options.credential = credential
            options.fresh = fresh
            options.container.chunkSize = chunkSize
            options.container.kdf = kdf
            options.compression = compression
            let files = try SourceTree.scan(root: root, includeHidden: false)
            return try ContainerPackWriter().write(files, to: output, options: options)
        }

        /// Every entry read back equals the file on disk, and nothing else is in the pack.
        func expectReadsBack(_ credential: PackCredential = testKey, sourceLocation: SourceLocation = #_sourceLocation)
            throws
        {
            let reader = try ContainerPackReader(path: output, credential: credential)
            let files = try SourceTree.scan(root: root, includeHidden: false)
            #expect(reader.entries.map(\.path) == files.map(\.path), sourceLocation: sourceLocation)
            for f in files {
                #expect(
                    try reader.read(f.path) == [UInt8](try Data(contentsOf: f.url)), "\(f.path)",
                    sourceLocation: sourceLocation)
            }
        }

        var bytes: [UInt8] { [UInt8](FileManager.default.contents(atPath: output) ?? Data()) }
        func reader(_ credential: PackCredential = testKey) throws -> ContainerPackReader {
            try ContainerPackReader(path: output, credential: credential)
        }
    }

    static func sample() throws -> Tree {
        try Tree([
            "a.txt": text(10_000), "b/noise.bin": noise(9000, seed: 1), "b/empty": [],
            "c/big.txt": text(70_000) + noise(5000, seed: 2), "d.json": Array(#"{"k": 1}"#.utf8),
        ])
    }

    @Test func nothingChangedReusesEveryEntryWithIdenticalBytes() throws {
        let tree = try Self.sample()
        #expect(try tree.pack() == PackWriteReport(reused: 0, packed: 5))
        let first = tree.bytes, firstHeader = try tree.reader().header
        let again = try tree.pack()
        #expect(again.reused == 5 && again.packed == 0)
        #expect(again.reusedBytes == UInt64(10_000 + 9000 + 0 + 75_000 + 8))
        let second = tree.bytes, secondHeader = try tree.reader().header
        // Entry bytes are identical; the salt (hence every key) is kept; only the index is resealed.
        #expect(secondHeader.salt == firstHeader.salt)
        #expect(secondHeader.indexOffset == firstHeader.indexOffset)
        #expect(second[104..<Int(secondHeader.indexOffset)] == first[104..<Int(firstHeader.indexOffset)])
        #expect(second[Int(secondHeader.indexOffset)...] != first[Int(firstHeader.indexOffset)...])
        try tree.expectReadsBack()
    }

    @Test func oneChangedFileIsTheOnlyOnePacked() throws {
        let tree = try Self.sample()
        try tree.pack()
        let before = try tree.reader().records
        try tree.set("b/noise.bin", noise(9000, seed: 99))  // same size, other content
        #expect(try tree.pack() == PackWriteReport(reused: 4, packed: 1, reusedBytes: 10_000 + 75_000 + 8))
        try tree.expectReadsBack()
        let after = try tree.reader().records
        for (old, new) in zip(before, after) {
            #expect(old.info.path == new.info.path)
            if new.info.path == "b/noise.bin" {
                // A new plaintext never meets an old key: the key id is fresh.
                #expect(old.keyID != new.keyID)
                #expect(old.sha256 != new.sha256)
            } else {
                #expect(old.keyID == new.keyID && old.sha256 == new.sha256)
            }
        }
    }

    @Test func addedAndRemovedFiles() throws {
        let tree = try Self.sample()
        try tree.pack()
        try tree.remove("a.txt")
        try tree.set("0-first.txt", text(300))
        try tree.set("z/last.bin", noise(70_000, seed: 5))
        let report = try tree.pack()
        #expect(report.reused == 4 && report.packed == 2)
        try tree.expectReadsBack()
    }

    @Test func aGrownOrShrunkFileIsPackedAgain() throws {
        let tree = try Self.sample()
        try tree.pack()
        try tree.set("a.txt", text(10_001))
        try tree.set("c/big.txt", text(4096))
        #expect(try tree.pack().packed == 2)
        try tree.expectReadsBack()
    }

    @Test func freshRepacksEverythingUnderANewSalt() throws {
        let tree = try Self.sample()
        try tree.pack()
        let salt = try tree.reader().header.salt
        #expect(try tree.pack(fresh: true) == PackWriteReport(reused: 0, packed: 5))
        #expect(try tree.reader().header.salt != salt)
        try tree.expectReadsBack()
    }

    @Test func anotherCredentialChunkSizeOrKDFPacksAfresh() throws {
        let tree = try Self.sample()
        try tree.pack()
        let other = PackCredential.key(Array(repeating: 9, count: 32))
        #expect(try tree.pack(credential: other).reused == 0)
        try tree.expectReadsBack(other)
        #expect(throws: AssetPackError.self) { try tree.reader(testKey) }
        #expect(try tree.pack(credential: other, chunkSize: 8192).reused == 0)
        try tree.expectReadsBack(other)

        try tree.pack(credential: .password("pw"))
        #expect(try tree.pack(credential: .password("pw")).reused == 5)
        #expect(try tree.pack(credential: .password("other")).reused == 0)
        #expect(try tree.pack(credential: .password("other"), kdf: .pbkdf2SHA256(iterations: 1000)).reused == 0)
        try tree.expectReadsBack(.password("other"))
    }

    @Test func aDamagedPreviousEntryIsPackedAfreshNotCopied() throws {
        let tree = try Self.sample()
        try tree.pack(compression: .store)
        let reader = try tree.reader()
        let victim = try #require(reader.records.first { $0.info.path == "c/big.txt" })
        var bytes = tree.bytes
        bytes[Int(victim.offset) + 5000] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        let report = try tree.pack(compression: .store)
        #expect(report.reused == 4 && report.packed == 1)
        try tree.expectReadsBack()
    }

    @Test func aVersion1PackAtTheOutputIsReplacedByAFullPack() throws {
        let tree = try Self.sample()
        let vector = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
            .appendingPathComponent("v1-key-store.apack")
        try FileManager.default.copyItem(atPath: vector.path, toPath: tree.output)
        #expect(try ContainerPackReader(path: tree.output, credential: testKey).header.version == 1)
        #expect(try tree.pack().reused == 0)
        #expect(try tree.reader().header.version == 2)
        try tree.expectReadsBack()
    }

    @Test func deflatedChunksAreReusedWithTheirLengths() throws {
        let tree = try Self.sample()
        try tree.pack(compression: .deflate)
        let before = try tree.reader().records.map(\.starts)
        #expect(before.contains { $0 != nil })
        #expect(try tree.pack(compression: .deflate).reused == 5)
        #expect(try tree.reader().records.map(\.starts) == before)
        try tree.expectReadsBack()
    }
}
