#if SystemLibraries
internal import CZstd
#endif

/// Zstandard (RFC 8878) over the system libzstd: one frame per buffer, for codecs that compress
/// independent chunks (the container's), so random access and parallel decode stay.
///
/// The frames we write are canonical and minimal: the content size is in the header, and there
/// is no checksum (each container chunk is already authenticated by AES-GCM) and no dictionary
/// id, even when a dictionary is used (the container's per-pack dictionary is named by the
/// entry's codec, not by the frame). The decoder accepts exactly that shape and nothing looser (see ``Decompressor``).
package enum Zstd {
    /// The level a pack is compressed at unless told otherwise: chosen for the reader (size and
    /// decode speed) at a packing speed a build can afford. The smallest output among the levels
    /// that compress faster than 7-Zip's `-mx5` zip (10–13 MB/s per core against its 5): within
    /// 1.00–1.05× its bytes per 64–128 KiB chunk, a quarter smaller than libdeflate level 2 on
    /// JSON-like text. Measured in docs/PERFORMANCE.md, "zstd levels".
    package static let defaultLevel: Int32 = 12
    /// The level for quick iteration: 140–260 MB/s per core (5–25× 7-Zip `-mx1`), about
    /// libdeflate level 2's size, zstd's decode speed. Measured in docs/PERFORMANCE.md, "zstd levels".
    package static let fastLevel: Int32 = 3
    /// The levels ``Compressor`` accepts. Above 19 are zstd's "ultra" levels, whose windows
    /// (up to 2^27) exceed ``maxWindowLog``.
    package static let levels: ClosedRange<Int32> = 1...19

    /// The largest window (as a power of two) the decoder accepts: 2^24 = 16 MiB.
    ///
    /// Our frames never need more: a container chunk is at most 16 MiB, the compressor pledges
    /// the input's size so the window shrinks to it, and levels 1–19 use at most 2^23 whatever
    /// the input. A larger window can only come from another writer (or a hostile one); it is
    /// refused as `.limitExceeded` (a safety limit, as ``ReadLimits`` are), before any decoding.
    /// ``Decompressor`` reads the limit from the frame header itself: libzstd applies its own
    /// `ZSTD_d_windowLogMax` (also set) only when streaming, and the one-shot decode used here
    /// accepted a 2^27 window without it (ZstdTests' window test fails when the check is removed).
    package static let maxWindowLog: Int32 = 24

    /// The frame magic number (RFC 8878 §3.1.1), little-endian at offset 0.
    static let magic: UInt32 = 0xFD2F_B528

    /// Whether this build has libzstd (the default configuration). Without it (the portable
    /// configuration) a zstd chunk fails to read with ``unavailable`` and packing zstd is refused.
    #if SystemLibraries
    package static let isAvailable = true
    #else
    package static let isAvailable = false
    #endif

    /// What reading a zstd chunk in a build without libzstd throws: the codec, and how to pack for it.
    package static let unavailable = AssetPackError(
        .unsupportedFormat,
        "this chunk is compressed with zstd, which this build of AssetPack lacks (the portable configuration, "
            + "without libzstd): pack for it with --codec deflate")
}

#if SystemLibraries

extension Zstd {
    /// A reusable zstd compressor (one `ZSTD_CCtx`): allocating the context costs more than
    /// compressing a small chunk, so a writer keeps one per thread. One thread at a time; one
    /// instance per task is safe in parallel (instances share nothing).
    package final class Compressor {
        private let context: OpaquePointer
        /// The zstd level (in ``Zstd/levels``).
        package let level: Int32

        /// A compressor at `level` (1 fastest … 19 smallest; see ``Zstd/levels``), with
        /// `dictionary` loaded for every frame when given (its id is not written in frames).
        package init(level: Int32, dictionary: [UInt8]? = nil) {
            precondition(Zstd.levels.contains(level), "zstd level \(level) is outside \(Zstd.levels)")
            guard let c = ZSTD_createCCtx() else { allocationFailed("ZSTD_createCCtx") }
            context = c
            self.level = level
            // Content size in the header; no checksum (AES-GCM authenticates each chunk); no
            // dictionary id (a dictionary, when used, is named by the container's codec).
            for (parameter, value) in [
                (ZSTD_c_compressionLevel, level), (ZSTD_c_contentSizeFlag, 1), (ZSTD_c_checksumFlag, 0),
                (ZSTD_c_dictIDFlag, 0),
            ] {
                let rc = ZSTD_CCtx_setParameter(c, parameter, Int32(value))
                precondition(ZSTD_isError(rc) == 0, "ZSTD_CCtx_setParameter: \(Zstd.errorName(rc))")
            }
            if let dictionary {
                // Copied into the context and kept across frames (a session reset keeps it).
                let rc = dictionary.withUnsafeBytes { ZSTD_CCtx_loadDictionary(c, $0.baseAddress, $0.count) }
                if ZSTD_isError(rc) != 0 { allocationFailed("ZSTD_CCtx_loadDictionary") }
            }
        }

        deinit { ZSTD_freeCCtx(context) }

        /// Compresses `input` into `output` as one frame.
        /// - Returns: The frame's size, or `nil` when it does not fit in `output` (so an output
        ///   buffer one byte smaller than the input means "only if it is smaller").
        package func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            guard let out = output.baseAddress, output.count > 0 else { return nil }
            // Drop any state of an earlier call that failed halfway (a full output), then pledge
            // the size: it goes in the header, and the window shrinks to the input.
            ZSTD_CCtx_reset(context, ZSTD_reset_session_only)
            let pledged = ZSTD_CCtx_setPledgedSrcSize(context, UInt64(input.count))
            precondition(ZSTD_isError(pledged) == 0, "ZSTD_CCtx_setPledgedSrcSize: \(Zstd.errorName(pledged))")
            var empty: UInt8 = 0
            let n = withUnsafePointer(to: &empty) { e in
                ZSTD_compress2(context, out, output.count, input.baseAddress ?? UnsafeRawPointer(e), input.count)
            }
            if ZSTD_isError(n) != 0 {
                // Only a full output can fail here: the parameters are fixed above.
                precondition(
                    ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall, "ZSTD_compress2: \(Zstd.errorName(n))")
                return nil
            }
            return n
        }

