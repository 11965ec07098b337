import AssetPackCore
import Foundation

/// What the writer knows about one entry: enough to encode its local header and central record.
///
/// Entries are written with no data descriptor (the local header is patched once the sizes are
/// known), the UTF-8 flag (bit 11) set, WinZip AES-256 as method 99 with the `0x9901` extra field
/// (AE-1 with the real CRC-32, or AE-2 with CRC 0 below 20 bytes, as the WinZip specification
/// recommends), and zip64 fields where a value does not fit in 32 bits.
struct ZipEntryRecord: Sendable, Equatable {
    /// The name as stored (the entry path's UTF-8 bytes).
    var name: [UInt8]
    /// Whether the data is WinZip AES-256 encrypted.
    var encrypted: Bool
    /// The actual compression: 0 (store) or 8 (deflate).
    var compression: UInt16
    /// `1` (AE-1) or `2` (AE-2) for AES entries.
    var aesVendorVersion: UInt16 = 2
    /// DOS time and date of the last modification.
    var dosTime: UInt16
    var dosDate: UInt16
    /// The CRC-32 of the plaintext (stored as 0 for AE-2 entries).
    var crc32: UInt32
    /// Stored data length: for AES, salt, verifier, ciphertext and MAC.
    var compressedSize: UInt64
    /// Uncompressed size.
    var size: UInt64
    /// Whether the local header carries a zip64 extra field with both sizes (decided before the
    /// data is written, from the uncompressed size: the header's length cannot change later).
    var localZip64: Bool
    /// Where the local header starts (set when it is written).
    var offset: UInt64 = 0

    static let utf8Flag: UInt16 = 1 << 11
    static let encryptedFlag: UInt16 = 1
    static let aesMethod: UInt16 = 99
    static let aesExtraID: UInt16 = 0x9901
    static let zip64ExtraID: UInt16 = 0x0001
    /// Unix, "made by" version 6.3.
    static let madeBy: UInt16 = 0x033F
    /// A regular file, rw-r--r--.
    static let externalAttributes: UInt32 = 0o100644 << 16

    /// The AE version WinZip recommends for an entry of `size` bytes: AE-2 (no CRC, which would
    /// leak something about a tiny plaintext) below 20 bytes, AE-1 (CRC and MAC) otherwise.
    static func aesVendorVersion(size: UInt64) -> UInt16 { size < 20 ? 2 : 1 }

    /// Whether an entry of `size` bytes needs zip64 sizes in its local header: its stored data
    /// is at most `size + 28` bytes (stored AES), so both sizes fit in 32 bits below this.
    static func needsLocalZip64(size: UInt64) -> Bool { size >= 0xFFFF_FFFF - 64 }

    var flags: UInt16 { Self.utf8Flag | (encrypted ? Self.encryptedFlag : 0) }
    var storedMethod: UInt16 { encrypted ? Self.aesMethod : compression }
    var storedCRC: UInt32 { encrypted && aesVendorVersion == 2 ? 0 : crc32 }

    private var versionNeeded: UInt16 {
        let base: UInt16 = encrypted ? 51 : (compression == 8 ? 20 : 10)
        return max(base, localZip64 || centralZip64Values.count > 0 ? 45 : 0)
    }

    private var aesExtra: [UInt8] {
        guard encrypted else { return [] }
        var out = ZipBytes()
        out.u16(Self.aesExtraID)
        out.u16(7)
        out.u16(aesVendorVersion)
        out.bytes([0x41, 0x45])  // "AE"
        out.u8(WinZipAESKeyStrength.aes256.rawValue)
        out.u16(compression)
        return out.data
    }

    /// Length of the local header (fixed once `localZip64` is decided).
    var localHeaderLength: Int { 30 + name.count + (localZip64 ? 20 : 0) + (encrypted ? 11 : 0) }

    /// The local file header: signature, fields, name, extra fields.
    func localHeader() -> [UInt8] {
        var out = ZipBytes()
        out.u32(0x0403_4B50)
        out.u16(versionNeeded)
        out.u16(flags)
        out.u16(storedMethod)
        out.u16(dosTime)
        out.u16(dosDate)
        out.u32(storedCRC)
        out.u32(localZip64 ? 0xFFFF_FFFF : UInt32(compressedSize))
        out.u32(localZip64 ? 0xFFFF_FFFF : UInt32(size))
        out.u16(UInt16(name.count))
        out.u16(UInt16((localZip64 ? 20 : 0) + (encrypted ? 11 : 0)))
        out.bytes(name)
        if localZip64 {
            out.u16(Self.zip64ExtraID)
            out.u16(16)
            out.u64(size)
            out.u64(compressedSize)
        }
        out.bytes(aesExtra)
        precondition(out.data.count == localHeaderLength)
        return out.data
    }

