import ArgumentParser
import AssetPack
import AssetPackCrypto
import AssetPackRemote
import Foundation

/// `--over PACK` (repeatable): packs read over the command's PACK as one set, bottom first. A
/// value may end in the pack's own credential, `,password-env=NAME`, `,password-file=PATH` or
/// `,key-file=PATH` (the sources the command's own options take, never the secret itself).
struct PackSetOptions: ParsableArguments {
    @Option(
        name: .customLong("over"),
        help: ArgumentHelp(
            """
            Also read this pack over the ones before it (repeat, bottom first): PACK and every --over pack are \
            read as one set, where the last pack that has a path serves it and a patch pack's deletions hide \
            paths of the packs below. --trust applies to every pack; so does the command's credential, unless \
            the value ends in the pack's own: PACK,password-env=NAME, PACK,password-file=PATH or \
            PACK,key-file=PATH.
            """, valueName: "PACK[,password-env=NAME]"))
    var over: [String] = []

    /// An `--over` pack: where it is, and its own credential when the value names one.
    struct Pack {
        /// The pack's path or URL (and its name in the set).
        var location: String
        /// The pack's own credential options, or `nil` to use the command's.
        var credentials: CredentialOptions?
    }

    /// The credential sources a value may end in, as `,NAME=…`: the command's own option names.
    static let credentialSources = ["password-env", "password-file", "key-file"]

    func validate() throws {
        for value in over { _ = try Self.pack(value) }
    }

    /// The `--over` packs, bottom first.
    func packs() throws -> [Pack] { try over.map(Self.pack) }

    /// Splits `value` at the first `,password-env=`, `,password-file=` or `,key-file=`: the pack
    /// before it, its credential after.
    /// - Throws: `ValidationError` (exit 64) for an empty pack or source, or a second credential.
    static func pack(_ value: String) throws -> Pack {
        let found = credentialSources.compactMap { source in value.range(of: ",\(source)=").map { ($0, source) } }
            .min { $0.0.lowerBound < $1.0.lowerBound }
        guard let (range, source) = found else { return Pack(location: value, credentials: nil) }
        let location = String(value[..<range.lowerBound])
        let argument = String(value[range.upperBound...])
        guard !location.isEmpty else { throw ValidationError("--over '\(value)' names no pack before ,\(source)=") }
        guard !argument.isEmpty else {
            throw ValidationError(
                "--over '\(value)': ,\(source)= needs a \(source == "password-env" ? "NAME" : "PATH")")
        }
        if credentialSources.contains(where: { argument.contains(",\($0)=") }) {
            throw ValidationError("--over '\(value)': give one credential per pack")
        }
        return Pack(location: location, credentials: try CredentialOptions.parse(["--\(source)", argument]))
    }

    /// The help of the PACK argument of the commands that read sets.
    static let packHelp = ArgumentHelp(
        """
        The pack: a path or an http(s) URL. Or a release, read as the set of its packs in order: an installed \
        release's directory (install RELEASE --into DIR), or a release manifest (a .json file whose packs are \
        beside it, or its URL). With --trust, the manifest must be signed by a trusted key and not expired, and \
        each pack must be the one it names (size and SHA-256), exit 5 otherwise; without, sizes are compared.
        """)
}

/// What a command reads: one pack, or a set of several.
struct OpenedPacks {
    /// The reader: the pack itself, or the set.
    var reader: any PackReader
    /// The set, when more than one pack was given.
    var set: PackSet?
    /// Every pack's byte source, bottom first.
    var sources: [any ByteSource]
    /// The release read, when PACK was one.
    var release: ReleaseManifest? = nil

    /// The packs' names, bottom first, when a set was read (the release's pack names, then --over's).
    var names: [String] { self.set?.members.map(\.name) ?? [] }
}

