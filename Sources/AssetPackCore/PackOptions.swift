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

/// Settings for writing a pack.
public struct PackOptions: Sendable {
    /// The pack format to write.
    public var format: PackFormat = .zip
    /// Zip only: how entries are encrypted. The container always uses AES-256-GCM.
    public var encryption: PackEncryption = .aes256
    /// Which entries to compress.
    public var compression: CompressionPolicy = .auto
    /// The password or key. Required unless `encryption` is `.none`.
    public var credential: PackCredential?
    /// Whether dot-files are packed.
    public var includeHidden = false
    /// Container only: chunk size in bytes (a power of two, 4 KiB to 16 MiB).
    public var chunkSize = 64 << 10
    /// Called after each entry is written (from the writing thread).
    public var progress: (@Sendable (PackProgress) -> Void)?

    /// Default options: zip, AES-256, automatic compression.
    public init() {}
}

/// Writes a pack from a list of source files. One conformance per format.
package protocol PackWriter {
    /// Writes `files` as a pack at `output`, atomically (temporary file, then rename).
    /// - Throws: `AssetPackError`.
    func write(_ files: [SourceFile], to output: String, options: PackOptions) throws
}
