import Foundation

// The key vocabulary of publisher-signed packs: the two key types, their one-line text forms and
// their files. Parsing and formatting live here; what needs OpenSSL (generating a key, deriving
// the public key, signing, verifying) is a set of extensions on these same types in
// AssetPackCrypto, and loading a signing key file, which derives its public key, is in the
// AssetPack module (docs/ARCHITECTURE.md, "Publisher keys").

/// A publisher's public key: the Ed25519 key an app trusts packs to be signed with.
///
/// An app holds only this key. A pack that the matching ``PublisherSigningKey`` did not sign is
/// refused, whoever knows the pack's password (the password ships inside the app, so it cannot
/// tell the publisher's packs from modified ones).
///
/// Its text form is one line, `assetpack-ed25519-pub:` followed by the base64 of the key's 32
/// bytes, as `assetpack keygen --out NAME` writes it to `NAME.pub`. Paste that line into the
/// app's source:
///
/// ```swift
/// let publisher = try PublisherKey(text: "assetpack-ed25519-pub:…")
/// ```
public struct PublisherKey: Sendable, Hashable, CustomStringConvertible {
    /// How the text form starts.
    package static let textPrefix = "assetpack-ed25519-pub:"
    /// Bytes of an Ed25519 public key.
    package static let size = 32

    /// The key's 32 bytes (RFC 8032's encoding of the curve point).
    package let rawRepresentation: [UInt8]

    /// The key with these 32 bytes. Whether they are a point on the curve is checked when a
    /// signature is verified: a key that is not verifies nothing.
    /// - Throws: `.invalidArgument` unless `bytes` is 32 bytes.
    package init(rawRepresentation bytes: [UInt8]) throws {
        guard bytes.count == Self.size else {
            throw AssetPackError(.invalidArgument, "an Ed25519 public key is 32 bytes, not \(bytes.count)")
        }
        rawRepresentation = bytes
    }

    /// Parses the one-line text form, `assetpack-ed25519-pub:<base64 of 32 bytes>`, as in a
    /// `.pub` file.
    ///
    /// Whitespace and line breaks around the line are ignored; the base64 must be exactly what
    /// ``text`` prints (44 characters, standard alphabet, one `=`).
    /// - Parameter text: The line, typically pasted from `NAME.pub`.
    /// - Throws: ``AssetPackError`` with code `invalidArgument` when `text` is not a public key
    ///   (the message never repeats `text`, which might be a private key pasted by mistake).
    public init(text: String) throws {
        let problem: String
        let utf8 = Array(text.utf8)
        switch utf8.withUnsafeBytes({ KeyText.decode($0, prefix: Self.textPrefix, size: Self.size) }) {
        case .key(let bytes):
            self.rawRepresentation = bytes
            return
        case .otherPrefix(PublisherSigningKey.textPrefix):
            problem = "this is a private signing key, not a public key: never put it in an app"
        case .otherPrefix, .malformed:
            problem = "not an AssetPack public key"
        }
        throw AssetPackError(.invalidArgument, "\(problem) (expected \(Self.textPrefix)<base64 of 32 bytes>)")
    }

    /// The one-line text form: `assetpack-ed25519-pub:` and the base64 of the key's 32 bytes.
    public var text: String { Self.textPrefix + Data(rawRepresentation).base64EncodedString() }

