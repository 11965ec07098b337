import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// The source status cache (``PackOptions/sourceStatusCache``; docs/INCREMENTAL.md, "Skipping
/// unchanged sources"): a re-pack reads only the files whose status changed, never trusts one
/// whose change time moved (a pinned modification time), and never keeps an entry the pack at the
/// output holds in another version. And which kept chunks are checked ("Which kept chunks are
/// checked"). The racy margin itself: AssetPackCoreTests' SourceStatusCacheTests.
extension IncrementalTests {
    /// A tree whose re-packs remember their sources in a private folder, trusting files at once
    /// (`margin` 0: the tests' files are always seconds old at most).
    static func cached(margin: Int64 = 0) throws -> Tree {
        let tree = try sample()
        tree.statusCache = tree.scratch.url.appendingPathComponent("status-cache")
        tree.racyMargin = margin
        return tree
    }

    /// A cached tree packed stored, then one byte of `c/big.txt`'s first chunk flipped in the pack.
    static func cachedWithADamagedChunk() throws -> Tree {
        let tree = try cached()
        try tree.pack(compression: .store)
        let victim = try #require(try tree.reader().records.all().first { $0.info.path == "c/big.txt" })
        var bytes = tree.bytes
        bytes[Int(victim.offset) + 5000] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        return tree
    }

    /// Overwrites `path` in place with `bytes` (its size kept) and sets its modification time back
    /// to what it was: only the change time shows the edit.
    static func editKeepingTheModificationTime(_ tree: Tree, _ path: String, _ bytes: [UInt8]) throws {
        let url = tree.root.appendingPathComponent(path)
        let before = try FileSystem.stat(url.path)
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
        var times = [
            timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2),  // UTIME_OMIT: the access time as it is
            timespec(
                tv_sec: Int(before.modificationTime / 1_000_000_000),
                tv_nsec: Int(before.modificationTime % 1_000_000_000)),
        ]
        #expect(utimensat(AT_FDCWD, url.path, &times, 0) == 0)
        let after = try FileSystem.stat(url.path)
        #expect(after.modificationTime == before.modificationTime && after.size == before.size)
        #expect(after.inode == before.inode)
    }

    @Test func aRepackReadsOnlyTheSourcesWhoseStatusChanged() throws {
        let tree = try Self.cached()
        #expect(try tree.pack().unreadSources == 0)  // nothing remembered yet
        let again = try tree.pack()
        #expect(again.unreadSources == 5 && again.reused == 5 && again.bytesWritten == 0)
        try tree.set("a.txt", Array(text(10_000).reversed()))  // the same size
        let edited = try tree.pack()
        #expect(edited.unreadSources == 4 && edited.packed == 1 && edited.reused == 4, "\(edited)")
        try tree.expectReadsBack()
        // A file added: the others stay unread, and the pack is appended to.
        try tree.set("e/new.bin", noise(3000, seed: 9))
        let added = try tree.pack()
        #expect(added.unreadSources == 5 && added.packed == 1 && added.appended, "\(added)")
        try tree.expectReadsBack()
        // --rehash (no cache): every source is read again, and nothing is lost.
        tree.statusCache = nil
        let rehashed = try tree.pack()
        #expect(rehashed.unreadSources == 0 && rehashed.reused == 6)
    }

    /// A modification time pinned by the tool that wrote the file (reproducible builds, `cp -p`,
    /// `touch -d`) does not hide an edit: the change time moved.
    @Test func aPinnedModificationTimeDoesNotHideAnEdit() throws {
        let tree = try Self.cached()
        try tree.pack()
        #expect(try tree.pack().unreadSources == 5)
        try Self.editKeepingTheModificationTime(tree, "d.json", Array(#"{"k": 8}"#.utf8))
        let edited = try tree.pack()
        #expect(edited.unreadSources == 4 && edited.packed == 1, "\(edited)")
        try tree.expectReadsBack()
    }

    /// The cache says what a file held when the last pack read it; the pack at the output may be
    /// another (an older one copied back): its entry is kept only when it holds that content.
    @Test func aRememberedDigestKeepsOnlyTheEntryThatHoldsIt() throws {
        let tree = try Self.cached()
        try tree.pack()
        let older = tree.output + ".older"
        try FileManager.default.copyItem(atPath: tree.output, toPath: older)
        try tree.set("d.json", Array(#"{"k": 3}"#.utf8))
        try tree.pack()  // remembers d.json as it is now
        try FileManager.default.removeItem(atPath: tree.output)
        try FileManager.default.moveItem(atPath: older, toPath: tree.output)
        let restored = try tree.pack()
        #expect(restored.unreadSources == 4 && restored.packed == 1, "\(restored)")
        try tree.expectReadsBack()
    }

    /// A chunk an append leaves in place is not read or checked (its tag is every read's to
    /// check, as before the re-pack): a damaged one stays damaged, and reading it fails, never
    /// returning other bytes. Without the cache (`--rehash`) every kept chunk is checked, and the
    /// damaged entry is packed afresh from its source.
    @Test func chunksLeftInPlaceAreCheckedOnlyWithoutTheCache() throws {
        let tree = try Self.cachedWithADamagedChunk()
        try tree.set("e/new.bin", noise(3000, seed: 9))
        let appended = try tree.pack(compression: .store)
        #expect(appended.appended && appended.reused == 5 && appended.packed == 1, "\(appended)")
        #expect(throws: AssetPackError.self) { try tree.reader().read("c/big.txt") }
        tree.statusCache = nil
        let repaired = try tree.pack(compression: .store)
        #expect(repaired.packed == 1 && repaired.reused == 5, "\(repaired)")
        try tree.expectReadsBack()
    }
}

#if SystemLibraries  // zstd dictionaries need libzstd: the default configuration only
extension IncrementalTests {
    /// An entry kept whole keeps its chunks as they were compressed: only when this pack decodes
    /// them the same way (the same codec, the same dictionary), or they are stored. A re-pack with
    /// another codec or without the dictionary packs those entries from their sources again, and
    /// every entry reads back (issue 41's review: kept entries of codec 3 in a pack without a
    /// dictionary did not).
    @Test(arguments: [ContainerCodec.deflate, .zstd])
    func anEntryIsKeptWholeOnlyWhereItsCodecStillDecodes(codec: ContainerCodec) throws {
        let tree = try DictionaryTests.game()
        let count = try SourceTree.scan(root: tree.root, includeHidden: false).count
        tree.statusCache = tree.scratch.url.appendingPathComponent("status-cache")
        tree.racyMargin = 0
        try tree.pack(codec: .zstd)
        #expect(try tree.reader().zstdDictionary != nil)  // its small files are codec 3
        for level in [CompressionLevel.fast, .default] {
            let again = try tree.pack(codec: codec, level: level)
            #expect(again.packed + again.reused == count, "\(again)")
            try tree.expectReadsBack()
        }
    }
}
#endif
