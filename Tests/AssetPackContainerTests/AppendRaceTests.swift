import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// AppendTests, continued: appends and rewrites raced by other writers and readers, compaction,
/// signed appends, update plans and version-4 packs.
extension AppendTests {
    /// Another writer gets in between a re-pack's read of the pack and its append: one that
    /// appended a generation, or one that rewrote the same files afresh (new salt, generation 1
    /// again, and the same end and index offset) and renamed its pack into place. The append sees
    /// the file is not the pack it read, writes nothing, and says so; the other pack stays whole.
    @Test func anAppendRefusesAPackThatChangedUnderIt() throws {
        for fresh in [false, true] {
            let tree = try Self.tree()
            try tree.pack()
            try Self.edit(tree, at: 100_000)
            var options = PackOptions.forTests
            options.format = .container
            options.credential = testKey
            options.container.chunkSize = 4096
            options.container.kdf = .forTests
            let files = try SourceTree.scan(root: tree.root, includeHidden: false)
            var writer = ContainerPackWriter()
            writer.legacyAppends = true
            writer.beforeAppend = {
                let other = tree.output + ".other"
                try FileManager.default.copyItem(atPath: tree.output, toPath: other)
                var theirs = options
                theirs.fresh = fresh
                try ContainerPackWriter().write(files, to: other, options: theirs)
                #expect(rename(other, tree.output) == 0)
            }
            do {
                try writer.write(files, to: tree.output, options: options)
                Issue.record("the append went ahead over another writer's pack (fresh: \(fresh))")
            } catch let error as AssetPackError {
                #expect(error.code == .io && error.message.contains("changed while it was being re-packed"), "\(error)")
            }
            try tree.expectReadsBack()
            #expect(try Self.header(tree.output).generation == (fresh ? 1 : 2))
        }
    }

