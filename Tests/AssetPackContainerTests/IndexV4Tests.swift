import AssetPackCore
import Foundation
import Testing

@testable import AssetPackContainer

/// The version-4 index parser on hand-made indexes: every way a chunk table can lie is refused
/// with the error docs/FORMAT.md names, before any chunk is read.
@Suite struct IndexV4Tests {
    static let chunking = ChunkingParameters(average: 4096)  // 1 KiB / 4 KiB / 16 KiB; 2 / 8 / 16 KiB at scale 1
    static let shift: UInt8 = 14

    static func chunk(_ plain: Int, payload: Int? = nil, compressed: Bool = false) -> ChunkRecord {
        ChunkRecord(
            plainLength: UInt32(plain),
            payload: UInt32(payload ?? plain) | (compressed ? ChunkTable.compressedBit : 0),
            nonce: Array(repeating: 7, count: 12), digest: Array(repeating: 9, count: 32))
    }

    static func record(
        _ path: String, size: Int, codec: ChunkCodec = .none, scale: UInt8 = 0, _ chunks: [ChunkRecord]
    ) -> IndexRecordV4 {
        IndexRecordV4(
            path: path, size: UInt64(size), crc: 0, codec: codec, scale: scale, keyID: Array(repeating: 1, count: 16),
            sha256: Array(repeating: 2, count: 32), chunks: chunks)
    }

    /// The data region the records' chunks fill (payloads and tags).
    static func dataEnd(_ records: [IndexRecordV4], start: UInt64 = UInt64(ContainerFormat.headerSize)) -> UInt64 {
        start + records.flatMap(\.chunks).reduce(0) { $0 + UInt64($1.payload & ~ChunkTable.compressedBit) + 16 }
    }

    /// `records` with each chunk's offset set where a version-6 writer of one generation puts it:
    /// back to back from the end of the two header slots.
    static func placed(_ records: [IndexRecordV4]) -> [IndexRecordV4] {
        var at = UInt64(ContainerFormat.appendableDataStart)
        return records.map { r in
            var r = r
            for c in r.chunks.indices {
                r.chunks[c].offset = at
                at += UInt64(r.chunks[c].payload & ~ChunkTable.compressedBit) + 16
            }
            return r
        }
    }

    /// Decodes `records` as a version-4 index (`offsets` false: the chunks tile the data) or a
    /// version-6 one (each chunk's offset as the records give it; `placed` when all are 0).
    static func decode(
        _ records: [IndexRecordV4], chunking: ChunkingParameters = chunking, shift: UInt8 = shift,
        dataEnd: UInt64? = nil, offsets: Bool = false
    ) throws -> [ContainerEntry] {
        let records =
            offsets && records.allSatisfy({ $0.chunks.allSatisfy { $0.offset == 0 } }) ? placed(records) : records
        let start = UInt64(offsets ? ContainerFormat.appendableDataStart : ContainerFormat.headerSize)
        let bytes = ContainerIndex.encode(records, chunking: chunking, offsets: offsets)
        return try bytes.withUnsafeBytes {
            try ContainerIndex.decodeV4(
                $0, chunkShift: shift, data: start..<(dataEnd ?? Self.dataEnd(records, start: start)), offsets: offsets,
                limits: .default)
        }.entries
    }

    @Test func aWellFormedIndexDecodes() throws {
        let records = [
            Self.record("a", size: 0, [Self.chunk(0)]),
            Self.record(
                "b", size: 1024 + 20, codec: .zstd, [Self.chunk(1024, payload: 100, compressed: true), Self.chunk(20)]),
            Self.record("c", size: 16384 + 1, [Self.chunk(16384), Self.chunk(1)]),
            Self.record("d", size: 2048 + 16384 + 7, scale: 1, [Self.chunk(2048), Self.chunk(16384), Self.chunk(7)]),
        ]
        for offsets in [false, true] {
            let entries = try Self.decode(records, offsets: offsets)
            #expect(entries.map(\.info.path) == ["a", "b", "c", "d"])
            #expect(entries[1].info.compression == .zstd && entries[1].info.storedSize == 100 + 16 + 20 + 16)
            #expect(entries.map(\.firstChunk) == [0, 1, 3, 5])
            #expect(entries.map(\.offset) == (offsets ? [8192, 8208, 8360, 24777] : [104, 120, 272, 16689]))
        }
    }

    @Test func chunkTablesThatLieAreRefused() {
        let cases: [(String, [IndexRecordV4])] = [
            ("chunks exceed the size", [Self.record("a", size: 2000, [Self.chunk(1024), Self.chunk(1024)])]),
            ("chunks fall short of the size", [Self.record("a", size: 3000, [Self.chunk(1024), Self.chunk(1024)])]),
            ("a chunk under the minimum", [Self.record("a", size: 1500, [Self.chunk(500), Self.chunk(1000)])]),
            ("a chunk over the maximum", [Self.record("a", size: 16385, [Self.chunk(16385)])]),
            ("a chunk over the maximum at scale 1", [Self.record("a", size: 16385, scale: 1, [Self.chunk(16385)])]),
            (
                "a chunk under the scaled minimum",
                [Self.record("a", size: 1500 + 10, scale: 1, [Self.chunk(1500), Self.chunk(10)])]
            ),
            ("a scale other than 0 or 1", [Self.record("a", size: 1024, scale: 2, [Self.chunk(1024)])]),
            ("an empty last chunk", [Self.record("a", size: 1024, [Self.chunk(1024), Self.chunk(0)])]),
            ("no chunks", [Self.record("a", size: 0, [])]),
            ("an empty entry with two empty chunks", [Self.record("a", size: 0, [Self.chunk(0), Self.chunk(0)])]),
            ("an empty entry with a non-empty chunk", [Self.record("a", size: 0, [Self.chunk(0, payload: 3)])]),
            ("a stored chunk of the wrong length", [Self.record("a", size: 1024, [Self.chunk(1024, payload: 1000)])]),
            (
                "a compressed chunk that does not shrink",
                [Self.record("a", size: 1024, codec: .zstd, [Self.chunk(1024, payload: 1024, compressed: true)])]
            ),
            (
                "a compressed chunk in a codec-0 entry",
                [Self.record("a", size: 1024, [Self.chunk(1024, payload: 10, compressed: true)])]
            ),
            ("a codec but no compressed chunk", [Self.record("a", size: 1024, codec: .deflate, [Self.chunk(1024)])]),
        ]
        for (why, records) in cases {
            for offsets in [false, true] {
                expectError(.integrityFailure, Comment(rawValue: why)) {
                    _ = try Self.decode(records, offsets: offsets)
                }
            }
        }
    }

