import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// What an installer remembers of the signed releases it installed, in `.assetpack.releases` in
/// its private directory: per (signed name, publisher key), the highest version installed and the
/// SHA-256 of its signed body (docs/SECURITY.md, "Rollback and freeze"). The file outlives the
/// packs: removing a pack does not let an older version back in.
struct ReleaseRecord: Codable, Equatable {
    /// One (name, publisher) pair.
    struct Line: Codable, Equatable {
        /// The signed name.
        var name: String
        /// The publisher key's text form.
        var publisher: String
        /// The highest version installed (or the one an allowed rollback installed).
        var version: UInt64
        /// The SHA-256 (hex) of that version's signed body: tells two packs of one version apart.
        var body: String
    }

    var releases: [Line] = []
    /// The same, for release manifests (`ReleaseManifest`): their names are another namespace
    /// than packs'. Absent from records written before releases existed.
    var manifests: [Line]?

    static let fileName = ".assetpack.releases"

    /// The record in `directory`; empty when there is none. An unreadable record refuses every
    /// versioned install rather than forgetting what was installed.
    /// - Throws: `.integrityFailure` for a record that exists and does not parse.
    static func load(_ directory: URL) throws -> ReleaseRecord {
        let url = directory.appendingPathComponent(fileName)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            // Absent is empty; present but unreadable (permissions, a directory) is not.
            guard (try? FileSystem.lstat(url.path)) == nil else {
                throw AssetPackError(.io, "cannot read \(url.path): it holds the versions installed before")
            }
            return ReleaseRecord()
        }
        do { return try JSONDecoder().decode(ReleaseRecord.self, from: data) } catch {
            throw AssetPackError(
                .integrityFailure, "\(url.path) is damaged: remove it to forget which versions were installed")
        }
    }

    /// Writes atomically (temporary file, fsync, rename, fsync the directory), 0600.
    func save(_ directory: URL) throws {
        let url = directory.appendingPathComponent(Self.fileName)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        try AtomicFile.write(url.path, mode: 0o600, exactMode: true) { fd in
            try data.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: url.path) }
        }
    }
}

extension PrivateInstaller {
    /// Refuses to install the release `block` states when its signature expired, when it is older
    /// than the version of its name and publisher already installed (a rollback), or when it is
    /// that version with other bytes; an unversioned or legacy pack is refused only when a
    /// versioned release of its publisher was installed. `allowRollback` lifts the version checks,
    /// never the expiry. Runs only with trusted keys: without them a signature proves nothing.
    ///
    /// When it would replace the pack installed at `destination`, the two must be releases of one
    /// name: otherwise any pack of a trusted publisher (an old "fonts", renamed) could stand in
    /// for the installed "levels", whose version record it never meets (mix and match).
    /// `allowRollback` does not lift that: install a pack of another name under another file name.
    /// - Throws: `.untrusted`; `.integrityFailure` for a damaged record.
    package func checkRelease(_ block: PackSignature, replacing destination: URL) throws {
        let release = block.release
        try release.checkNotExpired(now: clock())
        if let name = release.name, let installed = try? Self.signatureBlock(at: destination.path),
            let installedName = installed.release.name, installedName != name
        {
            throw AssetPackError(
                .untrusted,
                "\(destination.lastPathComponent) holds the release \(installed.release.printableName); this pack is \(release.printableName), which cannot replace it (install it under another name)"
            )
        }
        guard !allowRollback else { return }
        let publisher = block.publisher.text
        let record = try ReleaseRecord.load(directory)
        guard let name = release.name else {
            // A version-1 signature names nothing: any versioned release of its publisher outranks it.
            if let newest = record.releases.filter({ $0.publisher == publisher && $0.version > 0 })
                .max(by: { $0.version < $1.version })
            {
                throw AssetPackError(
                    .untrusted,
                    "rollback: a version-1 signature (no name, version 0) is older than the installed "
                        + "\(EntryPath.printable(newest.name)) version \(newest.version) of its publisher "
                        + "(key \(block.publisher.fingerprint))")
            }
            return
        }
        guard let line = record.releases.first(where: { $0.name == name && $0.publisher == publisher }) else { return }
        let shown = release.printableName
        if release.version < line.version {
            throw AssetPackError(
                .untrusted,
                "rollback: \(shown) version \(release.version) is older than the installed version \(line.version)")
        }
        if release.version == line.version, release.version > 0, line.body != hex(block.bodyDigest) {
            throw AssetPackError(
                .untrusted,
                "\(shown) version \(release.version) is not the version \(line.version) installed before, "
                    + "though its publisher signed both: a new release must have a higher version")
        }
    }

