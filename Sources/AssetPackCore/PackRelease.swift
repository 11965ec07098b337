import Foundation

/// What a publisher's signature states about a pack besides its bytes: which pack it is, which
/// release, until when it may be trusted, and its size (docs/SECURITY.md, "Rollback and freeze").
///
/// A reader given trusted keys exposes it as ``PackReader/release`` once the signature verified.
/// A pack signed by a build before signature block version 2 has a *legacy* release: no name, no
/// size, version 0 and no expiry.
public struct PackRelease: Sendable, Hashable {
    /// The pack's name as its publisher signed it (by default the output file's name without its
    /// extension), 1 to ``maxNameBytes`` bytes of UTF-8; `nil` for a legacy (version 1) signature.
    public var name: String?
    /// The release number the publisher raises with each release. 0: unversioned (a pack signed
    /// without a version, and every legacy signature).
    public var version: UInt64
    /// When the signature stops being trusted (whole seconds); `nil`: never.
    public var expires: Date?
    /// The whole pack file's size in bytes, as signed; `nil` for a legacy signature.
    public var size: UInt64?

    /// The longest name, in UTF-8 bytes.
    public static let maxNameBytes = 255

    /// A release.
    public init(name: String?, version: UInt64, expires: Date? = nil, size: UInt64? = nil) {
        self.name = name
        self.version = version
        self.expires = expires
        self.size = size
    }

    /// What a signature block of version 1 states: nothing but the bytes.
    public static let legacy = PackRelease(name: nil, version: 0)

    /// Whether this is a version-1 signature's release (no name, no version, no expiry, no size).
    public var isLegacy: Bool { name == nil }

    /// ``expires`` as the unix seconds a signature block stores: 0 for none.
    package var expirySeconds: UInt64 {
        guard let expires else { return 0 }
        return UInt64(max(1, expires.timeIntervalSince1970.rounded(.down)))
    }

    /// The expiry stored as `seconds` (0: none).
    package static func expiry(seconds: UInt64) -> Date? {
        seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The name as a message should show it: escaped like an entry path, or `(unnamed)`.
    package var printableName: String { name.map(EntryPath.printable) ?? "(unnamed)" }

    /// An instant in ISO 8601 UTC, to the second: `2026-05-01T00:00:00Z`.
    package static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// One line for people: `NAME version N, expires DATE` (or `never expires`).
    package var summary: String {
        if isLegacy { return "a version-1 signature (no name, version or expiry)" }
        return "\(printableName) version \(version), "
            + (expires.map { "expires \(Self.iso8601($0))" } ?? "never expires")
    }

    /// Checks a name a publisher asks to sign: 1 to ``maxNameBytes`` bytes of UTF-8, with no
    /// control or bidirectional-override characters (it is shown in messages).
    /// - Throws: `.invalidArgument`.
    package static func checkName(_ name: String) throws {
        let bytes = name.utf8.count
        guard bytes >= 1, bytes <= maxNameBytes else {
            throw AssetPackError(
                .invalidArgument, "a pack's signed name is 1 to \(maxNameBytes) bytes of UTF-8, not \(bytes)")
        }
        guard EntryPath.printable(name) == name else {
            throw AssetPackError(
                .invalidArgument, "a pack's signed name may not hold control or bidirectional-override characters")
        }
    }

    /// Refuses a release whose expiry is not after `now`.
    /// - Throws: `.untrusted`, naming the pack and the expiry.
    package func checkNotExpired(now: Date) throws {
        guard let expires, expires <= now else { return }
        throw AssetPackError(
            .untrusted,
            "the publisher's signature of \(printableName) version \(version) expired at \(Self.iso8601(expires))")
    }

    /// The default signed name of a pack written to `output`: its file name without the last extension.
    package static func defaultName(for output: String) -> String {
        let file = URL(fileURLWithPath: output).lastPathComponent
        let stem = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        let name = EntryPath.printable(stem.isEmpty ? file : stem)
        // Keep at most maxNameBytes bytes, cut on a character boundary.
        var out = ""
        for character in name {
            guard out.utf8.count + character.utf8.count <= maxNameBytes else { break }
            out.append(character)
        }
        return out
    }
}
