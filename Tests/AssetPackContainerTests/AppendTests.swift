import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation
import Testing

@testable import AssetPackContainer

/// Version 6: a re-pack of a version-6 pack appends a generation in place (the changed chunks,
/// an index, a header slot), and whatever happens to it half way, the file is a whole pack of
/// one generation or the other (docs/FORMAT.md, "Version 6").
@Suite struct AppendTests {
    typealias Tree = IncrementalTests.Tree

    /// A tree with one 200 KiB file of noise (about 50 chunks of 4 KiB average) and a small one.
    /// Packed as the 0.2 writer appended (``ContainerPackWriter/legacyAppends``): edits append
    /// too and the previous slot stays, so these tests exercise what readers, installers and
    /// re-packs meet in packs already in the field. The default writer's appends (add-only, the
    /// previous slot wiped) are tested by `theDefaultWriterAppendsOnlyWhatKeepsEveryChunk`.
    static func tree(legacy: Bool = true) throws -> Tree {
        let tree = try Tree(["big.bin": noise(200_000, seed: 3), "small.txt": Array("small".utf8)])
        tree.legacyAppends = legacy
        return tree
    }

    static func header(_ path: String) throws -> ContainerHeader {
        try ContainerHeader.read(from: FileByteSource(path: path)).header
    }

    /// Flips the byte at `offset` of `path`'s file `tree`.
    static func edit(_ tree: Tree, at offset: Int) throws {
        var big = [UInt8](try Data(contentsOf: tree.root.appendingPathComponent("big.bin")))
        big[offset] ^= 0xFF
        try tree.set("big.bin", big)
    }

    @Test func aRepackAppendsOnlyWhatChangedAndLeavesEveryEarlierByte() throws {
        let tree = try Self.tree()
        let first = try tree.pack()
        #expect(!first.appended)
        let before = tree.bytes
        let h1 = try Self.header(tree.output)
        #expect(
            h1.version == ContainerFormat.version && h1.generation == 1 && h1.slot == 0
                && h1.end == UInt64(before.count))
        #expect(before[128..<8192].allSatisfy { $0 == 0 }, "a new pack's second slot is empty, and what lies around it")

        try Self.edit(tree, at: 100_000)
        let second = try tree.pack()
        let after = tree.bytes
        let h2 = try Self.header(tree.output)
        #expect(second.appended && second.reusedChunks >= second.chunks - 3)
        #expect(h2.generation == 2 && h2.slot == 1 && h2.salt == h1.salt)
        // Nothing before the previous end was written but the new slot; the file grew by the rest.
        #expect(after[0..<4096] == before[0..<4096])
        #expect(after[4224..<before.count] == before[4224...])
        #expect(UInt64(after.count) == h2.end && after.count == before.count + Int(second.bytesWritten) - 128)
        #expect(second.bytesWritten < 40_000, "\(second.bytesWritten) bytes written for one changed chunk")
        try tree.expectReadsBack()

