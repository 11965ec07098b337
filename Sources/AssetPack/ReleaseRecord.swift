import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// What an installer remembers of the signed releases it installed, in `.assetpack.releases` in
/// its private directory: per (signed name, publisher key), the highest version installed and the
/// SHA-256 of its signed body, and per installed file the release installed there last
/// (docs/SECURITY.md, "Rollback and freeze"). The file outlives the packs: removing a pack does
/// not let an older version, or a pack of another name, back in.
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
    /// Installed file name → the release installed under it last, whatever its key: what a
    /// pack replacing that file must not be older than, or of another name. Absent from records
    /// written before it existed.
    var files: [String: Line]?
    /// The name of the release manifest installed last: the directory's release line, which a
    /// release of another name does not replace unless told to. Absent from records written
    /// before it existed.
    var line: String?

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
    /// than the version of its name already installed (a rollback), or when it is that version
    /// with other bytes; an unversioned or legacy pack is refused only when a versioned release of
    /// its publisher was installed. "Installed" is per (name, key), and, whatever the key, the
    /// release last installed as `destination`: an app that trusts an old and a new key while its
    /// publisher rotates would otherwise take an old release signed by the old key in place of a
    /// newer one signed by the new key. `allowRollback` lifts the version checks, never the
    /// expiry. Runs only with trusted keys: without them a signature proves nothing.
    ///
    /// When it would replace the release installed at `destination` under a key trusted now
    /// (the signed pack there, or the release recorded for that file when the pack is gone or
    /// unreadable), the two must be
    /// releases of one name: otherwise any pack of a trusted publisher (an old "fonts", renamed,
    /// or a legacy pack that names nothing) could stand in for the installed "levels", whose
    /// version record it never meets (mix and match). `allowRollback` does not lift that: install
    /// a pack of another name under another file name.
    /// - Throws: `.untrusted`; `.integrityFailure` for a damaged record.
    package func checkRelease(_ block: PackSignature, replacing destination: URL) throws {
        let release = block.release
        try release.checkNotExpired(now: clock())
        let record = try ReleaseRecord.load(directory)
        // The release installed as `destination`, only under a key trusted now (one the app
        // dropped, say after a compromise, must not hold its releases back): the signed pack
        // there (also for a record written before `files`), and the record's line for the file
        // (also when the pack was removed).
        let trusted = Set(trustedKeys.map(\.text) + [block.publisher.text])
        let file = record.files?[destination.lastPathComponent].flatMap { trusted.contains($0.publisher) ? $0 : nil }
        let installed = (try? AssetPacks.signature(at: destination.path))?.flatMap {
            trusted.contains($0.publisher.text) ? $0 : nil
        }
        let there = installed.flatMap { block in
            block.release.name.map {
                ReleaseRecord.Line(
                    name: $0, publisher: block.publisher.text, version: block.release.version,
                    body: hex(block.bodyDigest))
            }
        }
        if !allowRollback {
            let lines = record.releases.filter { $0.publisher == block.publisher.text }
            try checkVersion(block, against: lines + [file, there].compactMap { $0 })
        }
        let installedName = installed?.release.name ?? file?.name
        if let installedName, installedName != release.name {
            let this = release.name == nil ? "unnamed (a version-1 signature)" : release.printableName
            throw AssetPackError(
                .untrusted,
                "\(destination.lastPathComponent) holds the release \(EntryPath.printable(installedName)); "
                    + "this pack is \(this), which cannot replace it (install it under another name)")
        }
    }

    /// The version checks of ``checkRelease(_:replacing:)`` against the installed releases
    /// `lines`.
    private func checkVersion(_ block: PackSignature, against lines: [ReleaseRecord.Line]) throws {
        let release = block.release
        guard let name = release.name else {
            // A version-1 signature names nothing: any versioned release of its publisher outranks it.
            if let newest = lines.filter({ $0.version > 0 && $0.publisher == block.publisher.text })
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
        let named = lines.filter { $0.name == name }
        guard let line = named.max(by: { $0.version < $1.version }) else { return }
        let shown = release.printableName
        if release.version < line.version {
            throw AssetPackError(
                .untrusted,
                "rollback: \(shown) version \(release.version) is older than the installed version \(line.version)"
                    + (line.publisher == block.publisher.text ? "" : " (signed by another trusted key)"))
        }
        let body = hex(block.bodyDigest)
        if release.version > 0, named.contains(where: { $0.version == release.version && $0.body != body }) {
            throw AssetPackError(
                .untrusted,
                "\(shown) version \(release.version) is not the version \(line.version) installed before, "
                    + "though its publisher signed both: a new release must have a higher version")
        }
    }

    /// Records that the release `block` states was installed as `destination`: the version of its
    /// name and publisher becomes this one when higher, or when `allowRollback` installed an older
    /// one, and the release is the file's. Unversioned releases get no version line; legacy
    /// (unnamed) ones are not recorded.
    package func recordRelease(_ block: PackSignature, as destination: URL) throws {
        guard recordsPackReleases, let name = block.release.name else { return }
        let publisher = block.publisher.text
        // A damaged record refuses the install rather than being overwritten with this one line.
        let before = try ReleaseRecord.load(directory)
        var record = before
        let line = ReleaseRecord.Line(
            name: name, publisher: publisher, version: block.release.version, body: hex(block.bodyDigest))
        record.files = (record.files ?? [:]).merging([destination.lastPathComponent: line]) { $1 }
        if block.release.version == 0 {
            // Unversioned: nothing to compare later versions with.
        } else if let i = record.releases.firstIndex(where: { $0.name == name && $0.publisher == publisher }) {
            if line.version > record.releases[i].version || allowRollback { record.releases[i] = line }
        } else {
            record.releases.append(line)
        }
        if record != before { try record.save(directory) }
    }

    /// Refuses a release manifest that expired, or is older than (or other than, at the same
    /// version) the release of its name installed before under any key trusted now (a
    /// rotation), unless ``allowRollback`` (never the expiry): the rules of signed packs, in a
    /// namespace of their own. And, trusted or not, refuses a release of another name than the
    /// directory's release line (``releaseLine()``) unless ``replacesReleaseLine``.
    /// - Throws: `.untrusted`; `.integrityFailure` for a damaged record.
    package func checkRelease(_ manifest: ReleaseManifest) throws {
        if !trustedKeys.isEmpty { try manifest.release.checkNotExpired(now: clock()) }
        if !replacesReleaseLine, let line = try releaseLine(), line != manifest.name {
            throw AssetPackError(
                .untrusted,
                "\(directory.path) holds the release \(EntryPath.printable(line)); release "
                    + "\(EntryPath.printable(manifest.name)) is another release line, which cannot replace it "
                    + "(--replace-release, or PrivateInstaller.replacesReleaseLine, says it does; "
                    + "or install it into another directory)")
        }
        guard !allowRollback, !trustedKeys.isEmpty, let publisher = manifest.publisher?.text else { return }
        let record = try ReleaseRecord.load(directory)
        // Every trusted key's line of this name: during a rotation an old-key release must not
        // pass a new-key release of the same name because the record is kept per key.
        let trusted = Set(trustedKeys.map(\.text) + [publisher])
        var lines = (record.manifests ?? []).filter { $0.name == manifest.name && trusted.contains($0.publisher) }
        // As for packs, the release installed now counts whatever its key (a rotation).
        let current = directory.appendingPathComponent(Self.currentReleaseName).path
        if let installed = try? ReleaseManifest.parse(Self.readManifest(current), trustedKeys: trustedKeys),
            installed.name == manifest.name, let key = installed.publisher
        {
            lines.append(
                .init(name: installed.name, publisher: key.text, version: installed.version, body: installed.digest))
        }
        guard let line = lines.max(by: { $0.version < $1.version }) else { return }
        let shown = "release " + EntryPath.printable(manifest.name)
        if manifest.version < line.version {
            throw AssetPackError(
                .untrusted,
                "rollback: \(shown) version \(manifest.version) is older than the installed version \(line.version)"
                    + (line.publisher == publisher ? "" : " (signed by another trusted key)"))
        }
        if lines.contains(where: { $0.version == manifest.version && $0.body != manifest.digest }) {
            throw AssetPackError(
                .untrusted,
                "\(shown) version \(manifest.version) is not the version \(line.version) installed before, "
                    + "though its publisher signed both: a new release must have a higher version")
        }
    }

    /// The name of the release line the directory holds: the release installed now (its
    /// manifest, read without checking its signature: only its name counts here), else the
    /// line the record names last (the release file removed); `nil` when no release was
    /// installed.
    /// - Throws: `.integrityFailure` for a damaged record.
    package func releaseLine() throws -> String? {
        let current = directory.appendingPathComponent(Self.currentReleaseName).path
        if let installed = try? ReleaseManifest.parse(Self.readManifest(current), trustedKeys: []) {
            return installed.name
        }
        let record = try ReleaseRecord.load(directory)
        return record.line ?? record.manifests?.last?.name
    }

    /// Records that the release `manifest` was installed (as ``recordRelease(_:as:)`` records a pack).
    package func recordRelease(_ manifest: ReleaseManifest) throws {
        guard let publisher = manifest.publisher?.text else { return }
        var record = try ReleaseRecord.load(directory)
        let line = ReleaseRecord.Line(
            name: manifest.name, publisher: publisher, version: manifest.version, body: manifest.digest)
        var lines = record.manifests ?? []
        if let i = lines.firstIndex(where: { $0.name == manifest.name && $0.publisher == publisher }) {
            if lines[i] != line, line.version > lines[i].version || allowRollback { lines[i] = line }
        } else {
            lines.append(line)
        }
        record.manifests = lines
        record.line = manifest.name
        try record.save(directory)
    }

    /// With trusted keys: the release of the verified pack at `path` (the staged download),
    /// checked as ``checkRelease(_:replacing:)`` checks it.
    /// - Returns: The block, to record; `nil` without trusted keys.
    /// - Throws: `.untrusted` (expired, rollback, or no signature), `.io`.
    package func checkRelease(ofStaged path: String, replacing destination: URL) throws -> PackSignature? {
        try checkRelease(ofStaged: FileByteSource(path: path), replacing: destination)
    }

    /// ``checkRelease(ofStaged:replacing:)`` of the pack `source` holds (an update in place, before it is written).
    package func checkRelease(ofStaged source: any ByteSource, replacing destination: URL) throws
        -> PackSignature?
    {
        guard !trustedKeys.isEmpty else { return nil }
        guard let block = try AssetPacks.driver(of: source).signature(source, limits: .default) else {
            throw AssetPackError(.untrusted, "the pack is not signed, and trusted keys were given")
        }
        try checkRelease(block, replacing: destination)
        return block
    }

    /// With trusted keys: refuses an installed pack whose signature expired (what an install that
    /// finds the pack current would otherwise vouch for).
    /// - Throws: `.untrusted` naming the expiry.
    package func checkInstalledNotExpired(_ path: String) throws {
        guard !trustedKeys.isEmpty, let block = try? AssetPacks.signature(at: path) else { return }
        try block.release.checkNotExpired(now: clock())
    }
}
