import AssetPackCore
import AssetPackCrypto
import AssetPackFormat

// What delta downloads reuse of a container: what identifies its sealed chunks across versions.

extension ContainerPackReader {
    /// What makes two entries' stored bytes equal, for a delta download between versions of an
    /// unsigned pack (docs/REMOTE.md): the same keys (cipher suite, KDF and its parameters,
    /// salt, chunk size: with one credential, one master key), then per entry the same random
    /// key id, size, plaintext SHA-256 and chunk layout. An entry with a key id of its own is
    /// one an incremental re-pack copied byte for byte, and AES-GCM under one key and nonce
    /// is deterministic. `nil` for version 1 (no key ids).
    /// - Throws: `.integrityFailure` for a damaged record or digest section (version 8).
    package func storedIdentities() throws -> StoredIdentities? {
        guard header.version >= 2 else { return nil }
        try loadWholeIndex()  // every record is read: on every core, as one open
        // Cipher suite, KDF, chunk size, KDF parameters and salt: the bytes between the version
        // and the index's offset and length. Not the latter: an update that changes one entry's
        // stored size moves the index, and the keys stay the same.
        var keys: [UInt8] = [ContainerFormat.cipherSuite, header.kdf.rawValue, header.chunkShift]
        for p in header.params { withUnsafeBytes(of: p.littleEndian) { keys += $0 } }
        keys += header.salt
        if header.hasChunkTable {
            // Version 4 entry keys have their own label: comparable only with version 4.
            keys.append(4)
            // Per chunk: a sealed chunk is its key id's key, its nonce and its plaintext (compressed
            // or not): the same four, the same bytes. Chunks an incremental re-pack kept are
            // found whatever else of their entry changed.
            var entries: [(identity: [UInt8], span: Range<UInt64>)] = []
            entries.reserveCapacity(chunks.count)
            let digests = try digests()
            for i in 0..<records.count {
                let e = try records.record(i)
                for c in 0..<e.chunkCount {
                    let k = e.firstChunk + c
                    var identity = e.keyID ?? []
                    identity += chunks.nonce(k)
                    identity += digests.chunk(k)
                    withUnsafeBytes(of: chunks.payload(k).littleEndian) { identity += $0 }
                    identity.append(e.codec?.rawValue ?? 0)
                    entries.append((identity, storedChunks(e, c...c)))
                }
            }
            return StoredIdentities(keys: keys, entries: entries)
        }
        let entries = try (0..<records.count).compactMap { i -> (identity: [UInt8], span: Range<UInt64>)? in
            let e = try records.record(i)
            guard let keyID = e.keyID, let sha256 = e.sha256 else { return nil }
            var identity = keyID + sha256
            withUnsafeBytes(of: e.info.size.littleEndian) { identity += $0 }
            for c in 0..<e.chunkCount {
                withUnsafeBytes(of: UInt64(storedChunk(e, c).length).littleEndian) { identity += $0 }
            }
            return (identity, entrySpan(e))
        }
        return StoredIdentities(keys: keys, entries: entries)
    }

    /// Every sealed chunk's bytes in the file, in the order a signature lists them.
    /// - Throws: `.integrityFailure` for a damaged record (version 8).
    package func chunkSpans() throws -> [Range<UInt64>] {
        try loadWholeIndex()  // every record is read: on every core, as one open
        return try (0..<records.count).flatMap { i in
            let e = try records.record(i)
            return (0..<e.chunkCount).map { storedChunks(e, $0...$0) }
        }
    }

    /// The signature block of the container in `source`, checked against its own key (intact,
    /// not trusted); `nil` for an unsigned container. Its items describe ``chunkSpans``. Reads
    /// (and a remote source keeps) only the header, index and block.
    /// - Throws: `.untrusted` or `.integrityFailure` for a damaged block, `.limitExceeded`, `.io`.
    package static func signature(_ source: any ByteSource, limits: ReadLimits = .default) throws
        -> PackSignature?
    {
        let header = try header(of: source).header
        guard header.isSigned else { return nil }
        let (end, overflow) = header.indexOffset.addingReportingOverflow(header.indexLength)
        let packEnd = try header.packEnd(fileSize: source.size)
        guard !overflow, end <= packEnd else { throw AssetPackError(.integrityFailure, "container is truncated") }
        let length = try trailerLength(header, fileSize: packEnd)
        guard UInt64(length) <= limits.maxIndexSize, header.indexLength <= limits.maxIndexSize else {
            throw AssetPackError(
                .limitExceeded,
                "the container's index and signature (from offset \(header.indexOffset)) exceed the index limit")
        }
        try source.retain(header.indexOffset..<packEnd)
        let trailer = try preadArray(source, count: length, at: end)
        return try trailer.withUnsafeBytes { raw in
            let publisher = try PackSignature.parse(raw, kind: .container, trusted: []).publisher
            return try PackSignature.parse(raw, kind: .container, trusted: [publisher])
        }
    }
}
