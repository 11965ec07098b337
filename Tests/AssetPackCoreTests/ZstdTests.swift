#if SystemLibraries  // libzstd: the default configuration only (ZstdUnavailableTests covers the portable one)
import AssetPackCore
import AssetPackTestSupport
import CZstd
import Foundation
import Testing

/// The zstd codec primitive: round trips, the "only if it pays" limit, and every hostile frame the
/// decoder must refuse (a clear error, never wrong bytes as success, never an allocation by what
/// the frame claims). Hostile frames are made with libzstd itself or by editing a valid frame's
/// header (RFC 8878 §3.1.1.1).
@Suite struct ZstdTests {
    /// One frame of `plain` at `level`, through a compressor given the full bound.
    static func frame(_ plain: [UInt8], level: Int32 = Zstd.defaultLevel) -> [UInt8] {
        let compressor = Zstd.Compressor(level: level)
        var out = [UInt8](repeating: 0, count: compressor.bound(plain.count))
        let n = plain.withUnsafeBytes { input in out.withUnsafeMutableBytes { compressor.compress(input, into: $0) } }
        out.removeSubrange(n!...)
        return out
    }

    /// Decodes `frame` into a buffer of `size` bytes with a fresh decompressor.
    static func decode(_ frame: [UInt8], size: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        try frame.withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { try Zstd.Decompressor().decompress(input, into: $0) }
        }
        return out
    }

    /// Where a frame header's fields are (RFC 8878 §3.1.1.1).
    struct Header {
        var singleSegment: Bool
        var fcsFlag: Int
        var didFlag: Int
        var windowOffset: Int? { singleSegment ? nil : 5 }
        var didOffset: Int { singleSegment ? 5 : 6 }
        var didSize: Int { [0, 1, 2, 4][didFlag] }
        var fcsOffset: Int { didOffset + didSize }
        var fcsSize: Int { fcsFlag == 0 ? (singleSegment ? 1 : 0) : [0, 2, 4, 8][fcsFlag] }

        init(_ frame: [UInt8]) {
            singleSegment = frame[4] & 0x20 != 0
            fcsFlag = Int(frame[4] >> 6)
            didFlag = Int(frame[4] & 3)
        }
    }

    /// `frame` rewritten as a multi-segment frame with `windowDescriptor` (needs a 2+ byte content
    /// size field, so an input of at least 256 bytes). Still a valid frame for any decoder whose
    /// window limit admits the descriptor.
    static func withWindow(_ frame: [UInt8], descriptor: UInt8) -> [UInt8] {
        var f = frame
        let header = Header(f)
        precondition(header.singleSegment && header.fcsFlag > 0)
        f[4] &= ~0x20
        f.insert(descriptor, at: 5)
        return f
    }

    /// `frame` with a one-byte dictionary id field holding `id`.
    static func withDictionaryID(_ frame: [UInt8], id: UInt8) -> [UInt8] {
        var f = frame
        let header = Header(f)
        precondition(header.didFlag == 0)
        f[4] |= 1
        f.insert(id, at: header.didOffset)
        return f
    }

    /// `frame` whose content size field (same width) declares `size`.
    static func withContentSize(_ frame: [UInt8], _ size: UInt64) -> [UInt8] {
        var f = frame
        let header = Header(f)
        let stored = header.fcsSize == 2 ? size - 256 : size
        for i in 0..<header.fcsSize { f[header.fcsOffset + i] = UInt8(truncatingIfNeeded: stored >> (8 * UInt64(i))) }
        return f
    }

    /// Expects `frame` decoded into `size` bytes to throw `code`, with `expected` in its message.
    static func expectRefused(
        _ frame: [UInt8], size: Int, _ expected: String, code: AssetPackError.Code = .integrityFailure,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try decode(frame, size: size)
            Issue.record("decoded a frame that must be refused (\(expected))", sourceLocation: sourceLocation)
        } catch let error as AssetPackError {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.message.contains(expected), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Round trips

    @Test("round trips at every size class and level", arguments: [Zstd.fastLevel, Zstd.defaultLevel, 1, 19])
    func roundTrip(level: Int32) throws {
        for plain in [[], [0x42], textBytes(65536, seed: 3), testBytes(1000, seed: 4), textBytes(300_000, seed: 5)] {
            let f = Self.frame(plain, level: level)
            #expect(try Self.decode(f, size: plain.count) == plain)
        }
    }

    @Test("frames carry the content size, no checksum and no dictionary id; the window is no larger than the input")
    func frameShape() throws {
        for size in [0, 1, 255, 256, 65536, 200_000] {
            let f = Self.frame(textBytes(size, seed: 6))
            let header = Header(f)
            #expect(f[4] & 0x04 == 0, "checksum flag")
            #expect(header.didFlag == 0)
            // Single segment: the window is the content size itself.
            #expect(header.singleSegment)
            #expect(f.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) } == UInt64(size))
        }
    }

    @Test("random bytes that do not shrink: nil against a limit one byte under the input, a frame with the bound")
    func incompressibleWithLimit() throws {
        let plain = testBytes(65536, seed: 8)
        let compressor = Zstd.Compressor(level: Zstd.defaultLevel)
        var limited = [UInt8](repeating: 0, count: plain.count - 1)
        let n = plain.withUnsafeBytes { i in limited.withUnsafeMutableBytes { compressor.compress(i, into: $0) } }
        #expect(n == nil)
        // The same compressor, after that failure, still writes a correct frame.
        var full = [UInt8](repeating: 0, count: compressor.bound(plain.count))
        let m = try #require(
            plain.withUnsafeBytes { i in full.withUnsafeMutableBytes { compressor.compress(i, into: $0) } })
        #expect(m >= plain.count)
        #expect(try Self.decode(Array(full[..<m]), size: plain.count) == plain)
        // An empty output never holds a frame, even of nothing.
        let none = [UInt8]().withUnsafeBytes {
            compressor.compress($0, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
        #expect(none == nil)
    }

    @Test("one compressor and one decompressor reused across inputs and after errors")
    func reuse() throws {
        let compressor = Zstd.Compressor(level: Zstd.fastLevel)
        let decompressor = Zstd.Decompressor()
        for (i, size) in [70_000, 0, 5, 131_072, 1].enumerated() {
            let plain = i % 2 == 0 ? textBytes(size, seed: UInt64(i)) : testBytes(size, seed: UInt64(i))
            var f = [UInt8](repeating: 0, count: compressor.bound(size))
            let n = try #require(
                plain.withUnsafeBytes { p in f.withUnsafeMutableBytes { compressor.compress(p, into: $0) } })
            f.removeSubrange(n...)
            // A refused frame first (truncated), then the good one on the same context.
            var out = [UInt8](repeating: 0, count: size)
            #expect(throws: AssetPackError.self) {
                try f.dropLast().withUnsafeBytes { p in
                    try out.withUnsafeMutableBytes { try decompressor.decompress(p, into: $0) }
                }
            }
            try f.withUnsafeBytes { p in try out.withUnsafeMutableBytes { try decompressor.decompress(p, into: $0) } }
            #expect(out == plain)
        }
    }

    @Test("one context per task in parallel: every chunk decodes to its own bytes")
    func parallel() async throws {
        let chunks = (0..<16).map { textBytes(65536 + $0 * 1000, seed: UInt64($0)) }
        let frames = chunks.map { Self.frame($0, level: Zstd.fastLevel) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for t in 0..<4 {
                group.addTask {
                    let decompressor = Zstd.Decompressor()
                    let compressor = Zstd.Compressor(level: Zstd.fastLevel)
                    var ok = true
                    for round in 0..<8 {
                        let i = (t * 5 + round) % chunks.count
                        var out = [UInt8](repeating: 0, count: chunks[i].count)
                        try frames[i].withUnsafeBytes { p in
                            try out.withUnsafeMutableBytes { try decompressor.decompress(p, into: $0) }
                        }
                        var f = [UInt8](repeating: 0, count: compressor.bound(out.count))
                        let n = out.withUnsafeBytes { p in f.withUnsafeMutableBytes { compressor.compress(p, into: $0) }
                        }
                        ok = ok && out == chunks[i] && n != nil && Array(f[..<n!]) == frames[i]
                    }
                    return ok
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }

    // MARK: Hostile frames

    @Test("a frame with a dictionary id is refused, even id 0 (which libzstd would decode)")
    func dictionaryID() throws {
        let plain = textBytes(1000, seed: 9)
        let f = Self.frame(plain)
        for id: UInt8 in [0, 7] {
            Self.expectRefused(Self.withDictionaryID(f, id: id), size: plain.count, "names a dictionary")
        }
        // The edit itself is sound: libzstd decodes the id-0 frame to the same bytes.
        let edited = Self.withDictionaryID(f, id: 0)
        var out = [UInt8](repeating: 0, count: plain.count)
        let n = edited.withUnsafeBytes { i in
            out.withUnsafeMutableBytes { ZSTD_decompress($0.baseAddress, $0.count, i.baseAddress, i.count) }
        }
        #expect(n == plain.count && out == plain)
    }

    @Test("a declared content size other than the output's is refused before decoding")
    func declaredSizeDiffers() throws {
        let plain = textBytes(1000, seed: 10)
        let f = Self.frame(plain)
        Self.expectRefused(f, size: 999, "declares 1000 bytes where 999 were expected")
        Self.expectRefused(f, size: 1001, "declares 1000 bytes where 1001 were expected")
        Self.expectRefused(f, size: 0, "declares 1000 bytes")
    }

    @Test("a frame whose header understates its content decodes past the output: refused, not truncated")
    func decodesPastDeclaredSize() throws {
        let plain = textBytes(1000, seed: 11)
        let lying = Self.withContentSize(Self.frame(plain), 999)
        Self.expectRefused(lying, size: 999, "compressed data")
        // Overstated: the frame ends before the declared size.
        Self.expectRefused(Self.withContentSize(Self.frame(plain), 1001), size: 1001, "compressed data")
    }

    @Test("a frame without a content size is refused")
    func noContentSize() throws {
        let plain = textBytes(1000, seed: 12)
        let context = try #require(ZSTD_createCCtx())
        defer { ZSTD_freeCCtx(context) }
        ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0)
        var f = [UInt8](repeating: 0, count: ZSTD_compressBound(plain.count))
        let n = plain.withUnsafeBytes { i in
            f.withUnsafeMutableBytes { ZSTD_compress2(context, $0.baseAddress, $0.count, i.baseAddress, i.count) }
        }
        #expect(ZSTD_isError(n) == 0)
        Self.expectRefused(Array(f[..<n]), size: plain.count, "does not declare its size")
    }

    @Test("truncated frames are refused at every cut")
    func truncated() throws {
        let plain = textBytes(70_000, seed: 13)
        let f = Self.frame(plain)
        for cut in [0, 1, 3, 4, 5, 6, 8, f.count / 2, f.count - 3, f.count - 1] {
            Self.expectRefused(Array(f[..<cut]), size: plain.count, "truncated")
        }
    }

    @Test("trailing data is refused: a byte, a second frame, a skippable frame")
    func trailingData() throws {
        let plain = textBytes(5000, seed: 14)
        let f = Self.frame(plain)
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4]
        for tail in [[0], Self.frame([]), skippable] {
            Self.expectRefused(f + tail, size: plain.count, "data after the end")
        }
    }

    @Test("an unknown magic or a skippable frame in place of the frame is refused")
    func unknownMagic() throws {
        let plain = textBytes(5000, seed: 15)
        let f = Self.frame(plain)
        var legacy = f
        legacy[0] = 0x27  // zstd v0.7's magic 0xFD2FB527
        Self.expectRefused(legacy, size: plain.count, "not a zstd frame")
        Self.expectRefused(testBytes(64, seed: 1), size: plain.count, "not a zstd frame")
        let skippable: [UInt8] = [0x5F, 0x2A, 0x4D, 0x18, 0, 0, 0, 0]
        Self.expectRefused(skippable + f, size: plain.count, "skippable frame")
    }

    @Test("a window up to 2^maxWindowLog decodes; one eighth more, or libzstd's own huge windows, are limitExceeded")
    func windowLimit() throws {
        let plain = textBytes(2000, seed: 16)
        let f = Self.frame(plain)
        let limitExponent = UInt8(Zstd.maxWindowLog - 10)
        // Exactly the limit (mantissa 0): accepted and correct.
        #expect(try Self.decode(Self.withWindow(f, descriptor: limitExponent << 3), size: plain.count) == plain)
        for descriptor in [limitExponent << 3 | 1, (limitExponent + 1) << 3, 0xFF] {
            Self.expectRefused(
                Self.withWindow(f, descriptor: descriptor), size: plain.count, "window larger than",
                code: .limitExceeded)
        }
        // libzstd's own frame with windowLog 27 and no pledged size (so the window is not shrunk).
        let context = try #require(ZSTD_createCCtx())
        defer { ZSTD_freeCCtx(context) }
        ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, 27)
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(plain.count) + 64)
        var produced = 0
        plain.withUnsafeBytes { i in
            out.withUnsafeMutableBytes { o in
                var input = ZSTD_inBuffer(src: i.baseAddress, size: i.count, pos: 0)
                var output = ZSTD_outBuffer(dst: o.baseAddress, size: o.count, pos: 0)
                #expect(ZSTD_isError(ZSTD_compressStream2(context, &output, &input, ZSTD_e_continue)) == 0)
                #expect(ZSTD_compressStream2(context, &output, &input, ZSTD_e_end) == 0)
                produced = output.pos
            }
        }
        let huge = Array(out[..<produced])
        #expect(Header(huge).windowOffset != nil && huge[5] >> 3 == 17)
        Self.expectRefused(huge, size: plain.count, "window larger than", code: .limitExceeded)
    }

    /// Samples that share their vocabulary across files, as a game's configuration files do.
    static func samples(_ count: Int, seed: UInt64) -> [[UInt8]] {
        let words = (0..<150).map { "key_\($0 * 7919 % 1000)_name" }
        var state = seed
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        return (0..<count).map { _ in
            Array((0..<120).map { _ in "\(words[next() % words.count])=\(next() % 1000)\n" }.joined().utf8)
        }
    }

    @Test("a trained dictionary shrinks its frames, which decode only with it; its id is never written")
    func dictionaries() throws {
        let training = Self.samples(64, seed: 1)
        let dictionary = try #require(Zstd.trainDictionary(training, capacity: 8 << 10))
        #expect(dictionary.count <= 8 << 10)
        let primed = Zstd.Compressor(level: Zstd.defaultLevel, dictionary: dictionary)
        let decoder = try Zstd.Decompressor(dictionary: dictionary)
        var with = 0, without = 0
        for input in Self.samples(8, seed: 2) {
            var out = [UInt8](repeating: 0, count: primed.bound(input.count))
            let n = try #require(
                input.withUnsafeBytes { src in out.withUnsafeMutableBytes { primed.compress(src, into: $0) } })
            let frame = Array(out[0..<n])
            #expect(frame[4] & 0b11 == 0, "a dictionary id in the frame header")
            with += n
            without += Self.frame(input).count
            var back = [UInt8](repeating: 0, count: input.count)
            try frame.withUnsafeBytes { f in try back.withUnsafeMutableBytes { try decoder.decompress(f, into: $0) } }
            #expect(back == input)
            // Without the dictionary (or with another) the frame is refused or decodes to other
            // bytes: never the input. (The container authenticates both the frame and the dictionary.)
            let other = try Zstd.Decompressor(dictionary: Array(dictionary.reversed()))
            for wrong in [Zstd.Decompressor(), other] {
                var wrongOut = [UInt8](repeating: 0, count: input.count)
                let decoded: Bool = frame.withUnsafeBytes { f in
                    wrongOut.withUnsafeMutableBytes { (try? wrong.decompress(f, into: $0)) != nil }
                }
                #expect(!decoded || wrongOut != input)
            }
        }
        #expect(with < without, "\(with) bytes with the dictionary, \(without) without")
        // Too little to train on: nil, not a crash.
        #expect(Zstd.trainDictionary([Array("ab".utf8)], capacity: 4096) == nil)
        #expect(Zstd.trainDictionary([], capacity: 4096) == nil)
    }

    @Test("a dictionary that claims zstd's dictionary format but does not parse is an integrity failure")
    func corruptDictionary() {
        let broken: [UInt8] = [0x37, 0xA4, 0x30, 0xEC, 1, 0, 0, 0] + Array(repeating: 0xFF, count: 300)
        do {
            _ = try Zstd.Decompressor(dictionary: broken)
            Issue.record("a corrupt dictionary was loaded")
        } catch let error as AssetPackError {
            #expect(error.code == .integrityFailure && error.message.contains("dictionary is corrupt"), "\(error)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
#endif
