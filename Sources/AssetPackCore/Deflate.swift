import CZlib
internal import CLibdeflate

/// Raw deflate (RFC 1951, no zlib or gzip header): zlib for compression and streaming inflate,
/// libdeflate for whole-buffer inflate.
public enum RawDeflate {
    /// Compresses `input` in one call.
    /// - Parameters:
    ///   - input: The bytes to compress.
    ///   - level: zlib level 0–9 (6 is zlib's default).
    /// - Returns: The raw deflate stream.
    public static func compress(_ input: UnsafeRawBufferPointer, level: Int32 = 6) -> [UInt8] {
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
    public static func decompress(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws {
        guard let decompressor = libdeflate_alloc_decompressor() else {
            throw AssetPackError(.io, "out of memory for a deflate decompressor")
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
        precondition(rc == Z_OK, "deflateInit2 failed: \(rc)")
    }

    init(inflate: Void) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: z_stream())
        isDeflate = false
        let rc = inflateInit2_(pointer, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(rc == Z_OK, "inflateInit2 failed: \(rc)")
    }

    func end() {
        if isDeflate { deflateEnd(pointer) } else { inflateEnd(pointer) }
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}

/// Streaming raw inflate with a hard output bound.
///
/// Feed compressed input in pieces; decoded output goes either to a caller-provided
/// buffer (exact-size reads) or to a callback in bounded chunks (streaming reads).
public final class Inflater {
    private let stream = ZStream(inflate: ())
    private var finished = false
    private var ended = false
    /// Total bytes produced so far.
    public private(set) var totalOut: UInt64 = 0

    /// Creates an inflater for a raw deflate stream.
    public init() {}

    /// Whether the deflate stream's final block has been decoded.
    public var isFinished: Bool { finished }

    /// Releases zlib's state. Safe to call more than once.
    public func end() {
        if !ended { stream.end(); ended = true }
    }

    deinit { end() }

    /// Decodes `input` into `output` starting at `offset`, never writing past `output`'s end.
    /// - Returns: The new offset (bytes written so far into `output`).
    /// - Throws: `.integrityFailure` on a corrupt stream, data after the end, or output that
    ///   would exceed `output` (a stream that inflates to more than declared).
    public func inflate(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, at offset: Int
    ) throws -> Int {
        let s = stream.pointer
        s.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        s.pointee.avail_in = UInt32(input.count)
        var offset = offset
        while s.pointee.avail_in > 0 || !finished {
            if finished {
                throw AssetPackError(.integrityFailure, "data after the end of the compressed stream")
            }
            let room = output.count - offset
            var probe: UInt8 = 0
            let rc: Int32
            if room > 0 {
                s.pointee.next_out = (output.baseAddress! + offset).assumingMemoryBound(to: UInt8.self)
                s.pointee.avail_out = UInt32(min(room, Int(UInt32.max)))
                let before = Int(s.pointee.avail_out)
                rc = CZlib.inflate(s, Z_NO_FLUSH)
                offset += before - Int(s.pointee.avail_out)
            } else {
                // Output is full: one more byte would mean the entry is larger than declared.
                rc = withUnsafeMutablePointer(to: &probe) { p -> Int32 in
                    s.pointee.next_out = p
                    s.pointee.avail_out = 1
                    let r = CZlib.inflate(s, Z_NO_FLUSH)
                    if s.pointee.avail_out == 0 { return Z_BUF_ERROR - 100 }
                    return r
                }
                if rc == Z_BUF_ERROR - 100 {
                    throw AssetPackError(.integrityFailure, "compressed data inflates to more than the declared size")
                }
            }
            totalOut = UInt64(offset)
            switch rc {
            case Z_STREAM_END: finished = true
            case Z_OK: break
            case Z_BUF_ERROR:
                if s.pointee.avail_in == 0 { return offset }  // needs more input
                throw AssetPackError(.integrityFailure, "compressed data is corrupt")
            default:
                throw AssetPackError(.integrityFailure, "compressed data is corrupt (zlib \(rc))")
            }
            if s.pointee.avail_in == 0 && !finished { return offset }
        }
        return offset
    }
}

extension RawDeflate {
    /// Counts the raw deflate size of a stream of buffers without keeping the output.
    public final class SizeEstimator {
        private let stream = ZStream(deflateLevel: 6)
        private var scratch = [UInt8](repeating: 0, count: 64 << 10)
        /// Compressed bytes produced so far.
        public private(set) var compressedSize: UInt64 = 0

        /// Creates an estimator at zlib level 6.
        public init() {}
        deinit { stream.end() }

        /// Feeds more input; pass `finish: true` with the last piece.
        public func feed(_ input: UnsafeRawBufferPointer, finish: Bool) {
            let s = stream.pointer
            s.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            s.pointee.avail_in = UInt32(input.count)
            scratch.withUnsafeMutableBytes { out in
                while true {
                    s.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    s.pointee.avail_out = UInt32(out.count)
                    let rc = deflate(s, finish ? Z_FINISH : Z_NO_FLUSH)
                    compressedSize += UInt64(out.count - Int(s.pointee.avail_out))
                    if rc == Z_STREAM_END { break }
                    if s.pointee.avail_in == 0 && s.pointee.avail_out != 0 && !finish { break }
                }
            }
        }
    }
}
