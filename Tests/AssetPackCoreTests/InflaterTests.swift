import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

/// The one inflater, in both modes, at every boundary of its output buffer and its input pieces.
/// The streaming mode once lived in a copy inside the zip backend, which failed whenever an
/// entry's size was an exact multiple of its buffer ("data after the end of the compressed stream").
@Suite struct InflaterTests {
    static func deflated(_ plain: [UInt8]) -> [UInt8] {
        plain.withUnsafeBytes { RawDeflate.compress($0) }
    }

    /// Streams `compressed` through a streaming inflater fed in `piece`-byte pieces.
    static func streamed(_ compressed: [UInt8], chunkSize: Int, piece: Int, limit: UInt64) throws -> [UInt8] {
        let inflater = Inflater(chunkSize: chunkSize)
        var out: [UInt8] = []
        var seconds = 0.0
        var at = 0
        repeat {
            let end = min(at + piece, compressed.count)
            try compressed[at..<end].withUnsafeBytes { input in
                try inflater.inflate(input, limit: limit, seconds: &seconds) { chunk in
                    #expect(chunk.count <= chunkSize)
                    out.append(contentsOf: chunk)
                }
            }
            at = end
        } while at < compressed.count
        #expect(inflater.isFinished)
        #expect(inflater.totalOut == UInt64(out.count))
        return out
    }

    /// Inflates `compressed` into an exact-size buffer, fed in `piece`-byte pieces.
    static func exact(_ compressed: [UInt8], size: Int, piece: Int) throws -> [UInt8] {
        let inflater = Inflater()
        var out = [UInt8](repeating: 0, count: size)
        var pos = 0
        var at = 0
        try out.withUnsafeMutableBytes { buffer in
            repeat {
                let end = min(at + piece, compressed.count)
                pos = try compressed[at..<end].withUnsafeBytes { try inflater.inflate($0, into: buffer, at: pos) }
                at = end
            } while at < compressed.count
        }
        #expect(inflater.isFinished)
        #expect(pos == size)
        return out
    }

    static let chunkSizes = [1, 7, 4096, 65536]

    @Test(
        "streaming output equals the input at every multiple of the buffer, for any input piece size",
        arguments: chunkSizes)
    func streamingAtBufferMultiples(chunkSize: Int) throws {
        var sizes = [0, 1, 2, chunkSize - 1, chunkSize, chunkSize + 1]
        for k in [2, 3, 4] { sizes += [k * chunkSize - 1, k * chunkSize, k * chunkSize + 1] }
        for size in Set(sizes.filter { $0 >= 0 }).sorted() {
            for (seed, plain) in [(1, textBytes(size, seed: 5)), (2, testBytes(size, seed: 6))] {
                let compressed = Self.deflated(plain)
                for piece in [compressed.count < 4096 ? 1 : 1021, 4096, max(1, compressed.count)] {
                    let out = try Self.streamed(compressed, chunkSize: chunkSize, piece: piece, limit: UInt64(size))
                    #expect(out == plain, "chunk \(chunkSize), size \(size), content \(seed), piece \(piece)")
                }
            }
        }
    }

    @Test("the exact mode fills a buffer of the declared size, for any input piece size")
    func exactModeAtBoundaries() throws {
        for size in [0, 1, 15, 16, 17, 4095, 4096, 4097, 262_143, 262_144, 262_145] {
            let plain = textBytes(size, seed: UInt64(size))
            let compressed = Self.deflated(plain)
            for piece in [1, 100, max(1, compressed.count)] {
                #expect(try Self.exact(compressed, size: size, piece: piece) == plain, "size \(size), piece \(piece)")
            }
        }
    }

    @Test("data after the end of the stream is refused in both modes, even when the output is exactly full")
    func trailingDataIsRefused() throws {
        for size in [0, 4096, 8192] {
            let plain = textBytes(size, seed: 9)
            let compressed = Self.deflated(plain) + [0x00]
            #expect(throws: AssetPackError.self) {
                _ = try Self.streamed(compressed, chunkSize: 4096, piece: compressed.count, limit: UInt64(size))
            }
            #expect(throws: AssetPackError.self) { _ = try Self.exact(compressed, size: size, piece: compressed.count) }
        }
    }

    @Test("output past the declared size is refused before it is emitted or written")
    func oversizeIsRefused() throws {
        let plain = textBytes(10_000, seed: 3)
        let compressed = Self.deflated(plain)
        #expect(throws: AssetPackError.self) {
            _ = try Self.streamed(compressed, chunkSize: 4096, piece: 64, limit: 9_999)
        }
        #expect(throws: AssetPackError.self) { _ = try Self.exact(compressed, size: 9_999, piece: 64) }
    }

    @Test("a truncated stream is not finished, and corrupt data throws")
    func truncatedAndCorrupt() throws {
        let plain = textBytes(50_000, seed: 4)
        let compressed = Self.deflated(plain)
        let inflater = Inflater(chunkSize: 4096)
        var seconds = 0.0
        try compressed.dropLast(10).withUnsafeBytes {
            try inflater.inflate($0, limit: 50_000, seconds: &seconds) { _ in }
        }
        #expect(!inflater.isFinished)
        let garbage = [UInt8](repeating: 0xFF, count: 64)
        #expect(throws: AssetPackError.self) {
            _ = try Self.streamed(garbage, chunkSize: 4096, piece: 64, limit: 1 << 20)
        }
    }
}
