import AssetPackCore
import Foundation

/// Builds zip files byte by byte, for tests of hostile and damaged structure that no real writer
/// produces: central records that share one local header, local headers that disagree with
/// their central record, duplicate names, zip64 records with missing or absurd parts.
///
/// Entries are unencrypted; `deflate` compresses them with raw deflate.
public struct ZipBuilder {
    /// One entry's data and the lies its headers tell.
    public struct Entry {
        /// The name in the central directory.
        public var name: String
        /// The uncompressed bytes.
        public var data: [UInt8]
        /// Whether the data is deflated (else stored).
        public var deflate = false
        /// A different name for the local header (nil: the same as the central one).
        public var localName: String?
        /// A different uncompressed size for the local header (nil: the real one).
        public var localSize: UInt32?
        /// An uncompressed size the central record declares instead of the real one, through a
        /// zip64 extra field (its 32-bit field saturated), as large as it likes.
        public var declaredSize: UInt64?

        /// An entry named `name` holding `data`.
        public init(_ name: String, _ data: [UInt8], deflate: Bool = false) {
            self.name = name
            self.data = data
            self.deflate = deflate
        }
    }

    /// The entries, written in this order.
    public var entries: [Entry]
    /// Extra central records: (name, index of the entry whose local header and sizes it reuses).
    /// Each one points into bytes another record already owns: the overlapping-entries zip bomb.
    public var aliases: [(name: String, entry: Int)] = []
    /// Write the first entry's central record with saturated (0xFFFFFFFF) sizes and offset and a
    /// zip64 extra field, and a zip64 end record and locator.
    public var zip64 = false
    /// With `zip64`: leave the central record's zip64 extra field out.
    public var omitZip64Extra = false
    /// With `zip64`: make the locator point here instead of at the zip64 end record.
    public var zip64LocatorOffset: UInt64?
    /// Bytes in front of the first entry (a self-extractor's stub), with every offset counted
    /// from the start of the file, as `zip -A` leaves them.
    public var prefix: [UInt8] = []
    /// The order of the entries' central records (default: the entries' order, as writers lay
    /// them out): another order makes a directory whose records neither follow the file nor the
    /// names.
    public var centralOrder: [Int]?

    /// A builder for `entries`.
    public init(_ entries: [Entry]) { self.entries = entries }

    /// The zip's bytes.
    public func build() -> [UInt8] {
        var out: [UInt8] = prefix
        var central: [UInt8] = []
        var count = 0
        var placed: [(offset: UInt32, crc: UInt32, stored: [UInt8], method: UInt16)] = []
        for e in entries {
            let stored = e.deflate ? e.data.withUnsafeBytes { RawDeflate.compress($0) } : e.data
            let method: UInt16 = e.deflate ? 8 : 0
            let crc = CRC32.checksum(e.data)
            let offset = UInt32(out.count)
            let localName = Array((e.localName ?? e.name).utf8)
            out += le32(0x0403_4B50) + le16(20) + le16(0x0800) + le16(method) + le16(0) + le16(0x21)
            out += le32(crc) + le32(UInt32(stored.count)) + le32(e.localSize ?? UInt32(e.data.count))
            out += le16(UInt16(localName.count)) + le16(0) + localName + stored
            placed.append((offset, crc, stored, method))
        }
        func record(_ name: String, _ k: Int) {
            let e = entries[k], p = placed[k]
            let nameBytes = Array(name.utf8)
            let big = zip64 && k == 0 && count == 0
            var extra: [UInt8] = []
            if big && !omitZip64Extra {
                extra =
                    le16(1) + le16(24) + le64(e.declaredSize ?? UInt64(e.data.count)) + le64(UInt64(p.stored.count))
                    + le64(UInt64(p.offset))
            } else if let declared = e.declaredSize {
                extra = le16(1) + le16(8) + le64(declared)  // the uncompressed size alone
            }
            let sizeField = big || e.declaredSize != nil ? 0xFFFF_FFFF : UInt32(e.data.count)
            central +=
                le32(0x0201_4B50) + le16(0x031E) + le16(45) + le16(0x0800) + le16(p.method) + le16(0) + le16(0x21)
            central += le32(p.crc) + le32(big ? 0xFFFF_FFFF : UInt32(p.stored.count)) + le32(sizeField)
            central +=
                le16(UInt16(nameBytes.count)) + le16(UInt16(extra.count)) + le16(0) + le16(0) + le16(0)
                + le32(0o100644 << 16)
            central += le32(big ? 0xFFFF_FFFF : p.offset) + nameBytes + extra
            count += 1
        }
        for k in centralOrder ?? Array(entries.indices) { record(entries[k].name, k) }
        for alias in aliases { record(alias.name, alias.entry) }
        let directoryOffset = UInt64(out.count)
        out += central
        if zip64 {
            let recordOffset = UInt64(out.count)
            out += le32(0x0606_4B50) + le64(44) + le16(45) + le16(45) + le32(0) + le32(0)
            out += le64(UInt64(count)) + le64(UInt64(count)) + le64(UInt64(central.count)) + le64(directoryOffset)
            out += le32(0x0706_4B50) + le32(0) + le64(zip64LocatorOffset ?? recordOffset) + le32(1)
        }
        out += le32(0x0605_4B50) + le16(0) + le16(0) + le16(UInt16(count)) + le16(UInt16(count))
        out += le32(UInt32(central.count)) + le32(zip64 ? 0xFFFF_FFFF : UInt32(directoryOffset)) + le16(0)
        return out
    }

    /// Writes the zip to `url`.
    public func write(to url: URL) throws { try Data(build()).write(to: url) }
}

private func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
private func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
private func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