        // A third generation goes back into slot 0.
        try Self.edit(tree, at: 10_000)
        try tree.pack()
        let h3 = try Self.header(tree.output)
        #expect(h3.generation == 3 && h3.slot == 0)
        try tree.expectReadsBack()
    }

    /// A pack appended by 0.2 keeps its earlier slot valid, and with it content an edit
    /// replaced: its first re-pack by this version, even one that only adds, appends over that
    /// slot, wipes the other and zeroes every byte no chunk of the new version occupies (the
    /// replaced chunk, both earlier indexes), so nothing leads to or holds the earlier content.
    @Test func aPackAppendedBy02HasItsEarlierContentZeroedByItsFirstRepack() throws {
        let tree = try Self.tree(legacy: true)
        try tree.pack()
        try Self.edit(tree, at: 100_000)
        #expect(try tree.pack().appended, "0.2 appended the edit")
        let legacy = try tree.reader()
        let legacyDead = try ContainerPackWriter.deadRanges(legacy)
        #expect(DeadBytes.count(legacyDead) > 1024)
        #expect(try !DeadBytes.areZero(legacyDead, in: legacy.source), "0.2 left the replaced chunk")
        tree.legacyAppends = false
        try tree.set("added.bin", noise(30_000, seed: 12))
        let first = try tree.pack()
        // What it left dead itself is the index (and block) of the generation it appended to;
        // the dead bytes 0.2 left are zeroed with it.
        let legacyIndex = legacy.header.end - legacy.header.indexOffset
        #expect(first.appended && first.zeroedBytes == legacyIndex, "\(first)")
        let now = try tree.reader()
        let bytes = tree.bytes
        #expect(try DeadBytes.areZero(legacyDead, in: MemoryByteSource(bytes)))
        #expect(try DeadBytes.areZero(try ContainerPackWriter.deadRanges(now), in: now.source))
        let other = now.header.slot == 0 ? 4096 : 0
        #expect(bytes[other..<other + 128].allSatisfy { $0 == 0 }, "one valid slot")
        try tree.expectReadsBack()
        try tree.set("more.bin", noise(30_000, seed: 13))
        let next = try tree.pack()
        #expect(next.appended, "\(next)")
        try tree.expectReadsBack()
    }

    /// A signed re-pack that replaced a chunk appends, signs its data region as it will be once
    /// the dead bytes are zero, then zeroes them: the signature holds on the file as written.
    /// Cut off between its commit and its zeroing (the old bytes put back here), the signature
    /// fails; the next re-pack, with nothing to change, finishes the zeroing, and it holds again.
    @Test func aSignedAppendIsSignedWithItsDeadBytesZeroAndAnUnfinishedZeroingIsFinished() throws {
        let key = PublisherSigningKey.generate()
        let tree = try Self.tree(legacy: false)
        try tree.pack(signingKey: key)
        let before = tree.bytes
        try Self.edit(tree, at: 100_000)
        let report = try tree.pack(signingKey: key)
        #expect(report.appended && report.zeroedBytes > 1024, "\(report)")
        let signed = tree.bytes
        _ = try ContainerPackReader.trustedSignature(MemoryByteSource(signed), trusting: [key.publicKey])
        let dead = try ContainerPackWriter.deadRanges(try tree.reader())
        #expect(DeadBytes.count(dead) == report.zeroedBytes)
        var torn = signed
        for r in dead.map({ Int($0.lowerBound)..<Int($0.upperBound) }) { torn.replaceSubrange(r, with: before[r]) }
        #expect(torn != signed)
        try Data(torn).write(to: URL(fileURLWithPath: tree.output))
        #expect(throws: AssetPackError.self) {
            _ = try ContainerPackReader.trustedSignature(FileByteSource(path: tree.output), trusting: [key.publicKey])
        }
        let again = try tree.pack(signingKey: key)
        #expect(!again.appended && again.bytesWritten == 0 && again.zeroedBytes == report.zeroedBytes, "\(again)")
        #expect(tree.bytes == signed)
        _ = try ContainerPackReader.trustedSignature(FileByteSource(path: tree.output), trusting: [key.publicKey])
        try tree.expectReadsBack()
    }

    /// A reader that opened the pack before a re-pack still reads what both versions share; a
    /// chunk the re-pack replaced is zeroed under it, so reading it fails (never other bytes),
    /// and the error says the pack changed since it was opened.
    @Test func aReaderOpenBeforeARepackReadsWhatStaysAndIsToldWhatWentAway() throws {
        let tree = try Self.tree(legacy: false)
        try tree.pack()
        let early = try tree.reader()
        try Self.edit(tree, at: 100_000)
        #expect(try tree.pack().zeroedBytes > 0)
        #expect(try early.read("small.txt") == Array("small".utf8))
        let error = #expect(throws: AssetPackError.self) { try early.read("big.bin") }
        #expect(error?.code == .integrityFailure, "\(String(describing: error))")
        #expect(
            error?.message.contains("re-packed or updated after it was opened, generation 1 → 2") == true,
            "\(String(describing: error))")
        try tree.expectReadsBack()
    }

    /// A signed append lists, for each chunk it keeps in place, the digest the previous signature
    /// (made with the same key, holding for the previous index) gave it, instead of reading the
    /// chunk: a kept chunk damaged on disk since is then refused as not the one its publisher
    /// signed. (Read and hashed, as before, its damaged bytes were signed afresh, and only its
    /// tag caught them.) The damaged chunk is in the entry kept whole, unread; one in the file
    /// read again is found damaged and sealed afresh (`ChunkLayoutGuessTests`).
    @Test func aSignedAppendListsTheDigestsItsPreviousSignatureGaveTheChunksItKeeps() throws {
        let key = PublisherSigningKey.generate()
        let tree = try Self.tree(legacy: false)
        tree.statusCache = tree.scratch.url.appendingPathComponent("status-cache")
        tree.racyMargin = 0
        try tree.pack(signingKey: key)
        let before = try tree.reader()
        let small = try #require(try before.records.position(of: "small.txt").map { try before.records.record($0) })
        var bytes = tree.bytes
        bytes[Int(before.chunks.offset(small.firstChunk)) + 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        try Self.edit(tree, at: 100_000)
        let report = try tree.pack(signingKey: key)
        #expect(report.appended && report.packed == 1 && report.reused == 1, "\(report)")
        let trusted = try ContainerPackReader(path: tree.output, credential: testKey, trustedKeys: [key.publicKey])
        #expect(try trusted.read("big.bin").count == 200_000)
        let error = #expect(throws: AssetPackError.self) { try trusted.read("small.txt") }
        #expect(error?.code == .untrusted && error?.message.contains("not the one its publisher signed") == true)
    }

    /// A zeroing cut off, met by a re-pack of a pack with another name (a hard link): nothing is
    /// written through the other name, which keeps its bytes; the output becomes a new file
    /// rewritten whole, with no dead bytes at all.
    @Test func anUnfinishedZeroingInAFileWithAnotherNameIsNotWrittenThroughIt() throws {
        let tree = try Self.tree(legacy: false)
        try tree.pack()
        let before = tree.bytes
        try Self.edit(tree, at: 100_000)
        try tree.pack()
        let dead = try ContainerPackWriter.deadRanges(try tree.reader())
        var torn = tree.bytes
        for r in dead.map({ Int($0.lowerBound)..<Int($0.upperBound) }) { torn.replaceSubrange(r, with: before[r]) }
        try Data(torn).write(to: URL(fileURLWithPath: tree.output))
        let other = tree.output + ".link"
        #expect(link(tree.output, other) == 0)
        let linked = try tree.pack()
        #expect(!linked.appended && linked.bytesWritten > 0 && linked.zeroedBytes == 0, "\(linked)")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: other))) == torn)
        #expect(try ContainerPackWriter.deadRanges(try tree.reader()).isEmpty)
        try tree.expectReadsBack()
    }

    /// scrypt with p = 1 and r above 16 is refused by name when packing (swift-crypto's scrypt
    /// gives BoringSSL too little memory for it), not left to fail later as a wrong key.
    @Test func scryptParametersTheCryptoLibraryRefusesAreRefusedByName() throws {
        let scratch = Scratch()
        do {
            _ = try scratch.pack([("a", [1, 2, 3])], credential: .password("pw"), kdf: .scrypt(logN: 10, r: 32, p: 1))
            Issue.record("packed with r = 32, p = 1")
        } catch let error as AssetPackError {
            #expect(error.code == .invalidArgument && error.message.contains("r = 32 and p = 1"), "\(error)")
        }
        let ok = try scratch.pack(
            [("a", [1, 2, 3])], name: "ok.apack", credential: .password("pw"), kdf: .scrypt(logN: 10, r: 32, p: 2))
        #expect(try ContainerPackReader(path: ok, credential: .password("pw")).read("a") == [1, 2, 3])
    }

    /// Appending writes into the file itself: a pack with another hard link (a build cache, an
    /// rsync --link-dest snapshot, a web root made with `ln`) is rewritten and renamed instead,
    /// as before version 6, so the other name keeps the previous pack.
    @Test func aHardLinkedPackIsRewrittenNotAppendedTo() throws {
        let tree = try Self.tree()
        try tree.pack()
        let before = tree.bytes
        let other = tree.output + ".link"
        defer { try? FileManager.default.removeItem(atPath: other) }
        try FileManager.default.linkItem(atPath: tree.output, toPath: other)
        try Self.edit(tree, at: 100_000)
        let second = try tree.pack()
        #expect(!second.appended)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: other))) == before, "the other link changed")
        try tree.expectReadsBack()
        #expect(try Self.header(tree.output).generation == 2, "a rewrite counts the generations on")
        // With one name again, the next re-pack appends.
        try FileManager.default.removeItem(atPath: other)
        try Self.edit(tree, at: 10_000)
        #expect(try tree.pack().appended)
        try tree.expectReadsBack()
    }

    /// The generation counts on, by append or rewrite; after the last one a u64 holds (a slot
    /// only a holder of the key could seal) a re-pack rewrites from 1 instead of trapping.
    @Test func theGenerationCountsOnAndNeverOverflows() throws {
        let tree = try Self.tree()
        try tree.pack()
        var header = try Self.header(tree.output)
        #expect(ContainerPackWriter.generation(after: nil, appending: false) == 1)
        #expect(ContainerPackWriter.generation(after: header, appending: true) == 2)
        header.generation = .max - 1
        #expect(ContainerPackWriter.generation(after: header, appending: true) == .max)
        header.generation = .max
        #expect(ContainerPackWriter.generation(after: header, appending: false) == 1)
    }

    /// End to end: a pack whose slot says generation 2^64-1 (sealed with the key, as only its
    /// holder can) reads, and the next re-pack rewrites it from generation 1 instead of trapping.
    @Test func aRepackAfterTheLastGenerationRewritesFromOne() throws {
        let tree = try Self.tree()
        try tree.pack()
        var bytes = tree.bytes
        let keys = try tree.reader().keys
        var (headerBytes, header) = try ContainerHeader.read(from: FileByteSource(path: tree.output))
        #expect(header.slot == 0)
        let key = keys.indexKey(version: header.version)
        let region = Array(bytes[Int(header.indexOffset)..<Int(header.indexOffset + header.indexLength)])
        let index = try ContainerIndex.unsealV8(region, key: key, headerBytes: headerBytes)
        header.generation = .max
        headerBytes = header.stored(commitment: keys.commitment(header.committedBytes()))
        bytes.replaceSubrange(0..<headerBytes.count, with: headerBytes)
        bytes.replaceSubrange(
            Int(header.indexOffset)..<Int(header.indexOffset + header.indexLength),
            with: ContainerIndex.sealV8(
                table: index.table, digests: index.digests, nonce: index.nonce, key: key, headerBytes: headerBytes))
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        #expect(try Self.header(tree.output).generation == .max)
        try tree.expectReadsBack()

        try Self.edit(tree, at: 100_000)
        let report = try tree.pack()
        #expect(!report.appended)
        #expect(try Self.header(tree.output).generation == 1)
        try tree.expectReadsBack()
    }

    /// The chunks an append keeps are named where they are: an entry's chunks lie in runs, and a
    /// reader finds each by its offset (whole reads, streams, ranges across runs).
    @Test func entriesWhoseChunksLieInSeveralRunsReadWhole() throws {
        let tree = try Self.tree()
        try tree.pack()
        try Self.edit(tree, at: 50_000)
        try Self.edit(tree, at: 150_000)
        try tree.pack()
        let reader = try tree.reader()
        let e = try #require(reader.records.all().first { $0.info.path == "big.bin" })
        let runs = reader.entrySpans(e)
        #expect(runs.count >= 4, "\(runs)")
        #expect(runs.contains { $0.lowerBound >= reader.header.indexOffset - 20_000 })
        let big = [UInt8](try Data(contentsOf: tree.root.appendingPathComponent("big.bin")))
        #expect(try reader.read("big.bin") == big)
        var streamed: [UInt8] = []
        try reader.stream("big.bin") { streamed += $0 }
        #expect(streamed == big)
        #expect(try reader.readRange("big.bin", offset: 40_000, count: 120_000) == Array(big[40_000..<160_000]))
    }

    /// An entry whose plaintext repeats (padding, silence, tiles): unchanged, each occurrence of
    /// a digest reuses its own earlier chunk, so nothing is written and the file is left alone.
    /// With more occurrences than the previous version had, the extra ones are written again (as
    /// sealed): two index records never name one stored chunk (a reader refuses that).
    @Test func repeatedChunksKeepTheirOwnPlaces() throws {
        let block = noise(100_000, seed: 8)
        let tree = try Tree(["r.bin": block + block])
        tree.legacyAppends = true  // an entry that grows appends as in 0.2
        try tree.pack()
        // The second copy is cut where the first was, past the first cut point in it.
        let reader = try tree.reader()
        let all = try reader.digests()
        let digests = (0..<reader.chunks.count).map { all.chunk($0) }
        #expect(Set(digests).count <= digests.count - 3, "\(digests.count) chunks, \(Set(digests).count) digests")
        let before = tree.bytes
        let again = try tree.pack()
        #expect(again.bytesWritten == 0 && again.reusedChunks == again.chunks, "\(again)")
        #expect(tree.bytes == before)
        try tree.set("r.bin", block + block + block)
        let more = try tree.pack()
        #expect(more.appended && more.reusedChunks > 0, "\(more)")
        try tree.expectReadsBack()
    }

    /// The crash windows of an append: after its chunks and index, before its slot (the previous
    /// generation reads, the bytes after it are ignored, and the next re-pack writes over them);
    /// and a slot written in part (it fails its check, and the previous slot is the pack).
    @Test func anAppendCutShortLeavesThePreviousGeneration() throws {
        let tree = try Self.tree()
        try tree.pack()
        let previous = tree.bytes
        let original = [UInt8](try Data(contentsOf: tree.root.appendingPathComponent("big.bin")))
        try Self.edit(tree, at: 100_000)
        try tree.pack()
        let appended = tree.bytes

        // Cut before the slot: the new slot is still empty.
        var noSlot = appended
        noSlot.replaceSubrange(4096..<4224, with: previous[4096..<4224])
        try Data(noSlot).write(to: URL(fileURLWithPath: tree.output))
        #expect(try Self.header(tree.output).generation == 1)
        #expect(try tree.reader().read("big.bin") == original)
        // Torn: all of the slot but its last byte. It cannot be told from a newer slot damaged
        // on purpose, so the pack is refused rather than read as generation 1 (a rollback no key
        // is needed for); a torn slot needs a power cut during one 128-byte write.
        var torn = appended
        torn[4223] = previous[4223]
        try Data(torn).write(to: URL(fileURLWithPath: tree.output))
        expectError(.integrityFailure) { _ = try tree.reader() }

        // The next re-pack appends to generation 1 again, over the unfinished bytes.
        try Data(noSlot).write(to: URL(fileURLWithPath: tree.output))
        let again = try tree.pack()
        let regenerated = try Self.header(tree.output)
        #expect(again.appended && regenerated.generation == 2)
        #expect(tree.bytes.count == previous.count + Int(again.bytesWritten) - 128)
        try tree.expectReadsBack()
    }

    @Test func slotsThatCannotBothBeTheHeaderAreRefused() throws {
        let tree = try Self.tree()
        try tree.pack()
        try Self.edit(tree, at: 100_000)
        try tree.pack()
        let good = tree.bytes
        // Both slots damaged.
        var both = good
        both[60] ^= 1
        both[4096 + 60] ^= 1
        try Data(both).write(to: URL(fileURLWithPath: tree.output))
        expectError(.integrityFailure) { _ = try tree.reader() }
        // Slot 0's version byte damaged: a valid slot 1 makes the file version 6 or 7 even when
        // the byte now names version 1 to 5, and the damaged slot 0 beside it is refused (it
        // cannot be told from a newer generation's slot, damaged so as to roll the pack back).
        for damaged: UInt8 in [0xEE, 4, 5, 1] {
            var version = good
            version[8] = damaged
            try Data(version).write(to: URL(fileURLWithPath: tree.output))
            expectError(.integrityFailure) { _ = try tree.reader() }
        }
        // Slot 0 gone, magic and all: the format is still recognised by slot 1, which is the pack.
        var wiped = good
        wiped.replaceSubrange(0..<128, with: [UInt8](repeating: 0, count: 128))
        try Data(wiped).write(to: URL(fileURLWithPath: tree.output))
        #expect(try ContainerFormatDriver().recognizes(FileByteSource(path: tree.output)))
        #expect(try Self.header(tree.output).generation == 2)
        try tree.expectReadsBack()
        // A zip that stores a container at byte 4096 is a zip, though a valid slot lies there.
        var zipLike = wiped
        zipLike.replaceSubrange(0..<4, with: [0x50, 0x4B, 0x03, 0x04])
        try Data(zipLike).write(to: URL(fileURLWithPath: tree.output))
        #expect(try !ContainerFormatDriver().recognizes(FileByteSource(path: tree.output)))
        // Slot 1 damaged, slot 0 gone: a damaged container (its magic says so), not "not a pack".
        var damaged = wiped
        damaged[4096 + 60] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: tree.output))
        #expect(try ContainerFormatDriver().recognizes(FileByteSource(path: tree.output)))
        expectError(.integrityFailure) { _ = try tree.reader() }
        // Neither slot valid and no magic: not a container.
        wiped[4096] ^= 1
        wiped[4096 + 60] ^= 1
        try Data(wiped).write(to: URL(fileURLWithPath: tree.output))
        #expect(try !ContainerFormatDriver().recognizes(FileByteSource(path: tree.output)))
        // Two slots of one generation (resealed, as anyone can).
        var tie = good
        tie.replaceSubrange(0..<128, with: good[4096..<4224])
        try Data(tie).write(to: URL(fileURLWithPath: tree.output))
        expectError(.integrityFailure) { _ = try tree.reader() }
        // A slot whose end is past the file.
        var short = good
        short.removeLast()
        try Data(short).write(to: URL(fileURLWithPath: tree.output))
        expectError(.integrityFailure) { _ = try tree.reader() }
        // The older slot made newer (resealed): its commitment covers the generation, and the
        // other slot's commitment holds under the key, so this is damage, not a wrong key.
        var rolled = good
        rolled.replaceSubrange(72..<80, with: [9, 0, 0, 0, 0, 0, 0, 0])
        resealSlots(&rolled)
        try Data(rolled).write(to: URL(fileURLWithPath: tree.output))
        expectError(.integrityFailure) { _ = try tree.reader() }
        expectError(.wrongPassword) { _ = try tree.reader(.key(noise(32, seed: 99))) }
    }
}
