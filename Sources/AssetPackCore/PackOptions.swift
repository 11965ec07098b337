import Foundation

/// How `assetpack pack` encrypts a zip pack's entries.
public enum PackEncryption: String, Sendable, CaseIterable {
    /// WinZip AES-256 (zip) — the default.
    case aes256
    /// Traditional PKWARE encryption: broken, for compatibility with old readers only.
    case zipCrypto = "zipcrypto"
    /// No encryption.
    case none
}

/// Progress of a pack operation: reported after each entry, and within large entries.
public struct PackProgress: Sendable {
    /// Entries finished so far (reused or packed).
    public var done: Int
    /// Total entries.
    public var total: Int
    /// The entry being written or just finished.
    public var path: String
    /// Source bytes finished so far (reused entries count in full).
    public var bytesDone: UInt64
    /// Total source bytes.
    public var bytesTotal: UInt64

    /// Creates a progress report.
    public init(done: Int, total: Int, path: String, bytesDone: UInt64 = 0, bytesTotal: UInt64 = 0) {
        self.done = done
        self.total = total
        self.path = path
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

/// Settings for writing a pack. Settings that only one format has are grouped under it:
/// `zip` and `container`; the other format ignores them.
public struct PackOptions: Sendable {
    /// The pack format to write.
    public var format: PackFormat = .zip
    /// Which entries to compress.
    public var compression: CompressionPolicy = .auto
    /// How hard to compress the entries that are compressed: `.default` for the reader (smaller
    /// packs, decoded at least as fast), `.fast` for packing speed while iterating
    /// (docs/PERFORMANCE.md, "Compression levels", has the measurements behind both).
    public var level: CompressionLevel = .default
    /// The password or key. Required unless the zip's encryption is `.none`.
    public var credential: PackCredential?
    /// Whether dot-files are packed.
    public var includeHidden = false
    /// Called after each entry is written and within large entries (from a writing thread,
    /// never concurrently).
    public var progress: (@Sendable (PackProgress) -> Void)?
    /// Always compress and encrypt every entry, even when `output` already holds a pack that
    /// opens with the same credential. By default unchanged entries of such a pack are reused,
    /// and a pack at `output` that this credential does not open is refused (`.wrongPassword`)
    /// rather than replaced: a mistyped or rotated password would otherwise ship every device a
    /// pack its app cannot open. So is an encrypted zip at `output` that this pack would not
    /// encrypt (`.invalidArgument`). `fresh` replaces either.
    public var fresh = false
    /// Container: rewrite the pack at `output` whole (keeping its keys, so that installed copies
    /// still reuse its chunks), dropping the zeros appends leave: a re-pack otherwise appends the
    /// new chunks in place and then zeroes what it removed or replaced and the earlier index, so
    /// nothing it removed stays readable (docs/INCREMENTAL.md), and rewrites on its own once
    /// those bytes would be half of the file.
    public var compact = false
    /// Zip-only settings.
    public var zip = ZipPackOptions()
    /// Container-only settings.
    public var container = ContainerPackOptions()
    /// Signs the pack with this publisher key, so that readers given its ``PublisherKey``
    /// accept only what the publisher packed (docs/SECURITY.md). `nil`: unsigned.
    public var signingKey: PublisherSigningKey?
    /// The name the signature binds (1 to 255 bytes of UTF-8); `nil`: the output file's name
    /// without its extension. Ignored without ``signingKey``.
    public var releaseName: String?
    /// The release number the signature binds: raise it with every release, so that installers
    /// refuse an older one (docs/SECURITY.md, "Rollback and freeze"). 0: unversioned. Ignored
    /// without ``signingKey``.
    public var releaseVersion: UInt64 = 0
    /// When the signature stops being trusted (whole seconds; readers with trusted keys and
    /// installers refuse the pack from then on); `nil`: never. Ignored without ``signingKey``.
    public var releaseExpires: Date?
    /// Sign a release older than the one already at `output` (signed by the same key, under the
    /// same name). Without it such a pack is refused (`.invalidArgument`, nothing written):
    /// installers refuse an older release as a rollback, so a re-pack that forgot to raise
    /// ``releaseVersion`` (or left it at 0) would ship an update no device takes.
    public var allowRollback = false
    /// The paths this pack deletes from the packs below it in a ``PackSet``: written as the
    /// pack's deletion record (docs/FORMAT.md, "Deletion record"). Each must be a normalised
    /// NFC path outside `.assetpack/`, named once, and not one of the files packed. Empty: none.
    public var deletions: [String] = []
    /// Read the pack at the output before it is replaced, for the summary: the entries the new
    /// pack removed (``AssetPacks/PackSummary/removed``) and warnings about replacing a signed
    /// pack (``AssetPacks/PackSummary/warnings``). Off: no second look at it (a container re-pack
    /// that did not reuse it would otherwise derive its key once more), `removed` only when the
    /// writer counted it itself, no warnings.
    public var describesReplacedPack = true
    /// Where a re-pack remembers each source file's status (device, inode, size, modification and
    /// change times) and SHA-256, one file per output, so that the next re-pack of the same
    /// output reads only the files whose status changed (docs/INCREMENTAL.md, "Skipping unchanged
    /// sources", argues why that is safe, racy files included). Default: the user's cache folder
    /// (`$XDG_CACHE_HOME/assetpack/sources`, `~/.cache/…`, `~/Library/Caches/…`); `nil`: every
    /// source file is read and hashed, and every chunk a re-pack keeps has its tag checked, those
    /// left in place too (`assetpack pack --rehash`). Container packs use it.
    public var sourceStatusCache: URL? = SourceStatusCache.defaultFolder
    /// How much older than the pack's start a source's times must be for the cache to remember
    /// it (nanoseconds; ``SourceStatusCache/defaultRacyMargin``): tests lower it.
    package var sourceStatusRacyMargin = SourceStatusCache.defaultRacyMargin
    /// The reader limits the packer holds a pack to (``ReadLimits/checkEntryCount(_:)``): the
    /// default reader's, so no pack is written that it refuses; tests lower them.
    package var limits: ReadLimits = .default
    /// Write a version-1 signature block (no name, version, expiry or size), as builds before
    /// block version 2 did: for tests and test vectors only.
    package var legacySignature = false

    /// The release to sign for a pack written to `output` (its size is filled in by the writer).
    /// - Throws: `.invalidArgument` for a name that is not 1 to 255 bytes of printable UTF-8.
    package func release(for output: String) throws -> PackRelease {
        if legacySignature { return .legacy }
        let name = releaseName ?? PackRelease.defaultName(for: output)
        try PackRelease.checkName(name)
        return PackRelease(name: name, version: releaseVersion, expires: releaseExpires)
    }

    /// Default options: zip, AES-256, automatic compression.
    public init() {}
}

/// How hard a writer compresses the entries ``CompressionPolicy`` has it compress.
///
/// A pack is written once and read on every device, so the default spends packing time on size;
/// `.fast` is for iteration. Neither changes which entries are compressed (media are still stored
/// by name, the rest sampled), nor how a pack is read.
public enum CompressionLevel: String, Sendable, CaseIterable {
    /// Smaller packs at a packing time a build can afford: the default.
    case `default`
    /// The fastest packing, for iteration: larger packs.
    case fast
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
    /// The average chunk size in bytes: a power of two from 4 KiB to 4 MiB. Chunks are cut at
    /// content-defined boundaries, from a quarter of it to four times it; compressed entries
    /// double the minimum and the average (docs/FORMAT.md, "Version 4").
    public var chunkSize = 64 << 10
    /// The codec of compressed chunks: zstd (the default) or deflate (the default in the portable
    /// configuration, which has no libzstd).
    public var codec: ContainerCodec = Zstd.isAvailable ? .zstd : .deflate
    /// How a password becomes the key (a raw-key credential uses no KDF). `nil`: the KDF of the
    /// pack at the output when a re-pack reuses it (so a re-pack keeps the cost it was made with),
    /// for a patch (`AssetPacks.packPatch`) the KDF of the pack it patches, else
    /// ``ContainerKDF/default``. A KDF given here that differs from the old pack's means
    /// nothing is reused: every key changes with it.
    public var kdf: ContainerKDF?

    /// The defaults: 64 KiB chunks; the KDF of the pack at the output, else scrypt N = 2^15, r = 8, p = 1.
    public init() {}
}

/// How a container pack compresses the chunks it compresses.
public enum ContainerCodec: String, Sendable, Hashable, CaseIterable {
    /// zstd, one frame per chunk: smaller and faster to decode than deflate (docs/PERFORMANCE.md).
    case zstd
    /// Raw deflate, one stream per chunk.
    case deflate
}

/// The key derivation a password-protected container pack uses (raw-key packs use none).
public enum ContainerKDF: Sendable, Hashable {
    /// scrypt with cost `N = 2^logN`, block size `r` and parallelism `p`.
    case scrypt(logN: UInt8, r: UInt32, p: UInt32)
    /// PBKDF2-HMAC-SHA256 with the given iteration count.
    case pbkdf2SHA256(iterations: UInt32)

    /// The default: scrypt N = 2^15, r = 8, p = 1 (32 MiB; 70–170 ms on the 2-core reference machine).
    public static let `default` = ContainerKDF.scrypt(cost: 15)

    /// The scrypt costs (log2 N) `assetpack pack --scrypt-cost` and assetpack.json's
    /// `"scryptCost"` take: 2^18 needs 256 MiB, within ``ReadLimits``' 1 GiB.
    public static let scryptCosts: ClosedRange<Int> = 10...18

    /// scrypt N = 2^`cost`, r = 8, p = 1: the default's shape at another cost (one of
    /// ``scryptCosts``).
    public static func scrypt(cost: Int) -> ContainerKDF {
        precondition(scryptCosts.contains(cost), "scrypt cost \(cost) outside \(scryptCosts)")
        return .scrypt(logN: UInt8(cost), r: 8, p: 1)
    }
}

/// What a writer did: how many entries it copied from the previous pack at the output
/// and how many it compressed and encrypted.
package struct PackWriteReport: Sendable, Equatable {
    /// Entries copied from the previous pack as they were.
    package var reused = 0
    /// Entries compressed and encrypted.
    package var packed = 0
    /// Source bytes of the reused entries.
    package var reusedBytes: UInt64 = 0
    /// Container: chunks written, and how many of them were copied from the previous pack.
    package var chunks = 0
    package var reusedChunks = 0
    /// Container: chunks of files read again whose boundaries the previous pack's chunks gave,
    /// compared with those chunks instead of cut (`ChunkLayoutGuess`).
    package var uncutChunks = 0
    /// Bytes written to the new pack (sealed chunks, copied or new, index, header, signature).
    package var bytesWritten: UInt64 = 0
    /// Container: the size of the pack's zstd dictionary (0 when it has none).
    package var dictionaryBytes = 0
    /// Entries of the pack that was at the output that this one no longer has, when the writer
    /// opened that pack to reuse it (`nil`: it did not).
    package var removed: Int?
    /// Container: the re-pack appended a generation to the pack in place (version 6) rather
    /// than writing a new file.
    package var appended = false
    /// Container: bytes of the pack's data that its index does not name (where earlier
    /// generations' chunks, indexes and signatures were: zeros once an append zeroed them; 0 for
    /// a pack written whole).
    package var earlierBytes: UInt64 = 0
    /// Container: dead bytes this re-pack overwrote with zeros after its commit (``DeadBytes``).
    package var zeroedBytes: UInt64 = 0
    /// Container: bytes of earlier versions the previous pack held that a rewrite dropped, and
    /// whether the rewrite was the writer's own choice (they were half the file).
    package var droppedBytes: UInt64 = 0
    package var compacted = false
    /// Source files not read: their status was the one the previous pack's entry came from
    /// (``PackOptions/sourceStatusCache``).
    package var unreadSources = 0

    package init(reused: Int = 0, packed: Int = 0, reusedBytes: UInt64 = 0) {
        self.reused = reused
        self.packed = packed
        self.reusedBytes = reusedBytes
    }
}

/// Writes a pack from a list of source files. One conformance per format.
package protocol PackWriter {
    /// Writes `files` as a pack at `output`, atomically (temporary file, then rename).
    /// Unless `options.fresh`, reuses unchanged entries of a pack already at `output` that
    /// opens with `options.credential`, and refuses one that does not
    /// (``AssetPackError/outputOpensWithAnotherCredential(_:because:)``).
    /// - Throws: `AssetPackError`.
    @discardableResult
    func write(_ files: [SourceFile], to output: String, options: PackOptions) throws -> PackWriteReport
}

extension AssetPackError {
    /// A re-pack's `output` holds a pack of this format that the credential does not open (or
    /// whose header is damaged). Both writers throw it instead of replacing that pack, unless
    /// `PackOptions.fresh`.
    package static func outputOpensWithAnotherCredential(_ output: String, because reason: AssetPackError)
        -> AssetPackError
    {
        AssetPackError(
            .wrongPassword,
            "\(output) holds a pack that this password or key does not open (\(reason.message)), so it was left as it is. If it was packed with another password on purpose, pack with --fresh to replace it under this one"
        )
    }
}

/// The pack settings that only some formats take: each format's driver says why it refuses the
/// others (`PackFormatDriver.refusal(of:)`), and a tool names the formats that take one.
package enum PackSetting: String, Sendable, CaseIterable {
    /// The zip's entry encryption (`--encryption`).
    case encryption
    /// The codec of compressed chunks (`--codec`).
    case codec
    /// Rewriting an appended pack whole (`--compact`).
    case compact
    /// The cost of deriving a key from a password (`--scrypt-cost`).
    case passwordKDF
}
