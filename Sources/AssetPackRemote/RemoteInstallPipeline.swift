import AssetPack
import AssetPackCore
import AssetPackFormat
import AssetPackHTTP
import Foundation

/// An install from a URL, as the steps it takes (docs/REMOTE.md, "Installing"), in one
/// ``InstallTransaction`` slot:
///
/// 1. ``probe(_:into:installer:release:options:limits:)``: the server's version of the pack
///    (size, validators, whether it honours `Range`), checked against the limits and the release;
/// 2. ``current()``: the slot already holds that version: done, one request;
/// 3. ``stage(credential:limits:progress:)``: the download opened (resumed, or whole from a server
///    that ignores `Range`), the pack's structure and signature checked before its bulk, then
///    either an update in place (``Staged/inPlace(checked:plan:written:)``) or the rest fetched as a delta from the
///    installed pack or whole (``Staged/downloaded``);
/// 4. ``verify(credential:limits:progress:)``: the assembled pack checked whole (once more from
///    scratch when a reused span was wrong), its release checked and recorded;
/// 5. ``commit(_:written:inPlace:)``: renamed into place and recorded in the slot.
struct RemoteInstallPipeline {
    /// For a pack of a release: the installed pack of its name in the release before, and the
    /// pack the manifest names (size and SHA-256).
    typealias ReleasePack = (previous: String?, expected: ReleaseManifest.Pack)

    let installer: PrivateInstaller
    let slot: InstallTransaction.Slot
    let url: URL
    let client: HTTPRangeClient
    let version: HTTPRangeClient.Version
    /// Whether the server ignored `Range`: the pack comes whole, nothing is reused or resumed.
    let whole: Bool
    /// The release's pack, when it is one.
    let release: ReleasePack?
    let options: RemoteMirror.Options
    /// What the install record keeps as the source: the URL and the server's validators.
    let fingerprint: String
    var download: PackDownload

    /// Step 1: what the server holds at `url`, checked against `limits` and the release before
    /// any byte of the pack is written.
    /// - Throws: `.remote`, `.limitExceeded`, `.untrusted` (a release pack of another size), `.io`
    ///   (a FIFO or device under the installed name).
    static func probe(
        _ url: URL, into slot: InstallTransaction.Slot, installer: PrivateInstaller,
        release: ReleasePack?, options: RemoteMirror.Options,
        limits: ReadLimits
    ) throws -> RemoteInstallPipeline {
        // A FIFO or device under the name is refused as a local install refuses it, before any download.
        try AtomicFile.checkTarget(slot.pack.path)
        let client = try HTTPRangeClient(
            url: url, retry: options.retry, limits: options.transfer, inMemory: options.inMemoryServer)
        let (version, whole) = try RemoteDownload.probe(client)
        try limits.checkPackSize(version.size, of: url.absoluteString)
        if let expected = release?.expected, version.size != expected.size {
            throw expected.mismatch(url.absoluteString, size: version.size, sha256: nil)
        }
        return RemoteInstallPipeline(
            installer: installer, slot: slot, url: url, client: client, version: version, whole: whole,
            release: release, options: options, fingerprint: "remote \(url.absoluteString) \(version.fingerprint)",
            download: PackDownload(RemoteDownload(), url: url.absoluteString))
    }

    /// Step 2: the install, when the slot holds this very version of the remote pack (never for a
    /// release's pack, which the release checks by its SHA-256 first).
    /// - Throws: `.untrusted` when that version's signature expired.
    func current() throws -> PrivateInstaller.RemoteInstallation? {
        guard release == nil, let current = try slot.current(source: { $0.sourceFingerprint == fingerprint }) else {
            return nil
        }
        return summary(
            PrivateInstaller.Installation(
                path: slot.pack, copied: false, sha256: current.record.sha256, publisher: current.publisher))
    }

    /// What step 3 left: an update in place, done (its verified digest and key, and the plan it
    /// followed), or a download to verify.
    enum Staged {
        case inPlace(checked: (String, PublisherKey?), plan: AppendPlan, written: UInt64)
        case downloaded
    }

    /// Step 3: the download opened and checked before its bulk; then the installed pack updated
    /// in place when it can be (a version-6 container of a later generation; the update verified
    /// whole before the installed file is touched), else the rest fetched, reusing what the
    /// installed pack holds.
    /// - Throws: As ``PrivateInstaller/install(from:as:credential:limits:transfer:progress:)``.
    mutating func stage(credential: PackCredential?, limits: ReadLimits, progress: Progress?) throws -> Staged {
        let trustedKeys = installer.trustedKeys
        let installedSize = slot.installedSize()
        let directory = slot.transaction.directory.path
        let staging = RemoteDownload.Staging(file: slot.stagingPath, state: slot.stagingStatePath)
        // A whole-file download holds every byte: nothing to reuse.
        let previous = whole ? nil : release.map { $0.previous } ?? (installedSize == nil ? nil : slot.pack.path)
        // An update in place writes the remote's bytes after the installed pack's end twice (the
        // staging file, then the installed pack): the room it needs, checked before the first
        // byte. A whole download is checked again, for all of it, before it starts.
        // (+ 16 KiB: the header blocks the staging file holds.) Saturating: a raised limit can
        // make the doubling overflow.
        let inPlaceRoom =
            release == nil && !whole
            ? installedSize.map {
                let (twice, overflow) = (version.size - min($0, version.size)).multipliedReportingOverflow(by: 2)
                return overflow ? UInt64.max : twice.addingReportingOverflow(16 << 10).partialValue
            } : nil
        download.download =
            try whole
            ? RemoteDownload.whole(
                client: client, version: version, staging: staging, options: options, limit: limits.maxPackSize,
                room: directory, progress: progress)
            : RemoteDownload(
                client: client, version: version, staging: staging, options: options, room: directory,
                roomNeeded: inPlaceRoom)
        try download.checkBeforeDownload(
            trustedKeys: trustedKeys, credential: credential, limits: limits, client: client)
        // Trusting keys: the signature block's release (expiry, rollback), before the bulk
        // download; its key and signed size were checked with the structure.
        if !trustedKeys.isEmpty, let block = download.signature {
            try installer.checkRelease(block, replacing: slot.pack)
        }
        if release == nil, let previous, FileSystem.isSoleWritableFile(previous),
            let update = try download.prepareUpdateInPlace(
                installed: previous, trustedKeys: trustedKeys, credential: credential, progress: progress)
        {
            let staged = try installer.checkRelease(ofStaged: update.pack, replacing: slot.pack)
            try Cancellation.current?.check()
            try staged.map { try installer.recordRelease($0, as: slot.pack) }
            let written = try PrivateInstaller.update(previous, inPlace: update.plan, from: update.pack)
            download.download.discard()
            return .inPlace(checked: update.checked, plan: update.plan, written: written)
        }
        if inPlaceRoom != nil { try download.download.checkRoomForRest(in: directory) }
        try download.assemble(previous: previous, credential: credential, limits: limits, progress: progress)
        return .downloaded
    }

