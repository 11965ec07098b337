import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// A re-pack takes a changed file's chunk boundaries from the previous entry's layout where the
/// bytes are the same (``ChunkLayoutGuess``): whatever the edit, the entry must be cut exactly
/// where a fresh pack cuts it, and read back.
@Suite struct ChunkLayoutGuessTests {
    /// An edit of a file's bytes, by name.
    struct Edit: CustomTestStringConvertible, Sendable {
        let name: String
        let apply: @Sendable ([UInt8]) -> [UInt8]
        var testDescription: String { name }
    }

    static let size = 300_000

    static let edits: [Edit] = [
        Edit(name: "one byte in the middle flipped") {
            var d = $0; d[size / 2] ^= 0xFF; return d
        },
        Edit(name: "the first byte flipped") {
            var d = $0; d[0] ^= 0xFF; return d
        },
        Edit(name: "the last byte flipped") {
            var d = $0; d[d.count - 1] ^= 0xFF; return d
        },
        Edit(name: "3,000 bytes inserted") {
            var d = $0; d.insert(contentsOf: noise(3000, seed: 5), at: 100_000); return d
        },
        Edit(name: "5,000 bytes deleted") {
            var d = $0; d.removeSubrange(200_000..<205_000); return d
        },
        Edit(name: "one byte prepended") { [7] + $0 },
        Edit(name: "20 KiB appended") { $0 + noise(20 << 10, seed: 6) },
        Edit(name: "10 bytes appended") { $0 + noise(10, seed: 7) },
        Edit(name: "100 bytes cut off the end") { Array($0.dropLast(100)) },
        Edit(name: "nothing changed") { $0 },
        Edit(name: "every byte changed") { _ in noise(size, seed: 9) },
    ]

    /// The plaintext lengths of `path`'s chunks.
    static func layout(_ reader: ContainerPackReader, _ path: String) throws -> [Int] {
        let e = try #require(try reader.records.all().first { $0.info.path == path })
        return (0..<e.chunkCount).map { reader.plainLength(e, $0) }
    }

    /// The lengths a fresh cut with the test pack's bounds (4 KiB average) makes of `data`.
    static func freshCut(_ data: [UInt8], scale: Int = 0) -> [Int] {
        let chunker = ContentChunker(min: 1024 << scale, avg: 4096 << scale, max: 16384)
        let ends = data.withUnsafeBytes { chunker.boundaries(of: $0) }
        return zip(ends, [0] + ends).map { $0 - $1 }
    }

    /// Packs `before`, re-packs `edit`ed, in batches of 32 KiB (the smallest: twice the largest
    /// chunk) so that guesses run over batch edges; returns the re-pack's report and its layout.
    /// `cache`: with a status cache (racy margin 0), as the command packs: the re-pack appends in
    /// place without reading the chunks it keeps.
    static func repack(_ before: [UInt8], to after: [UInt8], batch: Int = 32 << 10, cache: Bool = false) throws -> (
        report: PackWriteReport, layout: [Int], tree: IncrementalTests.Tree
    ) {
        let tree = try IncrementalTests.Tree(["big.bin": before, "small.txt": text(500)])
        tree.batchBytes = batch
        if cache {
            tree.statusCache = tree.scratch.url.appendingPathComponent("status-cache")
            tree.racyMargin = 0
        }
        try tree.pack()
        try tree.set("big.bin", after)
        let report = try tree.pack()
        try tree.expectReadsBack()
        return (report, try layout(tree.reader(), "big.bin"), tree)
    }

    @Test(arguments: edits, [false, true])
    func aRepackCutsAnEditedFileWhereAFreshPackWould(edit: Edit, cache: Bool) throws {
        let before = noise(Self.size, seed: 42)
        let after = edit.apply(before)
        let (report, layout, _) = try Self.repack(before, to: after, cache: cache)
        #expect(layout == Self.freshCut(after))
        // The guess did the work it is for: all but the chunks near the edit came uncut.
        let chunks = layout.count + 1  // and small.txt's
        #expect(report.chunks == chunks)
        // With the cache small.txt is not read at all; big.bin is (it was written again).
        let small = cache ? 0 : 1
        switch edit.name {
        case "every byte changed": #expect(report.uncutChunks == small)  // small.txt, read again whole
        case "nothing changed": #expect(report.uncutChunks == chunks - 1 + small)
        default: #expect(report.uncutChunks >= chunks - 12, "\(report.uncutChunks) of \(chunks) uncut")
        }
    }

