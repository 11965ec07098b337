import AssetPackCore

extension ZipStructure {
    /// Exactly `count` bytes at `offset` of `source`; a short pack is `.integrityFailure`.
    static func reader(_ source: any ByteSource) -> (UInt64, Int) throws -> [UInt8] {
        { offset, count in
            try [UInt8](unsafeUninitializedCapacity: count) { buffer, n in
                n = try source.read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
                guard n == count else { throw AssetPackError(.integrityFailure, "zip is truncated") }
            }
        }
    }

    /// How far from the end libzip 1.7.3 reads to find the end record (`_zip_find_central_dir`:
    /// `CDBUFSIZE` + `EOCDLEN` + `EOCD64LOCLEN`).
    static let libzipEndSearch: UInt64 = 65536 + 22 + 20

    /// Finds the central directory from the end records, refuses one larger than
    /// `limits.maxIndexSize` (before a server is asked for it), and has the source keep
    /// everything from the directory to the end of the pack.
    /// - Throws: `.limitExceeded`, and what ``directoryRange(fileSize:read:)`` throws.
    static func retainDirectory(of source: any ByteSource, limits: ReadLimits) throws {
        // Where the end records can be, as far back as libzip looks (21 bytes further than our
        // own search): one request, and neither search asks for more.
        try source.retain(source.size - min(source.size, libzipEndSearch)..<source.size)
        let directory = try directoryRange(fileSize: source.size, read: reader(source))
        let start = min(directory.offset, source.size)
        guard source.size - start <= limits.maxIndexSize + (1 << 20) else {
            throw AssetPackError(
                .limitExceeded, "the zip's central directory exceeds the limit of \(limits.maxIndexSize) bytes")
        }
        try source.retain(start..<source.size)
    }

    /// Whether `source` holds a zip: a local header or an end record at its start, or (a stub in
    /// front: a self-extractor, `zip -A`) an end-of-central-directory record whose comment
    /// reaches the end exactly. A source's own failures (`.io`, `.remote`) are thrown, not
    /// taken for "no".
    static func recognizes(_ source: any ByteSource) throws -> Bool {
        let head = try source.prefix(at: 0, count: 4)
        if startMagics.contains(head) { return true }
        do {
            _ = try directoryRange(fileSize: source.size, read: reader(source))
            return true
        } catch let error as AssetPackError where error.code != .remote && error.code != .io {
            return false
        }
    }
}
