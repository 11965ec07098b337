import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// Incremental re-packs of the container (format version 4): unchanged chunks are copied as they
/// were sealed, changed ones are sealed under fresh random nonces, and anything that cannot be
/// reused safely is packed afresh.
@Suite struct IncrementalTests {
    /// A source tree on disk that can be edited between packs.
    final class Tree {
        let scratch = Scratch()
        var root: URL { scratch.url.appendingPathComponent("src") }
        var output: String { scratch.url.appendingPathComponent("out.apack").path }
        /// Packs as the 0.2 writer appended (``ContainerPackWriter/legacyAppends``).
        var legacyAppends = false
        /// ``PackOptions/sourceStatusCache`` and its racy margin (none: `PackOptions.forTests`).
        var statusCache: URL?
        var racyMargin = SourceStatusCache.defaultRacyMargin
        /// ``ContainerPackWriter/batchBytes``.
        var batchBytes = ChunkBuffers.defaultBatch
        /// ``ContainerPackWriter/sourceOpened``.
        var sourceOpened: (SourceFile) throws -> Void = { _ in }

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
            kdf: ContainerKDF? = .forTests, compression: CompressionPolicy = .auto,
            codec: ContainerCodec = BuildConfiguration.codecs[0],
            level: CompressionLevel = .default, extra: [SourceFile] = [], signingKey: PublisherSigningKey? = nil
        ) throws -> PackWriteReport {
            var options = PackOptions.forTests
            options.format = .container
            options.credential = credential
            options.fresh = fresh
            options.container.chunkSize = chunkSize
            options.container.kdf = kdf
            options.compression = compression
            options.container.codec = codec
            options.level = level
            options.signingKey = signingKey
            options.sourceStatusCache = statusCache
            options.sourceStatusRacyMargin = racyMargin
            let files = try SourceTree.scan(root: root, includeHidden: false)
            var writer = ContainerPackWriter()
            writer.legacyAppends = legacyAppends
            writer.batchBytes = batchBytes
            writer.sourceOpened = sourceOpened
            return try writer.write(files + extra, to: output, options: options)
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
        /// A reader of a copy of the pack as it is now: a re-pack zeroes what it replaced, index
        /// included, so a reader of the file itself no longer reads an earlier version whole.
        func snapshot(_ credential: PackCredential = testKey) throws -> ContainerPackReader {
            let copy = output + ".\(UUID().uuidString)"
            try FileManager.default.copyItem(atPath: output, toPath: copy)
            return try ContainerPackReader(path: copy, credential: credential)
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
        let full = try tree.pack()
        #expect(full.reused == 0 && full.packed == 5 && full.reusedChunks == 0)
        let first = tree.bytes, firstHeader = try tree.reader().header
        let inode = try FileSystem.stat(tree.output).inode
        // Its modification time too: a server's ETag (nginx's) is made of it.
        Thread.sleep(forTimeInterval: 0.01)
        let modified = try FileSystem.stat(tree.output).modificationTime
        let again = try tree.pack()
        #expect(again.reused == 5 && again.packed == 0 && again.reusedChunks == again.chunks)
        // The five entries' sizes: 10,000 + 9,000 + 0 + 75,000 + 8 (a literal sum here took the
        // type checker 7 s).
        let allBytes: UInt64 = 94_008
        #expect(again.reusedBytes == allBytes)
        let second = tree.bytes, secondHeader = try tree.reader().header
        // Nothing changed: the pack is left as it was, byte for byte and the same file (an
        // installer asking its server learns that in one request), and nothing is written.
        #expect(secondHeader == firstHeader)
        #expect(second == first)
        #expect(again.bytesWritten == 0)
        #expect(try FileSystem.stat(tree.output).inode == inode)
        #expect(try FileSystem.stat(tree.output).modificationTime == modified)
        try tree.expectReadsBack()
        // One entry changed: the others' chunks are copied as they were, the salt (hence every
        // key) is kept, and the index is resealed under a fresh nonce.
        try tree.set("d.json", Array(#"{"k": 2}"#.utf8))
        let third = try tree.pack()
        #expect(third.reused == 4 && third.packed == 1 && third.bytesWritten > 0)
        let thirdHeader = try tree.reader().header
        #expect(thirdHeader.salt == firstHeader.salt)
        #expect(tree.bytes[256..<262] == first[256..<262])
        try tree.expectReadsBack()
    }

    @Test func oneChangedFileIsTheOnlyOnePacked() throws {
        let tree = try Self.sample()
        try tree.pack()
        let first = try tree.snapshot()
        let before = try first.records.all()
        try tree.set("b/noise.bin", noise(9000, seed: 99))  // same size, other content
        let report = try tree.pack()
        #expect(report.reused == 4 && report.packed == 1 && report.reusedBytes == 10_000 + 75_000 + 8)
        try tree.expectReadsBack()
        let second = try tree.reader()
        let after = try second.records.all()
        let (oldDigests, newDigests) = (try first.digests(), try second.digests())
        for (old, new) in zip(before, after) {
            #expect(old.info.path == new.info.path)
            // Every entry keeps its key id (its unchanged chunks stay valid under its key).
            #expect(old.keyID == new.keyID)
            #expect(oldDigests.entry(old) != nil)
            #expect((oldDigests.entry(old) == newDigests.entry(new)) == (new.info.path != "b/noise.bin"))
        }
        try Self.expectNoNonceSealsTwoPlaintexts([first, try tree.reader()])
    }

    @Test func addedAndRemovedFiles() throws {
        let tree = try Self.sample()
        try tree.pack()
        try tree.remove("a.txt")
        try tree.set("0-first.txt", text(300))
        try tree.set("z/last.bin", noise(70_000, seed: 5))
        let report = try tree.pack()
        #expect(report.reused == 4 && report.packed == 2)
        // "removed" for the summary, counted from the pack the writer reused (the CLI then opens
        // it no second time); unknown when the writer did not read it.
        #expect(report.removed == 1)
        #expect(try tree.pack(fresh: true).removed == nil)
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
        let fresh = try tree.pack(fresh: true)
        #expect(fresh.reused == 0 && fresh.packed == 5 && fresh.reusedChunks == 0)
        #expect(try tree.reader().header.salt != salt)
        try tree.expectReadsBack()
    }

    /// Another chunk size or KDF packs afresh; another credential is refused (the pack at the
    /// output left byte for byte) unless `fresh`, which replaces it.
    @Test func anotherCredentialIsRefusedUnlessFreshAndAnotherChunkSizeOrKDFPacksAfresh() throws {
        let tree = try Self.sample()
        try tree.pack()
        let other = PackCredential.key(Array(repeating: 9, count: 32))
        let before = try Data(contentsOf: URL(fileURLWithPath: tree.output))
        let refused = #expect(throws: AssetPackError.self) { try tree.pack(credential: other) }
        #expect(refused?.code == .wrongPassword && refused?.message.contains("does not open") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: tree.output)) == before)
        #expect(try tree.pack(credential: other, fresh: true).reused == 0)
        try tree.expectReadsBack(other)
        #expect(throws: AssetPackError.self) { try tree.reader(testKey) }
        #expect(try tree.pack(credential: other, chunkSize: 8192).reused == 0)
        try tree.expectReadsBack(other)

        #expect(throws: AssetPackError.self) { try tree.pack(credential: .password("pw")) }
        try tree.pack(credential: .password("pw"), fresh: true)
        #expect(try tree.pack(credential: .password("pw")).reused == 5)
        #expect(throws: AssetPackError.self) { try tree.pack(credential: .password("other")) }
        #expect(try tree.pack(credential: .password("other"), fresh: true).reused == 0)
        #expect(try tree.pack(credential: .password("other"), kdf: .pbkdf2SHA256(iterations: 1000)).reused == 0)
        try tree.expectReadsBack(.password("other"))
    }

    /// A re-pack that names no KDF keeps the previous pack's (`--scrypt-cost` left out keeps the
    /// cost a pack was made with); one that names another packs everything afresh under it.
    @Test func aRepackKeepsThePreviousKDFUnlessAnotherIsGiven() throws {
        let tree = try Self.sample()
        let pw = PackCredential.password("pw")
        func params() throws -> [UInt32] { try tree.reader(pw).header.params }
        try tree.pack(credential: pw, kdf: .scrypt(logN: 11, r: 8, p: 1))
        #expect(try params() == [11, 8, 1])
        #expect(try tree.pack(credential: pw, kdf: nil).reused == 5)
        #expect(try params() == [11, 8, 1])
        try tree.set("a.txt", Array("changed".utf8))
        let another = try tree.pack(credential: pw, kdf: .scrypt(logN: 12, r: 8, p: 1))
        #expect(another.reused == 0 && another.reusedChunks == 0)
        #expect(try params() == [12, 8, 1])
        try tree.expectReadsBack(pw)
    }

    @Test func aDamagedPreviousEntryIsPackedAfreshNotCopied() throws {
        let tree = try Self.sample()
        try tree.pack(compression: .store)
        let reader = try tree.reader()
        let victim = try #require(reader.records.all().first { $0.info.path == "c/big.txt" })
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
        #expect(try tree.reader().header.version == ContainerFormat.version)
        try tree.expectReadsBack()
    }

    @Test(arguments: BuildConfiguration.codecs)
    func compressedChunksAreReusedWithTheirLengths(codec: ContainerCodec) throws {
        let tree = try Self.sample()
        try tree.pack(compression: .deflate, codec: codec)
        /// Every chunk's payload length, nonce and plaintext digest.
        func chunks(_ reader: ContainerPackReader) throws -> [(UInt32, [UInt8], [UInt8])] {
            let digests = try reader.digests()
            return (0..<reader.chunks.count).map {
                (reader.chunks.payload($0), reader.chunks.nonce($0), digests.chunk($0))
            }
        }
        let before = try chunks(tree.reader())
        #expect(before.contains { $0.0 & ChunkTable.compressedBit != 0 })
        #expect(try tree.pack(compression: .deflate, codec: codec).reused == 5)
        let after = try chunks(tree.reader())
        #expect(
            after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1) && after.map(\.2) == before.map(\.2))
        try tree.expectReadsBack()
    }

    /// A re-pack with the other codec never copies a chunk the old codec compressed into an entry
    /// that now names the new one: the pack reads back (it used to fail: a zstd frame inflated as deflate).
    @Test(
        .enabled(if: BuildConfiguration.codecs.count > 1),
        arguments: [(ContainerCodec.zstd, ContainerCodec.deflate), (.deflate, .zstd)])
    func aRepackWithAnotherCodecReadsBack(from: ContainerCodec, to: ContainerCodec) throws {
        let tree = try Self.sample()
        try tree.pack(compression: .deflate, codec: from)
        try tree.pack(compression: .deflate, codec: to)
        try tree.expectReadsBack()
        let reader = try tree.reader()
        let compressed = try reader.records.all().filter { e in
            (0..<e.chunkCount).contains { reader.isCompressed(e, $0) }
        }
        #expect(!compressed.isEmpty)
        for e in compressed { #expect(e.codec == (to == .zstd ? .zstd : .deflate), "\(e.info.path)") }
    }

    /// Over two versions of a pack (one salt, so one key per key id): a (key id, nonce) pair that
    /// appears in both seals the same plaintext (the same digest) in both, and no pair appears twice
    /// within one version.
    static func expectNoNonceSealsTwoPlaintexts(
        _ versions: [ContainerPackReader], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var seen: [[UInt8]: [UInt8]] = [:]
        for reader in versions {
            var inThis = Set<[UInt8]>()
            let digests = try reader.digests()
            for e in try reader.records.all() {
                for c in 0..<e.chunkCount {
                    let k = e.firstChunk + c
                    let pair = (e.keyID ?? []) + reader.chunks.nonce(k)
                    #expect(
                        inThis.insert(pair).inserted, "a nonce used twice in one pack", sourceLocation: sourceLocation)
                    if let digest = seen[pair] {
                        #expect(
                            digest == digests.chunk(k), "a nonce sealed two plaintexts",
                            sourceLocation: sourceLocation)
                    }
                    seen[pair] = digests.chunk(k)
                }
            }
        }
    }

