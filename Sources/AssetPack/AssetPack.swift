@_exported import AssetPackContainer
@_exported import AssetPackCore
@_exported import AssetPackZip
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// The public face of AssetPack: open a pack of any registered format, pack a directory.
public enum AssetPacks {
    /// Every pack format this build reads and writes: the one list that open, pack, install
    /// and update iterate (docs/ARCHITECTURE.md, "The seam"). A pack's bytes are offered to
    /// each in turn: the container first (an exact magic number), then the zip (whose end
    /// record may follow a stub). A new format is a module with a ``PackFormatDriver`` and a
    /// line here.
    package static let formats: [any PackFormatDriver] = [
        ContainerFormatDriver(),
        ZipFormatDriver(),
    ]

    /// What `assetpack pack` writes when neither `--format` nor a pack at the output says.
    package static let defaultFormat = PackFormat.zip

    /// The formats that take `setting`, for a message ("container").
    package static func formats(taking setting: PackSetting) -> String {
        formats.filter { $0.refusal(of: setting) == nil }.map(\.format.rawValue).joined(separator: " and ")
    }

    /// The registered driver of `format`.
    /// - Throws: `.unsupportedFormat` when this build has no such format.
    package static func driver(for format: PackFormat) throws -> any PackFormatDriver {
        guard let driver = formats.first(where: { $0.format == format }) else {
            throw AssetPackError(
                .unsupportedFormat,
                "unknown pack format \(format.rawValue) (this build has \(formats.map(\.format.rawValue).joined(separator: ", ")))"
            )
        }
        return driver
    }

    /// The driver of the format `source` holds, from its bytes.
    /// - Throws: `.unsupportedFormat` when no registered format recognises it; the source's own
    ///   failures (`.io`, `.remote`).
    package static func driver(of source: any ByteSource) throws -> any PackFormatDriver {
        for driver in formats where try driver.recognizes(source) { return driver }
        throw AssetPackError(
            .unsupportedFormat, "\(source.name) is not \(formats.map(\.noun).joined(separator: " or "))")
    }

    /// Recognises a pack's format from its bytes (never from its file extension): each
    /// registered format looks (a container by its magic at offset 0, or by a valid second
    /// header slot when the first is damaged and the file does not start as a zip; a zip by its
    /// first local header or, failing that, by its end-of-central-directory record, so that a
    /// zip with a stub in front, a self-extractor or `zip -A`, is a zip).
    /// - Parameter path: The pack's path.
    /// - Returns: The pack's format.
    /// - Throws: `.io` if the file cannot be read; `.invalidArgument` for a directory;
    ///   `.unsupportedFormat` if no format recognises it.
    public static func sniff(_ path: String) throws -> PackFormat {
        try driver(of: FileByteSource(path: path)).format
    }

    /// Opens a pack, choosing the backend from its bytes (``sniff(_:)``).
    /// - Parameters:
    ///   - path: The pack's path.
    ///   - credential: Password (zip or container) or raw key (container); `nil` for unencrypted zips.
    ///   - limits: Safety limits for damaged or hostile packs.
    ///   - trustedKeys: The publisher keys the app pins (<doc:Security>). When not empty, only a
    ///     pack signed by one of them opens, and every read checks the entry's bytes against the
    ///     signed manifest. Empty: signatures are not checked.
    /// - Returns: A reader safe to share across threads.
    /// - Throws: `AssetPackError`; `.untrusted` when trusted keys were given and the pack is not
    ///   signed by one of them, or was altered.
    public static func open(
        _ path: String, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = []
    ) throws -> any PackReader {
        do {
            let source: FileByteSource
            do { source = try FileByteSource(path: path) } catch let error as AssetPackError {
                throw error.untrustedIfUnreadable(trusting: trustedKeys)
            }
            return try open(source, credential: credential, limits: limits, trustedKeys: trustedKeys)
        } catch let error as AssetPackError {
            throw error.inPack(path)
        }
    }

