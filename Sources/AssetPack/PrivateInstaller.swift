import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// Copies a bundled pack into a private directory, atomically and idempotently.
///
/// - The directory is created (or tightened) to mode 0700; the installed pack is 0600.
/// - The pack is copied to a temporary file in the same directory, fsynced, read back and
///   checked against the source's SHA-256, renamed into place, and the directory is fsynced.
///   A crash at any point leaves the previous pack or the new one under the final name,
///   never a torn file. Stale temporaries are removed by the next install.
/// - Installing the same pack again copies nothing. An unchanged launch reads about 128 KiB:
///   the source's size, mtime and `fingerprint(of:)` (what the pack itself carries that
///   differs between any two packs) must all equal what the install recorded. When any of
///   them differs, the source's SHA-256 decides; equal size and mtime alone never do, since
///   reproducible builds pin mtimes and same-shaped trees give same-sized packs.
/// - Concurrent installs (threads or processes) serialise on a lock file in the directory.
/// - With trusted keys, a pack whose signature expired is refused, and so is one older than the
///   version of the same signed name and publisher installed before (a rollback), unless
///   ``allowRollback``; the versions installed are remembered in `.assetpack.releases`, which
///   outlives the packs (<doc:Security>).
public struct PrivateInstaller: Sendable {
    /// The private directory packs are installed into.
    public let directory: URL
    /// The publisher keys an installed pack must be signed by (<doc:Security>); empty: any pack.
    public let trustedKeys: [PublisherKey]
    /// Install a signed pack older than (or other than) the version of its name already
    /// installed. Off by default: an older version is refused as a rollback. An expired pack is
    /// refused either way.
    public var allowRollback = false
    /// Install a release manifest of another name than the release installed in the directory,
    /// replacing that release line. Off by default: a directory holds one release line, and a
    /// release of another name (a demo, an old line renamed) never meets the installed line's
    /// version record, so it is refused. The version record of the new name still applies.
    public var replacesReleaseLine = false
    /// The time signature expiry is checked against (tests set it; never slept on).
    package var clock: @Sendable () -> Date = { Date() }
    /// Whether a signed pack's version is recorded in `.assetpack.releases`. A release install
    /// turns it off for its packs: the release's own version is recorded, and each pack is pinned
    /// by the manifest's SHA-256, so a pack refused by that check never leaves a record behind.
    package var recordsPackReleases = true

    /// The outcome of an install.
    public struct Installation: Sendable, Equatable {
        /// Where the pack is installed.
        public var path: URL
        /// Whether bytes were copied (`false` when the installed pack was already current).
        public var copied: Bool
        /// SHA-256 of the installed pack, lowercase hex.
        public var sha256: String
        /// The trusted key whose signature the installer checked, when it was given trusted keys.
        public var publisher: PublisherKey?

        package init(path: URL, copied: Bool, sha256: String, publisher: PublisherKey?) {
            self.path = path
            self.copied = copied
            self.sha256 = sha256
            self.publisher = publisher
        }
    }

    /// Creates an installer for an explicit directory.
    /// - Parameters:
    ///   - directory: The private directory.
    ///   - trustedKeys: When not empty, a pack is installed only if one of these keys signed it
    ///     and every byte is the signed one (checked on the copy, before it replaces anything);
    ///     an install verified under a key no longer trusted is checked again.
    ///   - allowRollback: As ``allowRollback``.
    public init(directory: URL, trustedKeys: [PublisherKey] = [], allowRollback: Bool = false) {
        self.directory = directory
        self.trustedKeys = trustedKeys
        self.allowRollback = allowRollback
    }

    /// Creates an installer for the app's default private directory (``defaultDirectory(appID:environment:)``):
    /// Application Support on Apple platforms, the app's files directory on Android, XDG elsewhere.
    /// - Parameters:
    ///   - appID: The app's id.
    ///   - trustedKeys: As for ``init(directory:trustedKeys:allowRollback:)``.
    ///   - allowRollback: As ``allowRollback``.
    /// - Throws: `.invalidArgument` for an app id that is not a single safe path component.
    public init(appID: String, trustedKeys: [PublisherKey] = [], allowRollback: Bool = false) throws {
        self.directory = try Self.defaultDirectory(appID: appID)
        self.trustedKeys = trustedKeys
        self.allowRollback = allowRollback
    }

