import AssetPackContainer
import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import AssetPackRemote
import AssetPackZip
import Foundation

extension PrivateInstaller {
    /// The outcome of an install from a URL.
    public struct RemoteInstallation: Sendable, Equatable {
        /// The install itself, as for a local pack.
        public var installation: Installation
        /// Body bytes downloaded by this call (retries included).
        public var downloaded: UInt64
        /// Bytes copied from the previously installed pack instead of downloaded.
        public var reused: UInt64
        /// Bytes an earlier, interrupted install had already downloaded.
        public var resumed: UInt64
        /// HTTP requests made.
        public var requests: Int
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
        return try await offExecutor { [options] in
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
        try locked(name: name ?? url.lastPathComponent) { name in
            try installRemote(
                url, locked: name, credential: credential, limits: limits, options: options, progress: progress)
        }
    }

    private func installRemote(
        _ url: URL, locked name: String, credential: PackCredential?, limits: ReadLimits,
        options: RemoteMirror.Options, progress: (@Sendable (_ done: UInt64, _ total: UInt64) -> Void)?
    ) throws -> RemoteInstallation {

        // A FIFO or device under the name is refused as a local install refuses it, before any download.
        try AtomicFile.checkTarget(directory.appendingPathComponent(name).path)
        let client = try HTTPRangeClient(url: url, retry: options.retry, limits: options.transfer)
        let (version, whole) = try RemoteDownload.probe(client)
        try limits.checkPackSize(version.size, of: url.absoluteString)
        let fingerprint = "remote \(url.absoluteString) \(version.fingerprint)"

        let destination = directory.appendingPathComponent(name)
        let manifestURL = directory.appendingPathComponent(".\(name).install")
        let recorded = InstallRecord.load(manifestURL)
        let installed = try? Self.regularFile(destination.path)
        let recordedPublisher = recorded?.publisher.flatMap { try? PublisherKey(text: $0) }
        let trustedBefore = trustedKeys.isEmpty || recordedPublisher.map(trustedKeys.contains) == true
        func summary(_ installation: Installation, _ download: RemoteDownload) -> RemoteInstallation {
            let transferred = client.transferred
            return RemoteInstallation(
                installation: installation, downloaded: transferred.bytes, reused: download.reused,
                resumed: download.resumed, requests: transferred.requests)
        }
        if let recorded, let installed, installed.size == recorded.size, trustedBefore,
            recorded.sourceFingerprint == fingerprint
        {
            // A server frozen on this pack: once its signature expired, "current" is no answer.
            try checkInstalledNotExpired(destination.path)
            let publisher = trustedKeys.isEmpty ? nil : recordedPublisher
            return summary(
                Installation(path: destination, copied: false, sha256: recorded.sha256, publisher: publisher),
                RemoteDownload())
        }

        let staging = directory.appendingPathComponent(".\(name).download").path
        var download = RemoteDownload()
        // A whole-file download holds every byte: nothing to reuse.
        let previous = installed == nil || whole ? nil : destination.path
        var checked: (String, PublisherKey?)
        do {
            download =
                try whole
                ? RemoteDownload.whole(
                    client: client, version: version, staging: staging, options: options, limit: limits.maxPackSize,
                    room: directory.path, progress: progress)
                : RemoteDownload(
                    client: client, version: version, staging: staging, options: options, room: directory.path)
            try download.checkBeforeDownload(trustedKeys: trustedKeys, credential: credential, limits: limits)
            // Trusting keys: the signature block's release (expiry, rollback), before the bulk
            // download; its key and signed size were checked with the structure.
            if !trustedKeys.isEmpty, let block = download.signatureBlock { try checkRelease(block) }
            try download.assemble(previous: previous, credential: credential, progress: progress)
            do {
                checked = try download.verify(trustedKeys: trustedKeys, credential: credential)
            } catch let error as AssetPackError where download.reused > 0 && error.code == .integrityFailure {
                // A reused span that was not what the remote holds: download everything once.
                try download.restart()
                try download.assemble(previous: nil, credential: credential, progress: progress)
                checked = try download.verify(trustedKeys: trustedKeys, credential: credential)
            }
            // The release that counts is that of the bytes just verified: a full download after
            // a failed delta may have fetched another version under the same validators.
            let release = try checkStagedRelease(download.stagingPath)
            try Cancellation.current?.check()
            // Recorded before the rename: a failure after it refuses older versions all the same.
            try release.map(recordRelease)
            try download.commit(to: destination.path)
        } catch {
            // Only a download cut by the network is kept, for the next install to resume;
            // after any other failure nothing stays behind.
            if (error as? AssetPackError)?.code != .remote { download.discard() }
            throw error
        }
        let (digest, publisher) = checked
        try InstallRecord(
            sha256: digest, size: version.size, sourceSize: version.size, sourceModified: 0,
            sourceFingerprint: fingerprint, publisher: publisher?.text
        ).save(manifestURL)
        return summary(Installation(path: destination, copied: true, sha256: digest, publisher: publisher), download)
    }
}

/// One download into a staging file, with its progress recorded beside it.
struct RemoteDownload {
    /// What `.<name>.download.json` holds.
    struct State: Codable {
        var url: String
        var version: HTTPRangeClient.Version
        var present: RangeSet
    }