        /// The most bytes ``compress(_:into:)`` can produce for `count` input bytes.
        package func bound(_ count: Int) -> Int { ZSTD_compressBound(count) }
    }

    /// A reusable zstd decoder (one `ZSTD_DCtx`, window limited to 2^``Zstd/maxWindowLog``).
    /// One thread at a time; one instance per task is safe in parallel (instances share nothing).
    package final class Decompressor {
        private let context: OpaquePointer

        /// A decoder whose window limit is ``Zstd/maxWindowLog``.
        package init() {
            guard let d = ZSTD_createDCtx() else { allocationFailed("ZSTD_createDCtx") }
            context = d
            let rc = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, Zstd.maxWindowLog)
            precondition(ZSTD_isError(rc) == 0, "ZSTD_DCtx_setParameter: \(Zstd.errorName(rc))")
        }

        /// A decoder (window limit as ``init()``) that decodes every frame with `dictionary`:
        /// frames compressed with it. A frame compressed without it, or with another, decodes
        /// to other bytes or fails, so authenticate the frame and its dictionary first.
        /// - Throws: `.integrityFailure` when `dictionary` starts with the zstd dictionary magic
        ///   but its tables do not parse (any other bytes are a raw-content dictionary).
        package convenience init(dictionary: [UInt8]) throws {
            self.init()
            let loaded = dictionary.withUnsafeBytes { ZSTD_DCtx_loadDictionary(context, $0.baseAddress, $0.count) }
            if ZSTD_isError(loaded) != 0 {
                // zstd builds its dictionary object here and reports a malformed one (a header or
                // entropy table that does not parse) as "Allocation error: not enough memory";
                // the dictionary is at most 1 MiB, so that is what it means.
                throw Zstd.corrupt(
                    "the zstd dictionary is corrupt: its header or entropy tables do not parse (re-pack with --fresh)")
            }
        }

        deinit { ZSTD_freeDCtx(context) }

        /// Decodes `input`, which must be exactly one zstd frame of exactly `output.count` bytes.
        ///
        /// The frame's header is checked before any decoding: it must carry the zstd magic (a
        /// skippable frame or anything else is refused), declare its content size and declare
        /// exactly `output.count`, name no dictionary, and need a window of at most
        /// 2^``Zstd/maxWindowLog``. The frame must then end exactly at the end of `input`.
        /// Memory is bounded by `output` and the context: nothing is allocated by what the
        /// frame claims. On a throw, `output` may hold partial data; it is never success.
        /// Our frames carry no checksum, so a changed payload byte can decode to other bytes of
        /// the right length: authenticate the frame first (the container's AES-GCM tag does).
        /// - Throws: `.limitExceeded` for a window beyond ``Zstd/maxWindowLog``;
        ///   `.integrityFailure` for every other refusal (unknown magic, dictionary id, missing
        ///   or different content size, a truncated or corrupt frame, trailing data, a frame
        ///   that decodes past `output.count`).
        package func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
            try Zstd.checkHeader(input, expectedSize: output.count)
            guard let source = input.baseAddress else { throw Zstd.corrupt("the frame is empty") }
            let frameSize = ZSTD_findFrameCompressedSize(source, input.count)
            if ZSTD_isError(frameSize) != 0 {
                throw Zstd.corrupt("the frame is truncated or corrupt (\(Zstd.errorName(frameSize)))")
            }
            guard frameSize == input.count else {
                throw Zstd.corrupt("data after the end of the compressed frame")
            }
            var scratch: UInt8 = 0
            let n = withUnsafeMutablePointer(to: &scratch) { empty in
                ZSTD_decompressDCtx(
                    context, output.baseAddress ?? UnsafeMutableRawPointer(empty), output.count, source, input.count)
            }
            if ZSTD_isError(n) != 0 {
                // The next call starts from a clean context whatever state this one left.
                ZSTD_DCtx_reset(context, ZSTD_reset_session_only)
                switch ZSTD_getErrorCode(n) {
                case ZSTD_error_frameParameter_windowTooLarge: throw Zstd.windowTooLarge
                case ZSTD_error_dstSize_tooSmall:
                    throw Zstd.corrupt("compressed data decodes to more than the declared size")
                default: throw Zstd.corrupt("compressed data is corrupt (\(Zstd.errorName(n)))")
                }
            }
            guard n == output.count else {
                throw Zstd.corrupt("compressed data decodes to \(n) bytes, not the declared \(output.count)")
            }
        }
    }
}

