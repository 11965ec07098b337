import AssetPackCore
import AssetPackCrypto
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// The version-8 index, read in place (docs/FORMAT.md, "Version 8"): what it finds, what its
/// head refuses at open, what each record refuses when it is read, what `verify` adds, and that
/// no table, however made, crashes a reader or sends it outside the pack.
@Suite struct IndexV8Tests {
    typealias V4 = IndexV4Tests
    static let start = UInt64(ContainerFormat.appendableDataStart)

    static let sample: [IndexRecordV4] = V4.placed([
        V4.record("a.txt", size: 100, [V4.chunk(100)]),
        V4.record("dir/b.bin", size: 1500 + 1500 + 500, [V4.chunk(1500), V4.chunk(1500), V4.chunk(500)]),
        V4.record("dir/c.z", size: 3000, codec: .zstd, [V4.chunk(3000, payload: 900, compressed: true)]),
        V4.record("empty", size: 0, [V4.chunk(0)]),
    ])

    /// The lookup table of `records`, changed by `mutate`, read in place over the data region the
    /// records fill.
    static func table(
        _ records: [IndexRecordV4] = sample, chunking: ChunkingParameters = V4.chunking,
        _ mutate: (inout [UInt8]) -> Void = { _ in }
    ) throws -> IndexTable {
        let encoded = ContainerIndex.encodeV8(records, chunking: chunking)
        var bytes = encoded.table
        mutate(&bytes)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        buffer.copyBytes(from: bytes)
        let digests = encoded.digests
        return try IndexTable(
            taking: buffer, chunkShift: V4.shift, data: start..<V4.dataEnd(records, start: start), limits: .default,
            digests: { digests })
    }

    /// Where entry `i`'s and chunk `k`'s records start in a table of `entries` entries.
    static func entryAt(_ i: Int) -> Int { IndexTable.headSize + i * IndexTable.entrySize }
    static func chunkAt(_ k: Int, entries: Int = sample.count) -> Int {
        IndexTable.headSize + entries * IndexTable.entrySize + k * IndexTable.chunkSize
    }

