import AssetPackCore
import Foundation

/// Installing a release (docs/REMOTE.md, "Installing a release"): every pack it names is stored
/// under a name of its own content (``ReleaseManifest/Pack/storedName``), then one small file,
/// `.assetpack.release` (the signed manifest, verbatim), is replaced by a rename: the commit
/// point. Readers open what that file names, so a kill at any moment leaves the previous
/// release complete or the new one, never a mix.
extension PrivateInstaller {
    /// The file that names the installed release: its signed manifest, byte for byte.
    package static let currentReleaseName = ".assetpack.release"
    /// The manifest of a release being installed: what a crashed install may have left.
    package static let pendingReleaseName = ".assetpack.release.pending"

    /// A release as installed: its manifest and where each pack is, in the release's order.
    public struct InstalledRelease: Sendable, Equatable {
        /// The manifest, as signed.
        public var manifest: ReleaseManifest
        /// The installed packs, in the manifest's order.
        public var packs: [URL]
    }

    /// The outcome of a release install.
    public struct ReleaseInstallation: Sendable, Equatable {
        /// The release now installed.
        public var release: InstalledRelease
        /// Whether the installed release changed (`false`: it was already this one).
        public var switched: Bool
        /// The packs whose bytes were copied or downloaded (the rest were installed already).
        public var copied: [String]
        /// Body bytes downloaded, over all packs from URLs.
        public var downloaded: UInt64 = 0
        /// Bytes copied from an installed pack instead of downloaded.
        public var reused: UInt64 = 0
        /// HTTP requests made (the manifest's included).
        public var requests = 0
    }

    /// What installing one pack of a release did.
    package struct PackFetch {
        package var copied: Bool
        package var downloaded: UInt64 = 0
        package var reused: UInt64 = 0
        package var requests = 0
        package init(copied: Bool, downloaded: UInt64 = 0, reused: UInt64 = 0, requests: Int = 0) {
            self.copied = copied
            self.downloaded = downloaded
            self.reused = reused
            self.requests = requests
        }
    }

    /// Installs one pack of a release: `(pack, location, the slot of its stored name, previous
    /// installed path of that pack's name or nil, the installer to use)`, in the release's
    /// transaction.
    package typealias PackFetcher = (
        ReleaseManifest.Pack, String, InstallTransaction.Slot, String?, PrivateInstaller
    ) throws -> PackFetch

    /// Installs the release whose manifest is the local file `manifest`, with packs given as
    /// paths relative to it. (A release whose packs are URLs installs with
    /// `installRelease(from:)` of AssetPackRemote.)
    ///
    /// With trusted keys, the manifest must be signed by one of them, must not have expired, and
    /// must not be older than the release of its name installed before (`.untrusted`; lifted by
    /// ``allowRollback``, except the expiry); each pack must be signed by a trusted key too.
    /// Every pack must be the one named: its size and SHA-256. Packs installed already cost
    /// nothing; the others are copied beside them; then the release is switched to by one
    /// rename, and packs of the previous release that this one does not name are removed.
    /// - Returns: The release installed and what it cost.
    /// - Throws: ``AssetPackError``: `.untrusted` (a key not trusted, an expired release, a
    ///   rollback, a pack that is not the one named), `.integrityFailure` (a malformed manifest),
    ///   `.io`; the message names the pack. Nothing is switched unless every pack installed.
    @discardableResult
    public func installRelease(at manifest: URL) throws -> ReleaseInstallation {
        let document = try Self.readManifest(manifest.path)
        return try installRelease(document: document, base: Self.folder(of: manifest.path)) {
            pack, at, slot, _, inner in
            guard !ReleaseManifest.isURL(at) else {
                throw AssetPackError(
                    .invalidArgument, "pack \(pack.name) is at a URL (\(at)): install the release with AssetPackRemote")
            }
            let result = try inner.install(URL(fileURLWithPath: at), into: slot, expected: pack)
            return PackFetch(copied: result.copied)
        }
    }