    /// Where an app keeps private files, by platform (docs/ARCHITECTURE.md, "Configurations").
    package enum Platform: Sendable {
        /// macOS, iOS, tvOS, watchOS, visionOS: the user domain's Application Support folder
        /// (inside the app's sandbox container where there is one).
        case apple(applicationSupport: URL)
        /// Android: the app's internal files directory, `/data/data/<appID>/files` (the primary
        /// user's; an app serving other users passes `Context.getFilesDir()` to `init(directory:)`).
        case android
        /// Linux and the rest: `$XDG_DATA_HOME`, else `~/.local/share`.
        case xdg

        /// The platform this build runs on.
        package static var current: Platform {
            #if canImport(Darwin)
            let support =
                FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
            return .apple(applicationSupport: support)
            #elseif os(Android)
            return .android
            #else
            return .xdg
            #endif
        }
    }

    /// The default private directory for an app id: `<Application Support>/<appID>` on Apple
    /// platforms, `/data/data/<appID>/files` on Android (the app id is the package name there),
    /// `$XDG_DATA_HOME/<appID>`, else `~/.local/share/<appID>`, on Linux.
    ///
    /// An iOS app's bundle is already private to the app and read-only: there, reading the
    /// bundled pack in place (`AssetPacks.open(path:)` on its bundle path) costs no copy and no
    /// second copy's storage; installing pays when packs are replaced or patched after launch.
    /// - Throws: `.invalidArgument` if `appID` is empty, contains `/`, or is `.`/`..`.
    public static func defaultDirectory(
        appID: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> URL {
        try defaultDirectory(appID: appID, environment: environment, platform: .current)
    }

    /// ``defaultDirectory(appID:environment:)`` for a given platform (each branch is tested on every host).
    package static func defaultDirectory(appID: String, environment: [String: String], platform: Platform) throws
        -> URL
    {
        guard !appID.isEmpty, !appID.contains("/"), appID != ".", appID != "..", !appID.contains("\0") else {
            throw AssetPackError(.invalidArgument, "app id '\(appID)' must be a single path component")
        }
        switch platform {
        case .apple(let support):
            return support.appendingPathComponent(appID, isDirectory: true)
        case .android:
            return URL(fileURLWithPath: "/data/data", isDirectory: true)
                .appendingPathComponent(appID, isDirectory: true).appendingPathComponent("files", isDirectory: true)
        case .xdg:
            if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg).appendingPathComponent(appID, isDirectory: true)
            }
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return URL(fileURLWithPath: home).appendingPathComponent(".local/share/\(appID)", isDirectory: true)
        }
    }

    /// Installs `pack` into the directory under `name` (default: the pack's file name).
    /// - Parameters:
    ///   - pack: The bundled pack to install.
    ///   - name: The installed file's name.
    /// - Returns: Where it is installed and whether anything was copied.
    /// - Throws: `.io` for file-system failures (the previous pack stays in place),
    ///   `.integrityFailure` if the copy does not read back identical, or (without trusted keys)
    ///   a signed pack is not what its signature describes, checked against its own key; with
    ///   trusted keys, `.untrusted` for a pack not signed by one of them, altered, expired, older
    ///   than the version installed before (a rollback), or of another signed name than the pack
    ///   it would replace.
    @discardableResult
    public func install(_ pack: URL, as name: String? = nil) throws -> Installation {
        try transaction(installing: name ?? pack.lastPathComponent) { try install(pack, into: $0) }
    }

    /// ``install(_:as:)``, running `check` on the pack before it is copied (only when it is): an
    /// app's first launch refuses a pack its credential does not open before copying a byte.
    package func install(_ pack: URL, as name: String?, beforeCopying check: (URL) throws -> Void) throws
        -> Installation
    {
        try transaction(installing: name ?? pack.lastPathComponent) { slot in
            try withoutActuallyEscaping(check) { try install(pack, into: slot, check: $0) }
        }
    }

    /// Installs `pack` into `slot` for a release: it must be the pack `expected` names (its size,
    /// then the SHA-256 of the bytes copied, checked before anything is recorded or renamed).
    /// - Throws: As ``install(_:as:)``; `.untrusted` for a pack that is not the one named.
    package func install(_ pack: URL, into slot: InstallTransaction.Slot, expected: ReleaseManifest.Pack) throws
        -> Installation
    {
        try install(pack, into: slot, expected: Optional(expected))
    }

    private func install(
        _ pack: URL, into slot: InstallTransaction.Slot, expected: ReleaseManifest.Pack? = nil,
        check: ((URL) throws -> Void)? = nil
    ) throws -> Installation {
        let source = try Self.regularFile(pack.path)
        if let expected, source.size != expected.size {
            throw expected.mismatch(pack.path, size: source.size, sha256: nil)
        }
        let fingerprint = try Self.fingerprint(of: pack.path)
        let record = { (digest: String, publisher: PublisherKey?) in
            InstallRecord(
                sha256: digest, size: source.size, sourceSize: source.size, sourceModified: source.modificationTime,
                sourceFingerprint: fingerprint, publisher: publisher?.text)
        }
        // The source is the installed pack's when its size, mtime and fingerprint are as recorded;
        // else its SHA-256 decides (and is recorded, with the new mtime).
        var sourceDigest: String?
        if expected == nil,
            let current = try slot.current(source: { recorded in
                if recorded.sourceSize == source.size && recorded.sourceModified == source.modificationTime
                    && recorded.sourceFingerprint == fingerprint
                {
                    return true
                }
                sourceDigest = try Self.sha256(of: pack.path)
                return sourceDigest == recorded.sha256
            })
        {
            if let sourceDigest { try slot.commit(record(sourceDigest, current.recordedPublisher)) }
            return Installation(
                path: slot.pack, copied: false, sha256: current.record.sha256, publisher: current.publisher)
        }

        try check?(pack)
        let (digest, block) = try copyVerified(from: pack.path, to: slot.pack, expected: expected)
        try slot.commit(record(digest, block?.publisher))
        return Installation(path: slot.pack, copied: true, sha256: digest, publisher: block?.publisher)
    }

    // MARK: - Steps

    /// Copies `source` to a temporary file, fsyncs it, reads it back to compare SHA-256s and,
    /// with trusted keys, checks its publisher signature on every byte and its release (expiry,
    /// rollback); then renames it over `destination` and fsyncs the directory. Nothing is
    /// replaced unless every check passed.
    /// - Returns: The SHA-256 (hex) of the installed bytes, and the verified signature block.
    private func copyVerified(from source: String, to destination: URL, expected: ReleaseManifest.Pack?) throws -> (
        String, PackSignature?
    ) {
        let hasher = SHA256Hasher()
        var sourceDigest = ""
        var block: PackSignature?
        try AtomicFile.write(
            destination.path, mode: 0o600, exactMode: true,
            { out in
                try FileChunks.forEach(URL(fileURLWithPath: source), chunkSize: 1 << 20) { chunk in
                    hasher.update(chunk)
                    try FileOutput.writeAll(out, chunk, path: destination.path)
                }
                sourceDigest = hex(hasher.finalize())
            },
            verify: { temporary in
                guard try Self.sha256(of: temporary) == sourceDigest else {
                    throw AssetPackError(
                        .integrityFailure, "the installed copy does not match the source (SHA-256 differs)")
                }
                if let expected, sourceDigest != expected.sha256 {
                    throw expected.mismatch(source, size: expected.size, sha256: sourceDigest)
                }
                if !trustedKeys.isEmpty {
                    let verified = try AssetPacks.trustedSignature(at: temporary, trusting: trustedKeys)
                    // Bytes after the signed end are never read, and must not be installed either.
                    let size = try Self.regularFile(temporary).size
                    if let signed = verified.release.size, signed != size {
                        throw AssetPackError(
                            .integrityFailure,
                            "\(source) is \(size) bytes; its signature says \(signed)"
                                + (signed < size
                                    ? " (\(size - signed) bytes after the signed end: an interrupted re-pack of a container leaves them, and the next re-pack cuts them; otherwise the file is damaged)"
                                    : ""))
                    }
                    try checkRelease(verified, replacing: destination)
                    // Recorded before the rename: a failure after it refuses older versions all the same.
                    try recordRelease(verified, as: destination)
                    block = verified
                } else {
                    // Not a trust decision: a damaged signed pack is refused here instead of
                    // installed and refused at every read.
                    _ = try AssetPacks.intactSignature(FileByteSource(path: temporary), what: source)
                }
            })
        return (sourceDigest, block)
    }

    /// What a pack carries that tells it from any other pack, read without reading it whole:
    /// SHA-256 over its size, its first and last 64 KiB and, for a zip, its central directory.
    ///
    /// The container's first bytes hold its random per-pack salt and key commitment, its last
    /// bytes the tag of the encrypted index (which lists every entry's size and CRC-32). A zip's
    /// central directory lists every entry's name, sizes and CRC-32, and its first bytes the
    /// first entry's random AES salt. Two different packs of equal size therefore differ here.
    /// - Returns: Lowercase hex.
    /// - Throws: `.io` if the file cannot be read.
    static func fingerprint(of path: String) throws -> String {
        let source = try FileByteSource(path: path)
        let hasher = try sizeHeadAndTail(of: source, head: 64 << 10, tail: 64 << 10)
        // What else tells this pack from another of its format (a zip's central directory).
        if let driver = try? AssetPacks.driver(of: source) {
            for span in driver.identifyingSpans(source) {
                var at = span.lowerBound
                while at < span.upperBound {
                    let count = Int(min(span.upperBound - at, 1 << 20))
                    hasher.update(try source.bytes(at: at, count: count))
                    at += UInt64(count)
                }
            }
        }
        return hex(hasher.finalize())
    }

    /// What an install checks of an installed pack it calls current: SHA-256 over its size,
    /// its first 8 KiB (a container's two header slots; a zip's first entry) and its last
    /// 64 KiB (a container's index and signature; a zip's end records). 72 KiB read at each
    /// launch.
    /// - Returns: Lowercase hex.
    /// - Throws: `.io` if the file cannot be read.
    package static func installedHead(of path: String) throws -> String {
        hex(try sizeHeadAndTail(of: FileByteSource(path: path), head: 8 << 10, tail: 64 << 10).finalize())
    }

    /// A hasher fed `source`'s size (8 bytes, little-endian), its first `head` bytes and its last
    /// `tail` bytes (each at most the file).
    private static func sizeHeadAndTail(of source: FileByteSource, head: UInt64, tail: UInt64) throws
        -> SHA256Hasher
    {
        let size = source.size
        let hasher = SHA256Hasher()
        withUnsafeBytes(of: size.littleEndian) { hasher.update($0) }
        hasher.update(try source.bytes(at: 0, count: Int(min(size, head))))
        hasher.update(try source.bytes(at: size - min(size, tail), count: Int(min(size, tail))))
        return hasher
    }

    /// SHA-256 of the pack `source` holds, lowercase hex (what an install records).
    package static func sha256(of source: any ByteSource) throws -> String {
        hex(try SHA256Hasher.digest(of: source, 0..<source.size))
    }

    /// SHA-256 of a file, lowercase hex.
    package static func sha256(of path: String) throws -> String {
        let hasher = SHA256Hasher()
        try FileChunks.forEach(URL(fileURLWithPath: path), chunkSize: 1 << 20) { hasher.update($0) }
        return hex(hasher.finalize())
    }
}

// MARK: - Small file-system helpers

func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
    digest.map { String(format: "%02x", $0) }.joined()
}

extension PrivateInstaller {
    /// `stat` of a file that must be a regular file (following links): the source or the installed pack.
    /// - Throws: `.io` if it cannot be read, `.invalidArgument` if it is not a regular file.
    package static func regularFile(_ path: String) throws -> FileStatus {
        let status: FileStatus
        do { status = try FileSystem.stat(path) } catch { throw error.io("cannot read \(path)") }
        guard status.kind == .regular else { throw AssetPackError(.invalidArgument, "\(path) is not a file") }
        return status
    }
}
