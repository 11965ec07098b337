import AssetPackCore

/// A container's entry records as the reader holds them: decoded into objects at open
/// (versions 1 to 7, whose index has records of varying size), or read in place from a
/// version-8 index (``IndexTable``), one record decoded and checked when it is asked for.
/// Records below `.assetpack/` (the deletion record, the dictionary) are the pack's own: in the
/// list, neither listed by ``visible`` nor found by ``position(of:)``.
struct RecordList: Sendable {
    private enum Storage: Sendable {
        case decoded([ContainerEntry], index: EntryIndex<Int>, visible: [EntryInfo])
        /// The table, and the run of the pack's own records in it.
        case inPlace(IndexTable, own: Range<Int>)
    }
    private let storage: Storage
    /// Where the deletion record and the dictionary are, if the pack has them.
    let deletion: Int?
    let dictionary: Int?

    /// Records decoded at open, with the path index built over the visible ones.
    /// - Throws: `.integrityFailure` for two equivalent paths.
    init(decoded records: [ContainerEntry]) throws {
        let corrupt = AssetPackError(.integrityFailure, "container index is corrupt (equivalent paths)")
        let reserved = records.indices.filter { DeletionRecord.isReserved(records[$0].info.path) }
        if reserved.isEmpty {  // the common case, in one pass
            guard let index = EntryIndex(positionsOf: records.map(\.info.path)) else { throw corrupt }
            storage = .decoded(records, index: index, visible: records.map(\.info))
            (deletion, dictionary) = (nil, nil)
            return
        }
        var index = EntryIndex<Int>(capacity: records.count)
        var visible: [EntryInfo] = []
        for i in records.indices where !DeletionRecord.isReserved(records[i].info.path) {
            guard index.insert(records[i].info.path, i) else { throw corrupt }
            visible.append(records[i].info)
        }
        storage = .decoded(records, index: index, visible: visible)
        deletion = reserved.first { records[$0].info.path == DeletionRecord.entryName }
        dictionary = reserved.first { records[$0].info.path == PackDictionary.entryName }
    }

    /// Records read in place: the pack's own run found by binary search, its two known records
    /// by hash. Nothing per entry.
    init(inPlace table: IndexTable) {
        let own = table.run(withPrefix: Array(DeletionRecord.reservedFolder.utf8))
        storage = .inPlace(table, own: own)
        deletion = table.position(of: DeletionRecord.entryName)
        dictionary = table.position(of: PackDictionary.entryName)
    }

    /// Every record, the pack's own included.
    var count: Int {
        switch storage {
        case .decoded(let records, _, _): records.count
        case .inPlace(let table, _): table.count
        }
    }

    /// The index read in place, if it is one.
    var table: IndexTable? {
        if case .inPlace(let table, _) = storage { return table }
        return nil
    }

    /// Record `i` (a version-8 one checked as it is decoded).
    /// - Throws: `.integrityFailure` for a damaged version-8 record.
    func record(_ i: Int) throws -> ContainerEntry {
        switch storage {
        case .decoded(let records, _, _): records[i]
        case .inPlace(let table, _): try table.entry(i)
        }
    }

    /// Every record, decoded (a version-8 pack's each checked): for a re-pack's reuse, and tests.
    /// - Throws: `.integrityFailure` for a damaged version-8 record.
    func all() throws -> [ContainerEntry] { try (0..<count).map(record) }

    /// The position of the record stored under exactly `path` (NFC, as the writer stores it),
    /// the pack's own included: what a re-pack reuses, looked up in the index as read.
    func storedPosition(of path: String) -> Int? {
        if path == DeletionRecord.entryName { return deletion }
        if path == PackDictionary.entryName { return dictionary }
        switch storage {
        case .decoded(let records, let index, _):
            guard DeletionRecord.isReserved(path) else { return index.lookup(path) }
            return records.firstIndex { $0.info.path.utf8.elementsEqual(path.utf8) }
        case .inPlace(let table, _):
            return table.position(of: path)
        }
    }

    /// The position of the visible record at `path` (as given, then normalised), or `nil`.
    func position(of path: String) -> Int? {
        switch storage {
        case .decoded(_, let index, _): return index.lookup(path)
        case .inPlace(let table, let own):
            let found =
                table.position(of: path)
                ?? {
                    // By bytes: `==` on strings is canonical equivalence, under which an NFD path
                    // equals its NFC form.
                    let normalized = EntryPath.normalize(path)
                    return normalized.utf8.elementsEqual(path.utf8) ? nil : table.position(of: normalized)
                }()
            // The own run is where a sorted table keeps them; the path itself says so in any table.
            return found.flatMap { own.contains($0) || DeletionRecord.isReserved(path) ? nil : $0 }
        }
    }

    /// The entries a caller sees (all but the pack's own), sorted by path.
    var visible: EntryList {
        switch storage {
        case .decoded(_, _, let visible): return EntryList(visible)
        case .inPlace(let table, let own):
            return EntryList(count: table.count - own.count) { i in
                table.info(i < own.lowerBound ? i : i + own.count)
            }
        }
    }
}

/// Each record's and each chunk's plaintext SHA-256, what a re-pack and a delta download
/// compare: in the index before version 8, in its digest section from version 8 (decrypted when
/// first asked for: a reader that only reads never pays for them).
struct PackDigests {
    let inPlace: IndexDigests?
    let chunks: ChunkTable

    /// The plaintext digest of record `e` (`nil` for version 1).
    func entry(_ e: ContainerEntry) -> [UInt8]? { inPlace?.entry(Int(e.id)) ?? e.sha256 }
    /// The plaintext digest of chunk `k` (versions 4 and later).
    func chunk(_ k: Int) -> [UInt8] { inPlace?.chunk(k) ?? Array(chunks.digests[32 * k..<32 * k + 32]) }

    /// Whether record `e` (versions 4 and later) holds the content whose entry digest a writer
    /// made `digest`: the digest its record carries is it, or it was written by 0.4 or earlier (a
    /// plaintext SHA-256) and its chunks' digests make it (``ContainerFormat/entryDigest``).
    func entry(_ e: ContainerEntry, is digest: [UInt8]) -> Bool {
        if entry(e) == digest { return true }
        let own = (0..<e.chunkCount).lazy.map { chunk(e.firstChunk + $0) }
        return ContainerFormat.entryDigest(size: e.info.size, chunkDigests: own) == digest
    }
}

extension ContainerPackReader {
    /// The pack's plaintext digests (``PackDigests``).
    /// - Throws: `.integrityFailure` when a version-8 digest section fails authentication.
    func digests() throws -> PackDigests {
        PackDigests(inPlace: try records.table?.digests(), chunks: chunks)
    }
}