    /// The release installed in the directory, checked: its manifest parses and verifies (under
    /// the trusted keys, when there are any) and every pack it names is there with its size.
    /// - Returns: `nil` when no release was installed.
    /// - Throws: As ``ReleaseManifest/parse(_:trustedKeys:)``; `.io` for a pack missing.
    public func installedRelease() throws -> InstalledRelease? {
        let path = directory.appendingPathComponent(Self.currentReleaseName).path
        guard (try? FileSystem.lstat(path)) != nil else { return nil }
        let installed = try release(ReleaseManifest.parse(try Self.readManifest(path), trustedKeys: trustedKeys))
        for (pack, url) in zip(installed.manifest.packs, installed.packs) {
            guard (try? Self.regularFile(url.path))?.size == pack.size else {
                throw AssetPackError(.io, "pack \(pack.name) of the installed release is missing: \(url.path)")
            }
        }
        return installed
    }

    /// Installs the release `document` (a signed manifest) whose relative pack files are under
    /// `base` (a folder path or a URL), each through `fetch`. The engine behind both products.
    package func installRelease(document: Data, base: String, fetch: PackFetcher) throws -> ReleaseInstallation {
        let manifest = try ReleaseManifest.parse(document, trustedKeys: trustedKeys)
        return try transaction { transaction in
            try checkRelease(manifest)
            let current = directory.appendingPathComponent(Self.currentReleaseName).path
            let pending = directory.appendingPathComponent(Self.pendingReleaseName).path
            let previous = try? ReleaseManifest.parse(Self.readManifest(current), trustedKeys: [])
            let named = Set(manifest.packs.map(\.storedName))
            let kept = named.union(previous?.packs.map(\.storedName) ?? [])
            // What a crashed install of another release stored: nobody names it now.
            let crashed = try? ReleaseManifest.parse(Self.readManifest(pending), trustedKeys: [])
            for pack in crashed?.packs ?? [] where !kept.contains(pack.storedName) {
                try transaction.slot(pack.storedName).remove()
            }
            // And what a kill between an earlier switch and the removal of the packs it replaced
            // left: stored packs of releases no manifest names any more.
            removeOrphanedPacks(in: transaction, keeping: kept.union(crashed?.packs.map(\.storedName) ?? []))
            try Self.writeManifest(document, to: pending)

            var inner = self
            inner.allowRollback = true  // the release's version is what counts; expiry still does
            inner.recordsPackReleases = false
            var result = ReleaseInstallation(release: release(manifest), switched: false, copied: [])
            var created: [String] = []
            do {
                for pack in manifest.packs {
                    let name = pack.storedName
                    let slot = try transaction.slot(name)
                    if try isInstalled(pack, in: slot) { continue }
                    let old = previous?.packs.first { $0.name == pack.name }.map {
                        directory.appendingPathComponent($0.storedName).path
                    }
                    let fetched: PackFetch
                    do {
                        fetched = try fetch(pack, Self.location(of: pack.file, base: base), slot, old, inner)
                    } catch var error as AssetPackError {
                        let shown = EntryPath.printable(pack.name)
                        if !error.message.hasPrefix("pack \(shown)") {
                            error.message = "pack \(shown): " + error.message
                        }
                        throw error
                    }
                    if fetched.copied {
                        created.append(name)
                        result.copied.append(pack.name)
                    }
                    result.downloaded += fetched.downloaded
                    result.reused += fetched.reused
                    result.requests += fetched.requests
                }
                if !trustedKeys.isEmpty { try recordRelease(manifest) }
                let same = (try? Self.readManifest(current)) == document
                if !same { try Self.writeManifest(document, to: current) }  // the commit point
                result.switched = !same
            } catch {
                // A download cut by the network is kept to resume; any other failure leaves
                // nothing of this release (the previous one was never touched).
                if (error as? AssetPackError)?.code != .remote {
                    let keep = Set(previous?.packs.map(\.storedName) ?? [])
                    for name in created where !keep.contains(name) { try? transaction.slot(name).remove() }
                }
                throw error
            }
            for old in previous?.packs ?? [] where !named.contains(old.storedName) {
                try? transaction.slot(old.storedName).remove()
            }
            try? FileSystem.unlink(pending)
            return result
        }
    }

