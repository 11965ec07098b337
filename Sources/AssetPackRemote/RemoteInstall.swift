import AssetPack
import AssetPackCore
import AssetPackFormat
import AssetPackHTTP
import Foundation

extension PrivateInstaller {
    /// The outcome of an install from a URL.
    public struct RemoteInstallation: Sendable, Equatable {
        /// The install itself, as for a local pack.
        public var installation: Installation
        /// Body bytes downloaded by this call (retries included).
        public var downloaded: UInt64
        /// Bytes copied from the previously installed pack instead of downloaded (updated in
        /// place: the installed bytes kept where they are).
        public var reused: UInt64
        /// Bytes an earlier, interrupted install had already downloaded.
        public var resumed: UInt64
        /// HTTP requests made.
        public var requests: Int
        /// Bytes written to the disk for the pack: the staging file, and the installed pack when
        /// it was updated in place (``updatedInPlace``).
        public var written: UInt64 = 0
        /// Whether the installed pack was updated in place: the remote's new header and tail
        /// appended to it (a version-6 container of a later generation), nothing else rewritten.
        public var updatedInPlace = false
        /// Whether the server ignored `Range` requests, so the pack came whole in one response:
        /// nothing reused, and an interrupted download starts over.
        public var rangesIgnored = false
    }

    /// Downloads the pack at `url` into the directory under `name` (default: the URL's last
    /// path component): atomically, verified, 0700/0600, resumable, and as a delta when an older
    /// version is installed under the same name (docs/REMOTE.md, "Installing").
    ///
    /// - Before anything is written, the size the server claims is checked against
    ///   `limits.maxPackSize` and the free space of the directory's file system; then the pack's
    ///   structure (the container's index and signature, the zip's directory and signature
    ///   entry) is fetched, and a signed pack's signature is checked (against `trustedKeys`, when
    ///   given) before the bulk of it is downloaded. An unsigned pack is installed only if it can
    ///   be checked after the download: with its `credential` (every entry is read back) or a
    ///   `<url>.sha256` file on the server. So no install ever holds bytes of two versions.
    /// - The download goes to `.<name>.download` beside the installed pack, with its progress in
    ///   `.<name>.download.json`: an install cut by the network (or a crash or a kill) goes on
    ///   where it stopped, if the server's file is still the same version (`ETag`,
    ///   `Last-Modified` and size), and starts over otherwise. Any other failure (a check, a
    ///   limit, a full disk, cancellation) removes the download.
    /// - When the remote pack is signed and a pack is installed under `name`, every entry span
    ///   (zip) or chunk (container; this needs `credential`) whose SHA-256 equals the signed
    ///   digest of a span of the installed pack is copied from it instead of downloaded. An
    ///   unsigned container (with `credential`) reuses entries whose keys, key id, size,
    ///   plaintext digest and chunk layout match; an unsigned zip is downloaded whole.
    /// - Every request keeps `transfer`'s deadline and minimum rate.
    /// - Cancelling the task stops the download within about a second, removes what it wrote,
    ///   and throws `CancellationError`.
    /// - Installing the same version again makes one request and copies nothing.
    /// - From a server that ignores `Range`, the whole file comes in one GET (no more than
    ///   its `Content-Length`, within a limit), verified the same way; no resume, no reuse.
    /// - Parameters:
    ///   - url: The pack's `http://` or `https://` URL.
    ///   - name: The installed file's name.
    ///   - credential: The pack's password or key: checks an unsigned pack, and lets a
    ///     container update download only what changed.
    ///   - limits: `maxPackSize` bounds the download (and the structure's sizes are checked
    ///     against the index limits).
    ///   - transfer: Every request's deadlines and minimum rate.
    ///   - progress: Called with bytes done (downloaded or reused) and the pack's size.
    /// - Throws: ``AssetPackError``: `.remote` (server failures, deadlines), `.untrusted`,
    ///   `.missingPassword` (an unsigned pack that nothing could check), `.limitExceeded`,
    ///   `.integrityFailure` (the assembled file is not the remote one), `.io` (including no
    ///   room for the pack); `CancellationError`.
    @discardableResult
    public func install(
        from url: URL, as name: String? = nil, credential: PackCredential? = nil, limits: ReadLimits = .default,
        transfer: TransferLimits = .default, progress: (@Sendable (_ done: UInt64, _ total: UInt64) -> Void)? = nil
    ) async throws -> RemoteInstallation {
        var options = RemoteMirror.Options()
        options.transfer = transfer
        return try await Cancellation.offExecutor { [options] in
            try installRemote(
                url, as: name, credential: credential, limits: limits, options: options, progress: progress)
        }
    }