    @Test func entriesThatDoNotTileTheDataAreRefused() {
        let records = [Self.record("a", size: 1024, [Self.chunk(1024)])]
        expectError(.integrityFailure, "past the data") {
            _ = try Self.decode(records, dataEnd: Self.dataEnd(records) - 1)
        }
        expectError(.integrityFailure, "a gap before the index") {
            _ = try Self.decode(records, dataEnd: Self.dataEnd(records) + 1)
        }
    }

    @Test func boundsAndCodecsItDoesNotKnowAreRefused() {
        let records = [Self.record("a", size: 1024, [Self.chunk(1024)])]
        expectError(.integrityFailure, "max is not the header's") { _ = try Self.decode(records, shift: 15) }
        expectError(.integrityFailure, "max is not the header's") { _ = try Self.decode(records, shift: 16) }
        expectError(.integrityFailure, "max under twice avg") {
            _ = try Self.decode(records, chunking: ChunkingParameters(min: 1024, avg: 16384, max: 16384))
        }
        expectError(.integrityFailure, "min over avg") {
            _ = try Self.decode(records, chunking: ChunkingParameters(min: 8192, avg: 4096, max: 16384))
        }
        expectError(.integrityFailure, "avg not a power of two") {
            _ = try Self.decode(records, chunking: ChunkingParameters(min: 1024, avg: 5000, max: 16384))
        }
        var bytes = ContainerIndex.encode(records, chunking: Self.chunking, offsets: false)
        let codecAt = 1 + 12 + 4 + 2 + 1 + 8 + 4  // method, bounds, count, path length, "a", size, CRC
        bytes[codecAt] = 9
        expectError(.unsupportedFormat, "codec 9") {
            _ = try bytes.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: Self.shift, data: 104..<Self.dataEnd(records), offsets: false, limits: .default)
            }
        }
        bytes = ContainerIndex.encode(records, chunking: Self.chunking, offsets: false)
        bytes[0] = 2
        expectError(.unsupportedFormat, "chunking method 2") {
            _ = try bytes.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: Self.shift, data: 104..<Self.dataEnd(records), offsets: false, limits: .default)
            }
        }
    }

    @Test func everyTruncationIsRefused() {
        let records = Self.placed([
            Self.record(
                "b", size: 1024 + 20, codec: .zstd, [Self.chunk(1024, payload: 100, compressed: true), Self.chunk(20)])
        ])
        for offsets in [false, true] {
            let bytes = ContainerIndex.encode(records, chunking: Self.chunking, offsets: offsets)
            let start = UInt64(offsets ? ContainerFormat.appendableDataStart : ContainerFormat.headerSize)
            for n in 0..<bytes.count {
                #expect(throws: AssetPackError.self) {
                    try Array(bytes[0..<n]).withUnsafeBytes {
                        _ = try ContainerIndex.decodeV4(
                            $0, chunkShift: Self.shift, data: start..<Self.dataEnd(records, start: start),
                            offsets: offsets, limits: .default)
                    }
                }
            }
        }
    }

    /// Version 6: chunks are found by their offsets, in any order and with gaps (an appended
    /// generation's new chunks after the ones it kept; an older generation's dead bytes), but each
    /// inside the data region and no two sharing a byte.
    @Test func version6ChunksMayMoveButNeverOverlapOrLeaveTheData() throws {
        let two = [Self.record("a", size: 2048, [Self.chunk(1024), Self.chunk(1024)])]
        func at(_ first: UInt64, _ second: UInt64) -> [IndexRecordV4] {
            var r = two
            r[0].chunks[0].offset = first
            r[0].chunks[1].offset = second
            return r
        }
        let d = UInt64(ContainerFormat.appendableDataStart)
        let end: UInt64 = d + 4 * 1040
        // The second chunk before the first, a gap, dead bytes at the end: all fine.
        let moved = try Self.decode(at(d + 3 * 1040, d), dataEnd: end, offsets: true)
        #expect(moved[0].offset == d + 3 * 1040 && moved[0].info.storedSize == 2 * 1040)
        _ = try Self.decode(at(d + 1040, d + 2 * 1040 + 5), dataEnd: end, offsets: true)
        let cases: [(String, UInt64, UInt64)] = [
            ("the same chunk twice", d, d),
            ("overlapping by one byte", d, d + 1039),
            ("overlapping the other way", d + 1039, d),
            ("before the data", d - 1, d + 1040),
            ("in the header slots", 0, d + 1040),
            ("running into the index", d, end - 1039),
            ("at the index", d, end),
            ("past the file", d, UInt64.max - 100),
        ]
        for (why, first, second) in cases {
            expectError(.integrityFailure, Comment(rawValue: why)) {
                _ = try Self.decode(at(first, second), dataEnd: end, offsets: true)
            }
        }
    }
}
