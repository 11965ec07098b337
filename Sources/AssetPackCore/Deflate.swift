internal import CZlib
#if SystemLibraries
internal import CLibdeflate
#endif

/// Raw deflate (RFC 1951, no zlib or gzip header): libdeflate for whole-buffer compression and
/// inflate, zlib for streaming inflate and for compression in independent pieces. The portable
/// configuration (no libdeflate) does all of it with zlib: the same streams, about half the speed.
package enum RawDeflate {
    /// Compresses `input` in one call.
    /// - Parameters:
    ///   - input: The bytes to compress.
    ///   - level: zlib level 0–9 (6 is zlib's default).
    /// - Returns: The raw deflate stream.
    package static func compress(_ input: UnsafeRawBufferPointer, level: Int32 = 6) -> [UInt8] {
        let stream = ZStream(deflateLevel: level)
        defer { stream.end() }
        let bound = Int(deflateBound(stream.pointer, UInt(input.count)))
        var out = [UInt8](repeating: 0, count: bound)
        let produced = out.withUnsafeMutableBytes { outBuf -> Int in
            let s = stream.pointer
            s.pointee.next_in = UnsafeMutablePointer(
                mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            s.pointee.avail_in = UInt32(input.count)
            s.pointee.next_out = outBuf.baseAddress!.assumingMemoryBound(to: UInt8.self)
            s.pointee.avail_out = UInt32(outBuf.count)
            let rc = deflate(s, Z_FINISH)
            precondition(rc == Z_STREAM_END, "deflate with deflateBound output must finish")
            return Int(s.pointee.total_out)
        }
        out.removeSubrange(produced...)
        return out
    }

    /// Inflates a raw deflate stream whose uncompressed size is known exactly, in one call.
    ///
    /// Uses libdeflate's whole-buffer decompressor (about twice zlib's speed). Memory is
    /// bounded by `output`: a stream that would produce more is an error, never an allocation.
    /// - Parameters:
    ///   - input: The raw deflate stream.
    ///   - output: Where to write; its size is the exact expected uncompressed size.
    /// - Throws: `AssetPackError.integrityFailure` if the stream is corrupt, ends early,
    ///   has trailing data, or inflates to a different size.
    package static func decompress(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws {
        #if SystemLibraries
        try decompressWithLibdeflate(input, into: output)
        #else
        // zlib, through the exact mode of the one streaming inflater.
        let inflater = Inflater()
        defer { inflater.end() }
        let produced = try inflater.inflate(input, into: output, at: 0)
        guard inflater.isFinished, produced == output.count else {
            throw AssetPackError(.integrityFailure, "compressed data ends early")
        }
        #endif
    }

    #if SystemLibraries
    private static func decompressWithLibdeflate(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws {
        guard let decompressor = libdeflate_alloc_decompressor() else {
            allocationFailed("libdeflate_alloc_decompressor")
        }
        defer { libdeflate_free_decompressor(decompressor) }
        var consumed = 0
        var scratch: UInt8 = 0
        let result = withUnsafeMutablePointer(to: &scratch) { empty in
            libdeflate_deflate_decompress_ex(
                decompressor, input.baseAddress ?? UnsafeRawPointer(empty), input.count,
                output.baseAddress ?? UnsafeMutableRawPointer(empty), output.count, &consumed, nil)
        }
        switch result {
        case LIBDEFLATE_SUCCESS:
            guard consumed == input.count else {
                throw AssetPackError(.integrityFailure, "data after the end of the compressed stream")
            }
        case LIBDEFLATE_SHORT_OUTPUT: throw AssetPackError(.integrityFailure, "compressed data ends early")
        case LIBDEFLATE_INSUFFICIENT_SPACE:
            throw AssetPackError(.integrityFailure, "compressed data inflates to more than the declared size")
        default: throw AssetPackError(.integrityFailure, "compressed data is corrupt")
        }
    }
    #endif
}

extension RawDeflate {
    #if SystemLibraries
    /// A reusable libdeflate compressor for whole buffers (raw deflate, no header).
    ///
    /// libdeflate compresses about 2.4 times as fast as zlib at the same ratio (measured in
    /// docs/ZIP-WRITER.md) but has no streaming interface: the whole input and the output buffer
    /// must be in memory. Allocating its state costs more than compressing a small file, so a
    /// writer keeps one per thread. One thread at a time.
    package final class FastCompressor {
        private let compressor: OpaquePointer
        /// The libdeflate level (1–12).
        package let level: Int32

        /// A compressor at `level` (1 fastest … 12 smallest; 0 stores).
        package init(level: Int32) {
            guard let c = libdeflate_alloc_compressor(level) else {
                allocationFailed("libdeflate_alloc_compressor(\(level))")
            }
            compressor = c
            self.level = level
        }

        deinit { libdeflate_free_compressor(compressor) }

        /// Compresses `input` into `output`.
        /// - Returns: The compressed size, or `nil` when the result does not fit in `output`
        ///   (so an output buffer one byte smaller than the input means "only if it is smaller").
        package func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            guard let out = output.baseAddress, output.count > 0 else { return nil }
            var empty: UInt8 = 0
            let n = withUnsafePointer(to: &empty) { e in
                libdeflate_deflate_compress(
                    compressor, input.baseAddress ?? UnsafeRawPointer(e), input.count, out, output.count)
            }
            return n == 0 ? nil : n
        }

        /// The most bytes ``compress(_:into:)`` can produce for `count` input bytes.
        package func bound(_ count: Int) -> Int {
            libdeflate_deflate_compress_bound(compressor, count)
        }
    }
    #else
    /// The portable configuration's whole-buffer compressor: zlib at `min(level, 9)`, one
    /// reusable stream (same interface as the default configuration's libdeflate compressor).
    package final class FastCompressor {
        private let stream: ZStream
        /// The level asked for (1–12; zlib uses at most 9).
        package let level: Int32

        /// A compressor at `level` (1 fastest … 12 smallest; 0 stores).
        package init(level: Int32) {
            self.level = level
            stream = ZStream(deflateLevel: min(level, 9))
        }

        deinit { stream.end() }

        /// Compresses `input` into `output`.
        /// - Returns: The compressed size, or `nil` when the result does not fit in `output`.
        package func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            guard let out = output.baseAddress, output.count > 0, input.count <= Int(UInt32.max) else { return nil }
            let s = stream.pointer
            deflateReset(s)
            var empty: UInt8 = 0
            return withUnsafeMutablePointer(to: &empty) { e in
                s.pointee.next_in =
                    (input.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) }
                    ?? UnsafeMutableRawPointer(e)).assumingMemoryBound(to: UInt8.self)
                s.pointee.avail_in = UInt32(input.count)
                s.pointee.next_out = out.assumingMemoryBound(to: UInt8.self)
                s.pointee.avail_out = UInt32(min(output.count, Int(UInt32.max)))
                let rc = deflate(s, Z_FINISH)
                return rc == Z_STREAM_END ? Int(s.pointee.total_out) : nil
            }
        }

        /// The most bytes ``compress(_:into:)`` can produce for `count` input bytes.
        package func bound(_ count: Int) -> Int { Int(deflateBound(stream.pointer, UInt(count))) }
    }
    #endif

    /// One piece of a raw deflate stream compressed independently of the others (pigz's method):
    /// zlib at `level`, primed with the 32 KiB of input before the piece (`dictionary`), ended
    /// with a sync flush (byte-aligned, not final) unless `final`. Concatenated in order, the
    /// pieces form one valid deflate stream; each can be compressed on another thread, with
    /// memory bounded by the piece size. For inputs too large to hold whole for libdeflate.
    package static func compressPiece(
        _ input: UnsafeRawBufferPointer, dictionary: UnsafeRawBufferPointer, final: Bool, level: Int32
    ) -> [UInt8] {
        let stream = ZStream(deflateLevel: level)
        defer { stream.end() }
        let s = stream.pointer
        if let d = dictionary.baseAddress, dictionary.count > 0 {
            guard deflateSetDictionary(s, d.assumingMemoryBound(to: UInt8.self), UInt32(dictionary.count)) == Z_OK
            else { allocationFailed("deflateSetDictionary") }
        }
        // deflateBound plus the sync flush marker (and its possible empty block).
        var out = [UInt8](repeating: 0, count: Int(deflateBound(s, UInt(input.count))) + 16)
        let produced = out.withUnsafeMutableBytes { outBuf -> Int in
            s.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            s.pointee.avail_in = UInt32(input.count)
            s.pointee.next_out = outBuf.baseAddress!.assumingMemoryBound(to: UInt8.self)
            s.pointee.avail_out = UInt32(outBuf.count)
            let rc = deflate(s, final ? Z_FINISH : Z_SYNC_FLUSH)
            precondition(
                (final ? rc == Z_STREAM_END : rc == Z_OK) && s.pointee.avail_in == 0,
                "deflate with deflateBound output must finish")
            return Int(s.pointee.total_out)
        }
        out.removeSubrange(produced...)
        return out
    }
}