    /// A large entry edited three ways: each re-pack re-seals only the chunks around the edit, every
    /// other chunk is copied, the result reads back, and no nonce ever seals two plaintexts.
    @Test func anEditReSealsOnlyTheChunksAroundIt() throws {
        let size = 1 << 20  // 4 KiB average chunks: about 256 of them
        var data = noise(size, seed: 42)
        let tree = try Tree(["big.bin": data, "small.txt": text(500)])
        try tree.pack()
        var versions = [try tree.snapshot()]
        func repack(_ edit: String, mostNew: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try tree.set("big.bin", data)
            let report = try tree.pack()
            let sealed = report.chunks - report.reusedChunks
            #expect(
                sealed >= 1 && sealed <= mostNew, "\(edit): \(sealed) chunks sealed", sourceLocation: sourceLocation)
            #expect(report.reused == 1 && report.packed == 1, sourceLocation: sourceLocation)
            try tree.expectReadsBack(sourceLocation: sourceLocation)
            versions.append(try tree.snapshot())
        }
        data[size / 2] ^= 0xFF
        try repack("one byte changed", mostNew: 2)
        data.insert(contentsOf: noise(4096, seed: 7), at: size / 3)
        try repack("4 KiB inserted", mostNew: 4)
        data += noise(64 << 10, seed: 8)
        try repack("64 KiB appended", mostNew: 64 / 4 * 3)
        try Self.expectNoNonceSealsTwoPlaintexts(versions)
    }
}