    /// Records that the release `block` states was installed: the version of its name and
    /// publisher becomes this one when higher, or when `allowRollback` installed an older one.
    /// Unversioned and legacy releases are not recorded.
    package func recordRelease(_ block: PackSignature) throws {
        guard recordsPackReleases, let name = block.release.name, block.release.version > 0 else { return }
        let publisher = block.publisher.text
        // A damaged record refuses the install rather than being overwritten with this one line.
        var record = try ReleaseRecord.load(directory)
        let line = ReleaseRecord.Line(
            name: name, publisher: publisher, version: block.release.version, body: hex(block.bodyDigest))
        if let i = record.releases.firstIndex(where: { $0.name == name && $0.publisher == publisher }) {
            guard record.releases[i] != line, line.version > record.releases[i].version || allowRollback else {
                return
            }
            record.releases[i] = line
        } else {
            record.releases.append(line)
        }
        try record.save(directory)
    }

    /// Refuses a release manifest that expired, or is older than (or other than, at the same
    /// version) the release of its name and publisher installed before, unless ``allowRollback``
    /// (never the expiry): the rules of signed packs, in a namespace of their own.
    /// - Throws: `.untrusted`; `.integrityFailure` for a damaged record.
    package func checkRelease(_ manifest: ReleaseManifest) throws {
        try manifest.release.checkNotExpired(now: clock())
        guard !allowRollback, let publisher = manifest.publisher?.text else { return }
        let record = try ReleaseRecord.load(directory)
        guard let line = record.manifests?.first(where: { $0.name == manifest.name && $0.publisher == publisher })
        else { return }
        let shown = "release " + EntryPath.printable(manifest.name)
        if manifest.version < line.version {
            throw AssetPackError(
                .untrusted,
                "rollback: \(shown) version \(manifest.version) is older than the installed version \(line.version)")
        }
        if manifest.version == line.version, line.body != manifest.digest {
            throw AssetPackError(
                .untrusted,
                "\(shown) version \(manifest.version) is not the version \(line.version) installed before, "
                    + "though its publisher signed both: a new release must have a higher version")
        }
    }

    /// Records that the release `manifest` was installed (as ``recordRelease(_:)-(PackSignature)`` records a pack).
    package func recordRelease(_ manifest: ReleaseManifest) throws {
        guard let publisher = manifest.publisher?.text else { return }
        var record = try ReleaseRecord.load(directory)
        let line = ReleaseRecord.Line(
            name: manifest.name, publisher: publisher, version: manifest.version, body: manifest.digest)
        var lines = record.manifests ?? []
        if let i = lines.firstIndex(where: { $0.name == manifest.name && $0.publisher == publisher }) {
            guard lines[i] != line, line.version > lines[i].version || allowRollback else { return }
            lines[i] = line
        } else {
            lines.append(line)
        }
        record.manifests = lines
        try record.save(directory)
    }

    /// With trusted keys: the release of the verified pack at `path` (the staged download),
    /// checked as ``checkRelease(_:replacing:)`` checks it.
    /// - Returns: The block, to record; `nil` without trusted keys.
    /// - Throws: `.untrusted` (expired, rollback, or no signature), `.io`.
    package func checkStagedRelease(_ path: String, replacing destination: URL) throws -> PackSignature? {
        try checkStagedRelease(FileByteSource(path: path), replacing: destination)
    }

    /// ``checkStagedRelease(_:replacing:)`` of the pack `source` holds (an update in place, before it is written).
    package func checkStagedRelease(_ source: any ByteSource, replacing destination: URL) throws
        -> PackSignature?
    {
        guard !trustedKeys.isEmpty else { return nil }
        guard let block = try AssetPacks.driver(of: source).signatureBlock(source, limits: .default) else {
            throw AssetPackError(.untrusted, "the pack is not signed, and trusted keys were given")
        }
        try checkRelease(block, replacing: destination)
        return block
    }

    /// With trusted keys: refuses an installed pack whose signature expired (what an install that
    /// finds the pack current would otherwise vouch for).
    /// - Throws: `.untrusted` naming the expiry.
    package func checkInstalledNotExpired(_ path: String) throws {
        guard !trustedKeys.isEmpty, let block = try? Self.signatureBlock(at: path) else { return }
        try block.release.checkNotExpired(now: clock())
    }

    /// The signature block of the local pack at `path`, checked against its own key (intact, not
    /// trusted); `nil` for an unsigned pack.
    package static func signatureBlock(at path: String) throws -> PackSignature? {
        let source = try FileByteSource(path: path)
        return try AssetPacks.driver(of: source).signatureBlock(source, limits: .default)
    }
}