    var reused: UInt64 = 0
    var resumed: UInt64 = 0
    private var client: HTTPRangeClient?
    private var version: HTTPRangeClient.Version?
    private var staging = ""
    private var statePath = ""
    private var options = RemoteMirror.Options()
    private(set) var mirror: RemoteMirror?
    /// What ``checkBeforeDownload(trustedKeys:credential:limits:)`` learnt: the pack's
    /// signature block (checked against its own key), and the server's `.sha256` text.
    private var block: PackSignature?
    private var sidecar: String?

    /// Nothing downloaded (an install that was current).
    init() {}

    /// The staging file.
    var stagingPath: String { staging }

    /// The remote pack's signature block, once ``checkBeforeDownload(trustedKeys:credential:limits:)``
    /// fetched it (checked against its own key, and against the trusted keys when there are any).
    var signatureBlock: PackSignature? { block }

    /// Opens the staging file for `version`, with what an earlier download of the same
    /// version left in it, after checking that the file system holding `room` has space for
    /// the rest (before the file is created or grows).
    /// - Throws: `.io`, naming both sizes when there is no room.
    init(
        client: HTTPRangeClient, version: HTTPRangeClient.Version, staging: String, options: RemoteMirror.Options,
        room: String
    ) throws {
        self.client = client
        self.version = version
        self.staging = staging
        self.statePath = staging + ".json"
        var options = options
        options.cacheLimit = .max
        self.options = options
        var present = RangeSet()
        if let data = FileManager.default.contents(atPath: statePath),
            let state = try? JSONDecoder().decode(State.self, from: data),
            state.url == client.url.absoluteString, state.version.isSame(as: version),
            (try? FileSystem.stat(staging))?.size == version.size
        {
            present = state.present
            resumed = present.total
        } else {
            try? FileSystem.unlink(staging)
            try? FileSystem.unlink(statePath)
        }
        do {
            try Self.checkRoom(needed: version.size - present.total, in: room)
        } catch {
            discard()
            throw error
        }
        do {
            mirror = try RemoteMirror(
                client: client, path: staging, size: version.size, options: options, present: present)
        } catch {
            // A file system that cannot hold the size (EFBIG) leaves the file it created.
            discard()
            throw error
        }
    }

    /// Deletes the staging file and its state.
    func discard() {
        try? FileSystem.unlink(staging)
        try? FileSystem.unlink(statePath)
    }

    /// Drops everything fetched or copied, to download the whole file.
    mutating func restart() throws {
        guard let client, let version else { return }
        mirror = nil
        try? FileSystem.unlink(staging)
        try? FileSystem.unlink(statePath)
        reused = 0
        resumed = 0
        mirror = try RemoteMirror(client: client, path: staging, size: version.size, options: options)
    }

