import AssetPackCore

/// The zip reader's index of its entries, built at open over the record table without an object
/// per entry: the file entries' record positions sorted by normalised path (already in order for
/// the zips our packer, libzip and 7-Zip write, so checked in one pass and sorted only when not),
/// and a hash table of them (FNV-1a of the path a lookup normalises to, ``PathHash``; linear
/// probing). A name becomes a `String` only when it needs to: a non-ASCII name, or one whose
/// separators ``EntryPath/normalize(_:)`` tidies (a `\`, `./` in front, `//`); every other name
/// is its own bytes, as listed and as looked up.
struct ZipDirectoryIndex: Sendable {
    let records: RecordTable
    /// Record positions of the file entries (not directories, not the pack's own `.assetpack/`
    /// records), sorted by normalised path.
    let visible: [UInt32]
    /// The listed path (NFC, no `./` in front) of each record whose stored name is not already it.
    let renamed: [Int: String]
    /// The path a lookup finds (``EntryPath/normalize(_:)`` of the listed one) where it is not the
    /// listed path.
    let keys: [Int: String]
    /// The hash table of positions in ``visible``.
    private let slots: PathSlots
    /// The deletion record's position in ``records``, if the pack has one.
    let deletion: Int?
    /// Paths that more than one record normalises to, and how many: reading them is refused.
    let ambiguous: [String: Int]

    /// - Throws: `.integrityFailure` for two deletion records.
    init(_ records: RecordTable) throws {
        self.records = records
        var visible: [UInt32] = []
        visible.reserveCapacity(records.count)
        var renamed: [Int: String] = [:]
        var keys: [Int: String] = [:]
        var deletion: Int?
        let reservedFolder = Array(DeletionRecord.reservedFolder.utf8)
        let deletionName = Array(DeletionRecord.entryName.utf8)
        for i in records.indices {
            let name = records.name(i)
            var path: String?
            if !name.withUnsafeBytes({ EntryPath.isCanonicalASCII(bytes: $0) }) {
                path = EntryPath.withoutLeadingDotSlash(EntryPath.nfc(String(decoding: name, as: UTF8.self)))
            }
            let isDirectory = path.map { $0.isEmpty || $0.hasSuffix("/") } ?? (name.isEmpty || name.last == 0x2F)
            if isDirectory { continue }  // directory entry (bsdtar's "./" too)
            let reserved = path.map { $0.utf8.starts(with: reservedFolder) } ?? name.starts(with: reservedFolder)
            if reserved {  // the pack's own bookkeeping (.assetpack/manifest), and its deletion record
                if path.map({ $0.utf8.elementsEqual(deletionName) }) ?? name.elementsEqual(deletionName) {
                    guard deletion == nil else {
                        throw AssetPackError(.integrityFailure, "two deletion records", path: DeletionRecord.entryName)
                    }
                    deletion = i
                }
                continue
            }
            if let path {
                renamed[i] = path
                let key = EntryPath.normalize(path)
                if !key.utf8.elementsEqual(path.utf8) { keys[i] = key }
            }
            visible.append(UInt32(i))
        }
        self.renamed = renamed
        self.keys = keys
        self.deletion = deletion

        func withBytes<R>(_ i: UInt32, _ table: [Int: String], _ body: (UnsafeRawBufferPointer) -> R) -> R {
            if var path = table[Int(i)] { return path.withUTF8 { body(UnsafeRawBufferPointer($0)) } }
            return records.names.withUnsafeBytes { all in
                let r = records.raw[Int(i)]
                return body(
                    UnsafeRawBufferPointer(rebasing: all[Int(r.nameOffset)..<Int(r.nameOffset) + Int(r.nameLength)]))
            }
        }
        /// Record `i`'s listed path's bytes, and the bytes a lookup compares.
        func withPath<R>(_ i: UInt32, _ body: (UnsafeRawBufferPointer) -> R) -> R { withBytes(i, renamed, body) }
        func withKey<R>(_ i: UInt32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            keys[Int(i)] != nil ? withBytes(i, keys, body) : withPath(i, body)
        }
        func precedes(_ a: UInt32, _ b: UInt32) -> Bool {
            withPath(a) { x in withPath(b) { y in x.lexicographicallyPrecedes(y) } }
        }
        if !zip(visible, visible.dropFirst()).allSatisfy({ !precedes($1, $0) }) {
            visible.sort(by: precedes)
        }
        self.visible = visible

        var slots = PathSlots(count: visible.count)
        var ambiguous: [String: Int] = [:]
        for (position, record) in visible.enumerated() {
            withKey(record) { bytes in
                let same = slots.insert(position, bytes: bytes) { other in
                    withKey(visible[other]) { $0.elementsEqual(bytes) }
                }
                // The first is kept, and reading it is refused as ambiguous.
                if same != nil { ambiguous[String(decoding: bytes, as: UTF8.self), default: 1] += 1 }
            }
        }
        self.slots = slots
        self.ambiguous = ambiguous
    }

    /// The normalised path of record `i`.
    func path(_ i: Int) -> String {
        renamed[i] ?? String(decoding: records.name(i), as: UTF8.self)
    }

    /// The position in ``visible`` of the entry whose normalised path is `path` (as given, then
    /// normalised), or `nil`.
    func position(of path: String) -> Int? {
        if let found = probe(path) { return found }
        // By bytes: `==` on strings is canonical equivalence, under which an NFD path equals its NFC form.
        let normalized = EntryPath.normalize(path)
        return normalized.utf8.elementsEqual(path.utf8) ? nil : probe(normalized)
    }

    private func probe(_ path: String) -> Int? {
        var path = path
        return path.withUTF8 { query in
            let wanted = UnsafeRawBufferPointer(query)
            return PathSlots.find(
                wanted, slotCount: slots.slots.count, maxProbe: slots.maxProbe, slot: { slots.slots[$0] }
            ) { position in
                let record = Int(visible[position])
                return (keys[record] ?? renamed[record]).map { $0.utf8.elementsEqual(wanted) }
                    ?? records.name(record).elementsEqual(wanted)
            }
        }
    }

    /// Record `i` as the reader's entry, its path normalised.
    func entry(record i: Int) -> ZipPackReader.Entry {
        let r = records.raw[i]
        let compression: EntryCompression =
            switch r.compressionMethod {
            case 0: .store
            case 8: .deflate
            default: .other
            }
        let info = EntryInfo(
            path: path(i), size: r.size, storedSize: r.compressedSize, compression: compression,
            encryption: ZipPackReader.encryption(r.encryptionMethod), crc32: r.crcIsChecked ? r.crc32 : nil)
        return ZipPackReader.Entry(
            info: info, index: UInt64(i), encryptionMethod: r.encryptionMethod, compressionMethod: r.compressionMethod)
    }

    /// The entry at `position` of ``visible``.
    func entry(at position: Int) -> ZipPackReader.Entry { entry(record: Int(visible[position])) }
}
