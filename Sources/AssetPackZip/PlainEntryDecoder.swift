import AssetPackCore

/// Decodes one unencrypted zip entry (stored or deflated) from its raw stored bytes: what libzip
/// did before the reader read the directory itself, with zlib's inflate (libdeflate's is not
/// streaming) and the CRC-32 checked at the end. The same raw source as ``BulkAESDecoder``'s, so
/// a signed pack's span is hashed as the bytes go by and a remote pack's bytes arrive as read.
///
/// Nothing authenticates these bytes (no MAC): the CRC is the only check, and a mismatch is
/// reported as damage. Wrong bytes are never returned: a whole read returns only after the CRC
/// matched; a stream's chunks are tentative until it returns.
struct PlainEntryDecoder {
    /// The entry's stored size.
    var rawSize: UInt64
    /// `.store` or `.deflate`.
    var compression: EntryCompression
    /// The declared uncompressed size.
    var size: UInt64
    /// The CRC-32 the directory records.
    var crc32: UInt32
    /// Raw bytes read per step (and the largest streamed chunk).
    var chunkSize = BulkAESDecoder.defaultChunkSize

    /// Reads and decodes the whole entry into exactly `size` bytes.
    /// - Parameter timing: Adds to `decrypt` (reading and inflating: there is nothing to decrypt)
    ///   and `crc`; sets `bytesIn`, `bytesOut`, `decoder` ("native") and `crcChecked`.
    /// - Throws: `.integrityFailure` (truncated, corrupt or over-long data, a CRC mismatch) naming
    ///   `timing.path`, or what `source` throws.
    func decode(timing: inout EntryTiming, from source: BulkAESDecoder.RawSource) throws -> [UInt8] {
        try naming(timing.path, source) { source in
            try validate()
            let count = Int(size)
            var reader = RawReader(source: source, remaining: rawSize, what: "entry data")
            var crc = CRC32()
            let output = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                let out = UnsafeMutableRawBufferPointer(buffer)
                if compression == .store {
                    try Stopwatch.time(&timing.decrypt) { try reader.readExactly(out) }
                } else {
                    let scratch = UnsafeMutableRawBufferPointer.allocate(
                        byteCount: Int(max(1, min(UInt64(chunkSize), rawSize))), alignment: 64)
                    defer { scratch.deallocate() }
                    let inflater = Inflater()
                    defer { inflater.end() }
                    var position = 0
                    while reader.remaining > 0 {
                        let piece = UnsafeMutableRawBufferPointer(
                            rebasing: scratch[0..<Int(min(UInt64(scratch.count), reader.remaining))])
                        try Stopwatch.time(&timing.decrypt) {
                            try reader.readExactly(piece)
                            position = try inflater.inflate(UnsafeRawBufferPointer(piece), into: out, at: position)
                        }
                    }
                    guard inflater.isFinished, position == count else {
                        throw AssetPackError(.integrityFailure, "compressed data ends early")
                    }
                }
                Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(out)) }
                initialized = count
            }
            try check(crc, &timing)
            return output
        }
    }

    /// Streams the decoded entry to `body` in chunks of at most ``chunkSize`` bytes; the CRC is
    /// checked at the end, so everything `body` received is tentative until this returns.
    /// - Throws: As ``decode(timing:from:)``, or what `body` throws.
    func stream(
        timing: inout EntryTiming, from source: BulkAESDecoder.RawSource,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try naming(timing.path, source) { source in
            try validate()
            let scratch = UnsafeMutableRawBufferPointer.allocate(
                byteCount: Int(max(1, min(UInt64(chunkSize), rawSize))), alignment: 64)
            defer { scratch.deallocate() }
            let inflater = compression == .deflate ? Inflater(chunkSize: chunkSize) : nil
            defer { inflater?.end() }
            var reader = RawReader(source: source, remaining: rawSize, what: "entry data")
            var crc = CRC32()
            while reader.remaining > 0 {
                let piece = UnsafeMutableRawBufferPointer(
                    rebasing: scratch[0..<Int(min(UInt64(scratch.count), reader.remaining))])
                try Stopwatch.time(&timing.decrypt) { try reader.readExactly(piece) }
                if let inflater {
                    try inflater.inflate(UnsafeRawBufferPointer(piece), limit: size, seconds: &timing.decrypt) {
                        chunk in
                        Stopwatch.time(&timing.crc) { crc.update(chunk) }
                        try body(chunk)
                    }
                } else {
                    Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(piece)) }
                    try body(UnsafeRawBufferPointer(piece))
                }
            }
            if let inflater, !inflater.isFinished || inflater.totalOut != size {
                throw AssetPackError(.integrityFailure, "compressed data ends early")
            }
            try check(crc, &timing)
        }
    }

    /// A stored entry's stored size is its size; a deflated one's is anything.
    private func validate() throws {
        guard compression == .store || compression == .deflate else {
            throw AssetPackError(.unsupportedFormat, "compression method not supported")
        }
        guard compression == .deflate || rawSize == size else {
            throw AssetPackError(.integrityFailure, "stored entry holds \(rawSize) bytes but declares \(size)")
        }
    }

    private func check(_ crc: CRC32, _ timing: inout EntryTiming) throws {
        try CRC32.check(crc.value, expected: crc32, path: timing.path, authenticated: false)
        timing.crcChecked = true
        timing.bytesIn = rawSize
        timing.bytesOut = size
        timing.decoder = "native"
    }

    /// Runs `body` with `source` (which the raw reader holds for the call only), naming
    /// `path` in the `AssetPackError`s it throws.
    private func naming<T>(
        _ path: String, _ source: BulkAESDecoder.RawSource, _ body: (@escaping BulkAESDecoder.RawSource) throws -> T
    ) throws -> T {
        do { return try withoutActuallyEscaping(source) { try body($0) } } catch let error as AssetPackError
            where !path.isEmpty
        {
            throw error.naming(path)
        }
    }
}
