import AssetPackCore
import AssetPackTestSupport
@testable import AssetPackZip
import Foundation
import Testing

@Suite(.slow) struct ZipIncrementalTests {
    static func tree() -> [String: [UInt8]] {
        var tree = ZipWriterTests.sizedTree()
        for i in 0..<40 { tree[String(format: "many/%02d.json", i)] = textBytes(2000 + i, seed: UInt64(i)) }
        return tree
    }

    @Test(arguments: [PackEncryption.aes256, .none])
    func anUnchangedTreeReusesEveryEntryByteForByte(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let tree = Self.tree()
        for (k, writer) in [ZipPackWriter(), smallPieceWriter()].enumerated() {
            let (path, first) = try writeZip(tree, in: dir, writer: writer, encryption: encryption, name: "\(k).zip")
            #expect(first.reused == 0 && first.packed == tree.count)
            let before = try rawEntries(path)
            let (_, second) = try writeZip(tree, in: dir, writer: writer, encryption: encryption, name: "\(k).zip")
            let total = tree.values.reduce(UInt64(0)) { $0 + UInt64($1.count) }
            #expect(second == PackWriteReport(reused: tree.count, packed: 0, reusedBytes: total))
            let after = try rawEntries(path)
            for name in tree.keys { #expect(after[name] == before[name], "\(name) was not copied as it was") }
            #expect(after.count == tree.count + 1)  // and the manifest
            try expectReadsBack(path, tree, password: encryption == .none ? nil : "s3cret")
        }
    }

    @Test(arguments: [PackEncryption.aes256, .none])
    func changedAddedAndRemovedFilesArePackedTheRestReused(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        var tree = Self.tree()
        let password: String? = encryption == .none ? nil : "s3cret"
        _ = try writeZip(tree, in: dir, encryption: encryption)
        // Same size, different content.
        var changed = tree["many/07.json"]!
        changed[100] ^= 0x20
        tree["many/07.json"] = changed
        var (path, report) = try writeZip(tree, in: dir, encryption: encryption)
        #expect(report.reused == tree.count - 1 && report.packed == 1)
        try expectReadsBack(path, tree, password: password)
        // Another size, one added, one removed.
        tree["text/17.txt"] = textBytes(18, seed: 77)
        tree["new/file.txt"] = textBytes(5000, seed: 78)
        tree["random/65536.bin"] = nil
        (path, report) = try writeZip(tree, in: dir, encryption: encryption)
        #expect(report.reused == tree.count - 2 && report.packed == 2)
        try expectReadsBack(path, tree, password: password)
    }

    /// A wrong password is refused, the pack left byte for byte; `fresh` packs everything. Dropping
    /// the encryption is refused too, unless `fresh`.
    @Test func aWrongPasswordIsRefusedAndFreshPacksEverything() throws {
        let dir = TemporaryDirectory()
        let tree = Self.tree()
        let (first, _) = try writeZip(tree, in: dir)
        let before = try Data(contentsOf: URL(fileURLWithPath: first))
        let refused = #expect(throws: AssetPackError.self) { try writeZip(tree, in: dir, password: "another") }
        #expect(refused?.code == .wrongPassword)
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == before)
        var (path, report) = try writeZip(tree, in: dir, password: "another", fresh: true)
        #expect(report == PackWriteReport(reused: 0, packed: tree.count))
        try expectReadsBack(path, tree, password: "another")
        (path, report) = try writeZip(tree, in: dir, password: "another", fresh: true)
        #expect(report == PackWriteReport(reused: 0, packed: tree.count))
        let plain = #expect(throws: AssetPackError.self) {
            try writeZip(tree, in: dir, encryption: .none, password: "another")
        }
        #expect(plain?.code == .invalidArgument)
        (path, report) = try writeZip(tree, in: dir, encryption: .none, password: "another", fresh: true)
        #expect(report == PackWriteReport(reused: 0, packed: tree.count))
        try expectReadsBack(path, tree, password: nil)
    }

    @Test func theCompressionPolicyDecidesWhichEntriesCanBeReused() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.txt": textBytes(3000), "b.bin": testBytes(3000), "c.png": textBytes(3000)]
        _ = try writeZip(tree, in: dir, compression: .store)
        // Stored entries do not satisfy `.deflate`...
        var (path, report) = try writeZip(tree, in: dir, compression: .deflate)
        #expect(report.reused == 0)
        // ...and deflated ones do not satisfy `.store`; `.auto` takes either.
        (path, report) = try writeZip(tree, in: dir, compression: .auto)
        #expect(report.reused == 3)
        (path, report) = try writeZip(tree, in: dir, compression: .store)
        #expect(report.reused == 1)  // b.bin: deflate did not pay, so it was stored
        try expectReadsBack(path, tree)
    }

    /// The test vector in docs/FORMAT.md, "Zip manifest entry".
    @Test func theManifestMatchesTheDocumentedVector() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.txt": Array("hello\n".utf8), "dir/b.bin": (0..<32).map { UInt8($0) }]
        let (path, _) = try writeZip(tree, in: dir, encryption: .none)
        let content = try manifestContent(path)
        let vector =
            "41505a4d01020000000500612e74787406000000000000005891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d0"
            + "8286a2e846f6be0320303a365891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be0309006469"
            + "722f622e62696e2000000000000000630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd8a"
            + "7e2691630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
        #expect(content.map { String(format: "%02x", $0) }.joined() == vector)
        #expect(try ZipManifest(decoding: content).encoded() == content)
    }

    /// The manifest is deflated (paths and sizes compress; the digests do not): on 300 entries in
    /// long folders, at most 80 % of its bytes. A re-pack over the pack still reuses every entry.
    @Test func theManifestIsDeflated() throws {
        let dir = TemporaryDirectory()
        var tree: [String: [UInt8]] = [:]
        for i in 0..<300 { tree["data/levels/world-\(i / 30)/stage-\(i).json"] = Array("{\"stage\": \(i)}".utf8) }
        let (plain, _) = try writeZip(tree, in: dir, encryption: .none, name: "plain.zip")
        let content = try manifestContent(plain)
        #expect(try ZipManifest(decoding: content).records.count == 300)
        for encryption in [PackEncryption.none, .aes256] {
            let (path, _) = try writeZip(tree, in: dir, encryption: encryption, fresh: true)
            let (method, data, _) = try manifestEntry(path)
            #expect(method == 8, "\(encryption): the manifest is stored")
            #expect(data.count * 10 <= content.count * 8, "\(encryption): \(data.count) of \(content.count) bytes")
            #expect(try writeZip(tree, in: dir, encryption: encryption).report.reused == 300)
        }
    }

    /// Packs written before the manifest was deflated store it; a re-pack over one still reuses
    /// every entry. The old layout is made here from a new pack: its manifest rewritten stored,
    /// the central directory moved after it.
    @Test func aStoredManifestOfAnEarlierPackIsStillRead() throws {
        let dir = TemporaryDirectory()
        let tree = Self.tree()
        let (path, _) = try writeZip(tree, in: dir, encryption: .none)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let read = { (offset: UInt64, count: Int) -> [UInt8] in Array(bytes[Int(offset)..<(Int(offset) + count)]) }
        let structure = try ZipStructure(fileSize: UInt64(bytes.count), limits: .default, read: read)
        let m = try #require(structure.records.firstIndex { $0.name == Array(ZipManifest.entryName.utf8) })
        let record = structure.records[m]
        let dataStart = Int(try structure.checkLocalHeader(m, read: read))
        let content = try manifestContent(path)
        #expect(bytes[Int(record.localHeaderOffset) + 8] == 8, "the new pack's manifest is deflated")
        let put32 = { (b: inout [UInt8], at: Int, v: Int) in
            for k in 0..<4 { b[at + k] = UInt8(truncatingIfNeeded: v >> (8 * k)) }
        }
        var local = Array(bytes[Int(record.localHeaderOffset)..<dataStart])
        local[8] = 0
        local[9] = 0
        put32(&local, 18, content.count)
        var directory = Array(bytes[(dataStart + Int(record.compressedSize))...])
        let shift = content.count - Int(record.compressedSize)
        var at = 0
        while at + 46 <= directory.count, directory[at..<at + 4].elementsEqual([0x50, 0x4B, 1, 2]) {
            let n = Int(directory[at + 28]) | Int(directory[at + 29]) << 8
            let extra = Int(directory[at + 30]) | Int(directory[at + 31]) << 8
            let comment = Int(directory[at + 32]) | Int(directory[at + 33]) << 8
            if directory[(at + 46)..<(at + 46 + n)].elementsEqual(ZipManifest.entryName.utf8) {
                directory[at + 10] = 0
                directory[at + 11] = 0
                put32(&directory, at + 20, content.count)
            }
            at += 46 + n + extra + comment
        }
        let end = directory.count - 22
        #expect(directory[end..<end + 4].elementsEqual([0x50, 0x4B, 5, 6]))
        let directoryOffset = directory[(end + 16)..<(end + 20)].reversed().reduce(0) { $0 << 8 | Int($1) }
        put32(&directory, end + 16, directoryOffset + shift)
        bytes = Array(bytes[..<Int(record.localHeaderOffset)]) + local + content + directory
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try manifestEntry(path).method == 0)
        try expectReadsBack(path, tree, password: nil)
        #expect(try writeZip(tree, in: dir, encryption: .none).report.reused == tree.count)
    }

    @Test(.enabled(if: !BuildConfiguration.isPortable, "its manifest-less pack is libzip's ZipCrypto"))
    func packsWithoutAManifestArePackedFresh() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.txt": textBytes(3000), "b.bin": testBytes(3000)]
        _ = try writeZip(tree, in: dir, encryption: .zipCrypto)
        let (path, report) = try writeZip(tree, in: dir)
        #expect(report.reused == 0)
        try expectReadsBack(path, tree)
        // Not a zip at all.
        try Data("not a zip".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try writeZip(tree, in: dir).report.reused == 0)
    }

    @Test func aDamagedEncryptedManifestMeansAFreshPack() throws {
        let dir = TemporaryDirectory()
        let tree = Self.tree()
        let (path, _) = try writeZip(tree, in: dir)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let offset = try #require(localDataOffset(of: ZipManifest.entryName, in: bytes))
        bytes[offset + 30] ^= 1  // a ciphertext byte: the MAC fails
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (_, report) = try writeZip(tree, in: dir)
        #expect(report.reused == 0)
        try expectReadsBack(path, tree)
    }

    @Test func aDamagedEntryInThePreviousPackIsPackedAgainNotCopied() throws {
        let dir = TemporaryDirectory()
        let tree = ["a.txt": textBytes(3000, seed: 1), "b.txt": textBytes(3000, seed: 2)]
        for encryption in [PackEncryption.aes256, .none] {
            let name = "\(encryption.rawValue).zip"
            let (path, _) = try writeZip(tree, in: dir, encryption: encryption, name: name)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let a = try #require(localDataOffset(of: "a.txt", in: bytes))
            bytes[a + 40] ^= 0x01  // bit rot in a.txt's stored data
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let (_, report) = try writeZip(tree, in: dir, encryption: encryption, name: name)
            #expect(report.reused == 1 && report.packed == 1)
            try expectReadsBack(path, tree, password: encryption == .none ? nil : "s3cret")
        }
    }

    @Test(
        .enabled(
            if: !BuildConfiguration.isPortable, "rewrites the manifest in place: libdeflate stores it, zlib deflates it"
        ))
    func aLyingManifestCannotMakeAReaderReturnWrongBytes() throws {
        // An unencrypted pack's manifest is not authenticated: rewrite it so that it vouches for
        // a damaged a.txt as if it held the new content (SHA-256 of the new content, stored
        // SHA-256 of the damaged bytes). The re-pack then copies the damaged entry, and reading
        // it fails its CRC: the manifest can make a re-pack stale, never a reader wrong.
        let dir = TemporaryDirectory()
        var tree = ["a.txt": textBytes(3000, seed: 1), "b.txt": textBytes(3000, seed: 2)]
        let (path, _) = try writeZip(tree, in: dir, encryption: .none)
        var changed = tree["a.txt"]!
        changed[10] ^= 0x20

        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let a = try #require(localDataOffset(of: "a.txt", in: bytes))
        let aStored = try #require(rawEntries(path)["a.txt"])
        let aHeader = 30 + "a.txt".utf8.count
        var damaged = Array(aStored[aHeader...])
        damaged[5] ^= 0xFF  // damage a.txt's stored data (deflated), leaving its CRC field as it was
        bytes.replaceSubrange(a..<(a + damaged.count), with: damaged)
        let m = try #require(localDataOffset(of: ZipManifest.entryName, in: bytes))
        let stored = try #require(rawEntries(path)[ZipManifest.entryName])
        var manifest = try ZipManifest(decoding: Array(stored[(30 + ZipManifest.entryName.utf8.count)...]))
        #expect(manifest.records.map(\.path) == ["a.txt", "b.txt"])
        manifest.records[0].sha256 = try sha256(changed)
        manifest.records[0].storedSHA256 = try sha256(damaged)
        let encoded = manifest.encoded()
        bytes.replaceSubrange(m..<(m + encoded.count), with: encoded)
        setCRC(ZipManifest.entryName, CRC32.checksum(encoded), in: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        tree["a.txt"] = changed
        let (_, report) = try writeZip(tree, in: dir, encryption: .none)
        #expect(report.reused == 2)  // the lie is believed for a.txt...
        let reader = try ZipPackReader(path: path, credential: nil)
        let error = #expect(throws: AssetPackError.self) { try reader.read("a.txt") }
        #expect(error?.code == .integrityFailure)  // ...but its bytes are still checked
        #expect(try reader.read("b.txt") == tree["b.txt"])
    }
}

/// SHA-256 through the system's `sha256sum` (this test target does not link AssetPackCrypto).
func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
    let dir = TemporaryDirectory()
    let file = dir.appending("input")
    try Data(bytes).write(to: file)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [file.path]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let hex = Array(text.utf8.prefix(64))
    return stride(from: 0, to: hex.count, by: 2).map {
        UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
    }
}