    /// A compressible entry is cut with the larger bounds (chunk scale 1), its chunks compressed:
    /// the guess is taken from an entry of the same scale, and cuts where a fresh pack would.
    @Test func aCompressedEntryIsCutWhereAFreshPackWould() throws {
        var before = [UInt8]()
        for i in 0..<12_000 { before += Array("line \(i) of a text that compresses \(i * 7919 % 1000)\n".utf8) }
        var after = before
        after.insert(contentsOf: Array("an inserted line\n".utf8), at: after.count / 3)
        let (report, layout, tree) = try Self.repack(before, to: after)
        let e = try #require(try tree.reader().records.all().first { $0.info.path == "big.bin" })
        #expect(e.scale == ChunkingParameters.largeScale)
        #expect(layout == Self.freshCut(after, scale: 1))
        #expect(report.uncutChunks >= layout.count - 6)
    }

    /// A file whose chunks moved (its bytes shifted by an edit at the start) is cut, then
    /// guessed again from the first chunk found unchanged: one edit costs about one batch of
    /// cutting, not the rest of the file.
    @Test func theGuessResumesAfterTheBatchThatHeldTheEdit() throws {
        let before = noise(1 << 20, seed: 3)
        var after = before
        after.insert(contentsOf: noise(777, seed: 4), at: 10)
        let (report, layout, _) = try Self.repack(before, to: after)
        #expect(layout == Self.freshCut(after))
        // The 32 KiB batch with the edit (about 8 chunks) and the one after it are cut.
        #expect(report.uncutChunks >= layout.count - 20, "\(report.uncutChunks) of \(layout.count) uncut")
    }

    /// A file that changes size between its `stat` and its read is refused with an I/O error
    /// that names it, and the pack at the output stays the one that was there: with the previous
    /// entry's chunks guessed (each read by the task that compares it) or without them (`fresh`:
    /// the batch read in one piece under 2 MiB, in parts on every core from there), in one batch
    /// or in several (`batch`: the short read then comes after a batch with a carried tail).
    @Test(arguments: [
        (100_000, false, ChunkBuffers.defaultBatch), (3 << 20, false, ChunkBuffers.defaultBatch),
        (3 << 20, true, ChunkBuffers.defaultBatch), (3 << 20, false, 512 << 10), (3 << 20, true, 512 << 10),
    ])
    func aFileThatShrinksOrGrowsWhileItIsReadIsRefused(size: Int, fresh: Bool, batch: Int) throws {
        let tree = try IncrementalTests.Tree(["big.bin": noise(size, seed: 1), "small.txt": text(500)])
        tree.batchBytes = batch
        try tree.pack()
        let before = tree.bytes
        let path = tree.root.appendingPathComponent("big.bin").path
        try tree.set("big.bin", noise(size, seed: 2))
        // Cut early (the first part short) and late (the first full, a later one short).
        let shrank = "file shrank while it was being packed"
        for (change, message) in [
            (size / 3, shrank), (size - 1000, shrank), (size + 1, "file grew while it was being packed"),
        ] {
            tree.sourceOpened = { file in
                guard file.path == "big.bin" else { return }
                let handle = try #require(FileHandle(forUpdatingAtPath: path))
                defer { try? handle.close() }
                if change < size {
                    try handle.truncate(atOffset: UInt64(change))
                } else {
                    try handle.seekToEnd()
                    try handle.write(contentsOf: Data([1]))
                }
            }
            let error = #expect(throws: AssetPackError.self) { try tree.pack(fresh: fresh) }
            #expect(error?.code == .io)
            #expect(error?.message == message)
            #expect(error?.path == "big.bin")
            let unchanged = tree.bytes == before  // not expanded: a diff of megabytes takes minutes
            #expect(unchanged)
            tree.sourceOpened = { _ in }
            try tree.set("big.bin", noise(size, seed: 2))
        }
    }

