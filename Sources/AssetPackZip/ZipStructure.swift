import AssetPackCore
import AssetPackCrypto

/// The zip structure AssetPack reads itself: the directory every read uses (libzip is only
/// asked to decode ZipCrypto entries), and the checks libzip never made.
///
/// libzip 1.7.3 reads each central-directory record on its own: it never asks whether two
/// records point into the same bytes, and it never compares a local header's name with the
/// central record's. Both are how "overlapped components" zip bombs work (CVE-2019-13232 in
/// Info-ZIP): many records share one compressed stream, so a 1 MB file inflates to gigabytes.
/// This parser reads the end-of-central-directory record (and zip64's), every central record,
/// and checks at open that:
/// - the directory lies inside the file, before the end record, and holds exactly the declared
///   number of records;
/// - no two entries' data ranges overlap, and every range ends before the directory.
///
/// ``checkLocalHeader(_:read:)`` checks one entry's local header before its data is read: the
/// signature, the name (byte for byte), the method and, when the header carries them, the sizes
/// and CRC must equal the central record's, and the data must end before the next entry starts.
///
/// Every failure is `.integrityFailure`: the file is damaged or hostile.
package struct ZipStructure: Sendable {
    /// One central-directory record: what the checks need.
    package struct Record: Sendable {
        /// The name's bytes as stored.
        package var name: [UInt8]
        /// General-purpose flags.
        package var flags: UInt16
        /// Compression method as stored.
        package var method: UInt16
        /// CRC-32 as stored.
        package var crc32: UInt32
        /// Stored (compressed) size, zip64-resolved.
        package var compressedSize: UInt64
        /// Uncompressed size, zip64-resolved.
        package var size: UInt64
        /// Where the local header starts, zip64-resolved.
        package var localHeaderOffset: UInt64
        /// Where the next entry (or the central directory) starts: this entry's data must end before.
        package var end: UInt64 = 0
        /// How the entry is encrypted, numbered as libzip numbers it (`ZIP_EM_*`): 0 none, 1
        /// ZipCrypto, 0x0101–0x0103 WinZip AES-128/192/256, 0xFFFF anything else (strong encryption).
        package var encryptionMethod: UInt16 = 0
        /// The compression method of the plaintext: ``method`` itself, or for WinZip AES (method 99)
        /// the one its extra field names.
        package var compressionMethod: UInt16 = 0
        /// WinZip AES entries: whether the stored CRC-32 is to be checked. AE-2 entries store 0
        /// (7-Zip always, libzip below 20 bytes) and rely on the MAC; libzip's rule, kept: an AE-2
        /// entry under 20 bytes, or a CRC of 0, is not checked.
        package var crcIsChecked = true

        /// Whether sizes and CRC follow the data in a data descriptor (bit 3).
        var hasDataDescriptor: Bool { flags & 0x0008 != 0 }
    }

    /// The central records in directory order (libzip's index order), kept as fixed-size
    /// fields and a table of names (no object per record), each made a ``Record`` when asked for.
    package var records: RecordTable
    /// Where the central directory starts.
    package var directoryOffset: UInt64
    /// The central directory's length in bytes.
    package var directorySize: UInt64
    /// With `signed: true`: the SHA-256 of the central directory before its last record, and
    /// that record's bytes (where a signed pack keeps its signature entry's record).
    package var lastRecord: (digestBefore: [UInt8], bytes: [UInt8])?

    static let localHeaderSize = 30
    static let centralHeaderSize = 46
    static let endRecordSize = 22

    /// Reads and checks the directory of a zip of `fileSize` bytes.
    /// - Parameters:
    ///   - read: Reads exactly `count` bytes at an offset (throws at end of file).
    ///   - signed: Also keep ``lastRecord`` (for a signature check).
    /// - Throws: `.integrityFailure` for a damaged or hostile structure, `.limitExceeded` past `limits`.
    package init(
        fileSize: UInt64, limits: ReadLimits, signed: Bool = false,
        read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]
    ) throws {
        let end = try Self.findEnd(fileSize: fileSize, read: read)
        // Damage first: a directory that does not fit, or more records than it can hold, is a
        // damaged zip whatever the limits say; the limits apply to directories that exist.
        let (directoryEnd, overflow) = end.directoryOffset.addingReportingOverflow(end.directorySize)
        guard !overflow, directoryEnd <= end.offset else {
            throw Self.damaged("the central directory runs past the end record (truncated or damaged zip)")
        }
        guard end.count <= end.directorySize / UInt64(Self.centralHeaderSize) else {
            throw Self.damaged("the central directory is too short for the \(end.count) records it declares")
        }
        guard end.directorySize <= limits.maxIndexSize else {
            throw Self.damaged(
                "central directory of \(end.directorySize) bytes exceeds the limit of \(limits.maxIndexSize)",
                .limitExceeded)
        }
        do { try limits.checkDeclaredEntries(end.count) } catch let error as AssetPackError {
            throw Self.damaged(error.message, .limitExceeded)
        }
        // Parsed as it is read, a piece at a time: the directory's bytes are never held whole
        // beside the table made of them (7.6 MB and 8.6 MB for 100,000 entries).
        var directory = DirectoryWindow(range: end.directoryOffset..<directoryEnd)
        var records = RecordTable()
        records.reserve(Int(end.count), nameBytes: Int(end.directorySize) - Int(end.count) * Self.centralHeaderSize)
        // With `signed`: every record's bytes hashed but the last, which is kept.
        let before = signed ? SHA256Hasher() : nil
        var last: [UInt8] = []
        while records.count < Int(end.count) {
            // The whole record in the window, or all the directory has left (which the record's
            // checks then refuse as they refuse a record running past the directory).
            try directory.fill(Self.centralHeaderSize, read)
            try directory.fill(Self.centralHeaderSize + directory.variableLength(), read)
            // Then every record the window holds whole, in one pass over it.
            let used = try directory.withRest { rest in
                var reader = ByteReader(rest, structure: "zip")
                repeat {
                    let start = reader.position
                    try Self.readRecord(&reader, index: records.count, into: &records)
                    if let before {
                        before.update(last)
                        last = Array(rest[start..<reader.position])
                    }
                } while records.count < Int(end.count) && DirectoryWindow.holdsRecord(rest, at: reader.position)
                return reader.position
            }
            directory.consume(used)
        }
        guard directory.isEmpty else {
            throw Self.damaged("the central directory holds more than the \(end.count) records it declares")
        }
        self.records = records
        records = RecordTable()  // the only reference left is ours: checkRanges writes without a copy
        self.directoryOffset = end.directoryOffset
        self.directorySize = end.directorySize
        if let before { lastRecord = (before.finalize(), last) }
        try checkRanges()
    }

    /// The central directory as it is parsed: a window of its bytes, refilled a piece (1 MiB) at
    /// a time from the file.
    struct DirectoryWindow {
        static let piece = 1 << 20
        /// The directory's bytes not read into the window yet.
        private var unread: Range<UInt64>
        private var window: [UInt8] = []
        private var at = 0

        init(range: Range<UInt64>) { unread = range }

        /// Whether every byte of the directory was consumed.
        var isEmpty: Bool { at == window.count && unread.isEmpty }

        /// Makes the window hold at least `count` bytes from the current position, or all the
        /// directory has left, reading with `read` (exactly `count` bytes at an offset).
        @inline(__always)
        mutating func fill(_ count: Int, _ read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]) throws {
            let have = window.count - at
            guard have < count, !unread.isEmpty else { return }
            try refill(count, have: have, read)
        }

        private mutating func refill(
            _ count: Int, have: Int, _ read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]
        ) throws {
            let more = Int(min(UInt64(unread.count), UInt64(max(Self.piece, count - have))))
            // The tail (part of a record) is read again with the next piece: one buffer, no copy.
            window = try read(unread.lowerBound - UInt64(have), have + more)
            at = 0
            unread = unread.lowerBound + UInt64(more)..<unread.upperBound
        }

        /// The central record's name, extra field and comment lengths at the current position,
        /// summed (0 when the window is shorter: the record's own checks refuse it).
        func variableLength() -> Int {
            window.withUnsafeBytes { Self.variableLength(UnsafeRawBufferPointer(rebasing: $0[at...])) }
        }

        /// The lengths after the central record at the start of `bytes`, summed (0 when `bytes`
        /// is shorter than the fields).
        @inline(__always)
        static func variableLength(_ bytes: UnsafeRawBufferPointer) -> Int {
            guard bytes.count >= 34 else { return 0 }
            func u16(_ at: Int) -> Int { Int(bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self).littleEndian) }
            return u16(28) + u16(30) + u16(32)
        }

        /// Whether `bytes` from `at` hold a whole central record (its fixed part and the lengths
        /// it declares).
        @inline(__always)
        static func holdsRecord(_ bytes: UnsafeRawBufferPointer, at: Int) -> Bool {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[at...])
            return rest.count >= ZipStructure.centralHeaderSize
                && rest.count >= ZipStructure.centralHeaderSize + variableLength(rest)
        }

        /// Runs `body` over the window's bytes from the current position.
        func withRest<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
            try window.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[at...])) }
        }

        mutating func consume(_ count: Int) { at += count }
    }

    /// Where the central directory lies, from the end record alone (no record is parsed).
    /// - Throws: `.integrityFailure` or `.unsupportedFormat` as for ``init(fileSize:limits:read:)``.
    package static func directoryRange(
        fileSize: UInt64, read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]
    ) throws -> (offset: UInt64, size: UInt64) {
        let end = try findEnd(fileSize: fileSize, read: read)
        return (end.directoryOffset, end.directorySize)
    }

    /// Assigns each record its `end` and refuses overlapping or out-of-place data ranges.
    ///
    /// At open only the central record is known, so a range is taken as at least the local
    /// header, the name and the stored data; the local extra field's length is checked later,
    /// by ``checkLocalHeader(_:read:)``, against `end`.
    ///
    /// A writer lays its entries out in directory order (ours, libzip, 7-Zip, Info-ZIP), so the
    /// order is checked in one pass and sorted only when it is not that.
    private mutating func checkRanges() throws {
        // No copy of `records.raw` may outlive this: the writes below would copy the whole array
        // each (copy on write), which made opening a 100,000-entry zip quadratic.
        let order: [Int] = {
            let raw = records.raw
            let inOrder = zip(raw, raw.dropFirst()).allSatisfy { $0.localHeaderOffset <= $1.localHeaderOffset }
            return inOrder
                ? Array(raw.indices) : raw.indices.sorted { raw[$0].localHeaderOffset < raw[$1].localHeaderOffset }
        }()
        for (k, i) in order.enumerated() {
            let next = k + 1 < order.count ? records.raw[order[k + 1]].localHeaderOffset : directoryOffset
            let r = records.raw[i]
            let (minimumEnd, overflow) = r.localHeaderOffset.addingReportingOverflow(
                UInt64(Self.localHeaderSize + Int(r.nameLength)))
            let (dataEnd, overflow2) = minimumEnd.addingReportingOverflow(r.compressedSize)
            guard !overflow, !overflow2, dataEnd <= next else {
                let name = Self.display(Array(records.name(i)))
                if k + 1 < order.count {
                    let other = Self.display(Array(records.name(order[k + 1])))
                    throw Self.damaged(
                        "entries \"\(name)\" and \"\(other)\" overlap: their data share bytes (a zip bomb, or damage)")
                }
                throw Self.damaged("entry \"\(name)\" runs into the central directory (truncated or damaged zip)")
            }
            records.raw[i].end = next
        }
    }

    /// Checks record `index`'s local header (read through `read`) against its central record.
    /// - Returns: Where the entry's stored data starts.
    /// - Throws: `.integrityFailure` naming what disagrees.
    @discardableResult
    package func checkLocalHeader(_ index: Int, read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]) throws
        -> UInt64
    {
        let r = records[index]
        let (flags, method, crc, storedCompressedSize, storedSize, nameLength, extraLength) = try Self.parse(
            read(r.localHeaderOffset, Self.localHeaderSize)
        ) { header in
            guard try header.u32() == 0x0403_4B50 else { throw Self.damaged("local header signature is missing") }
            try header.skip(2)  // version needed
            let flags = try header.u16(), method = try header.u16()
            try header.skip(4)  // time, date
            let crc = try header.u32(), compressedSize = try header.u32(), size = try header.u32()
            return (
                flags, method, crc, UInt64(compressedSize), UInt64(size), Int(try header.u16()), Int(try header.u16())
            )
        }
        var compressedSize = storedCompressedSize, size = storedSize
        let dataStart = r.localHeaderOffset + UInt64(Self.localHeaderSize + nameLength + extraLength)
        guard nameLength == r.name.count, dataStart + r.compressedSize <= r.end else {
            throw Self.damaged("local header does not match the central directory (name length or data range)")
        }
        let variable = try read(r.localHeaderOffset + UInt64(Self.localHeaderSize), nameLength + extraLength)
        guard variable.prefix(nameLength).elementsEqual(r.name) else {
            throw Self.damaged(
                "local header names \"\(Self.display(Array(variable.prefix(nameLength))))\", the central directory \"\(Self.display(r.name))\""
            )
        }
        guard method == r.method, flags & 0x0001 == r.flags & 0x0001 else {
            throw Self.damaged("local header's method or encryption flag differs from the central directory")
        }
        if flags & 0x0008 == 0 {
            if compressedSize == 0xFFFF_FFFF || size == 0xFFFF_FFFF {
                if let zip64 = try Self.extraField(0x0001, in: Array(variable.dropFirst(nameLength))) {
                    try Self.parse(zip64) { z in
                        if size == 0xFFFF_FFFF && z.remaining >= 8 { size = try z.u64() }
                        if compressedSize == 0xFFFF_FFFF && z.remaining >= 8 { compressedSize = try z.u64() }
                    }
                }
            }
            guard crc == r.crc32, compressedSize == r.compressedSize, size == r.size else {
                throw Self.damaged("local header's sizes or CRC differ from the central directory")
            }
        }
        return dataStart
    }

    // MARK: - Parsing

    private struct End {
        var offset: UInt64  // where the end record (or zip64's) starts
        var count: UInt64
        var directorySize: UInt64
        var directoryOffset: UInt64
    }

    /// Finds the end-of-central-directory record (the last one whose comment reaches the end of the
    /// file exactly) and, when it defers to zip64, the zip64 end record.
    private static func findEnd(fileSize: UInt64, read: (UInt64, Int) throws -> [UInt8]) throws -> End {
        // A file that starts like a zip and has no end record was cut short; anything else is no zip.
        func missingEnd() throws -> AssetPackError {
            guard fileSize >= 4, startMagics.contains(try read(0, 4)) else {
                return damaged("not a zip archive or AssetPack container", .unsupportedFormat)
            }
            return damaged("no end of central directory record (truncated or damaged zip)")
        }
        guard fileSize >= UInt64(endRecordSize) else { throw try missingEnd() }
        let tailLength = Int(min(fileSize, UInt64(endRecordSize + 0xFFFF)))
        let tailStart = fileSize - UInt64(tailLength)
        let tail = try read(tailStart, tailLength)
        var at = tailLength - endRecordSize
        while at >= 0 {
            if tail[at] == 0x50, tail[at + 1] == 0x4B, tail[at + 2] == 5, tail[at + 3] == 6 {
                let (disk, directoryDisk, onDisk, count, directorySize, directoryOffset, commentLength) =
                    try Self.parse(
                        Array(tail[(at + 4)..<(at + endRecordSize)])
                    ) { r in
                        (try r.u16(), try r.u16(), try r.u16(), try r.u16(), try r.u32(), try r.u32(), try r.u16())
                    }
                if at + endRecordSize + Int(commentLength) == tailLength {
                    let offset = tailStart + UInt64(at)
                    let deferred =
                        disk == 0xFFFF || directoryDisk == 0xFFFF || onDisk == 0xFFFF || count == 0xFFFF
                        || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF
                    let locatorFollows = try offset >= 20 && isZip64Locator(read(offset - 20, 4))
                    if deferred || locatorFollows {
                        return try zip64End(before: offset, fileSize: fileSize, read: read)
                    }
                    guard disk == 0, directoryDisk == 0, onDisk == count else {
                        throw damaged("multi-disk zips are not supported", .unsupportedFormat)
                    }
                    return End(
                        offset: offset, count: UInt64(count), directorySize: UInt64(directorySize),
                        directoryOffset: UInt64(directoryOffset))
                }
            }
            at -= 1
        }
        throw try missingEnd()
    }

    /// What a zip starts with: a local header, or the end record of an empty zip.
    static let startMagics: [[UInt8]] = [[0x50, 0x4B, 3, 4], [0x50, 0x4B, 5, 6]]

    private static func isZip64Locator(_ bytes: [UInt8]) -> Bool { bytes == [0x50, 0x4B, 6, 7] }

    private static func zip64End(before endRecord: UInt64, fileSize: UInt64, read: (UInt64, Int) throws -> [UInt8])
        throws -> End
    {
        guard endRecord >= 20 else { throw damaged("zip64 end locator is missing") }
        let offset = try parse(read(endRecord - 20, 20)) { locator in
            guard try locator.u32() == 0x0706_4B50 else { throw damaged("zip64 end locator is missing") }
            try locator.skip(4)  // disk with the zip64 end record
            return try locator.u64()
        }
        guard offset <= endRecord - 20, endRecord - 20 - offset >= 56 else {
            throw damaged("zip64 end locator points outside the file")
        }
        let (disk, directoryDisk, onDisk, count, directorySize, directoryOffset) = try parse(read(offset, 56)) {
            record in
            guard try record.u32() == 0x0606_4B50 else { throw damaged("zip64 end record signature is missing") }
            try record.skip(8 + 2 + 2)  // record size, versions
            return (
                try record.u32(), try record.u32(), try record.u64(), try record.u64(), try record.u64(),
                try record.u64()
            )
        }
        guard disk == 0, directoryDisk == 0, onDisk == count else {
            throw damaged("multi-disk zips are not supported", .unsupportedFormat)
        }
        return End(offset: offset, count: count, directorySize: directorySize, directoryOffset: directoryOffset)
    }

    private static func readRecord(_ reader: inout ByteReader, index: Int, into table: inout RecordTable) throws {
        guard reader.remaining >= centralHeaderSize, try reader.u32() == 0x0201_4B50 else {
            throw damaged("central directory record \(index) is damaged")
        }
        try reader.skip(4)  // versions
        let flags = try reader.u16(), method = try reader.u16()
        try reader.skip(4)  // time, date
        let crc = try reader.u32()
        var compressedSize = UInt64(try reader.u32()), size = UInt64(try reader.u32())
        let nameLength = Int(try reader.u16()), extraLength = Int(try reader.u16()),
            commentLength = Int(try reader.u16())
        let disk = try reader.u16()
        try reader.skip(6)  // attributes
        var offset = UInt64(try reader.u32())
        guard reader.remaining >= nameLength + extraLength + commentLength else {
            throw damaged("central directory record \(index) runs past the directory")
        }
        let name = try reader.raw(nameLength)
        let extra = try reader.raw(extraLength)  // read in place: no array per record
        try reader.skip(commentLength)
        if size == 0xFFFF_FFFF || compressedSize == 0xFFFF_FFFF || offset == 0xFFFF_FFFF || disk == 0xFFFF {
            guard let field = try extraField(0x0001, in: extra) else {
                throw damaged("entry \"\(display(Array(name)))\" needs a zip64 extra field and has none")
            }
            // The zip64 field holds, in this order, only the values whose 32-bit field is saturated.
            try parse(field) { z in
                func next() throws -> UInt64 {
                    guard z.remaining >= 8 else {
                        throw damaged("entry \"\(display(Array(name)))\"'s zip64 extra field is too short")
                    }
                    return try z.u64()
                }
                if size == 0xFFFF_FFFF { size = try next() }
                if compressedSize == 0xFFFF_FFFF { compressedSize = try next() }
                if offset == 0xFFFF_FFFF { offset = try next() }
            }
        }
        var record = RecordTable.Raw(
            nameOffset: UInt32(table.names.count), nameLength: UInt16(nameLength), flags: flags, method: method,
            crc32: crc, compressedSize: compressedSize, size: size, localHeaderOffset: offset)
        try resolveEncryption(&record, name: name, extra: extra)
        table.raw.append(record)
        table.names.append(contentsOf: name)
    }

    /// Fills in the record's encryption method, plaintext compression method and CRC rule from its
    /// flags and (WinZip AES) its 0x9901 extra field, as libzip's `_zip_dirent_process_winzip_aes`
    /// does: a method-99 entry without a well-formed field is damaged, one of another vendor,
    /// version or strength is unsupported.
    private static func resolveEncryption(
        _ record: inout RecordTable.Raw, name nameBytes: UnsafeRawBufferPointer, extra: UnsafeRawBufferPointer
    ) throws {
        record.compressionMethod = record.method
        let encrypted = record.flags & 0x0001 != 0
        guard record.method == 99 else {
            record.encryptionMethod = !encrypted ? 0 : record.flags & 0x0040 != 0 ? 0xFFFF : 1
            return
        }
        var name: String { display(Array(nameBytes)) }  // for a message only: made when one is thrown
        guard let field = try extraFieldBytes(0x9901, in: extra), field.count == 7 else {
            throw damaged("entry \"\(name)\" is WinZip AES (method 99) without a valid AES extra field")
        }
        let version = UInt16(field[0]) | UInt16(field[1]) << 8
        guard version == 1 || version == 2, field[2] == 0x41, field[3] == 0x45, (1...3).contains(field[4]) else {
            throw damaged(
                "entry \"\(name)\" uses an AES extra field of another vendor, version or strength", .unsupportedFormat)
        }
        record.encryptionMethod = 0x0100 | UInt16(field[4])
        record.compressionMethod = UInt16(field[5]) | UInt16(field[6]) << 8
        record.crcIsChecked = record.crc32 != 0 && !(version == 2 && record.size < 20)
    }

    /// Runs `body` with a reader over `bytes`.
    private static func parse<T>(_ bytes: [UInt8], _ body: (inout ByteReader) throws -> T) throws -> T {
        try bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer, structure: "zip")
            return try body(&reader)
        }
    }

    /// The data of the first extra field with `id` in an extra-field block.
    private static func extraField(_ id: UInt16, in block: [UInt8]) throws -> [UInt8]? {
        try block.withUnsafeBytes { try extraField(id, in: $0) }
    }

    private static func extraField(_ id: UInt16, in block: UnsafeRawBufferPointer) throws -> [UInt8]? {
        try extraFieldBytes(id, in: block).map(Array.init)
    }

    /// The data of the first extra field with `id`, where it lies in `block`.
    private static func extraFieldBytes(_ id: UInt16, in block: UnsafeRawBufferPointer) throws
        -> UnsafeRawBufferPointer?
    {
        var r = ByteReader(block, structure: "zip")
        while r.remaining >= 4 {
            let fieldID = try r.u16(), length = Int(try r.u16())
            guard length <= r.remaining else { return nil }
            let data = try r.raw(length)
            if fieldID == id { return data }
        }
        return nil
    }

    /// An entry name for messages: UTF-8 with control characters escaped.
    static func display(_ name: [UInt8]) -> String {
        EntryPath.printable(String(decoding: name, as: UTF8.self))
    }

    static func damaged(_ message: String, _ code: AssetPackError.Code = .integrityFailure) -> AssetPackError {
        AssetPackError(code, message)
    }
}