    /// Refuses a download the file system at `directory` has no room for (what is still to be
    /// downloaded, against the bytes an unprivileged process may write).
    /// - Throws: `.io` naming both sizes.
    static func checkRoom(needed: UInt64, in directory: String) throws {
        let available: UInt64
        do { available = try FileSystem.availableBytes(directory) } catch { throw error.io("cannot stat \(directory)") }
        guard needed <= available else {
            throw AssetPackError(
                .io,
                "not enough space in \(directory): the pack needs \(needed) more bytes, \(available) are free")
        }
    }

    /// What is checked before the bulk download: the pack's structure is fetched (within
    /// `limits`); a signed pack's block must be intact and, with `trustedKeys`, by one of them;
    /// an unsigned pack must be checkable once downloaded: by `credential` (every entry read
    /// back) or by a `.sha256` file the server publishes.
    /// - Throws: `.untrusted` (not signed, or not by a trusted key, or not a pack at all when
    ///   keys are trusted), `.missingPassword` (an unsigned pack nothing could check),
    ///   `.limitExceeded`, `.integrityFailure`, `.unsupportedFormat`, `.remote`.
    mutating func checkBeforeDownload(trustedKeys: [PublisherKey], credential: PackCredential?, limits: ReadLimits)
        throws
    {
        guard let mirror, let client else { return }
        let url = client.url.absoluteString
        do {
            let format = try RemotePackReader.fetchStructure(of: mirror, limits: limits, signature: true)
            block =
                switch format {
                case .zip: try ZipSignature.signedSpans(at: mirror.path)?.block
                case .container: try ContainerPackReader.signatureBlock(at: mirror.path)
                }
        } catch let error as AssetPackError {
            throw mirror.naming(error.untrustedIfUnreadable(trusting: trustedKeys))
        }
        sidecar = try client.sidecar(suffix: ".sha256")
        if let block {
            // Not a trust decision: a pack whose signed size is not the server's would fail its
            // own signature once downloaded.
            if let signed = block.release.size, signed != mirror.size {
                throw AssetPackError(
                    .integrityFailure,
                    "\(url): the server claims \(mirror.size) bytes; the pack's signature says \(signed)")
            }
            if !trustedKeys.isEmpty && !trustedKeys.contains(block.publisher) {
                throw AssetPackError(
                    .untrusted, "\(url) is signed by key \(block.publisher.fingerprint), which is not a trusted key")
            }
            return
        }
        if !trustedKeys.isEmpty {
            throw AssetPackError(.untrusted, "\(url) is not signed, and trusted keys were given")
        }
        if credential == nil && sidecar == nil {
            throw AssetPackError(
                .missingPassword,
                "\(url) is not signed: an unsigned pack from a URL is installed only if it can be checked once downloaded. Give its password or key (every entry is read back), publish \(url).sha256, or sign the pack"
            )
        }
    }

    /// Fills the staging file: spans reused from `previous` where the signed digests match,
    /// the rest downloaded in batches, the state saved after each.
    mutating func assemble(
        previous: String?, credential: PackCredential?, progress: (@Sendable (UInt64, UInt64) -> Void)?
    ) throws {
        guard let mirror else { return }
        if let previous {
            // An installed pack that cannot be read is simply not reused.
            reused = (try? reuse(from: previous, into: mirror, credential: credential)) ?? 0
            try save()
        }
        let total = mirror.size
        let done = ProgressCounter(mirror.held.total)
        progress?(done.value, total)
        let missing = mirror.held.missing(in: 0..<total)
        var batch: [Range<UInt64>] = []
        var batchBytes: UInt64 = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            try mirror.ensure(batch) { bytes in progress?(done.add(bytes), total) }
            try mirror.sync()
            try save()
            batch = []
            batchBytes = 0
        }
        for range in RemoteMirror.plan(missing, gap: 0, maxRequest: options.maxRequest) {
            batch.append(range)
            batchBytes += range.upperBound - range.lowerBound
            if batchBytes >= options.saveInterval { try flush() }
        }
        try flush()
    }