    // MARK: - Steps

    /// Whether `pack` is installed already in `slot`: its stored file has its size and its
    /// install record the SHA-256 named (and, trusting keys, its signature has not expired).
    /// (The manifest pins the bytes, so the key an install was checked under does not matter.)
    private func isInstalled(_ pack: ReleaseManifest.Pack, in slot: InstallTransaction.Slot) throws -> Bool {
        guard let record = slot.record(), record.sha256 == pack.sha256, slot.installedSize() == pack.size,
            record.holdsInstalled(slot.pack.path, recordedAt: slot.recordURL)
        else {
            return false
        }
        try checkInstalledNotExpired(slot.pack.path)
        return true
    }

    /// Removes the stored release packs in the directory that `kept` does not name. A stored
    /// pack is one whose name carries the first 16 hex digits of the SHA-256 its install record
    /// holds (``ReleaseManifest/Pack/storedName``): a pack installed by itself under a name of
    /// its own is never taken for one.
    private func removeOrphanedPacks(in transaction: InstallTransaction, keeping kept: Set<String>) {
        for name in transaction.fileNames() where !name.hasPrefix(".") && !kept.contains(name) {
            guard let slot = try? transaction.slot(name), let record = slot.record(), record.sha256.count == 64,
                name.contains("-" + record.sha256.prefix(16))
            else { continue }
            slot.remove()
        }
    }

    private func release(_ manifest: ReleaseManifest) -> InstalledRelease {
        InstalledRelease(
            manifest: manifest, packs: manifest.packs.map { directory.appendingPathComponent($0.storedName) })
    }

    /// Where a pack's `file` is: itself when a URL; else relative to `base` (a folder or a URL).
    package static func location(of file: String, base: String) -> String {
        if ReleaseManifest.isURL(file) { return file }
        if ReleaseManifest.isURL(base), let url = URL(string: base) {
            let encoded = file.split(separator: "/").map {
                $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? String($0)
            }.joined(separator: "/")
            return URL(string: encoded, relativeTo: url)?.absoluteString ?? file
        }
        return base + "/" + file
    }

    /// The folder of a local manifest path.
    package static func folder(of path: String) -> String { AtomicFile.folder(of: path) }

    /// A manifest file's bytes (at most ``ReleaseManifest/maxDocumentSize``).
    /// - Throws: `.io` when it cannot be read, `.integrityFailure` when it is too large.
    package static func readManifest(_ path: String) throws -> Data {
        let status = try regularFile(path)
        guard status.size <= UInt64(ReleaseManifest.maxDocumentSize) else {
            throw AssetPackError(.integrityFailure, "\(path) is too large to be a release manifest")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AssetPackError(.io, "cannot read \(path)")
        }
        return data
    }

    private static func writeManifest(_ data: Data, to path: String) throws {
        try AtomicFile.write(path, mode: 0o600, exactMode: true) { fd in
            try data.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: path) }
        }
    }
}

extension ReleaseManifest.Pack {
    /// The entry for the pack at `path`, published as `file`: its signed name and version, its
    /// size and SHA-256, once `publisher` is shown to have signed every byte of it.
    /// - Throws: `.untrusted` naming the pack when it is unsigned, signed by another key or
    ///   altered; `.io`, `.invalidArgument` when it is no file.
    package static func describing(_ path: String, file: String, signedBy publisher: PublisherKey) throws -> Self {
        let size = try PrivateInstaller.regularFile(path).size
        let release: PackRelease
        do { release = try AssetPacks.trustedSignature(at: path, trusting: [publisher]).release } catch var error
            as AssetPackError
        {
            error.message =
                "pack \(EntryPath.printable(path)): \(error.message) (a release's packs are signed by its key)"
            throw error
        }
        return Self(
            name: release.name ?? PackRelease.defaultName(for: path), version: release.version, size: size,
            sha256: try PrivateInstaller.sha256(of: path), file: file)
    }
}