    /// Opens the pack at a file URL (``PrivateInstaller/Installation/path``, a bundle's resource):
    /// ``open(_:credential:limits:trustedKeys:)-(String,_,_,_)`` with its path.
    public static func open(
        _ url: URL, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = []
    ) throws -> any PackReader {
        try open(url.path, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    /// Opens the pack `source` holds (a local file, a remote mirror), with the format its
    /// bytes say.
    package static func open(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws -> any PackReader {
        let driver: any PackFormatDriver
        do { driver = try self.driver(of: source) } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        return try driver.open(source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    // MARK: - Signatures
    //
    // Three nouns, one per depth of checking (docs/ARCHITECTURE.md, "Signatures"):
    // - `signature`: the block as signed, its signature checked against its own key; the bytes it
    //   describes are not read (what a download checks before the bulk of a pack).
    // - `intactSignature`: the block, and every byte it describes, checked against its own key:
    //   the pack is what its publisher signed, whoever that is (not a trust decision).
    // - `trustedSignature`: the same, by one of the keys trusted.

    /// The signature of the local pack at `path` (``PackFormatDriver/signature(_:limits:)``):
    /// its block, checked against its own key, the bytes it describes not read.
    /// - Returns: `nil` for an unsigned pack.
    /// - Throws: `.integrityFailure` for a damaged block, `.unsupportedFormat`, `.io`.
    package static func signature(at path: String) throws -> PackSignature? {
        let source = try FileByteSource(path: path)
        return try driver(of: source).signature(source, limits: .default)
    }

    /// The publisher signature of the pack at `path`, checked without its password against
    /// `trusting`: the signature, the directory or index, and every stored byte (what an
    /// installer can check). Its expiry is not checked: the caller knows the time.
    /// - Returns: The verified block: its key and the release it states.
    /// - Throws: `.untrusted` when it is unsigned, signed by another key, or altered.
    package static func trustedSignature(at path: String, trusting trustedKeys: [PublisherKey]) throws
        -> PackSignature
    {
        let source: FileByteSource
        do { source = try FileByteSource(path: path) } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        return try trustedSignature(source, trusting: trustedKeys)
    }

    /// ``trustedSignature(at:trusting:)`` for the pack `source` holds (a remote one is fetched whole).
    package static func trustedSignature(_ source: any ByteSource, trusting trustedKeys: [PublisherKey]) throws
        -> PackSignature
    {
        do {
            // Every byte is read: a remote source fetches the whole pack at once, and keeps it.
            try source.retain(0..<source.size)
            return try driver(of: source).trustedSignature(source, trusting: trustedKeys)
        } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
    }

    /// A signed pack checked against its own key on every signed byte, without trusting that
    /// key: not a trust decision, but what tells a damaged signed pack (or a delta assembled
    /// wrong) from the one its publisher signed. Installers run it when given no trusted keys.
    /// - Parameters:
    ///   - what: Names the pack in the error ("the pack downloaded from URL").
    ///   - why: What a mismatch means there.
    /// - Returns: The block; `nil` for an unsigned pack (nothing more to check without its
    ///   password) or a file that is no pack.
    /// - Throws: `.integrityFailure` when it is not what its signature describes, or its
    ///   structure is damaged; `.limitExceeded`, `.io`.
    package static func intactSignature(_ source: any ByteSource, what: String, why: String = "it is damaged")
        throws -> PackSignature?
    {
        do {
            let block: PackSignature?
            do { block = try driver(of: source).signature(source, limits: .default) } catch let error
                as AssetPackError where error.code == .unsupportedFormat
            {
                return nil
            }
            guard let block else { return nil }
            return try trustedSignature(source, trusting: [block.publisher])
        } catch let error as AssetPackError where error.code == .untrusted {
            throw AssetPackError(
                .integrityFailure, "\(what) is not what its signature describes: \(why) (\(error.message))")
        }
    }

    /// What `pack` wrote.
    public struct PackSummary: Sendable {
        /// The files packed, in pack order.
        public var files: [SourceFile]
        /// The pack's size in bytes.
        public var packSize: UInt64
        /// Seconds spent (scan + compress + encrypt + write).
        public var seconds: Double
        /// Special files (FIFOs, sockets, devices) below the source that were not packed.
        public var skipped: [SkippedFile] = []
        /// Entries copied unchanged from the pack that was at the output (0 with `fresh`).
        public var reused = 0
        /// Entries compressed and encrypted by this run.
        public var packed = 0
        /// Container: chunks in the pack, and how many were copied from the pack that was at the output.
        public var chunks = 0
        public var reusedChunks = 0
        /// Bytes written to the new pack (container; sealed chunks, copied or new, and the index).
        public var bytesWritten: UInt64 = 0
        /// Container: the size of the zstd dictionary the pack's small files are compressed with
        /// (0 when it has none; docs/FORMAT.md, "The pack's dictionary").
        public var dictionaryBytes = 0
        /// Container: whether the pack was appended to the one at the output (a re-pack: its
        /// unchanged chunks kept where they were), and how many bytes of its data region no chunk
        /// of it occupies: zeros where removed or replaced content and earlier indexes were
        /// (docs/INCREMENTAL.md; ``PackOptions/compact`` drops them).
        public var appended = false
        public var earlierBytes: UInt64 = 0
        /// Container: bytes of removed or replaced content and earlier indexes that this re-pack
        /// overwrote with zeros in place, once its new version was committed.
        public var zeroedBytes: UInt64 = 0
        /// Container: bytes of the pack at the output that this write dropped by rewriting it
        /// whole: content this version removed or replaced, and the zeros earlier versions left
        /// (``PackOptions/compact``, or `compacted`: the writer rewrote by itself, because they
        /// were half of the file).
        public var droppedBytes: UInt64 = 0
        public var compacted = false
        /// Source files this re-pack did not read: their status (device, inode, size, times) was
        /// the one their entry was packed from (``PackOptions/sourceStatusCache``).
        public var unreadSources = 0
        /// Entries of the pack that was at the output that this pack no longer has, when the writer
        /// read that pack to reuse its entries (a container re-pack with the same credential and
        /// settings); `nil` when it did not (zip, `fresh`, other settings, no pack there).
        public var removed: Int?
        /// What the packer should be told about the pack this one replaced: signed, and this one
        /// unsigned, signed by another key, of another signed name, or the same version with other
        /// signed bytes (installers trusting its key refuse or download it whole). Empty unless
        /// ``PackOptions/describesReplacedPack``.
        public var warnings: [String] = []
    }

    /// Packs the files below `source` into `output`.
    ///
    /// The file list is sorted and normalised (see `SourceTree`); the writer replaces `output`
    /// atomically. The pack itself is never packed, even if it lies inside `source`.
    /// `output`'s folder must exist (it is not created) and `output` must not be a directory;
    /// both are checked before the source is scanned. A pack already at `output` is re-packed
    /// incrementally when it opens with the credential, and refused (`.wrongPassword`, the file
    /// left as it is) when it is a pack of this format that the credential does not open, unless
    /// `options.fresh`.
    /// - Parameters:
    ///   - source: The asset directory.
    ///   - output: The pack to write.
    ///   - options: Format, encryption, compression, credential.
    /// - Returns: What was packed.
    /// - Throws: `AssetPackError`.
    @discardableResult
    public static func pack(source: URL, to output: URL, options: PackOptions) throws -> PackSummary {
        let watch = Stopwatch()
        try AtomicFile.checkTarget(output.path)  // before the scan, for both writers
        try checkNotALink(output.path)  // before the scan too; pack(_:…) checks again for its other callers
        // A re-pack's key derivation runs while the sources are scanned (the writer's open of the
        // pack at the output takes its result; docs/INCREMENTAL.md, "Cost").
        let prefetch = try options.credential.flatMap { credential in
            options.fresh
                ? nil
                : try driver(for: options.format).prefetchKey(of: output.path, credential: credential, limits: .default)
        }
        defer { prefetch?.finish() }
        let (files, skipped) = try SourceTree.scanReporting(
            root: source, includeHidden: options.includeHidden, excluding: output, maxFiles: options.limits.maxEntries)
        // A container re-pack counts "removed" itself from the pack it reuses (no second key
        // derivation); only when it will not is the replaced pack listed, while it packs.
        let replaced =
            options.describesReplacedPack
            ? ReplacedPack(
                output: output.path, credential: options.credential,
                listNow: !(try driver(for: options.format)).countsRemovedEntries || options.fresh) : nil
        let summary = try pack(files, skipped: skipped, to: output, options: options, watch: watch)
        return replaced?.describe(summary, output: output.path, signedBy: options.signingKey?.publicKey) ?? summary
    }

    /// Writes scanned `files` to `output` (signing, reuse and the summary as ``pack(source:to:options:)``).
    package static func pack(
        _ files: [SourceFile], skipped: [SkippedFile], to output: URL, options: PackOptions, watch: Stopwatch
    ) throws -> PackSummary {
        var options = options
        try checkNotALink(output.path)
        // What a writer killed here before (SIGKILL: no chance to clean up) left beside the output.
        AtomicFile.removeStaleTemporaries(in: AtomicFile.folder(of: output.path))
        if let key = options.signingKey {
            let release = try options.release(for: output.path)  // a bad name, before any work
            // Read only when it matters: to reuse the previous pack, or to compare its version.
            let previous =
                options.fresh && options.allowRollback
                ? nil : try? trustedSignature(at: output.path, trusting: [key.publicKey])
            if let earlier = previous?.release, let name = release.name, earlier.name == name,
                earlier.version > release.version, !options.allowRollback
            {
                throw AssetPackError(
                    .invalidArgument,
                    "\(output.path) is version \(earlier.version) of \"\(EntryPath.printable(name))\", signed by this key; version \(release.version) would be older, and installers refuse an older release as a rollback. Sign version \(earlier.version == .max ? earlier.version : earlier.version + 1) or later (--pack-version; a new release needs a higher version), or allow the rollback (--allow-rollback)"
                )
            }
            // A re-pack signs what it reuses: reuse only a previous pack this key signed, whole,
            // so bytes someone changed in it (with the password) are never signed afresh.
            if previous == nil { options.fresh = true }
        }
        let report = try write(files, to: output, options: options)
        let size = (try? FileSystem.stat(output.path).size) ?? 0
        return PackSummary(
            files: files, packSize: size, seconds: watch.elapsed, skipped: skipped, reused: report.reused,
            packed: report.packed, chunks: report.chunks, reusedChunks: report.reusedChunks,
            bytesWritten: report.bytesWritten, dictionaryBytes: report.dictionaryBytes, appended: report.appended,
            earlierBytes: report.earlierBytes, zeroedBytes: report.zeroedBytes, droppedBytes: report.droppedBytes,
            compacted: report.compacted,
            unreadSources: report.unreadSources, removed: report.removed)
    }
}

extension AssetPacks {
    /// Refuses an output that is a symbolic link: the pack is renamed into place, which would
    /// replace the link with a file and leave its target as it was, silently.
    /// - Throws: `.invalidArgument` naming the link and its target.
    static func checkNotALink(_ path: String) throws {
        guard (try? FileSystem.lstat(path))?.kind == .symbolicLink else { return }
        let target = (try? FileSystem.readlink(path)) ?? "?"
        throw AssetPackError(
            .invalidArgument,
            "\(path) is a symbolic link (to \(target)): writing the pack would replace the link with a file and leave \(target) as it was; give the target's path, or remove the link"
        )
    }

    /// Writes `files` with the format's writer, and `options.deletions` as the pack's deletion
    /// record (a reserved entry written from a temporary file, removed afterwards).
    /// - Throws: `.invalidArgument` for a file below `.assetpack/`, or a path both packed and deleted.
    package static func write(_ files: [SourceFile], to output: URL, options: PackOptions) throws -> PackWriteReport {
        if let reserved = files.first(where: { DeletionRecord.isReserved($0.path) }) {
            throw AssetPackError(
                .invalidArgument,
                "paths below \(DeletionRecord.reservedFolder) are reserved for the pack's own records",
                path: reserved.path)
        }
        // What the default reader refuses is never written.
        try options.limits.checkEntryCount(files.count)
        let writer = try driver(for: options.format).makeWriter()
        if options.deletions.isEmpty { return try writer.write(files, to: output.path, options: options) }
        let record = try DeletionRecord.encode(options.deletions)
        let packed = Set(files.map { Array($0.path.utf8) })
        if let both = options.deletions.first(where: { packed.contains(Array($0.utf8)) }) {
            throw AssetPackError(.invalidArgument, "a pack cannot both hold and delete a path", path: both)
        }
        return try TemporaryFiles.withFile(named: "deleted", holding: record) { url in
            let entry = SourceFile(path: DeletionRecord.entryName, url: url, size: UInt64(record.count))
            return try writer.write(files + [entry], to: output.path, options: options)
        }
    }
}

extension PackFormat {
    /// Every format this build reads and writes (``AssetPacks/formats``), in registry order.
    package static var allCases: [PackFormat] { AssetPacks.formats.map(\.format) }
}
