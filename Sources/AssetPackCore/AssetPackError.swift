import Foundation

/// The one error type every AssetPack API throws.
///
/// `code` is stable and is what programs should switch on; `message` is for people.
/// `path` names the entry involved, where there is one; `pack` the pack (its path or URL, or its
/// name in a set), where the API that threw knew it. As a `LocalizedError` its
/// `localizedDescription` is one line an app can show: pack, entry and message. `underlying` carries the
/// lower-level code behind the error when there is one, tagged with where it comes from:
/// ``Underlying/errno(_:)`` for a failed system call, ``Underlying/libzip(_:)`` for libzip.
public struct AssetPackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable error category.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable string form (for logs and JSON).
        public let rawValue: String
        /// Creates a code from its stable string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The textual form, same as `rawValue`.
        public var description: String { rawValue }

        /// The pack is encrypted and no password or key was given.
        public static let missingPassword = Code(rawValue: "missing-password")
        /// The password or key does not open the pack (or entry).
        public static let wrongPassword = Code(rawValue: "wrong-password")
        /// No entry with the requested path exists.
        public static let entryNotFound = Code(rawValue: "entry-not-found")
        /// Data failed a check: CRC, MAC/tag, or a corrupt or truncated structure.
        public static let integrityFailure = Code(rawValue: "integrity-failure")
        /// The file is not a pack, or uses a method or version this build cannot read.
        public static let unsupportedFormat = Code(rawValue: "unsupported-format")
        /// A configured safety limit (entry count, size, ratio, KDF cost) was exceeded.
        public static let limitExceeded = Code(rawValue: "limit-exceeded")
        /// The caller passed something unusable (bad source tree, bad path, bad option).
        public static let invalidArgument = Code(rawValue: "invalid-argument")
        /// The operating system refused a file operation.
        public static let io = Code(rawValue: "io")
        /// Trusted publisher keys were given and the pack is not signed by one of them, or its
        /// bytes differ from what the publisher signed (docs/SECURITY.md).
        public static let untrusted = Code(rawValue: "untrusted")
        /// A remote pack's server failed or refused: an HTTP error, no `Range` support, the
        /// file changed while it was read, or no answer after the retries (docs/REMOTE.md).
        public static let remote = Code(rawValue: "remote")
    }

    /// The lower-level code behind an error, by where it comes from.
    public enum Underlying: Sendable, Hashable, CustomStringConvertible {
        /// A system error number (`ENOENT`, `ENOSPC`, …) from a failed file-system call.
        case errno(Int32)
        /// A libzip error code (`ZIP_ER_*`); the errno libzip recorded with it, if any, is in
        /// the message.
        case libzip(Int32)

        /// `errno 2`, `libzip 19`.
        public var description: String {
            switch self {
            case .errno(let code): "errno \(code)"
            case .libzip(let code): "libzip \(code)"
            }
        }
    }

    /// The stable error category.
    public var code: Code
    /// A one-line human-readable explanation.
    public var message: String
    /// The entry path involved, if any.
    public var path: String?
    /// The lower-level code behind the error (an errno, a libzip error), if any.
    public var underlying: Underlying?
    /// The pack involved (its path or URL, or its name in a ``PackSet``), if known.
    public var pack: String?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The stable category.
    ///   - message: A one-line explanation.
    ///   - path: The entry path involved, if any.
    ///   - underlying: The lower-level code behind it, if any.
    public init(_ code: Code, _ message: String, path: String? = nil, underlying: Underlying? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.underlying = underlying
    }

    /// Creates an error whose underlying code is an errno (`underlying` was an untyped `Int32`
    /// before ``Underlying`` said where a code comes from).
    @available(*, deprecated, message: "pass underlying: .errno(code) or .libzip(code)")
    public init(_ code: Code, _ message: String, path: String? = nil, underlying: Int32) {
        self.init(code, message, path: path, underlying: .errno(underlying))
    }

    /// `message`, prefixed with the entry path when there is one; control characters in the path
    /// are escaped (``EntryPath/printable(_:)``), so the description is always one line.
    public var description: String {
        if let path { return "\(EntryPath.printable(path)): \(message)" }
        return message
    }

    /// With trusted publisher keys, a file this build cannot read as a pack is not a pack signed
    /// by one of them: `.unsupportedFormat` becomes `.untrusted` (the CLI's exit 5), with the
    /// reason kept. Other errors are returned as they are.
    package func untrustedIfUnreadable(trusting keys: [PublisherKey]) -> AssetPackError {
        guard !keys.isEmpty, code == .unsupportedFormat else { return self }
        return AssetPackError(.untrusted, "\(message) (trusted keys were given: only a pack they signed is accepted)")
    }

    /// Returns a copy of this error naming `path`, unless it already names one.
    public func naming(_ path: String) -> AssetPackError {
        var copy = self
        if copy.path == nil { copy.path = path }
        return copy
    }

    /// Returns a copy of this error naming the pack `pack`, unless it already names one.
    public func inPack(_ pack: String) -> AssetPackError {
        var copy = self
        if copy.pack == nil { copy.pack = pack }
        return copy
    }
}

extension AssetPackError: LocalizedError {
    /// One line for people: the pack (unless the message already starts with it), the entry, and
    /// the message, as `"assets.pack: levels/1.json: wrong password"`. Not localised: the text is English.
    public var errorDescription: String? {
        guard let pack, !message.hasPrefix("\(pack): ") else { return description }
        return "\(EntryPath.printable(pack)): \(description)"
    }
}
