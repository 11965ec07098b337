/// How `assetpack pack` encrypts a zip pack's entries.
public enum PackEncryption: String, Sendable, CaseIterable {
    /// WinZip AES-256 (zip) — the default.
    case aes256
    /// Traditional PKWARE encryption: broken, for compatibility with old readers only.
    case zipCrypto = "zipcrypto"
    /// No encryption.
    case none
}

/// Progress of a pack operation, reported once per entry.
public struct PackProgress: Sendable {
    /// Entries finished so far.
    public var done: Int
    /// Total entries.
    public var total: Int
    /// The entry just finished (or a phase name such as `writing`).
    public var path: String

    /// Creates a progress report.
    public init(done: Int, total: Int, path: String) {
        self.done = done
        self.total = total
        self.path = path
    }
}

/// Settings for writing a pack. Settings that only one format has are grouped under it:
/// `zip` and `container`; the other format ignores them.
public struct PackOptions: Sendable {
    /// The pack format to write.
    public var format: PackFormat = .zip
    /// Which entries to compress.
    public var compression: CompressionPolicy = .auto
    /// The password or key. Required unless the zip's encryption is `.none`.
    public var credential: PackCredential?
    /// Whether dot-files are packed.
    public var includeHidden = false
    /// Called after each entry is written (from the writing thread).
    public var progress: (@Sendable (PackProgress) -> Void)?
    /// Zip-only settings.
    public var zip = ZipPackOptions()
    /// Container-only settings.
    public var container = ContainerPackOptions()

    /// Default options: zip, AES-256, automatic compression.
    public init() {}
}

/// Settings only a zip pack has.
public struct ZipPackOptions: Sendable, Hashable {
    /// How entries are encrypted (the container is always AES-256-GCM).
    public var encryption: PackEncryption = .aes256

    /// The defaults: WinZip AES-256.
    public init() {}
}

/// Settings only a container pack has.
public struct ContainerPackOptions: Sendable, Hashable {
    /// Chunk size in bytes: a power of two from 4 KiB to 16 MiB.
    public var chunkSize = 64 << 10
    /// How a password becomes the key (a raw-key credential uses no KDF).
    public var kdf: ContainerKDF = .default

    /// The defaults: 64 KiB chunks, scrypt N = 2^15, r = 8, p = 1.
    public init() {}
}

/// The key derivation a password-protected container pack uses (raw-key packs use none).
public enum ContainerKDF: Sendable, Hashable {
    /// scrypt with cost `N = 2^logN`, block size `r` and parallelism `p`.
    case scrypt(logN: UInt8, r: UInt32, p: UInt32)
    /// PBKDF2-HMAC-SHA256 with the given iteration count.
    case pbkdf2SHA256(iterations: UInt32)

    /// The default: scrypt N = 2^15, r = 8, p = 1 (32 MiB, ~70 ms here).
    public static let `default` = ContainerKDF.scrypt(logN: 15, r: 8, p: 1)
}

/// Writes a pack from a list of source files. One conformance per format.
package protocol PackWriter {
    /// Writes `files` as a pack at `output`, atomically (temporary file, then rename).
    /// - Throws: `AssetPackError`.
    func write(_ files: [SourceFile], to output: String, options: PackOptions) throws
}