    /// Step 4: the assembled pack checked whole (its signature, or read back with `credential`,
    /// or its server's `.sha256`), the release's SHA-256 compared, and its signed release checked
    /// and recorded (before the rename: a failure after it refuses older versions all the same).
    /// - Returns: The pack's SHA-256 (hex) and the trusted key that signed it.
    mutating func verify(credential: PackCredential?, limits: ReadLimits, progress: Progress?) throws -> (
        String, PublisherKey?
    ) {
        let trustedKeys = installer.trustedKeys
        let checked: (String, PublisherKey?)
        do {
            checked = try download.verify(trustedKeys: trustedKeys, credential: credential)
        } catch let error as AssetPackError
            where download.reused > 0 && [.integrityFailure, .untrusted].contains(error.code)
        {
            // A reused span that was not what the remote holds, or a remote that changed
            // under the same validators (with trusted keys a signature mismatch is
            // `.untrusted`): download everything once. The whole download is checked again.
            try download.download.restart()
            try download.assemble(previous: nil, credential: credential, limits: limits, progress: progress)
            checked = try download.verify(trustedKeys: trustedKeys, credential: credential)
        }
        if let expected = release?.expected, checked.0 != expected.sha256 {
            throw expected.mismatch(url.absoluteString, size: version.size, sha256: checked.0)
        }
        // The release that counts is that of the bytes just verified: a full download after
        // a failed delta may have fetched another version under the same validators.
        let staged = try installer.checkRelease(ofStaged: download.stagingPath, replacing: slot.pack)
        try Cancellation.current?.check()
        try staged.map { try installer.recordRelease($0, as: slot.pack) }
        return checked
    }

    /// Step 5: the verified download renamed over the installed pack (unless the update was in
    /// place), and the install recorded.
    func commit(_ checked: (String, PublisherKey?), written: UInt64, inPlace: Bool) throws
        -> PrivateInstaller.RemoteInstallation
    {
        if !inPlace { try download.download.commit(to: slot.pack.path) }
        let (digest, publisher) = checked
        try slot.commit(
            InstallRecord(
                sha256: digest, size: version.size, sourceSize: version.size, sourceModified: 0,
                sourceFingerprint: fingerprint, publisher: publisher?.text))
        var result = summary(
            PrivateInstaller.Installation(path: slot.pack, copied: true, sha256: digest, publisher: publisher))
        result.written = written
        return result
    }

    /// Discards what a failed install wrote: all of it but a download cut by the network, kept
    /// for the next install to resume.
    func discard(after error: any Error) {
        if (error as? AssetPackError)?.code != .remote { download.download.discard() }
    }

    /// What the install cost so far.
    private func summary(_ installation: PrivateInstaller.Installation) -> PrivateInstaller.RemoteInstallation {
        let transferred = client.transferred
        var result = PrivateInstaller.RemoteInstallation(
            installation: installation, downloaded: transferred.bytes, reused: download.reused,
            resumed: download.resumed, requests: transferred.requests)
        result.rangesIgnored = whole
        return result
    }

    typealias Progress = @Sendable (_ done: UInt64, _ total: UInt64) -> Void
}

extension PrivateInstaller {
    /// A URL install's steps, in `slot` (the transaction held).
    func installRemote(
        _ url: URL, into slot: InstallTransaction.Slot, credential: PackCredential?, limits: ReadLimits,
        options: RemoteMirror.Options, progress: RemoteInstallPipeline.Progress?,
        release: RemoteInstallPipeline.ReleasePack? = nil
    ) throws -> RemoteInstallation {
        var pipeline = try RemoteInstallPipeline.probe(
            url, into: slot, installer: self, release: release, options: options, limits: limits)
        if let current = try pipeline.current() { return current }
        do {
            switch try pipeline.stage(credential: credential, limits: limits, progress: progress) {
            case .inPlace(let checked, let plan, let written):
                // The staging file held them first.
                var result = try pipeline.commit(checked, written: 2 * written, inPlace: true)
                result.reused = UInt64(plan.kept.count)
                result.updatedInPlace = true
                return result
            case .downloaded:
                let checked = try pipeline.verify(credential: credential, limits: limits, progress: progress)
                return try pipeline.commit(
                    checked, written: pipeline.version.size - pipeline.download.resumed, inPlace: false)
            }
        } catch {
            pipeline.discard(after: error)
            throw error
        }
    }
}
