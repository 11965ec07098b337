#if SystemLibraries  // zstd dictionaries need libzstd: the default configuration only
import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// The pack's zstd dictionary (codec 3, docs/FORMAT.md "The pack's dictionary"): trained on the
/// pack's small compressible files, stored as the hidden entry `.assetpack/zstd-dictionary`,
/// kept by re-packs, and checked when a pack is opened.
@Suite struct DictionaryTests {
    /// A game-like tree: `count` small configuration files that share most of their vocabulary,
    /// a larger text file and an incompressible one.
    static func game(_ count: Int = 40) throws -> IncrementalTests.Tree {
        var files: [String: [UInt8]] = ["big.bin": noise(300_000, seed: 5), "readme.txt": text(50_000)]
        for i in 0..<count { files["units/unit\(i).cfg"] = configFile(i) }
        return try IncrementalTests.Tree(files)
    }

    /// Version 8 decodes a record when it is used; the dictionary's is used at open, so a record
    /// of it damaged under the pack's key is refused at open (it was skipped, silently, and every
    /// codec-3 entry then failed on its own).
    @Test func aDamagedDictionaryRecordIsRefusedAtOpen() throws {
        let tree = try Self.game()
        try tree.pack()
        let reader = try tree.reader()
        let position = try #require(reader.records.dictionary)
        var bytes = tree.bytes
        let (headerBytes, header) = try ContainerHeader.read(from: FileByteSource(path: tree.output))
        let key = reader.keys.indexKey(version: header.version)
        let at = Int(header.indexOffset)..<Int(header.indexOffset + header.indexLength)
        var index = try ContainerIndex.unsealV8(Array(bytes[at]), key: key, headerBytes: headerBytes)
        index.table[IndexV8Tests.entryAt(position) + 7] = 2  // its chunk scale: none there is
        bytes.replaceSubrange(
            at,
            with: ContainerIndex.sealV8(
                table: index.table, digests: index.digests, nonce: index.nonce, key: key, headerBytes: headerBytes))
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        let error = #expect(throws: AssetPackError.self) { try tree.reader() }
        #expect(
            error?.code == .integrityFailure && error?.path == PackDictionary.entryName, "\(String(describing: error))")
    }

    @Test func smallFilesShareATrainedDictionaryAndReadBack() throws {
        let tree = try Self.game()
        try tree.pack()
        let reader = try tree.reader()
        let dictionary = try #require(reader.zstdDictionary)
        #expect((1...PackDictionary.capacity).contains(dictionary.count))
        for r in try reader.records.all() where !DeletionRecord.isReserved(r.info.path) {
            #expect(r.codec == (r.info.path == "big.bin" ? ChunkCodec.none : .zstdDictionary), "\(r.info.path)")
        }
        // The dictionary is the pack's own: stored, never listed, never found by path.
        let own = try #require(reader.records.all().first { $0.info.path == PackDictionary.entryName })
        #expect(own.codec == ChunkCodec.none && own.info.size == UInt64(dictionary.count))
        #expect(reader.entry(PackDictionary.entryName) == nil)
        #expect(!reader.entries.contains { $0.path.hasPrefix(".assetpack/") })
        try tree.expectReadsBack()

        // It pays: the configuration files take at most three quarters of what zstd at the same
        // level gives each alone, and less even counting the dictionary.
        let alone = Zstd.Compressor(level: Zstd.defaultLevel)
        var without = 0
        for i in 0..<40 {
            let input = configFile(i)
            var out = [UInt8](repeating: 0, count: alone.bound(input.count))
            input.withUnsafeBytes { src in out.withUnsafeMutableBytes { without += alone.compress(src, into: $0)! } }
        }
        let with = reader.entries.filter { $0.path.hasPrefix("units/") }.reduce(0) { $0 + Int($1.storedSize) }
        #expect(
            with <= without * 3 / 4 && with + dictionary.count < without,
            "\(with) + \(dictionary.count) against \(without)")
    }

    /// The dictionary's entry (`.assetpack/…`) goes in among the sources where its path sorts:
    /// after names that sort before `.` (`!`, `-`), and last when every name does.
    @Test func theDictionaryEntrySortsInAmongTheSourcesWhereverItFalls() throws {
        for prefix in ["", "-"] {
            var files: [String: [UInt8]] = ["!first.txt": text(3000), "-second.txt": text(4000)]
            for i in 0..<40 { files["\(prefix)units/unit\(i).cfg"] = configFile(i) }
            let tree = try IncrementalTests.Tree(files)
            try tree.pack()
            let reader = try tree.reader()
            let all = try reader.records.all().map(\.info.path)
            #expect(all == all.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } && all.count == 43)
            let at = try #require(all.firstIndex(of: PackDictionary.entryName))
            #expect(at == (prefix.isEmpty ? 2 : 42), "\(all)")
            #expect(reader.zstdDictionary != nil)
            try tree.expectReadsBack()
        }
    }

    @Test func noDictionaryForFewFilesRandomOnesTheFastLevelOrDeflate() throws {
        // Fewer than 16 samples.
        let few = try Self.game(PackDictionary.minimumSamples - 1)
        try few.pack()
        #expect(try few.reader().zstdDictionary == nil)
        #expect(try few.reader().records.all().allSatisfy { $0.codec != .zstdDictionary })
        try few.expectReadsBack()
        // Random files compress to nothing the policy keeps (.deflate forces the attempt): a
        // dictionary could not pay.
        var files: [String: [UInt8]] = [:]
        for i in 0..<40 { files["r\(i).bin"] = noise(3000, seed: UInt64(i)) }
        let random = try IncrementalTests.Tree(files)
        #expect(
            PackDictionary.train(try SourceTree.scan(root: random.root, includeHidden: false), policy: .deflate) == nil)
        // --fast and --codec deflate never train one.
        let tree = try Self.game()
        try tree.pack(level: .fast)
        #expect(try tree.reader().zstdDictionary == nil)
        try tree.pack(fresh: true, codec: .deflate)
        #expect(try tree.reader().zstdDictionary == nil)
        try tree.expectReadsBack()
    }

    @Test func aRepackKeepsTheDictionaryAndCopiesUnchangedChunks() throws {
        let tree = try Self.game()
        try tree.pack()
        let first = try #require(tree.reader().zstdDictionary)
        // Many files change and new ones arrive: a new training would give another dictionary,
        // but the re-pack keeps the one every copied chunk was compressed with.
        for i in 0..<20 { try tree.set("units/unit\(i).cfg", configFile(i + 100)) }
        for i in 40..<60 { try tree.set("units/unit\(i).cfg", configFile(i + 200)) }
        let report = try tree.pack()
        #expect(report.reused == 22 && report.packed == 40, "\(report)")
        #expect(try tree.reader().zstdDictionary == first)
        try tree.expectReadsBack()
        // --fresh trains anew.
        try tree.pack(fresh: true)
        #expect(try tree.reader().zstdDictionary != first)
        try tree.expectReadsBack()
    }

    /// A re-pack keeps the previous pack's choice, no dictionary included: training reads every
    /// small source (a re-pack of the 1,013-file benchmark tree after one file changed spent a
    /// third of its time on it, the status cache notwithstanding) and a new dictionary would
    /// change the codec of every entry, so none could be kept. A full pack trains.
    @Test func aRepackOfAPackWithoutADictionaryTrainsNone() throws {
        let tree = try Self.game()
        let count = try SourceTree.scan(root: tree.root, includeHidden: false).count
        try tree.pack(level: .fast)  // no dictionary at --fast
        #expect(try tree.reader().zstdDictionary == nil)
        try tree.set("units/unit0.cfg", configFile(300))
        let report = try tree.pack()
        #expect(report.reused == count - 1 && report.packed == 1, "\(report)")
        #expect(try tree.reader().zstdDictionary == nil)
        try tree.expectReadsBack()
        try tree.pack(fresh: true)
        #expect(try tree.reader().zstdDictionary != nil)
        try tree.expectReadsBack()
    }

    /// A file named as the dictionary (possible only through the writer itself, which
    /// `AssetPacks.write` refuses) that is compressed, or that claims the zstd dictionary format
    /// with broken tables, makes the pack refuse to open: `.integrityFailure`, never wrong bytes.
    @Test func aCompressedOrCorruptDictionaryIsRefusedAtOpen() throws {
        let scratch = Scratch()
        let compressed = scratch.write(text(20_000), name: "compressed")
        var broken: [UInt8] = [0x37, 0xA4, 0x30, 0xEC]  // ZDICT's magic, little-endian
        broken += [0, 0, 0, 1] + noise(5000, seed: 9)
        let corrupt = scratch.write(broken, name: "corrupt")
        for (path, message) in [
            (compressed, "compressed or over 1 MiB"),
            (corrupt, "dictionary is corrupt: its header or entropy tables do not parse"),
        ] {
            let tree = try Self.game(3)
            let file = SourceFile(
                path: PackDictionary.entryName, url: URL(fileURLWithPath: path), size: UInt64(bytes(of: path).count))
            try tree.pack(compression: path == compressed ? .deflate : .store, extra: [file])
            #expect(throws: AssetPackError.self) { try tree.reader() }
            do { _ = try tree.reader() } catch let e as AssetPackError {
                #expect(e.code == .integrityFailure && e.message.contains(message), "\(e)")
            }
            // Through the binary: damage (exit 4), said as such; zstd's own name for this
            // failure ("Allocation error: not enough memory") is not what the user reads.
            let key = scratch.write(Array(0..<32), name: "key")
            let list = try CLI.run(["list", tree.output, "--key-file", key])
            #expect(list.status == 4, "\(list.stderr)")
            #expect(list.stderr.contains(message) && !list.stderr.contains("Allocation"), "\(list.stderr)")
        }
    }

    /// A file the caller names as the dictionary while the writer trains one is refused, not
    /// written twice under one path.
    @Test func aFileNamedAsTheDictionaryIsRefusedWhenOneIsTrained() throws {
        let tree = try Self.game()
        let scratch = Scratch()
        let path = scratch.write(text(100), name: "mine")
        let file = SourceFile(path: PackDictionary.entryName, url: URL(fileURLWithPath: path), size: 100)
        #expect(throws: AssetPackError.self) { try tree.pack(extra: [file]) }
        #expect(!FileManager.default.fileExists(atPath: tree.output))
    }
}
#endif
