@_exported import AssetPackContainer
@_exported import AssetPackCore
@_exported import AssetPackZip
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// The public face of AssetPack: open a pack of either format, pack a directory.
public enum AssetPacks {
    /// Recognises a pack's format from its bytes (never from its file extension): a container
    /// by its magic at offset 0; a zip by its first local header or, failing that, by its
    /// end-of-central-directory record, so that a zip with a stub in front (a self-extractor,
    /// `zip -A`) is a zip.
    /// - Parameter path: The pack's path.
    /// - Returns: `.container` or `.zip`.
    /// - Throws: `.io` if the file cannot be read; `.invalidArgument` for a directory;
    ///   `.unsupportedFormat` if it is neither.
    public static func sniff(_ path: String) throws -> PackFormat {
        let fd: FileDescriptor
        do { fd = try .open(path, .readOnly) } catch { throw error.io("cannot open \(path)") }
        defer { try? fd.close() }
        if let status = try? fd.status(), status.kind == .directory {
            throw AssetPackError(.invalidArgument, "\(path) is a directory")
        }
        var head = [UInt8](repeating: 0, count: max(ContainerFormat.magic.count, 4))
        let n: Int
        do {
            n = try head.withUnsafeMutableBytes { try fd.read(into: $0) }
        } catch let error as Errno {
            throw AssetPackError(.io, "cannot read \(path)", underlying: .errno(error.rawValue))
        }
        let prefix = Array(head[0..<n])
        if prefix.starts(with: ContainerFormat.magic) { return .container }
        if prefix.starts(with: [0x50, 0x4B, 0x03, 0x04]) || prefix.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
            return .zip
        }
        if hasZipEndRecord(fd) { return .zip }
        throw AssetPackError(.unsupportedFormat, "\(path) is not an AssetPack container or a zip archive")
    }

    /// Whether the file ends with a zip's end-of-central-directory record (its comment reaching
    /// the end of the file exactly), wherever the zip's first entry starts.
    private static func hasZipEndRecord(_ fd: FileDescriptor) -> Bool {
        guard let size = try? fd.status().size else { return false }
        let read = { (offset: UInt64, count: Int) throws -> [UInt8] in
            try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = try fd.preadFully(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
                guard initialized == count else { throw AssetPackError(.integrityFailure, "short read") }
            }
        }
        return (try? ZipStructure.directoryRange(fileSize: size, read: read)) != nil
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
        let format: PackFormat
        do { format = try sniff(path) } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        switch format {
        case .zip:
            return try ZipPackReader(path: path, credential: credential, limits: limits, trustedKeys: trustedKeys)
        case .container:
            return try ContainerPackReader(path: path, credential: credential, limits: limits, trustedKeys: trustedKeys)
        }
    }

    /// Whether the pack at `path` carries a publisher signature (checked or not).
    package static func isSigned(_ path: String) throws -> Bool {
        switch try sniff(path) {
        case .zip: try ZipSignature.isPresent(at: path)
        case .container: try ContainerPackReader.isSigned(at: path)
        }
    }

    /// Checks the publisher signature of the pack at `path` without its password: the signature,
    /// the directory or index, and every stored byte (what an installer can check).
    /// - Returns: The trusted key that signed it.
    /// - Throws: `.untrusted` when it is unsigned, signed by another key, or altered.
    package static func verifySignature(at path: String, trustedKeys: [PublisherKey]) throws -> PublisherKey {
        try verifiedBlock(at: path, trustedKeys: trustedKeys).publisher
    }

    /// ``verifySignature(at:trustedKeys:)``, returning the verified block: its key and the release
    /// it states (expiry not checked: the caller knows the time).
    package static func verifiedBlock(at path: String, trustedKeys: [PublisherKey]) throws -> PackSignature {
        do {
            switch try sniff(path) {
            case .zip: return try ZipSignature.verifiedBlock(at: path, trusted: trustedKeys)
            case .container: return try ContainerPackReader.verifiedBlock(at: path, trusted: trustedKeys)
            }
        } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
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
    }

    /// Packs the files below `source` into `output`.
    ///
    /// The file list is sorted and normalised (see `SourceTree`); the writer replaces `output`
    /// atomically. The pack itself is never packed, even if it lies inside `source`.
    /// `output`'s folder must exist (it is not created) and `output` must not be a directory;
    /// both are checked before the source is scanned.
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
        let (files, skipped) = try SourceTree.scanReporting(
            root: source, includeHidden: options.includeHidden, excluding: output)
        var options = options
        if options.signingKey != nil { _ = try options.release(for: output.path) }  // a bad name, before any work
        if let key = options.signingKey, !options.fresh,
            (try? verifySignature(at: output.path, trustedKeys: [key.publicKey])) == nil
        {
            // A re-pack signs what it reuses: reuse only a previous pack this key signed, whole,
            // so bytes someone changed in it (with the password) are never signed afresh.
            options.fresh = true
        }
        let writer: any PackWriter =
            switch options.format {
            case .zip: ZipPackWriter()
            case .container: ContainerPackWriter()
            }
        let report = try writer.write(files, to: output.path, options: options)
        let size = (try? FileSystem.stat(output.path).size) ?? 0
        return PackSummary(
            files: files, packSize: size, seconds: watch.elapsed, skipped: skipped, reused: report.reused,
            packed: report.packed)
    }
}
