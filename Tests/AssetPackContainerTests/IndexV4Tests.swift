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
    static func dataEnd(_ records: [IndexRecordV4]) -> UInt64 {
        UInt64(ContainerFormat.headerSize)
            + records.flatMap(\.chunks).reduce(0) { $0 + UInt64($1.payload & ~ChunkTable.compressedBit) + 16 }
    }

    static func decode(
        _ records: [IndexRecordV4], chunking: ChunkingParameters = chunking, shift: UInt8 = shift,
        dataEnd: UInt64? = nil
    ) throws -> [ContainerEntry] {
        let bytes = ContainerIndex.encode(records, chunking: chunking)
        return try bytes.withUnsafeBytes {
            try ContainerIndex.decodeV4(
                $0, chunkShift: shift, dataEnd: dataEnd ?? Self.dataEnd(records), limits: .default)
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
        let entries = try Self.decode(records)
        #expect(entries.map(\.info.path) == ["a", "b", "c", "d"])
        #expect(entries[1].info.compression == .zstd && entries[1].info.storedSize == 100 + 16 + 20 + 16)
        #expect(entries.map(\.firstChunk) == [0, 1, 3, 5])
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
            expectError(.integrityFailure, Comment(rawValue: why)) { _ = try Self.decode(records) }
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
        var bytes = ContainerIndex.encode(records, chunking: Self.chunking)
        let codecAt = 1 + 12 + 4 + 2 + 1 + 8 + 4  // method, bounds, count, path length, "a", size, CRC
        bytes[codecAt] = 9
        expectError(.unsupportedFormat, "codec 9") {
            _ = try bytes.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: Self.shift, dataEnd: Self.dataEnd(records), limits: .default)
            }
        }
        bytes = ContainerIndex.encode(records, chunking: Self.chunking)
        bytes[0] = 2
        expectError(.unsupportedFormat, "chunking method 2") {
            _ = try bytes.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: Self.shift, dataEnd: Self.dataEnd(records), limits: .default)
            }
        }
    }

    @Test func everyTruncationIsRefused() {
        let records = [
            Self.record(
                "b", size: 1024 + 20, codec: .zstd, [Self.chunk(1024, payload: 100, compressed: true), Self.chunk(20)])
        ]
        let bytes = ContainerIndex.encode(records, chunking: Self.chunking)
        for n in 0..<bytes.count {
            #expect(throws: AssetPackError.self) {
                try Array(bytes[0..<n]).withUnsafeBytes {
                    _ = try ContainerIndex.decodeV4(
                        $0, chunkShift: Self.shift, dataEnd: Self.dataEnd(records), limits: .default)
                }
            }
        }
    }
}