    /// A short identifier for messages and logs: the first 8 of the key's bytes in hex
    /// (16 characters).
    ///
    /// Two different keys can share a fingerprint only by an attacker's design or by chance (one
    /// in 2⁶⁴). Trust decisions compare the whole key, never the fingerprint.
    public var fingerprint: String {
        rawRepresentation.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The text form, as ``text``.
    public var description: String { text }

    /// Reads a public key file (`NAME.pub` from `assetpack keygen`): the text form on one line.
    /// - Parameter url: The file.
    /// - Throws: ``AssetPackError`` with code `invalidArgument` naming the file when it does not
    ///   hold a public key, `io` when it cannot be read.
    public static func load(from url: URL) throws -> PublisherKey {
        let path = url.path
        return try KeyText.readKeyFile(path, what: "public key file") { content in
            switch KeyText.decode(content, prefix: textPrefix, size: size) {
            case .key(let bytes): return try PublisherKey(rawRepresentation: bytes)
            case .otherPrefix(PublisherSigningKey.textPrefix):
                throw AssetPackError(
                    .invalidArgument,
                    "\(path) holds a private signing key, not a public key (give the .pub file)")
            case .otherPrefix, .malformed:
                throw AssetPackError(
                    .invalidArgument,
                    "\(path) is not an AssetPack public key file (expected one line \(textPrefix)<base64 of 32 bytes>)")
            }
        }
    }

    /// Writes the text form and a newline to `path` atomically, mode 0644 less the umask.
    /// Replaces what is there: the caller decides whether it may.
    /// - Throws: What `AtomicFile.write` throws (`.invalidArgument` for a path in a missing
    ///   folder or naming a directory, `.io` for a failed write).
    package func write(to path: String) throws {
        let line = Array((text + "\n").utf8)
        try AtomicFile.write(path, mode: 0o644) { fd in
            try line.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: path) }
        }
    }
}

/// A publisher's private signing key: the Ed25519 key that signs packs.
///
/// It stays with the publisher, out of the repository and out of the app; apps hold the
/// matching ``PublisherKey``. `assetpack keygen --out NAME` creates the pair and writes this key
/// to `NAME.key` (mode 0600): one line, `assetpack-ed25519-key:` followed by the base64 of the
/// key's 32-byte seed (RFC 8032's "private key").
///
/// The seed is kept in memory of its own, wiped when the last copy of the key is released, and
/// never printed: `description` and `dump` show no key bytes.
///
/// Load one with `load(from:)`.
public struct PublisherSigningKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// How the key file's line starts.
    package static let textPrefix = "assetpack-ed25519-key:"
    /// Bytes of an Ed25519 seed.
    package static let seedSize = 32

    private let storage: SecretBytes

    /// The public key that verifies this key's signatures: what apps that accept packs signed
    /// with this key hold. Derived from the seed once, when the key is made.
    public let publicKey: PublisherKey

    /// The key with this 32-byte seed (copied; the caller wipes its own copy) and the public key
    /// derived from it. Core cannot derive a public key (that is OpenSSL's, in AssetPackCrypto):
    /// every other module makes keys through AssetPackCrypto's `init(seed:)` and `generate()`,
    /// which derive `publicKey` and call this.
    /// - Throws: `.invalidArgument` unless `seed` is 32 bytes.
    package init(seed: UnsafeRawBufferPointer, derivedPublicKey publicKey: PublisherKey) throws {
        guard seed.count == Self.seedSize else {
            throw AssetPackError(.invalidArgument, "an Ed25519 private key is 32 bytes, not \(seed.count)")
        }
        storage = SecretBytes(copying: seed)
        self.publicKey = publicKey
    }

    /// Calls `body` with the 32-byte seed, in place: nothing is copied.
    package func withSeed<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage.bytes))
    }

    /// Reads a private key file (`NAME.key` from `assetpack keygen`) and calls `body` with its
    /// 32-byte seed, wiped when `body` returns; `load(from:)` (AssetPack) makes the key from it.
    /// - Parameter url: The file.
    /// - Throws: ``AssetPackError`` with code `invalidArgument` naming the file when it does not
    ///   hold a private signing key (the message never repeats the file's content), `io` when it
    ///   cannot be read; what `body` throws.
    package static func readSeed<R>(from url: URL, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let path = url.path
        return try KeyText.readKeyFile(path, what: "signing key file") { content in
            var decoded = KeyText.decode(content, prefix: textPrefix, size: seedSize)
            defer { decoded.wipe() }
            switch decoded {
            case .key(let seed): return try seed.withUnsafeBytes { try body($0) }
            case .otherPrefix(PublisherKey.textPrefix):
                throw AssetPackError(
                    .invalidArgument, "\(path) holds a public key, not a private signing key (give the .key file)")
            case .otherPrefix, .malformed:
                throw AssetPackError(
                    .invalidArgument,
                    "\(path) is not an AssetPack signing key file (expected one line \(textPrefix)<base64 of 32 bytes>)"
                )
            }
        }
    }

    /// Writes the key file to `path` atomically, mode 0600 whatever the umask: the prefix, the
    /// base64 of the seed and a newline. Replaces what is there: the caller decides whether it may.
    /// - Throws: What `AtomicFile.write` throws (`.invalidArgument` for a path in a missing
    ///   folder or naming a directory, `.io` for a failed write).
    package func write(to path: String) throws {
        var line = Data(Self.textPrefix.utf8)
        var raw = Data(storage.bytes)
        var encoded = raw.base64EncodedData()
        line.append(encoded)
        line.append(UInt8(ascii: "\n"))
        defer {
            raw.withUnsafeMutableBytes { wipeMemory($0) }
            encoded.withUnsafeMutableBytes { wipeMemory($0) }
            line.withUnsafeMutableBytes { wipeMemory($0) }
        }
        try AtomicFile.write(path, mode: 0o600, exactMode: true) { fd in
            try line.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: path) }
        }
    }

    /// Says what it is and nothing of the key.
    public var description: String { "PublisherSigningKey(<secret>)" }

    /// No children: `dump` and debuggers show no key bytes.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// 32 bytes of secret in an allocation of their own, wiped when released. Never mutated after
