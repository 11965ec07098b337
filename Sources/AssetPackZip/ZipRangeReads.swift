import AssetPackCore

// How a zip entry's bytes are read where the caller says: into its buffer, a range of them, and
// inside the byte source's access to the entry's span (what a remote source fetches).

extension ZipPackReader {
    /// Runs `read`, a read of `path`'s bytes, while the source makes them available (a remote
    /// source fetches the entry's span meanwhile). Every decoder reads an entry front to back.
    func accessing<T>(_ path: String, _ read: () throws -> T) throws -> T {
        guard let span = storedSpan(path) else { return try read() }  // which throws `.entryNotFound`
        return try pool.source.access(span, largestRead: BulkAESDecoder.defaultChunkSize, read)
    }

    /// The entry's span in the pack: its local header, data and any descriptor, up to the next
    /// entry; `nil` when there is no such entry.
    package func storedSpan(_ path: String) -> Range<UInt64>? {
        guard let found = directory.position(of: path) else { return nil }
        let record = structure.records.raw[Int(directory.visible[found])]
        return record.localHeaderOffset..<record.end
    }

    /// Reads a whole entry into `buffer`, verified: streamed into it, so what it holds counts
    /// only once this returns.
    @discardableResult
    public func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
        if let info = entry(path), UInt64(buffer.count) < info.size {
            throw AssetPackError(
                .invalidArgument, "the buffer holds \(buffer.count) bytes; the entry has \(info.size)", path: info.path)
        }
        var at = 0
        return try stream(path) { piece in
            guard at + piece.count <= buffer.count else {
                throw AssetPackError(.integrityFailure, "entry holds more data than its declared size", path: path)
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + piece.count]).copyMemory(from: piece)
            at += piece.count
        }
    }

    /// Reads the entry's bytes `[offset, offset + buffer.count)`. A stored, unencrypted entry
    /// read without trusted keys is read there directly (nothing but the whole entry's CRC-32
    /// covers its bytes, which a range cannot check); every other entry is decoded from its
    /// start, verified whole (MAC, CRC, signed digest) and cut, since a zip entry is one stream.
    public func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
        guard let found = directory.position(of: path) else {
            throw AssetPackError(.entryNotFound, "no such entry", path: path)
        }
        let entry = directory.entry(at: found)
        try entry.info.checkRange(offset: offset, count: buffer.count)
        if buffer.isEmpty { return }
        if entry.info.compression == .store, entry.info.encryption == .none, signature == nil {
            var timing = EntryTiming(path: path)
            let (_, dataStart) = try find(path, &timing)
            let at = dataStart + offset
            try pool.source.access(at..<at + UInt64(buffer.count), largestRead: buffer.count) {
                guard try pool.read(into: buffer, at: at) == buffer.count else {
                    throw AssetPackError(.integrityFailure, "zip is truncated", path: entry.info.path)
                }
            }
            return
        }
        var skipped: UInt64 = 0
        let end = offset + UInt64(buffer.count)
        try stream(path) { piece in
            let pieceEnd = skipped + UInt64(piece.count)
            defer { skipped = pieceEnd }
            let from = max(skipped, offset), to = min(pieceEnd, end)
            guard from < to else { return }
            UnsafeMutableRawBufferPointer(rebasing: buffer[Int(from - offset)..<Int(to - offset)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: piece[Int(from - skipped)..<Int(to - skipped)]))
        }
    }
}