/// The central records of a zip, as ``ZipStructure`` keeps them: one fixed-size ``Raw`` per
/// record and every name's bytes in one table. A ``ZipStructure/Record`` (its name an array of
/// its own) is made when one is asked for: opening a pack of 100,000 entries makes no 100,000
/// arrays.
package struct RecordTable: RandomAccessCollection, Sendable {
    /// A record's fields, resolved (zip64, WinZip AES), and where its name is in ``names``.
    package struct Raw: Sendable {
        var nameOffset: UInt32
        var nameLength: UInt16
        var flags: UInt16
        var method: UInt16
        var crc32: UInt32
        var compressedSize: UInt64
        var size: UInt64
        var localHeaderOffset: UInt64
        var end: UInt64 = 0
        var encryptionMethod: UInt16 = 0
        var compressionMethod: UInt16 = 0
        var crcIsChecked = true
    }

    package var raw: [Raw] = []
    package var names: [UInt8] = []

    mutating func reserve(_ count: Int, nameBytes: Int) {
        raw.reserveCapacity(count)
        names.reserveCapacity(Swift.max(0, nameBytes))
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { raw.count }

    /// Record `i`'s name bytes as stored, without a copy.
    package func name(_ i: Int) -> ArraySlice<UInt8> {
        let r = raw[i]
        return names[Int(r.nameOffset)..<Int(r.nameOffset) + Int(r.nameLength)]
    }

    package subscript(i: Int) -> ZipStructure.Record {
        let r = raw[i]
        return ZipStructure.Record(
            name: Array(name(i)), flags: r.flags, method: r.method, crc32: r.crc32, compressedSize: r.compressedSize,
            size: r.size, localHeaderOffset: r.localHeaderOffset, end: r.end, encryptionMethod: r.encryptionMethod,
            compressionMethod: r.compressionMethod, crcIsChecked: r.crcIsChecked)
    }
}