extension Zstd {
    /// Trains a dictionary of at most `capacity` bytes on `samples` (libzstd's `ZDICT_trainFromBuffer`,
    /// deterministic for the same samples), or `nil` when libzstd cannot (too few or too small
    /// samples for the capacity).
    package static func trainDictionary(_ samples: [[UInt8]], capacity: Int) -> [UInt8]? {
        guard !samples.isEmpty, capacity > 0 else { return nil }
        let joined = samples.flatMap { $0 }
        let sizes = samples.map(\.count)
        var dictionary = [UInt8](repeating: 0, count: capacity)
        let n = dictionary.withUnsafeMutableBytes { out in
            joined.withUnsafeBytes { input in
                ZDICT_trainFromBuffer(out.baseAddress, out.count, input.baseAddress, sizes, UInt32(sizes.count))
            }
        }
        guard ZDICT_isError(n) == 0, n > 0 else { return nil }
        return Array(dictionary[0..<n])
    }

    /// Refuses, from the frame header alone (RFC 8878 §3.1.1.1), what ``Decompressor`` never
    /// decodes: another magic, a dictionary id field, a window beyond ``maxWindowLog``, a
    /// missing or different content size.
    static func checkHeader(_ input: UnsafeRawBufferPointer, expectedSize: Int) throws {
        guard input.count >= 4 else { throw corrupt("the frame is truncated (\(input.count) bytes)") }
        let found = input.loadUnaligned(as: UInt32.self).littleEndian
        guard found == magic else {
            if found & 0xFFFF_FFF0 == 0x184D_2A50 { throw corrupt("a skippable frame where a zstd frame belongs") }
            throw corrupt("not a zstd frame (magic 0x\(String(found, radix: 16)))")
        }
        guard input.count >= 6 else { throw corrupt("the frame header is truncated") }
        let descriptor = input[4]
        guard descriptor & 0b11 == 0 else { throw corrupt("the frame names a dictionary") }
        let singleSegment = descriptor & 0b10_0000 != 0
        if !singleSegment {
            // The window descriptor: 2^(10 + exponent), plus mantissa eighths of that.
            let exponent = Int(input[5] >> 3)
            let mantissa = UInt64(input[5] & 0b111)
            let base = UInt64(1) << (10 + exponent)
            guard base + base / 8 * mantissa <= UInt64(1) << maxWindowLog else { throw windowTooLarge }
        }
        // A single-segment frame's window is its content size, which must be expectedSize (the
        // caller's buffer): bounded either way.
        let declared = ZSTD_getFrameContentSize(input.baseAddress, input.count)
        if declared == ZSTD_CONTENTSIZE_ERROR { throw corrupt("the frame header is corrupt or truncated") }
        if declared == ZSTD_CONTENTSIZE_UNKNOWN { throw corrupt("the frame does not declare its size") }
        guard declared == UInt64(expectedSize) else {
            throw corrupt("the frame declares \(declared) bytes where \(expectedSize) were expected")
        }
    }

    static func corrupt(_ message: String) -> AssetPackError { AssetPackError(.integrityFailure, message) }

    static let windowTooLarge = AssetPackError(
        .limitExceeded, "the zstd frame needs a window larger than the \(windowLimitMiB) MiB limit")

    static let windowLimitMiB = 1 << (Int(maxWindowLog) - 20)

    static func errorName(_ code: Int) -> String { String(cString: ZSTD_getErrorName(code)) }
}
#endif
