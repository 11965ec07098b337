import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a pack's entries (or a set's: PACK with --over packs).",
            discussion: """
                The table goes to stdout, the summary line to stderr. Control characters in names are escaped. \
                With --over or a release, the PACK column (and "pack" in --json) names the pack that serves each \
                entry; for a release, --json adds "release_manifest": its name, version, expiry and packs.
                """
        )

        @Argument(help: PackSetOptions.packHelp) var pack: String
        @Option(
            help: ArgumentHelp(
                "List only the entries below this folder ('/'-separated, at any depth; 'a' holds 'a/b', not 'ab').",
                valueName: "DIR"))
        var folder: String?
        @Flag(help: "Print JSON instead of a table (names exact, not escaped).") var json = false
        @OptionGroup var set: PackSetOptions
        @OptionGroup var quiet: QuietOption
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions
        @OptionGroup var network: NetworkOptions

        func run() throws {
            try reporting {
                let opened = try credentials.open(pack, set: set, forData: false, trust: trust, network: network)
                let reader = opened.reader
                // A listing is never of a damaged index, nor of a set that breaks its rules.
                try reader.checkIndex()
                let entries = folder.map { reader.entries(under: $0) } ?? Array(reader.entries)
                if json {
                    let document = ListDocument(
                        format: reader.format.rawValue, kdf: reader.passwordKDF.map(KDFDocument.init),
                        entries: entries.map(ListDocument.Entry.init),
                        release: reader.release.map(ReleaseDocument.init),
                        release_manifest: opened.release.map(ReleaseManifestDocument.init))
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    print(String(decoding: try encoder.encode(document), as: UTF8.self))
                    return
                }
                // A set: which pack serves each entry.
                let packColumn = PackColumn(opened.names)
                print(
                    ([
                        pad("SIZE", 12, right: true), pad("STORED", 12, right: true), pad("METHOD", 8),
                        pad("ENCRYPTION", 10), pad("CRC32", 8),
                    ] + packColumn.cell("PACK") + ["PATH"]).joined(separator: " "))
                for e in entries {
                    let row =
                        [
                            pad(String(e.size), 12, right: true), pad(String(e.storedSize), 12, right: true),
                            pad(e.compression.rawValue, 8), pad(e.encryption.rawValue, 10),
                            pad(e.crc32.map(crcHex) ?? "-", 8),
                        ] + packColumn.cell(e.pack) + [EntryPath.printable(e.path)]
                    print(row.joined(separator: " "))
                }
                // Declared sizes: a hostile index may declare sums past 64 bits.
                let total = checkedTotal(entries.lazy.map(\.size)).map { "\($0)" } ?? "more than \(UInt64.max)"
                quiet.say(
                    "\(plural(entries.count, "entry", "entries")), \(total) bytes, format \(reader.format.rawValue)"
                        + (opened.names.isEmpty ? "" : ", \(plural(opened.names.count, "pack", "packs"))")
                        + (opened.release.map { "; release \($0.release.summary)" } ?? "")
                        + (reader.release.map { "; signed release: \($0.summary)" } ?? ""))
            }
        }
    }
}

struct ListDocument: Encodable {
    struct Entry: Encodable {
        var path: String
        var size: UInt64
        var stored_size: UInt64
        var compression: String
        var encryption: String
        var crc32: String?
        /// With --over: the pack that serves the entry (absent for a single pack).
        var pack: String?

        init(_ e: EntryInfo) {
            path = e.path
            size = e.size
            stored_size = e.storedSize
            compression = e.compression.rawValue
            encryption = e.encryption.rawValue
            crc32 = e.crc32.map(crcHex)
            pack = e.pack
        }
    }
    var format: String
    /// The password's key derivation, run once per open (a container with a password; absent otherwise).
    var kdf: KDFDocument?
    var entries: [Entry]
    /// With --trust: what the verified signature states.
    var release: ReleaseDocument?
    /// When PACK is a release (a manifest or an installed release's directory): its name,
    /// version and packs.
    var release_manifest: ReleaseManifestDocument?
}

/// A container's password KDF in `list --json`: `{"name": "scrypt", "log2_n", "r", "p"}` or
/// `{"name": "pbkdf2-sha256", "iterations"}`, as its header records it.
struct KDFDocument: Encodable {
    var name: String
    var log2_n: Int?
    var r: Int?
    var p: Int?
    var iterations: Int?

    init(_ kdf: ContainerKDF) {
        switch kdf {
        case .scrypt(let logN, let r, let p):
            (name, log2_n, self.r, self.p) = ("scrypt", Int(logN), Int(r), Int(p))
        case .pbkdf2SHA256(let n):
            (name, iterations) = ("pbkdf2-sha256", Int(n))
        }
    }
}

/// The PACK column of `list` and `verify` over a set: which pack each row's entry is in, as wide as
/// the longest pack name (escaped); no column for a single pack.
struct PackColumn {
    private let width: Int

    init(_ names: [String]) {
        width = names.isEmpty ? 0 : max(4, names.map { EntryPath.printable($0).count }.max()!)
    }

    /// The cell for the pack `name` (or the header, "PACK"): none for a single pack.
    func cell(_ name: String?) -> [String] { width == 0 ? [] : [pad(EntryPath.printable(name ?? ""), width)] }
}

/// A release manifest in `list --json`: its name, version, expiry (absent when it has none) and
/// packs in order (bottom first), each with its name, version, size and SHA-256.
struct ReleaseManifestDocument: Encodable {
    struct Pack: Encodable {
        var name: String
        var version: UInt64
        var size: UInt64
        var sha256: String
    }
    var name: String
    var version: UInt64
    var expires: String?
    var packs: [Pack]

    init(_ manifest: ReleaseManifest) {
        name = manifest.name
        version = manifest.version
        expires = manifest.expires.map(PackRelease.iso8601)
        packs = manifest.packs.map { Pack(name: $0.name, version: $0.version, size: $0.size, sha256: $0.sha256) }
    }
}

/// A signed release in `list --json` and `verify --json`: `name` and `size` are absent for a
/// version-1 signature (version 0), `expires` (ISO 8601 UTC) for one that never expires.
struct ReleaseDocument: Encodable {
    var name: String?
    var version: UInt64
    var expires: String?
    var size: UInt64?
    /// The signature block's version: 1 or 2.
    var signature_version: Int

    init(_ release: PackRelease) {
        name = release.name
        version = release.version
        expires = release.expires.map(PackRelease.iso8601)
        size = release.size
        signature_version = release.isLegacy ? 1 : 2
    }
}

func crcHex(_ value: UInt32) -> String {
    String(format: "%08x", value)
}