    /// Batches large enough for each to be compared on every core (512 KiB of 4 KiB chunks),
    /// several per file, so that tasks read chunks that start in the tail carried from the batch
    /// before: the layout is a fresh cut's and the file reads back, edited and not.
    @Test(arguments: [false, true])
    func chunksComparedOnEveryCoreAcrossBatchesAreCutWhereAFreshPackWould(cache: Bool) throws {
        let before = noise(3 << 20, seed: 21)
        var flipped = before
        flipped[2_000_000] ^= 0x10
        var inserted = before
        inserted.insert(contentsOf: noise(5000, seed: 22), at: 1_500_000)
        for after in [before, flipped, inserted] {
            let (report, layout, _) = try Self.repack(before, to: after, batch: 512 << 10, cache: cache)
            #expect(layout == Self.freshCut(after))
            #expect(report.uncutChunks >= layout.count - 150, "\(report.uncutChunks) of \(layout.count) uncut")
        }
    }

    /// Files whose chunks repeat: zeros (every chunk cut at the largest size, as no boundary
    /// passes) and a 20 KiB block of noise over and over (equal chunks, which reuse the previous chunks by
    /// rank). Edited in the middle and at the start, and grown, they are cut where a fresh pack
    /// cuts them, with the cache (in place) and without.
    @Test(arguments: [false, true])
    func aFileOfRepeatedContentIsCutWhereAFreshPackWould(cache: Bool) throws {
        let block = noise(20 << 10, seed: 8)
        let files: [[UInt8]] = [[UInt8](repeating: 0, count: 400_000), Array((0..<20).map { _ in block }.joined())]
        for before in files {
            var flipped = before
            flipped[before.count / 2] ^= 0x55
            var inserted = before
            inserted.insert(contentsOf: noise(777, seed: 9), at: 5)
            for after in [flipped, inserted, before + block] {
                let (report, layout, tree) = try Self.repack(before, to: after, cache: cache)
                // Both compress: cut at chunk scale 1.
                let e = try #require(try tree.reader().records.all().first { $0.info.path == "big.bin" })
                #expect(e.scale == ChunkingParameters.largeScale)
                #expect(layout == Self.freshCut(after, scale: Int(e.scale)))
                #expect(report.uncutChunks > 0)
            }
        }
    }

    /// A previous chunk whose tag fails (the pack damaged on disk) is not kept where the source
    /// still holds its bytes: its file is read again for another change, the guess finds the
    /// chunk damaged, and the re-pack seals it afresh, in place with the cache too (where kept
    /// chunks are otherwise not read), and signed (the signature lists the new chunk). Every
    /// entry reads back.
    @Test(arguments: [(false, false), (true, false), (true, true)])
    func aDamagedPreviousChunkIsNotKeptInAFileReadAgain(cache: Bool, signed: Bool) throws {
        let key = signed ? PublisherSigningKey.generate() : nil
        var data = noise(Self.size, seed: 12)
        let tree = try IncrementalTests.Tree(["big.bin": data])
        if cache {
            tree.statusCache = tree.scratch.url.appendingPathComponent("status-cache")
            tree.racyMargin = 0
        }
        try tree.pack(signingKey: key)
        // Damage the payload of the entry's sixth chunk, in the file.
        let reader = try tree.reader()
        let e = try #require(try reader.records.all().first)
        let (offset, _) = reader.storedChunk(e, 5)
        let handle = try #require(FileHandle(forUpdatingAtPath: tree.output))
        try handle.seek(toOffset: offset + 10)
        let byte = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: offset + 10)
        try handle.write(contentsOf: Data([byte[0] ^ 0xFF]))
        try handle.close()
        #expect(throws: AssetPackError.self) { try tree.reader().read("big.bin") }
        // Another change, far from it.
        data[data.count - 100] ^= 1
        try tree.set("big.bin", data)
        try tree.pack(signingKey: key)
        try tree.expectReadsBack()
        if let key {
            let trusted = try ContainerPackReader(
                path: tree.output, credential: testKey, trustedKeys: [key.publicKey])
            #expect(try trusted.read("big.bin") == data)
        }
    }
}