extension CredentialOptions {
    /// Opens `base` alone (as before: no pack names in the output); or `base` and `set.over` as
    /// one ``PackSet`` whose packs are named as given on the command line (without a credential
    /// suffix); or, when `base` is a release (``ReleaseInput``), its packs (named as the manifest
    /// names them) and then `set.over`. An `--over` pack with a credential of its own is opened
    /// with it; every other pack with this one.
    func open(
        _ base: String, set: PackSetOptions, forData: Bool, trust: TrustOptions, network: NetworkOptions
    ) throws -> OpenedPacks {
        let release = try ReleaseInput.load(base, trust: trust, network: network)
        let over = try set.packs()
        if over.isEmpty, release == nil {
            let (reader, source) = try openPack(base, forData: forData, trust: trust, network: network)
            return OpenedPacks(reader: reader, set: nil, sources: [source])
        }
        var members: [PackSet.Member] = []
        var sources: [any ByteSource] = []
        typealias Named = (name: String, location: String, pinned: ReleaseManifest.Pack?, own: CredentialOptions?)
        let named: [Named] =
            (release.map { input in zip(input.manifest.packs, input.locations).map { ($0.name, $1, $0, nil) } }
                ?? [(base, base, nil, nil)]) + over.map { ($0.location, $0.location, nil, $0.credentials) }
        for pack in named {
            let opened: (reader: any PackReader, source: any ByteSource)
            do {
                // A pack's own password variable was named on purpose: unset is an error, not "no password".
                if let own = pack.own, try own.given() == nil {
                    throw AssetPackError(.missingPassword, "$\(own.passwordEnv) is not set or empty")
                }
                opened = try (pack.own ?? self).openPack(
                    pack.location, forData: forData, trust: trust, network: network)
            } catch let error as AssetPackError {
                throw error.naming(pack: pack.name)
            }
            if let pinned = pack.pinned {
                try ReleaseInput.check(opened.source, is: pinned, at: pack.location, hashing: !trust.files.isEmpty)
            }
            members.append(PackSet.Member(name: pack.name, reader: opened.reader))
            sources.append(opened.source)
        }
        let packSet = try PackSet(members)
        return OpenedPacks(reader: packSet, set: packSet, sources: sources, release: release?.manifest)
    }
}

/// A release given where a command takes a pack, read as a set of its packs in order: an
/// installed release's directory (its `.assetpack.release`, packs under their stored names), a
/// release manifest file (a local file starting with `{`; packs relative to its folder, or
/// URLs), or a manifest URL ending in `.json`.
struct ReleaseInput {
    /// The manifest, parsed and its signature checked (under --trust's keys when given).
    var manifest: ReleaseManifest
    /// Where each pack is (a path or a URL), in the manifest's order.
    var locations: [String]

    /// The release at `path`, or `nil` when `path` is not one (a pack).
    /// - Throws: As ``ReleaseManifest/parse(_:trustedKeys:)``; `.untrusted` for an expired
    ///   release with --trust; `.invalidArgument` for a directory holding no installed release.
    static func load(_ path: String, trust: TrustOptions, network: NetworkOptions) throws -> ReleaseInput? {
        let document: Data
        let base: String
        var installed: String?
        if AssetPacks.isRemote(path) {
            guard URL(string: path)?.path.lowercased().hasSuffix(".json") == true else { return nil }
            let limits = try network.limits()
            let source = try AssetPacks.source(location: path, limits: limits, transfer: try network.transfer())
            guard source.size <= UInt64(ReleaseManifest.maxDocumentSize) else {
                throw AssetPackError(.integrityFailure, "\(path) is too large to be a release manifest")
            }
            document = Data(try source.bytes(at: 0, count: Int(source.size)))
            base = path
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
            if isDirectory.boolValue {
                let current = path + "/" + PrivateInstaller.currentReleaseName
                guard FileManager.default.fileExists(atPath: current) else {
                    throw AssetPackError(
                        .invalidArgument,
                        "\(path) is a directory with no installed release in it (no \(PrivateInstaller.currentReleaseName))"
                    )
                }
                document = try PrivateInstaller.readManifest(current)
                installed = path
            } else {
                // A regular file's first byte only: opening a FIFO would wait for a writer.
                guard (try? FileSystem.stat(path))?.kind == .regular, let handle = FileHandle(forReadingAtPath: path),
                    let first = try? handle.read(upToCount: 1), first.first == UInt8(ascii: "{")
                else { return nil }
                try? handle.close()
                document = try PrivateInstaller.readManifest(path)
            }
            base = PrivateInstaller.folder(of: path)
        }
        let keys = try trust.keys()
        let manifest = try ReleaseManifest.parse(document, trustedKeys: keys)
        if !keys.isEmpty { try manifest.release.checkNotExpired(now: Date()) }
        let locations = manifest.packs.map { pack in
            installed.map { $0 + "/" + pack.storedName } ?? PrivateInstaller.location(of: pack.file, base: base)
        }
        return ReleaseInput(manifest: manifest, locations: locations)
    }

    /// Refuses a pack that is not the one the release names (mix-and-match): its size, and with
    /// `hashing` (--trust) its SHA-256 over every byte of `source`.
    /// - Throws: `.untrusted` naming the pack.
    static func check(_ source: any ByteSource, is pack: ReleaseManifest.Pack, at location: String, hashing: Bool)
        throws
    {
        guard source.size == pack.size else { throw pack.mismatch(location, size: source.size, sha256: nil) }
        guard hashing else { return }
        let hasher = SHA256Hasher()
        var offset: UInt64 = 0
        while offset < source.size {
            let count = Int(min(UInt64(1 << 20), source.size - offset))
            hasher.update(try source.bytes(at: offset, count: count))
            offset += UInt64(count)
        }
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        guard digest == pack.sha256 else { throw pack.mismatch(location, size: source.size, sha256: digest) }
    }
}
