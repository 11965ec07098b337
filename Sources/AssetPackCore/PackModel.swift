/// The on-disk format of a pack, recognised from its bytes.
///
/// A name, not a closed list: each format module declares its own (the two built-in ones are
/// here so that `PackOptions` can default to one), and the format registry
/// (`AssetPacks.formats`) says which this build reads and writes (docs/ARCHITECTURE.md, "The seam").
public struct PackFormat: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The format's name, as `assetpack --format` takes it.
    public let rawValue: String
    /// The format named `rawValue` (whether this build has it is the registry's to say).
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A zip archive (optionally WinZip AES or ZipCrypto encrypted).
    public static let zip = PackFormat(rawValue: "zip")
    /// AssetPack's chunked AES-256-GCM container.
    public static let container = PackFormat(rawValue: "container")
    public var description: String { rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// How an entry's bytes are compressed inside the pack.
public enum EntryCompression: String, Sendable, Codable {
    /// Stored as is.
    case store
    /// Raw deflate (RFC 1951).
    case deflate
    /// zstd (RFC 8878), one frame per container chunk.
    case zstd
    /// A method this build does not decode; reading such an entry fails with `.unsupportedFormat`.
    case other
}

/// How an entry's bytes are encrypted inside the pack.
public enum EntryEncryption: String, Sendable, Codable {
    /// Not encrypted.
    case none
    /// Traditional PKWARE encryption. Broken; for compatibility only.
    case zipCrypto = "zipcrypto"
    /// WinZip AES with a 128-bit key.
    case aes128
    /// WinZip AES with a 192-bit key.
    case aes192
    /// WinZip AES with a 256-bit key.
    case aes256
    /// AES-256-GCM chunks of the container format.
    case aes256GCM = "aes256-gcm"
    /// A method this build does not decode.
    case other
}

/// Sizes added up, or `nil` when the sum passes 2^64 − 1: what a listing or an extraction totals
/// of an index's declared sizes, which a hostile zip or container may set as large as it likes
/// (every read refuses an entry over `ReadLimits.maxEntrySize`, but a listing shows them all).
package func checkedTotal<S: Sequence>(_ sizes: S) -> UInt64? where S.Element == UInt64 {
    var total: UInt64 = 0
    for size in sizes {
        let (sum, overflow) = total.addingReportingOverflow(size)
        if overflow { return nil }
        total = sum
    }
    return total
}

/// What a pack says about one entry, without reading its data.
public struct EntryInfo: Sendable, Hashable, Codable {
    /// The entry's path: NFC, `/`-separated, relative.
    public var path: String
    /// Uncompressed size in bytes.
    public var size: UInt64
    /// Bytes the entry occupies in the pack (compressed + encryption overhead).
    public var storedSize: UInt64
    /// Compression method.
    public var compression: EntryCompression
    /// Encryption method.
    public var encryption: EntryEncryption
    /// CRC-32 of the uncompressed bytes, when the pack stores one.
    public var crc32: UInt32?
    /// The pack that serves the entry, when it was listed through a ``PackSet`` (its name in
    /// the set); `nil` for a single pack's reader (and then absent from JSON).
    public var pack: String?

    /// Creates an entry description.
    public init(
        path: String, size: UInt64, storedSize: UInt64, compression: EntryCompression,
        encryption: EntryEncryption, crc32: UInt32?
    ) {
        self.path = path
        self.size = size
        self.storedSize = storedSize
        self.compression = compression
        self.encryption = encryption
        self.crc32 = crc32
    }
}

/// The secret that opens a pack.
public enum PackCredential: Sendable, Equatable {
    /// A password; packs run a key derivation function over it.
    case password(String)
    /// A raw 32-byte key (container only): no key derivation at all.
    case key([UInt8])
}
