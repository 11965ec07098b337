import AssetPackCore
import AssetPackCrypto
import Foundation

/// A signed release: the packs an app should hold, in order, each pinned by its size and
/// SHA-256, under a release name and version the publisher raises with every release
/// (docs/FORMAT.md, "Release manifest"; <doc:Security>).
///
/// The document is JSON in one canonical form, which ``document(signedWith:)`` writes and
/// ``parse(_:trustedKeys:)`` requires byte for byte: a field unknown, repeated, reordered or
/// spaced otherwise is refused, so what a signature covers is what every reader sees. The
/// signature (Ed25519, the publisher's key) covers the context `"AssetPack release v1\0"`
/// followed by the document without its `signature` line.
///
/// An app installs a release with `PrivateInstaller.installRelease(at:)` (or, from a URL,
/// `installRelease(from:)` in AssetPackRemote), which refuses a pack that is not the one named
/// here (mix-and-match) and a release older than the one installed (rollback).
public struct ReleaseManifest: Sendable, Hashable {
    /// One pack of a release.
    public struct Pack: Sendable, Hashable {
        /// The pack's name as its publisher signed it (its signature block's release name).
        public var name: String
        /// The pack's signed release version.
        public var version: UInt64
        /// The whole pack file's size in bytes.
        public var size: UInt64
        /// The SHA-256 of the whole pack file, 64 lowercase hex digits.
        public var sha256: String
        /// Where the pack is: a path relative to the manifest (`/`-separated, no `.` or `..`),
        /// or an `http://` or `https://` URL.
        public var file: String

        /// A pack entry.
        public init(name: String, version: UInt64, size: UInt64, sha256: String, file: String) {
            self.name = name
            self.version = version
            self.size = size
            self.sha256 = sha256
            self.file = file
        }

        /// The error for a file at `location` that is not this pack (mix-and-match): its `size`,
        /// or its `sha256` when known.
        package func mismatch(_ location: String, size: UInt64, sha256: String?) -> AssetPackError {
            let shown = EntryPath.printable(name)
            let what =
                sha256.map { "its SHA-256 is \($0.prefix(16))…, the release names \(self.sha256.prefix(16))…" }
                ?? "it is \(size) bytes, the release names \(self.size)"
            return AssetPackError(
                .untrusted,
                "pack \(shown) (\(EntryPath.printable(location))) is not the pack the release names: \(what)")
        }