    static func put<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<offset + $0.count, with: $0) }
    }

    @Test func everyRecordDecodesAsTheVersion6IndexDecodesIt() throws {
        let table = try Self.table()
        let v6 = try V4.decode(Self.sample, offsets: true)
        #expect(table.count == v6.count)
        #expect(table.chunkCount == 6)
        for (i, old) in v6.enumerated() {
            let e = try table.entry(i)
            #expect(e.info == old.info)
            #expect(e.keyID == old.keyID && e.firstChunk == old.firstChunk && e.chunkCount == old.chunkCount)
            #expect(e.offset == old.offset && e.codec == old.codec && e.largestChunk == old.largestChunk)
            #expect(table.info(i) == old.info)
        }
        let (_, chunks, _) = try ContainerIndex.encode(Self.sample, chunking: V4.chunking, offsets: true)
            .withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: V4.shift, data: Self.start..<V4.dataEnd(Self.sample, start: Self.start),
                    offsets: true, limits: .default)
            }
        for k in 0..<chunks.count {
            #expect(table.offset(k) == chunks.offsets[k] && table.payload(k) == chunks.payloads[k])
            #expect(table.plainStart(k) == chunks.plainStarts[k] && table.plainLength(k) == chunks.plainLengths[k])
            #expect(table.nonce(k) == chunks.nonce(k))
        }
        let digests = try table.digests()
        #expect(digests.entry(1) == Self.sample[1].sha256)
        #expect(digests.chunk(4) == Self.sample[2].chunks[0].digest)
        try table.checkAll()
    }

    @Test func lookupsFindEveryPathAndNothingElse() throws {
        let table = try Self.table()
        for (i, r) in Self.sample.enumerated() { #expect(try table.position(of: r.path) == i, "\(r.path)") }
        for missing in ["", "a", "a.tx", "a.txt/", "dir", "dir/", "zzz", "empty2"] {
            #expect(try table.position(of: missing) == nil, "\(missing)")
        }
        #expect(try table.run(withPrefix: Array("dir/".utf8)) == 1..<3)
        #expect(try table.run(withPrefix: Array(".assetpack/".utf8)).isEmpty)
        // Many paths: every one found where it is, none of as many others.
        let many = V4.placed(
            (0..<5000).map { V4.record(String(format: "lvl%03d/tile%05d.json", $0 % 97, $0), size: 1, [V4.chunk(1)]) }
                .sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) })
        let big = try Self.table(many)
        for (i, r) in many.enumerated() { #expect(try big.position(of: r.path) == i) }
        for n in 0..<5000 { #expect(try big.position(of: String(format: "lvl%03d/tile%05d.jsn", n % 97, n)) == nil) }
        try big.checkAll()
    }

    @Test func aHeadThatLiesIsRefusedAtOpen() {
        let count = Self.sample.count
        let cases: [(String, AssetPackError.Code, (inout [UInt8]) -> Void)] = [
            ("method", .unsupportedFormat, { $0[0] = 2 }),
            ("reserved", .integrityFailure, { $0[2] = 1 }),
            ("bounds", .integrityFailure, { Self.put(UInt32(10), at: 4, in: &$0) }),
            ("entries", .integrityFailure, { Self.put(UInt32(count + 1), at: 16, in: &$0) }),
            ("too many", .limitExceeded, { Self.put(UInt32.max, at: 16, in: &$0) }),
            ("chunks < entries", .integrityFailure, { Self.put(UInt32(count - 1), at: 20, in: &$0) }),
            ("slots not a power of two", .integrityFailure, { Self.put(UInt32(12), at: 24, in: &$0) }),
            ("slots not above entries", .integrityFailure, { Self.put(UInt32(4), at: 24, in: &$0) }),
            ("no probe", .integrityFailure, { Self.put(UInt32(0), at: 28, in: &$0) }),
            ("probe past the slots", .integrityFailure, { Self.put(UInt32(1 << 20), at: 28, in: &$0) }),
            ("strings", .integrityFailure, { Self.put(UInt32(1000), at: 32, in: &$0) }),
            ("trailing", .integrityFailure, { $0.append(0) }),
            ("cut", .integrityFailure, { $0.removeLast() }),
            ("head only", .integrityFailure, { $0 = Array($0.prefix(20)) }),
        ]
        for (name, code, mutate) in cases {
            let error = #expect(throws: AssetPackError.self, "\(name)") { try Self.table(Self.sample, mutate) }
            #expect(error?.code == code, "\(name): \(String(describing: error))")
        }
    }

    @Test func aRecordThatLiesIsRefusedWhenReadAndTheOthersStillRead() throws {
        let (e, c) = (Self.entryAt, { (k: Int) in Self.chunkAt(k) })
        // Entry 1 (dir/b.bin: chunks 1, 2, 3) is the one damaged in each case.
        let cases: [(String, AssetPackError.Code, (inout [UInt8]) -> Void)] = [
            ("path past the strings", .integrityFailure, { Self.put(UInt32(10_000), at: e(1), in: &$0) }),
            ("empty path", .integrityFailure, { Self.put(UInt16(0), at: e(1) + 4, in: &$0) }),
            // The strings end the table: a.txt, dir/b.bin, dir/c.z, empty (26 bytes).
            ("path not UTF-8", .integrityFailure, { $0[$0.count - 21] = 0xFF }),
            ("codec", .unsupportedFormat, { $0[e(1) + 6] = 9 }),
            ("scale", .integrityFailure, { $0[e(1) + 7] = 2 }),
            ("size", .integrityFailure, { Self.put(UInt64(1) << 63, at: e(1) + 8, in: &$0) }),
            ("size short", .integrityFailure, { Self.put(UInt64(3499), at: e(1) + 8, in: &$0) }),
            ("first chunk", .integrityFailure, { Self.put(UInt32(2), at: e(1) + 20, in: &$0) }),
            ("no chunks", .integrityFailure, { Self.put(UInt32(0), at: e(1) + 24, in: &$0) }),
            ("chunks past the table", .integrityFailure, { Self.put(UInt32(900), at: e(1) + 24, in: &$0) }),
            ("offset before the data", .integrityFailure, { Self.put(UInt64(100), at: c(2), in: &$0) }),
            ("offset past the data", .integrityFailure, { Self.put(UInt64.max - 5, at: c(2), in: &$0) }),
            ("plain start", .integrityFailure, { Self.put(UInt64(7), at: c(2) + 8, in: &$0) }),
            ("under the bounds", .integrityFailure, { Self.put(UInt32(10), at: c(1) + 16, in: &$0) }),
            ("over the bounds", .integrityFailure, { Self.put(UInt32(1 << 20), at: c(1) + 16, in: &$0) }),
            ("compressed, no codec", .integrityFailure, { Self.put(UInt32(1000) | 1 << 31, at: c(1) + 20, in: &$0) }),
            ("payload", .integrityFailure, { Self.put(UInt32(1499), at: c(1) + 20, in: &$0) }),
        ]
        for (name, code, mutate) in cases {
            let table = try Self.table(Self.sample, mutate)  // the head is fine: nothing per entry at open
            let error = #expect(throws: AssetPackError.self, "\(name)") { try table.entry(1) }
            #expect(error?.code == code, "\(name): \(String(describing: error))")
            #expect(throws: AssetPackError.self, "\(name)") { try table.checkAll() }
            _ = table.info(1)  // listed with what decodes
            #expect(try table.entry(0).info.path == "a.txt", "\(name)")
            if name != "first chunk" && name != "no chunks" && name != "chunks past the table" {
                #expect(try table.entry(2).info.path == "dir/c.z", "\(name)")  // its chunks follow entry 1's
            }
        }
    }

    @Test func verifyFindsWhatNoReadNeeds() throws {
        let count = Self.sample.count
        // Paths out of order (entries 0 and 3 swap their strings): each still reads.
        let unsorted = try Self.table(Self.sample) { b in
            let a = Array(b[Self.entryAt(0)..<Self.entryAt(0) + 6]), z = Array(b[Self.entryAt(3)..<Self.entryAt(3) + 6])
            b.replaceSubrange(Self.entryAt(0)..<Self.entryAt(0) + 6, with: z)
            b.replaceSubrange(Self.entryAt(3)..<Self.entryAt(3) + 6, with: a)
        }
        #expect(try unsorted.entry(0).info.path == "empty")
        let error = #expect(throws: AssetPackError.self) { try unsorted.checkAll() }
        #expect(error?.message.contains("paths unsorted or repeated") == true)
        // A hash table that does not find an entry: every slot emptied.
        let lost = try Self.table(Self.sample) { b in
            let hashAt = Self.chunkAt(0, entries: count) + 6 * IndexTable.chunkSize
            for at in stride(from: hashAt, to: hashAt + 4 * 16, by: 4) { Self.put(UInt32(0), at: at, in: &b) }
        }
        #expect(try lost.position(of: "a.txt") == nil)
        #expect(try lost.entry(0).info.path == "a.txt")
        let notFound = #expect(throws: AssetPackError.self) { try lost.checkAll() }
        #expect(notFound?.message.contains("hash table") == true)
        // Two chunks on the same bytes: each is authenticated alone; verify refuses the table.
        let overlap = try Self.table(Self.sample) { b in
            Self.put(UInt64(Self.start), at: Self.chunkAt(5), in: &b)
            Self.put(UInt32(0), at: Self.chunkAt(5) + 20, in: &b)  // (empty's empty chunk on a.txt's)
        }
        _ = try overlap.entry(3)
        let overlapping = #expect(throws: AssetPackError.self) { try overlap.checkAll() }
        #expect(overlapping?.message.contains("overlap") == true)
    }

    /// Every byte of a table flipped, one at a time, to three values: the table is refused at open,
    /// or every record either is refused or lies wholly inside the data, and every lookup ends.
    @Test func noTableCrashesOrLeavesThePack() throws {
        let size = ContainerIndex.encodeV8(Self.sample, chunking: V4.chunking).table.count
        let data = Self.start..<V4.dataEnd(Self.sample, start: Self.start)
        var opened = 0, refusedRecords = 0
        for at in 0..<size {
            for value: UInt8 in [0x00, 0xFF, 0x80] {
                guard let table = try? Self.table(Self.sample, { $0[at] = value }) else { continue }
                opened += 1
                for i in 0..<table.count {
                    _ = table.info(i)
                    guard let e = try? table.entry(i) else {
                        refusedRecords += 1
                        continue
                    }
                    for k in e.firstChunk..<e.firstChunk + e.chunkCount {
                        let end = table.offset(k) + UInt64(table.payload(k) & ~ChunkTable.compressedBit) + 16
                        #expect(data.contains(table.offset(k)) && end <= data.upperBound, "byte \(at) = \(value)")
                    }
                }
                for r in Self.sample { _ = try? table.position(of: r.path) }
                _ = try? table.checkAll()
            }
        }
        #expect(opened > 0 && refusedRecords > 0)
    }

    /// No read decrypts the digest section: a flip there is harmless to reads, refused by
    /// `verify` (``PackReader/checkIndex()``), and a re-pack then packs whole instead of reusing.
    @Test func aDamagedDigestSectionIsHarmlessToReadsAndRefusedByVerify() throws {
        let tree = try IncrementalTests.Tree(["a.txt": Array("abc".utf8), "b.bin": noise(5000, seed: 3)])
        try tree.pack()
        try tree.reader().checkIndex()
        var bytes = tree.bytes
        let section = try #require(digestSection(bytes))
        bytes[section.lowerBound + 3] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))
        try tree.expectReadsBack()
        let error = #expect(throws: AssetPackError.self) { try tree.reader().checkIndex() }
        #expect(error?.code == .integrityFailure && error?.message == "container index failed authentication")
        let report = try tree.pack()
        #expect(report.reused == 0 && !report.appended, "\(report)")
        try tree.reader().checkIndex()
        try tree.expectReadsBack()
    }

    /// A record damaged under the pack's key (re-sealed with it, as only a key holder can): the
    /// pack opens, the other entries read, that one is refused by name, `checkIndex` refuses the
    /// pack, and a re-pack packs afresh (it decodes every record of the pack it reuses, and
    /// failed on the damaged one before it checked the whole index first).
    @Test func aRecordDamagedUnderTheKeyIsRefusedWhereItIsUsed() throws {
        let tree = try IncrementalTests.Tree(["a.txt": Array("abc".utf8), "b.bin": noise(5000, seed: 3)])
        try tree.pack()
        let bytes = try Self.resealed(tree) { $0[Self.entryAt(1) + 6] = 9 }  // b.bin's codec: none this build knows
        try Data(bytes).write(to: URL(fileURLWithPath: tree.output))

        let reader = try tree.reader()
        #expect(try reader.read("a.txt") == Array("abc".utf8))
        let refused = #expect(throws: AssetPackError.self) { try reader.read("b.bin") }
        #expect(refused?.code == .unsupportedFormat && refused?.path == "b.bin", "\(String(describing: refused))")
        #expect(reader.entry("b.bin") == nil && reader.entries.map(\.path) == ["a.txt", "b.bin"])
        #expect(throws: AssetPackError.self) { try reader.checkIndex() }
        let report = try tree.pack()
        #expect(report.reused == 0 && !report.appended, "\(report)")
        try tree.expectReadsBack()
        try tree.reader().checkIndex()
    }

    /// A chunk offset near 2^64 sealed under the key (as anyone with the password can): the
    /// dead bytes an installer asks of the pack before verifying it are found without a trap
    /// (the chunk reaches to the end), and reading the entry is refused.
    @Test func aChunkOffsetThatOverflowsGivesDeadBytesWithoutATrap() throws {
        let tree = try IncrementalTests.Tree(["a.txt": Array("abc".utf8), "b.bin": noise(5000, seed: 3)])
        try tree.pack()
        let header = try ContainerHeader.read(from: FileByteSource(path: tree.output)).header
        let entries = try tree.reader().records.count
        let bytes = try Self.resealed(tree) { Self.put(UInt64.max - 3, at: Self.chunkAt(1, entries: entries), in: &$0) }
        let reader = try ContainerPackReader(source: MemoryByteSource(bytes), credential: testKey)
        let dead = try ContainerPackWriter.deadRanges(reader)
        #expect(dead.allSatisfy { $0.upperBound <= header.indexOffset }, "\(dead)")
        #expect(throws: AssetPackError.self) { try reader.read("b.bin") }
    }

    /// The bytes of `tree`'s pack with its index table changed by `change` and sealed again under
    /// the pack's key, as only a key holder (anyone with the password) can.
    static func resealed(_ tree: IncrementalTests.Tree, _ change: (inout [UInt8]) -> Void) throws -> [UInt8] {
        var bytes = tree.bytes
        let (headerBytes, header) = try ContainerHeader.read(from: FileByteSource(path: tree.output))
        let key = try tree.reader().keys.indexKey(version: header.version)
        let at = Int(header.indexOffset)..<Int(header.indexOffset + header.indexLength)
        var index = try ContainerIndex.unsealV8(Array(bytes[at]), key: key, headerBytes: headerBytes)
        change(&index.table)
        bytes.replaceSubrange(
            at,
            with: ContainerIndex.sealV8(
                table: index.table, digests: index.digests, nonce: index.nonce, key: key, headerBytes: headerBytes))
        return bytes
    }

    // MARK: - The sealed region

    static func sealed(records: [IndexRecordV4], damage: (inout [UInt8], Int) -> Void = { _, _ in }) -> (
        source: MemoryByteSource, header: ContainerHeader, headerBytes: [UInt8], key: [UInt8]
    ) {
        let index = ContainerIndex.encodeV8(records, chunking: V4.chunking)
        let key = [UInt8](repeating: 0x42, count: 32)
        let headerBytes = [UInt8](repeating: 0x17, count: ContainerFormat.slotSize)
        let dataEnd = V4.dataEnd(records, start: start)
        var region = ContainerIndex.sealV8(
            table: index.table, digests: index.digests, nonce: Array(0..<12), key: key, headerBytes: headerBytes)
        damage(&region, index.table.count)
        let header = ContainerHeader(
            version: 8, kdf: .none, chunkShift: V4.shift, params: [0, 0, 0], salt: Array(repeating: 0, count: 32),
            indexOffset: dataEnd, indexLength: UInt64(region.count))
        let file = [UInt8](repeating: 0, count: Int(dataEnd)) + region
        return (MemoryByteSource(file), header, headerBytes, key)
    }

    static func open(
        _ s: (source: MemoryByteSource, header: ContainerHeader, headerBytes: [UInt8], key: [UInt8]),
        headerBytes: [UInt8]? = nil, parallelFrom: Int = ContainerIndex.parallelSegments
    ) throws -> IndexTable {
        try ContainerIndex.openV8(
            s.source, region: s.header.indexOffset..<UInt64(s.source.bytes.count), header: s.header,
            headerBytes: headerBytes ?? s.headerBytes, key: s.key, limits: .default, parallelFrom: parallelFrom)
    }

    /// 30,000 records make a table of four 1 MiB segments: the open opens the first (the
    /// head's) alone, a lookup the ones it reads, `loadAll` the rest; a changed byte in any
    /// segment fails what reaches it (a damaged first segment, the open), and the digests are
    /// opened only when asked for; on one core, and on every core (`loadAll` opens 32 missing
    /// segments or more so; 1 makes these).
    @Test(arguments: [ContainerIndex.parallelSegments, 1])
    func theRegionIsSealedInSegmentsAndTheDigestsApart(parallelFrom: Int) throws {
        func open(
            _ s: (source: MemoryByteSource, header: ContainerHeader, headerBytes: [UInt8], key: [UInt8]),
            headerBytes: [UInt8]? = nil
        ) throws -> IndexTable { try Self.open(s, headerBytes: headerBytes, parallelFrom: parallelFrom) }
        let records = V4.placed(
            (0..<30_000).map { V4.record(String(format: "assets/texture%06d.ktx2", $0), size: 1, [V4.chunk(1)]) })
        let sizes = ContainerIndex.encodeV8(records, chunking: V4.chunking)
        #expect(ContainerIndex.segments(sizes.table.count) == 4)
        let table = try open(Self.sealed(records: records))
        #expect(try table.count == 30_000 && table.position(of: "assets/texture029999.ktx2") == 29_999)
        try table.loadAll()
        try table.checkAll()
        #expect(try table.digests().chunk(29_999) == records[29_999].chunks[0].digest)
        // A byte of the third table segment changed: the pack opens (its head's segment holds),
        // and what reaches the third is refused: a lookup of a path stored there, loadAll, checkAll.
        let third = try open(Self.sealed(records: records) { r, _ in r[20 + 2 * ((1 << 20) + 16) + 5] ^= 1 })
        #expect(third.count == 30_000)
        let path = String(format: "assets/texture%06d.ktx2", 29_999)
        for failing in [{ _ = try third.position(of: path) }, { try third.loadAll() }, { try third.checkAll() }] {
            let error = #expect(throws: AssetPackError.self) { try failing() }
            #expect(error?.code == .integrityFailure && error?.message == "container index failed authentication")
        }
        // A byte of the first segment changed, or the header bound into every segment: refused at open.
        let first = #expect(throws: AssetPackError.self) {
            try open(Self.sealed(records: records) { r, _ in r[25] ^= 1 })
        }
        #expect(first?.message == "container index failed authentication")
        let otherHeader = #expect(throws: AssetPackError.self) {
            try open(Self.sealed(records: records), headerBytes: Array(repeating: 0x18, count: 128))
        }
        #expect(otherHeader?.code == .integrityFailure)
        // The digest section damaged: the table opens and reads; only the digests are refused.
        let lateDamage = try open(Self.sealed(records: records) { r, _ in r[r.count - 20] ^= 1 })
        #expect(try lateDamage.entry(5).info.size == 1)
        #expect(throws: AssetPackError.self) { try lateDamage.digests() }
        // Lengths that do not fill the region.
        let lengths = #expect(throws: AssetPackError.self) {
            try open(Self.sealed(records: records) { r, _ in r[0] &+= 1 })
        }
        #expect(lengths?.message.contains("do not fill the region") == true)
    }
}