    /// Copies every span of `previous` whose SHA-256 is a signed digest of the remote pack.
    /// - Returns: Bytes copied.
    private mutating func reuse(from previous: String, into mirror: RemoteMirror, credential: PackCredential?) throws
        -> UInt64
    {
        // The remote structure: what a reader's open fetches, plus a zip's signature entry.
        guard
            let reader = try? RemotePackReader(
                mirror: mirror, credential: credential, fetchSignature: true)
        else { return 0 }
        let remote: (block: PackSignature, spans: [Range<UInt64>])
        let local: [Range<UInt64>]
        switch reader.format {
        case .zip:
            guard let signed = try ZipSignature.signedSpans(at: mirror.path),
                (try? AssetPacks.sniff(previous)) == .zip
            else { return 0 }
            remote = signed
            local = try ZipSignature.spans(at: previous)
        case .container:
            guard let container = reader.local as? ContainerPackReader,
                (try? AssetPacks.sniff(previous)) == .container,
                let old = try? ContainerPackReader(path: previous, credential: credential)
            else { return 0 }
            guard let block = try ContainerPackReader.signatureBlock(at: mirror.path) else {
                return try reuseUnsigned(container, from: old, previous: previous, into: mirror)
            }
            remote = (block, container.chunkSpans)
            local = old.chunkSpans
        }
        guard remote.spans.count == remote.block.itemCount else { return 0 }
        let fd: FileDescriptor
        do { fd = try .open(previous, .readOnly) } catch { throw error.io("cannot open \(previous)") }
        defer { try? fd.close() }
        var byDigest: [[UInt8]: Range<UInt64>] = [:]
        for span in local {
            try Cancellation.current?.check()
            let digest = try SHA256Hasher.digest(of: fd, span, path: previous)
            byDigest[digest] = span
        }
        let wanted = remote.spans.enumerated().map { i, span in (Array(remote.block.items[32 * i..<32 * i + 32]), span)
        }
        return try copyMatching(wanted, from: byDigest, of: previous, into: mirror)
    }

    /// Copies each wanted span (keyed by what identifies its bytes) whose key names a span of
    /// the same length in the installed pack at `previous`.
    /// - Returns: Bytes copied.
    private func copyMatching(
        _ wanted: [([UInt8], Range<UInt64>)], from available: [[UInt8]: Range<UInt64>], of previous: String,
        into mirror: RemoteMirror
    ) throws -> UInt64 {
        let fd: FileDescriptor
        do { fd = try .open(previous, .readOnly) } catch { throw error.io("cannot open \(previous)") }
        defer { try? fd.close() }
        var copied: UInt64 = 0
        for (key, span) in wanted where !mirror.held.contains(span) {
            guard let source = available[key], source.count == span.count else { continue }
            try copy(source, of: fd, path: previous, to: span.lowerBound, in: mirror)
            copied += UInt64(span.count)
        }
        try mirror.sync()
        return copied
    }

    /// An unsigned container: entries whose stored identity (same keys, key id, size, plaintext
    /// digest and chunk layout) matches one of the installed pack are copied. The copies are
    /// read back, decrypted and CRC-checked, by ``verify(trustedKeys:credential:)``, like every
    /// entry of an unsigned pack.
    private func reuseUnsigned(
        _ remote: ContainerPackReader, from old: ContainerPackReader, previous: String, into mirror: RemoteMirror
    ) throws -> UInt64 {
        guard let theirs = remote.storedIdentities, let ours = old.storedIdentities, theirs.keys == ours.keys else {
            return 0
        }
        let byIdentity = Dictionary(ours.entries.map { ($0.identity, $0.span) }, uniquingKeysWith: { a, _ in a })
        return try copyMatching(
            theirs.entries.map { ($0.identity, $0.span) }, from: byIdentity, of: previous, into: mirror)
    }