    /// The other way round: a rewrite (a compaction, `--compact`) whose pack another re-pack
    /// appended to meanwhile fails instead of renaming over that generation, and it locks the
    /// pack it replaces until its rename, so that no append writes into a file being replaced.
    @Test func aRewriteRefusesAPackAppendedToUnderIt() throws {
        let tree = try Self.tree()
        try tree.pack()
        var options = PackOptions.forTests
        options.format = .container
        options.credential = testKey
        options.container.chunkSize = 4096
        options.container.kdf = .forTests
        options.compact = true
        try Self.edit(tree, at: 100_000)
        let files = try SourceTree.scan(root: tree.root, includeHidden: false)
        var writer = ContainerPackWriter()
        writer.legacyAppends = true
        writer.beforeRewrite = {
            try Self.edit(tree, at: 10_000)
            #expect(try tree.pack().appended)
        }
        do {
            try writer.write(files, to: tree.output, options: options)
            Issue.record("the rewrite renamed over a generation appended meanwhile")
        } catch let error as AssetPackError {
            #expect(error.code == .io && error.message.contains("changed while it was being re-packed"), "\(error)")
        }
        #expect(try Self.header(tree.output).generation == 2)
        try tree.expectReadsBack()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: tree.scratch.url.path).filter { $0.hasPrefix(".") }
                .isEmpty, "a temporary file was left")
    }

    /// A reader opened before an append reads its own generation throughout: an append writes
    /// nothing that generation's chunks, index or slot occupy.
    @Test func aReaderOpenBeforeAnAppendKeepsReading() throws {
        let tree = try Self.tree()
        try tree.pack()
        let original = [UInt8](try Data(contentsOf: tree.root.appendingPathComponent("big.bin")))
        let early = try tree.reader()
        for offset in stride(from: 1_000, to: 200_000, by: 40_000) {
            try Self.edit(tree, at: offset)
            #expect(try tree.pack().appended)
            #expect(try early.read("big.bin") == original)
        }
        try tree.expectReadsBack()
    }

    /// A reader opened before an append, its table three 1 MiB segments (LargeIndexPack): what
    /// its index segments already opened reach keeps reading; a lookup that needs a segment it
    /// had not opened, which the append zeroed with the rest of the previous generation's index,
    /// fails saying the pack was updated (not as damage, not as an absent entry); and a reader
    /// that read its whole index first (`loadIndex`) reads everything the generations share.
    @Test func aReaderOfALargeIndexOpenBeforeAnAppendSaysWhatItLost() throws {
        let tree = try IncrementalTests.Tree(LargeIndexPack.files)
        try tree.pack()
        let early = try tree.reader()
        let whole = try tree.reader()
        try whole.loadIndex()
        let first = LargeIndexPack.path(0), last = LargeIndexPack.path(LargeIndexPack.count - 1)
        #expect(try early.read(first) == LargeIndexPack.content(0))
        try tree.set(LargeIndexPack.path(1), Array("changed\n".utf8))
        #expect(try tree.pack().appended)

        #expect(try early.read(first) == LargeIndexPack.content(0))
        for attempt in 0..<2 {  // the second from what the first left: the same error
            let error = #expect(throws: AssetPackError.self) { try early.read(last) }
            #expect(error?.code == .integrityFailure, "\(attempt)")
            #expect(
                error?.message.contains("the pack was updated after it was opened") == true,
                "\(String(describing: error))")
        }
        #expect(try whole.read(last) == LargeIndexPack.content(LargeIndexPack.count - 1))
        #expect(try whole.read(first) == LargeIndexPack.content(0))
        #expect(try tree.reader().read(LargeIndexPack.path(1)) == Array("changed\n".utf8))
    }

    /// Once more than half of the data region is dead (chunks no index names), a re-pack writes
    /// the pack afresh: smaller, with the same keys, counting generations on.
    @Test func aMostlyDeadPackIsCompacted() throws {
        let tree = try Self.tree()
        try tree.pack()
        var generations: [(appended: Bool, size: Int)] = []
        for round in 0..<4 {
            try tree.set("big.bin", noise(200_000, seed: 100 + UInt64(round)))  // every chunk changes
            let report = try tree.pack()
            generations.append((report.appended, tree.bytes.count))
            try tree.expectReadsBack()
        }
        // Round 0 leaves half dead (it may append); by round 1 more than half is, so it compacts.
        #expect(generations.map(\.appended) == [true, false, true, false], "\(generations)")
        #expect(generations[1].size < generations[0].size * 2 / 3)
        let h = try Self.header(tree.output)
        #expect(h.generation == 5 && h.slot == 0)
    }

    /// A re-pack that removes most of a pack rewrites it, and reports as dropped exactly the
    /// removed entry's sealed chunks (a first pack has no earlier bytes): its chunks' digests are
    /// in none of the new pack's (`SortedDigests`), the kept entry's all are.
    @Test func aCompactionReportsTheSealedBytesOfWhatItRemoved() throws {
        let tree = try IncrementalTests.Tree([
            "keep.bin": noise(20_000, seed: 1), "gone.bin": noise(90_000, seed: 2), "also.bin": noise(5_000, seed: 3),
        ])
        try tree.pack()
        let before = try tree.reader()
        let gone = try before.records.record(try #require(try before.records.storedPosition(of: "gone.bin")))
        let sealed = (0..<gone.chunkCount).reduce(0) { $0 + before.storedChunk(gone, $1).length }
        try tree.remove("gone.bin")
        let report = try tree.pack()
        #expect(!report.appended && report.compacted, "\(report)")
        #expect(report.droppedBytes == UInt64(sealed) && sealed > 90_000, "\(report), \(sealed)")
        try tree.expectReadsBack()
    }

    @Test func aSignedPackAppendsAndVerifies() throws {
        let key = PublisherSigningKey.generate()
        let tree = try Self.tree()
        try tree.pack(signingKey: key)
        try Self.edit(tree, at: 100_000)
        let report = try tree.pack(signingKey: key)
        #expect(report.appended && report.bytesWritten < 50_000)
        let source = try FileByteSource(path: tree.output)
        let block = try ContainerPackReader.trustedSignature(source, trusting: [key.publicKey])
        #expect(block.release.size == UInt64(tree.bytes.count))
        let reader = try ContainerPackReader(path: tree.output, credential: testKey, trustedKeys: [key.publicKey])
        #expect(reader.header.version == ContainerFormat.signedVersion)
        #expect(
            try reader.read("big.bin") == [UInt8](try Data(contentsOf: tree.root.appendingPathComponent("big.bin"))))
        // Every byte before the index is the publisher's, live or dead: the whole-pack check
        // (an installer's, without the password) refuses a change to any of them.
        var damaged = tree.bytes
        damaged[8192 + 300] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: tree.output))
        #expect(throws: AssetPackError.self) {
            _ = try ContainerPackReader.trustedSignature(FileByteSource(path: tree.output), trusting: [key.publicKey])
        }
    }

    /// The installer's plan for an update in place reads both headers as a reader would: a
    /// remote slot that lies about its index, end, generation or keys yields no plan (a whole
    /// install follows), never a crash; a true one puts the remote's current slot where the
    /// installed pack's other slot was.
    @Test func anUpdatePlanChecksBothHeaders() throws {
        let tree = try Self.tree()
        try tree.pack()
        let installed = tree.bytes
        let installedHeader = try Self.header(tree.output)
        try Self.edit(tree, at: 100_000)
        try tree.pack()
        let remote = tree.bytes
        let driver = ContainerFormatDriver()
        let plan = try #require(
            try driver.appendPlan(installed: MemoryByteSource(installed), remote: MemoryByteSource(remote)))
        #expect(
            plan.kept == 8192..<UInt64(installed.count) && plan.tail == UInt64(installed.count)..<UInt64(remote.count))
        #expect(plan.head == 4096..<4224 && plan.headAt == 4096)
        // The installed pack's index (and block), which the remote version names nothing in,
        // reads as the zeros its publisher wrote (this tree packs as 0.2 did, which left it).
        #expect(plan.zeroed == [installedHeader.indexOffset..<installedHeader.end])
        let result = plan.result(
            installed: MemoryByteSource(installed), remote: MemoryByteSource(remote), name: "result")
        var bytes = [UInt8](repeating: 0, count: remote.count)
        _ = try bytes.withUnsafeMutableBytes { try result.read(into: $0, at: 0) }
        var expected = remote
        expected.replaceSubrange(
            Int(installedHeader.indexOffset)..<Int(installedHeader.end),
            with: repeatElement(0, count: Int(installedHeader.end - installedHeader.indexOffset)))
        #expect(bytes == expected)

        func lying(_ field: Int, _ value: UInt64) -> [UInt8] {
            var b = remote
            withUnsafeBytes(of: value.littleEndian) { b.replaceSubrange(4096 + field..<4096 + field + 8, with: $0) }
            resealSlots(&b)
            return b
        }
        let indexOffset = try Self.header(tree.output).indexOffset
        let cases: [(String, [UInt8])] = [
            ("end before the index's end", lying(80, indexOffset + 1)),
            ("end past the file", lying(80, UInt64(remote.count) + 1)),
            ("end short of the file", lying(80, UInt64(remote.count) - 1)),
            ("an index inside the installed pack", lying(56, 300)),
            ("an index length that overflows", lying(64, .max - 10)),
            ("the installed generation", lying(72, 1)),
            (
                "another salt",
                {
                    var b = remote; b[4096 + 30] ^= 1; resealSlots(&b); return b
                }()
            ),
            ("cut before the installed end", Array(remote[..<(installed.count - 1)])),
            (
                "9000 bytes claiming an index at the installed end",
                {
                    var b = Array(remote[..<9000])
                    withUnsafeBytes(of: UInt64(installed.count).littleEndian) {
                        b.replaceSubrange(4152..<4160, with: $0)
                    }
                    withUnsafeBytes(of: UInt64(9000).littleEndian) { b.replaceSubrange(4176..<4184, with: $0) }
                    resealSlots(&b)
                    return b
                }()
            ),
        ]
        for (why, bytes) in cases {
            // No plan, or an error a reader would give too (the installer takes both as "none").
            let found = try? driver.appendPlan(installed: MemoryByteSource(installed), remote: MemoryByteSource(bytes))
            #expect(found.flatMap { $0 } == nil, Comment(rawValue: why))
        }
        // Nor an installed pack that lies about its end.
        var short = installed
        short.removeLast()
        #expect(try driver.appendPlan(installed: MemoryByteSource(short), remote: MemoryByteSource(remote)) == nil)
    }

    /// A pack older than version 6 at the output is rewritten as version 6 (its chunks copied),
    /// after which re-packs append.
    @Test func aVersion4PackIsRewrittenThenAppended() throws {
        let vector = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
            .appendingPathComponent("v4-key-store.apack")
        let tree = try Tree(["hello.txt": Array("Hello, AssetPack!\n\n".utf8), "empty": []])
        try FileManager.default.copyItem(atPath: vector.path, toPath: tree.output)
        let first = try tree.pack()
        #expect(!first.appended && first.reused == 2)
        #expect(try Self.header(tree.output).version == ContainerFormat.version)
        try tree.set("more.txt", Array("more".utf8))
        #expect(try tree.pack().appended)
        try tree.expectReadsBack()
    }

    /// The files of `v8-key-store.apack`, and at the output that pack as 0.4 wrote it.
    static func packBy04() throws -> Tree {
        let vector = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
            .appendingPathComponent("v8-key-store-by-0.4.apack")
        let tree = try Tree([
            "hello.txt": Array("Hello, AssetPack!\n\n".utf8), "empty": [], "dir/\u{FC}.bin": noise(5000, seed: 7),
        ])
        try FileManager.default.copyItem(atPath: vector.path, toPath: tree.output)
        return tree
    }

    /// `v8-key-store-by-0.4.apack` is `v8-key-store.apack` as 0.4 wrote it: its entry digests are
    /// the plaintexts' SHA-256, where this writer's are made of the chunks' digests. Re-packed from
    /// the same files with no status cache, every entry is found unchanged (the pack is left as it
    /// is, byte for byte) and reported reused; a new file then appends.
    @Test func aPackWhoseEntryDigestsAreTheirPlaintextsSHA256IsFoundUnchanged() throws {
        let tree = try Self.packBy04()
        let before = tree.bytes
        let old = try tree.reader()
        let hello = try old.records.record(try #require(try old.records.storedPosition(of: "hello.txt")))
        #expect(try old.digests().entry(hello) == SHA256Hasher.digest(Array("Hello, AssetPack!\n\n".utf8)))
        let first = try tree.pack(compression: .store)
        #expect(!first.appended && first.bytesWritten == 0 && first.reused == 3, "\(first)")
        #expect(tree.bytes == before)
        try tree.set("more.txt", Array("more".utf8))
        let second = try tree.pack(compression: .store)
        #expect(second.appended && second.reused == 3 && second.packed == 1)
        try tree.expectReadsBack()
    }

    /// The same 0.4 pack with a status cache: the first re-pack reads the files (nothing is
    /// remembered yet), finds them unchanged and leaves the pack as it is, its digests 0.4's; the
    /// cache now holds this writer's digests, and the next re-pack still reads nothing.
    @Test func aPackWhoseEntryDigestsAreTheirPlaintextsSHA256KeepsItsFilesUnreadWithACache() throws {
        let tree = try Self.packBy04()
        tree.statusCache = tree.scratch.url.appendingPathComponent("cache")
        tree.racyMargin = 0
        let before = tree.bytes
        let first = try tree.pack(compression: .store)
        #expect(first.bytesWritten == 0 && first.unreadSources == 0 && tree.bytes == before, "\(first)")
        let second = try tree.pack(compression: .store)
        #expect(second.bytesWritten == 0 && second.unreadSources == 3 && tree.bytes == before, "\(second)")
        try tree.expectReadsBack()
    }
}