    /// The values the central record moves into its zip64 field, in the order the format fixes.
    private var centralZip64Values: [UInt64] {
        [size, compressedSize, offset].filter { $0 >= 0xFFFF_FFFF }
    }

    /// Appends the central directory record to `out`.
    func appendCentralRecord(to out: inout ZipBytes) {
        let zip64 = centralZip64Values
        let extraLength = (zip64.isEmpty ? 0 : 4 + 8 * zip64.count) + (encrypted ? 11 : 0)
        out.u32(0x0201_4B50)
        out.u16(Self.madeBy)
        out.u16(versionNeeded)
        out.u16(flags)
        out.u16(storedMethod)
        out.u16(dosTime)
        out.u16(dosDate)
        out.u32(storedCRC)
        out.u32(UInt32(min(compressedSize, 0xFFFF_FFFF)))
        out.u32(UInt32(min(size, 0xFFFF_FFFF)))
        out.u16(UInt16(name.count))
        out.u16(UInt16(extraLength))
        out.u16(0)  // comment
        out.u16(0)  // disk
        out.u16(0)  // internal attributes
        out.u32(Self.externalAttributes)
        out.u32(UInt32(min(offset, 0xFFFF_FFFF)))
        out.bytes(name)
        if !zip64.isEmpty {
            out.u16(Self.zip64ExtraID)
            out.u16(UInt16(8 * zip64.count))
            for v in zip64 { out.u64(v) }
        }
        out.bytes(aesExtra)
    }

    /// The end of the central directory: zip64's end record and locator when a count or an
    /// offset does not fit the classic record, then the classic record (no comment).
    static func endOfDirectory(count: Int, directoryOffset: UInt64, directorySize: UInt64) -> [UInt8] {
        var out = ZipBytes()
        let zip64 = count >= 0xFFFF || directoryOffset >= 0xFFFF_FFFF || directorySize >= 0xFFFF_FFFF
        if zip64 {
            let recordOffset = directoryOffset + directorySize
            out.u32(0x0606_4B50)
            out.u64(44)  // size of the rest of the record
            out.u16(45)  // made by
            out.u16(45)  // needed
            out.u32(0)  // this disk
            out.u32(0)  // disk with the directory
            out.u64(UInt64(count))
            out.u64(UInt64(count))
            out.u64(directorySize)
            out.u64(directoryOffset)
            out.u32(0x0706_4B50)
            out.u32(0)
            out.u64(recordOffset)
            out.u32(1)
        }
        out.u32(0x0605_4B50)
        out.u16(0)
        out.u16(0)
        out.u16(UInt16(min(count, 0xFFFF)))
        out.u16(UInt16(min(count, 0xFFFF)))
        out.u32(UInt32(min(directorySize, 0xFFFF_FFFF)))
        out.u32(UInt32(min(directoryOffset, 0xFFFF_FFFF)))
        out.u16(0)
        return out.data
    }

    /// MS-DOS time and date (local time, 2-second resolution, clamped to 1980…2107) for a Unix time.
    static func dosDateTime(_ seconds: Int) -> (time: UInt16, date: UInt16) {
        var t = time_t(seconds)
        var parts = tm()
        guard localtime_r(&t, &parts) != nil else { return (0, 0x21) }
        let year = Int(parts.tm_year) + 1900
        if year < 1980 { return (0, 0x21) }  // 1980-01-01 00:00
        if year > 2107 { return (0xBF7D, 0xFF9F) }  // 2107-12-31 23:59:58
        let time = UInt16(parts.tm_hour) << 11 | UInt16(parts.tm_min) << 5 | UInt16(parts.tm_sec / 2)
        let date = UInt16(year - 1980) << 9 | UInt16(parts.tm_mon + 1) << 5 | UInt16(parts.tm_mday)
        return (time, date)
    }
}

/// Little-endian byte building for zip records.
struct ZipBytes {
    var data: [UInt8] = []

    mutating func u8(_ v: UInt8) { data.append(v) }
    mutating func u16(_ v: UInt16) {
        data.append(UInt8(truncatingIfNeeded: v))
        data.append(UInt8(truncatingIfNeeded: v >> 8))
    }
    mutating func u32(_ v: UInt32) { for i in 0..<4 { data.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
    mutating func u64(_ v: UInt64) { for i in 0..<8 { data.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
    mutating func bytes(_ b: [UInt8]) { data.append(contentsOf: b) }
}