    /// Copies bytes `source` of the installed pack to `offset` of the download.
    private func copy(
        _ source: Range<UInt64>, of fd: FileDescriptor, path: String, to offset: UInt64, in mirror: RemoteMirror
    ) throws {
        var buffer = [UInt8](repeating: 0, count: min(1 << 20, max(1, source.count)))
        var done: UInt64 = 0
        while done < UInt64(source.count) {
            let n = Int(min(UInt64(buffer.count), UInt64(source.count) - done))
            try buffer.withUnsafeMutableBytes { raw in
                let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<n])
                let got: Int
                do { got = try fd.preadFully(into: piece, at: source.lowerBound + done) } catch let e as Errno {
                    throw e.io("cannot read \(path)")
                }
                guard got == n else { throw AssetPackError(.integrityFailure, "\(path) is truncated") }
                try mirror.adopt(UnsafeRawBufferPointer(piece), at: offset + done)
            }
            done += UInt64(n)
        }
    }

    /// Checks the assembled file: the server's `.sha256`, when there is one; a signed pack's
    /// signature on every byte (against `trustedKeys`, or its own key: the assembled bytes must
    /// be the ones the block describes); an unsigned pack's every entry, read back with
    /// `credential` (chunk tags or MACs, CRC-32s). Bytes of two versions fail one of these.
    /// - Returns: Its SHA-256 (hex) and the key that signed it.
    func verify(trustedKeys: [PublisherKey], credential: PackCredential?) throws -> (String, PublisherKey?) {
        guard let client, let mirror else { throw AssetPackError(.io, "nothing was downloaded") }
        guard mirror.held.contains(0..<mirror.size) else {
            throw AssetPackError(.integrityFailure, "the download is incomplete")
        }
        let digest = try PrivateInstaller.sha256(of: staging)
        if let sidecar {
            let published = sidecar.split(whereSeparator: \.isWhitespace).first.map { $0.lowercased() }
            guard published == digest else {
                throw AssetPackError(
                    .integrityFailure,
                    "the downloaded pack's SHA-256 is \(digest), not the \(published ?? "(empty)") the server publishes"
                )
            }
        }
        var publisher: PublisherKey?
        if let block {
            // Without trusted keys not a trust decision: proves the assembled bytes are the ones
            // the block describes.
            publisher = try AssetPacks.verifySignature(
                at: staging, trustedKeys: trustedKeys.isEmpty ? [block.publisher] : trustedKeys)
        } else if let credential {
            try readBack(credential: credential, url: client.url.absoluteString)
        }
        return (digest, trustedKeys.isEmpty ? nil : publisher)
    }

    /// Reads every entry of the unsigned download with its credential: each container chunk's
    /// tag and each zip entry's MAC and CRC-32 are checked, so a file assembled from two
    /// versions (a pack replaced on the server under the same validators) is refused.
    private func readBack(credential: PackCredential, url: String) throws {
        do {
            let reader = try AssetPacks.open(staging, credential: credential)
            for entry in reader.entries {
                try Cancellation.current?.check()
                try reader.stream(entry.path) { _ in }
            }
        } catch let error as AssetPackError
            where error.code != .missingPassword && error.code != .wrongPassword && error.code != .io
        {
            throw AssetPackError(
                .integrityFailure,
                "the pack downloaded from \(url) does not read back (\(error.description)): it changed on the server during the download, or is damaged",
                path: error.path)
        }
    }

    /// Makes the staging file the installed pack: mode 0600, synced, renamed, directory synced.
    func commit(to destination: String) throws {
        guard let mirror else { return }
        try mirror.sync()
        do {
            try FileSystem.chmod(staging, 0o600)
            try FileSystem.rename(staging, to: destination)
        } catch { throw error.io("cannot install \(destination)") }
        try? FileSystem.unlink(statePath)
        let folder = AtomicFile.folder(of: destination)
        if let fd = try? FileDescriptor.open(folder, .readOnly) {
            try? fd.fsync()
            try? fd.close()
        }
    }

    private func save() throws {
        guard let client, let version, let mirror else { return }
        let state = State(url: client.url.absoluteString, version: version, present: mirror.held)
        let data = try JSONEncoder().encode(state)
        try AtomicFile.write(statePath, mode: 0o600, exactMode: true) { fd in
            try data.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: statePath) }
        }
    }
}

private final class ProgressCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var done: UInt64
    init(_ start: UInt64) { done = start }
    var value: UInt64 { lock.withLock { done } }
    func add(_ bytes: UInt64) -> UInt64 {
        lock.withLock {
            done += bytes; return done
        }
    }
}