/// A z_stream pinned in memory (zlib keeps a pointer back to it).
final class ZStream {
    let pointer: UnsafeMutablePointer<z_stream>
    private let isDeflate: Bool

    init(deflateLevel level: Int32) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: z_stream())
        isDeflate = true
        let rc = deflateInit2_(
            pointer, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
            Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK { allocationFailed("deflateInit2 (zlib \(rc))") }
    }

    init(inflate: Void) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: z_stream())
        isDeflate = false
        let rc = inflateInit2_(pointer, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK { allocationFailed("inflateInit2 (zlib \(rc))") }
    }

    func end() {
        if isDeflate { deflateEnd(pointer) } else { inflateEnd(pointer) }
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}

/// Streaming raw inflate with a hard output bound: the one inflater both backends use.
///
/// Feed compressed input in pieces with one of two modes (do not mix them on one instance):
/// - **exact**: ``inflate(_:into:at:)`` decodes into a caller buffer whose size is the declared
///   uncompressed size; one byte more is an error, never a write.
/// - **streaming**: ``inflate(_:limit:seconds:emit:)`` decodes into an internal buffer of
///   `chunkSize` bytes and hands each filled piece to a callback, so memory stays bounded
///   whatever the entry's size.
///
/// Either way, data after the end of the deflate stream, a corrupt stream, and output past
/// the bound throw `.integrityFailure`.
package final class Inflater {
    private let stream = ZStream(inflate: ())
    private var ended = false
    private let chunkSize: Int
    private var chunk: UnsafeMutableRawBufferPointer?
    /// Whether the deflate stream's final block has been decoded.
    package private(set) var isFinished = false
    /// Total bytes produced so far.
    package private(set) var totalOut: UInt64 = 0

    /// Creates an inflater for a raw deflate stream.
    /// - Parameter chunkSize: Streaming mode only: the most bytes handed out per callback.
    package init(chunkSize: Int = 256 << 10) {
        self.chunkSize = max(1, chunkSize)
    }

    /// Releases zlib's state. Safe to call more than once.
    package func end() {
        if !ended {
            stream.end()
            ended = true
        }
    }

    deinit {
        end()
        chunk?.deallocate()
    }

    /// Exact mode: decodes `input` into `output` starting at `offset`, never writing past `output`'s end.
    /// - Returns: The new offset (bytes written so far into `output`).
    /// - Throws: `.integrityFailure` on a corrupt stream, data after the end, or output that
    ///   would exceed `output` (a stream that inflates to more than declared).
    package func inflate(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, at offset: Int
    ) throws -> Int {
        var offset = offset
        try run(input) {
            if offset < output.count {
                let (produced, full) = try step(into: UnsafeMutableRawBufferPointer(rebasing: output[offset...]))
                offset += produced
                return full
            }
            // The output is full: one more byte would mean the entry is larger than declared.
            var probe: UInt8 = 0
            let (produced, _) = try withUnsafeMutableBytes(of: &probe) { try step(into: $0) }
            if produced > 0 { throw Self.oversize }
            return false
        }
        return offset
    }

    /// Streaming mode: decodes `input`, calling `emit` with each piece of at most `chunkSize` bytes.
    /// - Parameters:
    ///   - input: The next piece of the compressed stream.
    ///   - limit: The declared uncompressed size; more output throws before it is emitted.
    ///   - seconds: zlib's time is added here (the time spent in `emit` is not).
    ///   - emit: Receives each decoded piece; the buffer is valid only during the call.
    /// - Throws: `.integrityFailure` as for the exact mode, or what `emit` throws.
    package func inflate(
        _ input: UnsafeRawBufferPointer, limit: UInt64, seconds: inout Double,
        emit: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = chunk ?? .allocate(byteCount: chunkSize, alignment: 64)
        chunk = buffer
        try run(input) {
            let (produced, full) = try Stopwatch.time(&seconds) { try step(into: buffer) }
            guard totalOut <= limit else { throw Self.oversize }
            if produced > 0 { try emit(UnsafeRawBufferPointer(rebasing: buffer[0..<produced])) }
            return full
        }
    }

    /// Feeds `input` and calls `pump` until zlib needs more input or the stream ends.
    /// `pump` returns whether it filled all the room it gave zlib: then zlib may hold more
    /// output even with no input left, so it is called again.
    private func run(_ input: UnsafeRawBufferPointer, _ pump: () throws -> Bool) throws {
        if isFinished {
            guard input.isEmpty else { throw Self.trailingData }
            return
        }
        let s = stream.pointer
        s.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        s.pointee.avail_in = UInt32(input.count)
        var full = false
        while !isFinished && (s.pointee.avail_in > 0 || full) {
            full = try pump()
        }
        if isFinished && s.pointee.avail_in > 0 { throw Self.trailingData }
    }

    /// One zlib call into `out`. Returns the bytes produced and whether `out` is now full.
    private func step(into out: UnsafeMutableRawBufferPointer) throws -> (Int, Bool) {
        let s = stream.pointer
        let room = min(out.count, Int(UInt32.max))
        s.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        s.pointee.avail_out = UInt32(room)
        let rc = CZlib.inflate(s, Z_NO_FLUSH)
        let produced = room - Int(s.pointee.avail_out)
        totalOut += UInt64(produced)
        switch rc {
        case Z_STREAM_END: isFinished = true
        case Z_OK: break
        case Z_BUF_ERROR:
            // No progress was possible: fine when zlib simply needs more input.
            guard s.pointee.avail_in == 0 else { throw AssetPackError(.integrityFailure, "compressed data is corrupt") }
        default:
            throw AssetPackError(.integrityFailure, "compressed data is corrupt (zlib \(rc))")
        }
        return (produced, s.pointee.avail_out == 0)
    }

    private static let oversize = AssetPackError(
        .integrityFailure, "compressed data inflates to more than the declared size")
    private static let trailingData = AssetPackError(.integrityFailure, "data after the end of the compressed stream")
}