        /// The file name an installer stores this pack under: the stem of `file`'s last
        /// component (letters, digits, `.`, `_`, `-`; others become `_`), `-`, the first 16 hex
        /// digits of the SHA-256, and the extension. Another version of a pack is another file,
        /// so a release is switched to by one rename of the file that names its packs.
        public var storedName: String {
            let last = file.split(separator: "/").last.map(String.init) ?? file
            let dot = last.lastIndex(of: ".").flatMap { $0 == last.startIndex ? nil : $0 }
            let stem = dot.map { String(last[..<$0]) } ?? last
            let ext = dot.map { String(last[$0...]) } ?? ""
            func safe(_ text: String, limit: Int) -> String {
                String(
                    text.unicodeScalars.prefix(limit).map { scalar -> Character in
                        scalar.isASCII
                            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                                || "._-".unicodeScalars.contains(scalar))
                            ? Character(scalar) : "_"
                    })
            }
            var head = safe(stem, limit: 100)
            if head.hasPrefix(".") || head.isEmpty { head = "_" + head }
            return head + "-" + sha256.prefix(16) + safe(ext, limit: 16)
        }
    }

    /// The release's name (1 to 255 bytes of UTF-8, no control characters).
    public var name: String
    /// The release number the publisher raises with every release.
    public var version: UInt64
    /// When the release stops being trusted (whole seconds); `nil`: never.
    public var expires: Date?
    /// The packs, in order (a later pack overrides an earlier one where a set reads them as one).
    public var packs: [Pack]
    /// The key that signed the document (set by ``parse(_:trustedKeys:)``).
    public internal(set) var publisher: PublisherKey?

    /// The format version written in the `assetpack-release` field.
    package static let formatVersion = 1
    /// The largest document read, in bytes.
    package static let maxDocumentSize = 1 << 20
    /// The most packs a release may name.
    package static let maxPacks = 4096
    /// What the signature signs before the document (never a prefix of a pack signature's context).
    package static let context = Array("AssetPack release v1\0".utf8)

    /// A release, checked: names and files well-formed, SHA-256s 64 lowercase hex digits, at
    /// least one pack, and no pack named twice (by name, by file or by SHA-256).
    /// - Throws: `.invalidArgument` naming what is wrong (and the pack).
    public init(name: String, version: UInt64, expires: Date? = nil, packs: [Pack]) throws {
        self.name = name
        self.version = version
        // Whole seconds, as signed packs state them.
        self.expires = expires.flatMap {
            PackRelease.expiry(seconds: UInt64(max(1, $0.timeIntervalSince1970.rounded(.down))))
        }
        self.packs = packs
        try check(.invalidArgument)
    }

    /// The signed document: canonical JSON ending in its `signature` line.
    public func document(signedWith key: PublisherSigningKey) -> Data {
        let unsigned = Self.render(self, publisher: key.publicKey, signature: nil)
        let signature = (Self.context + unsigned).withUnsafeBytes { key.signature(for: $0) }
        return Data(Self.render(self, publisher: key.publicKey, signature: signature))
    }

    /// Parses and checks a signed document.
    ///
    /// In order: its size and JSON, every field (as ``init(name:version:expires:packs:)``
    /// checks them), the canonical form (the document must be exactly what
    /// ``document(signedWith:)`` writes), that the key is one of `trustedKeys` (when any are
    /// given), and the signature (always, under the document's own key). Expiry and version
    /// are the installer's to check: it knows the time and what was installed.
    /// - Throws: `.integrityFailure` for a malformed or non-canonical document or one naming a
    ///   pack twice, `.unsupportedFormat` for another format version, `.untrusted` for a key
    ///   not trusted or a signature that does not verify.
    public static func parse(_ data: Data, trustedKeys: [PublisherKey]) throws -> ReleaseManifest {
        guard data.count <= maxDocumentSize else {
            throw AssetPackError(.integrityFailure, "the release manifest is larger than \(maxDocumentSize) bytes")
        }
        let raw: Raw
        do { raw = try JSONDecoder().decode(Raw.self, from: data) } catch {
            throw AssetPackError(.integrityFailure, "not a release manifest (\(Self.describe(error)))")
        }
        guard raw.format == formatVersion else {
            throw AssetPackError(.unsupportedFormat, "release manifest format \(raw.format) is not supported")
        }
        guard let publisher = try? PublisherKey(text: raw.publisher),
            let signature = Data(base64Encoded: raw.signature), signature.count == PublisherKey.signatureSize
        else { throw AssetPackError(.integrityFailure, "the release manifest's publisher or signature is malformed") }
        var manifest = ReleaseManifest(unchecked: raw)
        try manifest.check(.integrityFailure)
        guard Array(data) == render(manifest, publisher: publisher, signature: Array(signature)) else {
            throw AssetPackError(
                .integrityFailure,
                "the release manifest is not in canonical form (a field unknown, repeated, reordered or spaced otherwise)"
            )
        }
        if !trustedKeys.isEmpty, !trustedKeys.contains(publisher) {
            throw AssetPackError(
                .untrusted, "the release manifest is signed by key \(publisher.fingerprint), which is not a trusted key"
            )
        }
        let message = context + render(manifest, publisher: publisher, signature: nil)
        guard message.withUnsafeBytes({ publisher.isValidSignature(Array(signature), for: $0) }) else {
            throw AssetPackError(
                .untrusted, "the release manifest's signature does not verify under key \(publisher.fingerprint)")
        }
        manifest.publisher = publisher
        return manifest
    }

    /// The SHA-256 (hex) of the document without its signature: what tells two manifests of
    /// one version apart.
    package var digest: String {
        guard let publisher else { return "" }
        return SHA256Hasher.digest(Self.render(self, publisher: publisher, signature: nil))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// The release as a ``PackRelease`` (its name, version and expiry), for the messages and
    /// the expiry check signed packs have.
    package var release: PackRelease { PackRelease(name: name, version: version, expires: expires) }

    // MARK: - Checks

    private init(unchecked raw: Raw) {
        name = raw.name
        version = raw.version
        expires = raw.expires.map { _ in Date.distantPast }
        if let text = raw.expires, let date = ISO8601DateFormatter().date(from: text) { expires = date }
        packs = raw.packs.map {
            Pack(name: $0.name, version: $0.version, size: $0.size, sha256: $0.sha256, file: $0.file)
        }
    }

    /// Checks every field, throwing `code` with a message naming the pack.
    private func check(_ code: AssetPackError.Code) throws {
        func fail(_ message: String) -> AssetPackError { AssetPackError(code, message) }
        do { try PackRelease.checkName(name) } catch let error as AssetPackError {
            throw fail("the release's name: \(error.message)")
        }
        if let expires, expires.timeIntervalSince1970 < 1 { throw fail("the release's expiry is not a date") }
        guard !packs.isEmpty else { throw fail("a release names at least one pack") }
        guard packs.count <= Self.maxPacks else { throw fail("a release names at most \(Self.maxPacks) packs") }
        var names = Set<String>()
        var files = Set<String>()
        var digests = Set<String>()
        for pack in packs {
            let shown = EntryPath.printable(pack.name)
            do { try PackRelease.checkName(pack.name) } catch let error as AssetPackError {
                throw fail("pack \(shown): \(error.message)")
            }
            guard pack.sha256.utf8.count == 64,
                pack.sha256.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else { throw fail("pack \(shown): its SHA-256 is not 64 lowercase hex digits") }
            guard Self.isValidFile(pack.file) else {
                throw fail(
                    "pack \(shown): its file '\(EntryPath.printable(pack.file))' is neither a relative path (no '.', '..' or empty parts) nor an http(s) URL"
                )
            }
            for (seen, key, what) in [
                (names, pack.name, "name"), (files, pack.file, "file"), (digests, pack.sha256, "SHA-256"),
            ]
            where seen.contains(key) {
                throw fail("the release names pack \(shown) twice (the same \(what) as an earlier pack)")
            }
            names.insert(pack.name)
            files.insert(pack.file)
            digests.insert(pack.sha256)
        }
    }

    /// A relative path of plain components, or an absolute `http(s)` URL; printable, at most 1024 bytes.
    static func isValidFile(_ file: String) -> Bool {
        guard !file.isEmpty, file.utf8.count <= 1024, EntryPath.printable(file) == file, !file.contains("\\") else {
            return false
        }
        if isURL(file) { return URL(string: file) != nil }
        return !file.hasPrefix("/")
            && file.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
                !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains(":")
            }
    }

    /// Whether a pack's `file` is an `http://` or `https://` URL (else a path relative to the manifest).
    public static func isURL(_ file: String) -> Bool {
        let lower = file.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    // MARK: - The canonical form

    /// The document's exact bytes: with `signature`, the file; without, what is signed.
    package static func render(_ manifest: ReleaseManifest, publisher: PublisherKey, signature: [UInt8]?) -> [UInt8] {
        func string(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var out = "{\n  \"assetpack-release\": \(formatVersion),\n  \"name\": \(string(manifest.name)),\n"
        out += "  \"version\": \(manifest.version),\n"
        if let expires = manifest.expires { out += "  \"expires\": \(string(PackRelease.iso8601(expires))),\n" }
        out += "  \"publisher\": \(string(publisher.text)),\n  \"packs\": [\n"
        for (i, pack) in manifest.packs.enumerated() {
            out += "    {\"name\": \(string(pack.name)), \"version\": \(pack.version), \"size\": \(pack.size), "
            out += "\"sha256\": \(string(pack.sha256)), \"file\": \(string(pack.file))}"
            out += i + 1 < manifest.packs.count ? ",\n" : "\n"
        }
        if let signature {
            out += "  ],\n  \"signature\": \(string(Data(signature).base64EncodedString()))\n}\n"
        } else {
            out += "  ]\n}\n"
        }
        return Array(out.utf8)
    }

    /// The document as JSON types see it (the canonical check then compares bytes).
    private struct Raw: Decodable {
        struct Pack: Decodable {
            var name: String
            var version: UInt64
            var size: UInt64
            var sha256: String
            var file: String
        }
        var format: Int
        var name: String
        var version: UInt64
        var expires: String?
        var publisher: String
        var packs: [Pack]
        var signature: String

        enum CodingKeys: String, CodingKey {
            case format = "assetpack-release"
            case name, version, expires, publisher, packs, signature
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\" field"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "field \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        default: "not JSON of that shape"
        }
    }
}