    /// ``install(from:as:credential:limits:transfer:progress:)``, blocking.
    @discardableResult
    package func installRemote(
        _ url: URL, as name: String? = nil, credential: PackCredential? = nil, limits: ReadLimits = .default,
        options: RemoteMirror.Options = RemoteMirror.Options(),
        progress: (@Sendable (_ done: UInt64, _ total: UInt64) -> Void)? = nil
    ) throws -> RemoteInstallation {
        try transaction(installing: name ?? url.lastPathComponent) { slot in
            try installRemote(
                url, into: slot, credential: credential, limits: limits, options: options, progress: progress)
        }
    }

    /// Downloads `url` into `slot` for a release (its transaction held): a delta from `previous`
    /// (the installed pack of that name in the release before, if any), and it must be the pack
    /// `expected` names: its size before the download, its SHA-256 before anything is recorded
    /// or renamed.
    /// - Throws: As ``install(from:as:credential:limits:transfer:progress:)``; `.untrusted` for a
    ///   pack that is not the one named.
    package func installRemote(
        _ url: URL, into slot: InstallTransaction.Slot, previous: String?, expected: ReleaseManifest.Pack,
        credential: PackCredential?, limits: ReadLimits, options: RemoteMirror.Options
    ) throws -> RemoteInstallation {
        try installRemote(
            url, into: slot, credential: credential, limits: limits, options: options, progress: nil,
            release: (previous, expected))
    }

    /// Updates the installed pack at `path` in place as `plan` says, with the bytes `pack` (the
    /// verified result) holds: the tail appended and synced, then the new header written and
    /// synced, then the installed pack's own header wiped. Until the header is written the file
    /// is the installed pack (readers ignore bytes after its end), and a failure before then cuts
    /// it back to that; a header written in part (a power cut within one 128-byte write) makes
    /// readers refuse the pack, and the next install, finding it not current, installs it again.
    /// - Returns: The bytes written.
    /// - Throws: `.io`.
    static func update(_ path: String, inPlace plan: AppendPlan, from pack: any ByteSource) throws -> UInt64 {
        let fd: FileDescriptor
        do { fd = try .open(path, .readWrite) } catch { throw error.io("cannot open \(path)") }
        defer { try? fd.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        func copy(_ span: Range<UInt64>) throws {
            var at = span.lowerBound
            while at < span.upperBound {
                let piece = UnsafeMutableRawBufferPointer(
                    rebasing: buffer[0..<Int(min(UInt64(buffer.count), span.upperBound - at))])
                try pack.readExactly(into: piece, at: at)
                do { try fd.pwriteAll(UnsafeRawBufferPointer(piece), at: at) } catch {
                    throw error.io("cannot write \(path)")
                }
                at += UInt64(piece.count)
            }
        }
        func sync() throws {
            do { try fd.fsync() } catch { throw error.io("cannot sync \(path)") }
        }
        do {
            try copy(plan.tail)
            do { try fd.truncate(to: plan.tail.upperBound) } catch { throw error.io("cannot size \(path)") }
            try sync()
        } catch {
            try? fd.truncate(to: plan.kept.upperBound)
            throw error
        }
        try copy(plan.headAt..<plan.headAt + UInt64(plan.head.count))
        try sync()
        // The installed version's header goes: a crash before this leaves both, of which readers
        // take the newer; after it, nothing leads back to the older version. Best effort, as the
        // packer's: the update is committed by now, and a failure here must not report it failed.
        if let old = plan.supersedes {
            let zeros = [UInt8](repeating: 0, count: old.count)
            if (try? zeros.withUnsafeBytes { try fd.pwriteAll($0, at: old.lowerBound) }) != nil { try? sync() }
        }
        // Then what the new version removed or replaced (the bytes its publisher zeroed), so the
        // installed copy no longer holds it. Best effort too: the next update zeroes what is
        // left, since it finds the dead bytes from the index.
        let zeroed = plan.zeroed.map { $0.clamped(to: plan.kept) }.filter { !$0.isEmpty }
        if !zeroed.isEmpty, (try? zeroed.forEach { try fd.zero($0) }) != nil { try? sync() }
        return UInt64(plan.tail.count + plan.head.count)
    }
}
