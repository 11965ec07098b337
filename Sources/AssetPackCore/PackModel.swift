/// The on-disk format of a pack, recognised from its magic bytes.
public enum PackFormat: String, Sendable, CaseIterable, Codable {
    /// A zip archive (optionally WinZip AES or ZipCrypto encrypted).
    case zip
    /// AssetPack's chunked AES-256-GCM container.
    case container
}

/// How an entry's bytes are compressed inside the pack.
public enum EntryCompression: String, Sendable, Codable {
    /// Stored as is.
    case store
    /// Raw deflate (RFC 1951).
    case deflate
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