/// `init`, so sharing it between threads is safe.
private final class SecretBytes: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer

    init(copying source: UnsafeRawBufferPointer) {
        bytes = .allocate(byteCount: source.count, alignment: 16)
        bytes.copyMemory(from: source)
    }

    deinit {
        wipeMemory(bytes)
        bytes.deallocate()
    }
}

/// The text forms of the two key types: `<prefix><base64 of the key bytes>`.
enum KeyText {
    /// The most bytes a key file may hold; a key line is under 70.
    static let maxFileSize = 4096

    enum Decoded {
        case key([UInt8])
        /// Another AssetPack key form (the prefix up to and including its colon).
        case otherPrefix(String)
        case malformed

        /// Overwrites the decoded key bytes.
        mutating func wipe() {
            if case .key(var bytes) = self {
                self = .malformed
                bytes.withUnsafeMutableBytes { wipeMemory($0) }
            }
        }
    }

    /// Decodes `text` (ASCII whitespace around it ignored) as `prefix` followed by the canonical
    /// base64 of exactly `size` bytes. Wipes its own temporary copies of the key bytes.
    static func decode(_ text: UnsafeRawBufferPointer, prefix: String, size: Int) -> Decoded {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = text.firstIndex(where: { !isSpace($0) }),
            let last = text.lastIndex(where: { !isSpace($0) })
        else { return .malformed }
        let line = text[first...last]
        let prefixBytes = Array(prefix.utf8)
        guard line.starts(with: prefixBytes) else {
            for other in [PublisherKey.textPrefix, PublisherSigningKey.textPrefix]
            where line.starts(with: Array(other.utf8)) {
                return .otherPrefix(other)
            }
            return .malformed
        }
        var encoded = Data(line.dropFirst(prefixBytes.count))
        defer { encoded.withUnsafeMutableBytes { wipeMemory($0) } }
        guard var bytes = Data(base64Encoded: encoded) else { return .malformed }
        defer { bytes.withUnsafeMutableBytes { wipeMemory($0) } }
        // One key, one text: no other padding, line breaks or non-zero trailing bits.
        var canonical = bytes.base64EncodedData()
        defer { canonical.withUnsafeMutableBytes { wipeMemory($0) } }
        guard bytes.count == size, canonical == encoded else { return .malformed }
        return .key(Array(bytes))
    }

    /// Reads a small key file and calls `body` with its bytes, then wipes them.
    /// - Throws: `.io` naming the file when it cannot be opened or read, `.invalidArgument` when
    ///   it is larger than ``maxFileSize``; what `body` throws.
    static func readKeyFile<R>(_ path: String, what: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let fd: FileDescriptor
        do { fd = try .open(path, .readOnly) } catch { throw error.io("cannot open \(what) \(path)") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxFileSize + 1, alignment: 16)
        defer {
            wipeMemory(buffer)
            buffer.deallocate()
        }
        let count: Int
        do { count = try fd.closeAfter { () throws(Errno) in try fd.readFully(into: buffer) } } catch {
            throw error.io("cannot read \(what) \(path)")
        }
        guard count <= maxFileSize else {
            throw AssetPackError(.invalidArgument, "\(path) is too large to be an AssetPack \(what)")
        }
        return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }
}
