import AssetPackCore
import Synchronization

/// A container's entry records as the reader holds them: decoded into objects at open
/// (versions 1 to 7, whose index has records of varying size), or read in place from a
/// version-8 index (``IndexTable``), one record decoded and checked when it is asked for.
/// Records below `.assetpack/` (the deletion record, the dictionary) are the pack's own: in the
/// list, neither listed by ``visible`` nor found by ``position(of:)``.
struct RecordList: Sendable {
    private enum Storage: Sendable {
        case decoded([ContainerEntry], index: EntryIndex<Int>, visible: [EntryInfo])
        /// The table, and the run of the pack's own records in it (found when first needed).
        case inPlace(IndexTable, own: OwnRun)
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

    /// Records read in place: the pack's two known records found by hash, its own run (by
    /// binary search, which reads segments across the table) left to the first listing. Nothing
    /// per entry.
    /// - Throws: As ``IndexTable/ensure(_:)``, for the segments the two lookups read.
    init(inPlace table: IndexTable) throws {
        // Most packs' first path sorts after `.assetpack/`: then they have no own records, known
        // from one record (a lookup of an absent path probes several, across the table).
        if try table.holdsNothing(withPrefix: OwnRun.prefix) {
            storage = .inPlace(table, own: OwnRun(table, known: 0..<0))
            (deletion, dictionary) = (nil, nil)
        } else {
            storage = .inPlace(table, own: OwnRun(table))
            deletion = try table.position(of: DeletionRecord.entryName)
            dictionary = try table.position(of: PackDictionary.entryName)
        }
    }

    /// The entry-count check of ``ReadLimits/checkEntryCount(_:)`` on the visible records: a
    /// table of at most the limit's records passes without its own run being found.
    /// - Throws: `.limitExceeded`; as ``IndexTable/ensure(_:)``.
    func checkEntryCount(_ limits: ReadLimits) throws {
        switch storage {
        case .decoded(_, _, let visible): try limits.checkEntryCount(visible.count)
        case .inPlace(let table, let own):
            if table.count <= limits.maxEntries { return }
            try limits.checkEntryCount(table.count - (try own.run()).count)
        }
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
    /// - Throws: As ``IndexTable/ensure(_:)``.
    func storedPosition(of path: String) throws -> Int? {
        if path == DeletionRecord.entryName { return deletion }
        if path == PackDictionary.entryName { return dictionary }
        switch storage {
        case .decoded(let records, let index, _):
            guard DeletionRecord.isReserved(path) else { return index.lookup(path) }
            return records.firstIndex { $0.info.path.utf8.elementsEqual(path.utf8) }
        case .inPlace(let table, _):
            return try table.position(of: path)
        }
    }

    /// The position of the visible record at `path` (as given, then normalised), or `nil`.
    /// - Throws: As ``IndexTable/ensure(_:)``, for a segment the lookup reads.
    func position(of path: String) throws -> Int? {
        switch storage {
        case .decoded(_, let index, _): return index.lookup(path)
        case .inPlace(let table, _):
            // The path found holds its record's bytes: a pack's own records are those below
            // `.assetpack/` (in a sorted table, the own run), found neither as given nor tidied.
            if let found = try table.position(of: path) { return DeletionRecord.isReserved(path) ? nil : found }
            // By bytes: `==` on strings is canonical equivalence, under which an NFD path equals
            // its NFC form.
            let normalized = EntryPath.normalize(path)
            guard !normalized.utf8.elementsEqual(path.utf8), let found = try table.position(of: normalized) else {
                return nil
            }
            return DeletionRecord.isReserved(normalized) ? nil : found
        }
    }

    /// The entries a caller sees (all but the pack's own), sorted by path.
    var visible: EntryList {
        switch storage {
        case .decoded(_, _, let visible): return EntryList(visible)
        case .inPlace(let table, let own):
            return EntryList(count: { table.count - own.runOrEmpty.count }) { i in
                let run = own.runOrEmpty
                return table.info(i < run.lowerBound ? i : i + run.count)
            }
        }
    }
}

/// The run of a version-8 table's own records (paths below `.assetpack/`), found by binary search
/// when first asked for and kept (a listing asks for it at every step).
final class OwnRun: Sendable {
    private let table: IndexTable
    /// `lowerBound << 32 | count`, or -1 before it is found.
    private let found = Atomic<Int>(-1)

    /// The run of `table`, found when first asked for, or `known` already.
    init(_ table: IndexTable, known: Range<Int>? = nil) {
        self.table = table
        if let known { found.store(Self.pack(known), ordering: .relaxed) }
    }

    private static func pack(_ run: Range<Int>) -> Int { run.lowerBound << 32 | run.count }

    /// `.assetpack/`, as bytes.
    static let prefix = Array(DeletionRecord.reservedFolder.utf8)

    /// The run.
    /// - Throws: As ``IndexTable/ensure(_:)``, for a segment the search reads.
    func run() throws -> Range<Int> {
        var packed = found.load(ordering: .acquiring)
        if packed < 0 {
            let run = try table.holdsNothing(withPrefix: Self.prefix) ? 0..<0 : try table.run(withPrefix: Self.prefix)
            // The first answer stays, whichever thread gave it (a listing's count never changes).
            let (exchanged, original) = found.compareExchange(
                expected: -1, desired: Self.pack(run), ordering: .acquiringAndReleasing)
            packed = exchanged ? Self.pack(run) : original
        }
        let lower = packed >> 32
        return lower..<lower + (packed & 0xFFFF_FFFF)
    }

    /// The run, or an empty one when a segment the search reads fails (a listing then shows
    /// what the table holds, the pack's own records too; `list`, `verify` and `extract` of every
    /// entry check the index first and refuse it). Kept either way, a read error's too: a
    /// listing's count never changes under it (an `EntryList` whose count moved would trap).
    var runOrEmpty: Range<Int> {
        if let run = try? run() { return run }
        _ = found.compareExchange(expected: -1, desired: Self.pack(0..<0), ordering: .acquiringAndReleasing)
        return (try? run()) ?? 0..<0
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
