import AssetPackCore
internal import CLibcrypto

/// The signature block of a publisher-signed pack, shared by both formats (docs/FORMAT.md,
/// "Signature block").
///
/// ```
/// off  size  field
///   0     8  magic "APSIG\0\r\n"
///   8     1  version (1)
///   9     1  kind: 1 = zip, 2 = container
///  10    32  the publisher's Ed25519 public key
///  42    32  SHA-256 of the body (bytes 138…)
///  74    64  Ed25519 signature of "AssetPack signature v1\0" ‖ bytes 0..<74
/// 138    32  body: the head digest (zip: central directory; container: header and index)
/// 170    32  body: the data digest (zip: every entry span; container: every sealed chunk), in
///            file order as one stream: what an installer checks without the password
/// 202     8  body: item count n (u64 LE)
/// 210  32·n  body: n item digests (zip: one per entry span; container: one per sealed chunk)
/// ```
///
/// The signature covers a short fixed message, which in turn fixes the body through its SHA-256:
/// Ed25519 hashes its message with SHA-512, which runs at less than half the speed of SHA-256
/// with the SHA extensions, and a 10,000-entry pack's body is 320 KB.
package struct PackSignature: Sendable, Equatable {
    /// What the pack is: part of the signed bytes, so a zip's block cannot pass for a container's.
    package enum Kind: UInt8, Sendable {
        case zip = 1, container = 2
    }

    package static let magic: [UInt8] = [0x41, 0x50, 0x53, 0x49, 0x47, 0x00, 0x0D, 0x0A]
    package static let version: UInt8 = 1
    /// Bytes before the body.
    package static let fixedSize = 138
    /// Bytes of a block with no items.
    package static let minimumSize = fixedSize + 32 + 32 + 8
    static let signedSize = 74
    static let context = Array("AssetPack signature v1\0".utf8)

    package var kind: Kind
    package var publisher: PublisherKey
    /// What the head covers: the zip's central directory before the signature's record, or the
    /// container's header and sealed index.
    package var headDigest: [UInt8]
    /// The SHA-256 of the data region as one stream: the zip's bytes before the signature entry,
    /// the container's bytes between header and index.
    package var dataDigest: [UInt8]
    /// The item digests, 32 bytes each, back to back (one array, not one per item: a
    /// 10,000-entry pack opens without 10,000 allocations). Zip: SHA-256 of every entry's span
    /// (local header to the next local header), in central directory order. Container: SHA-256
    /// of every sealed chunk, in file order.
    package var items: [UInt8]

    package init(kind: Kind, publisher: PublisherKey, headDigest: [UInt8], dataDigest: [UInt8], items: [UInt8]) {
        precondition(headDigest.count == 32 && dataDigest.count == 32 && items.count % 32 == 0)
        self.kind = kind
        self.publisher = publisher
        self.headDigest = headDigest
        self.dataDigest = dataDigest
        self.items = items
    }

    /// How many item digests the block holds.
    package var itemCount: Int { items.count / 32 }

    /// Whether item `i` is `digest`.
    package func item(_ i: Int, is digest: [UInt8]) -> Bool {
        i >= 0 && i < itemCount && items[32 * i..<32 * i + 32].elementsEqual(digest)
    }

    /// The size of a block with `count` items.
    package static func size(items count: Int) -> Int { minimumSize + 32 * count }

    /// The block's bytes, signed with `key` (whose public key must be `publisher`).
    package func signed(with key: PublisherSigningKey) -> [UInt8] {
        var body = headDigest + dataDigest
        body.reserveCapacity(72 + items.count)
        withUnsafeBytes(of: UInt64(itemCount).littleEndian) { body.append(contentsOf: $0) }
        body.append(contentsOf: items)
        var out = Self.magic
        out.reserveCapacity(Self.fixedSize + body.count)
        out.append(Self.version)
        out.append(kind.rawValue)
        out.append(contentsOf: publisher.rawRepresentation)
        out.append(contentsOf: SHA256Hasher.digest(body))
        let signature = (Self.context + out).withUnsafeBytes { key.signature(for: $0) }
        out.append(contentsOf: signature)
        out.append(contentsOf: body)
        return out
    }

    /// Parses and checks a whole block of `kind` against `trusted` keys.
    ///
    /// Checks, in order: the length and magic, the version and kind, that the stated item count
    /// fills the block exactly, that the key is one of `trusted`, the Ed25519 signature, and the
    /// body's SHA-256. With `trusted` empty only the structure is checked (a reader that was given
    /// no keys reads a signed pack as an unsigned one).
    /// - Throws: `.integrityFailure` for a malformed block; `.untrusted` for a key not in
    ///   `trusted`, a signature that does not verify, or a body that is not the signed one.
    package static func parse(_ bytes: UnsafeRawBufferPointer, kind: Kind, trusted: [PublisherKey]) throws
        -> PackSignature
    {
        let malformed = AssetPackError(.integrityFailure, "the pack's signature block is malformed")
        guard bytes.count >= minimumSize, (bytes.count - minimumSize) % 32 == 0 else { throw malformed }
        guard bytes.prefix(8).elementsEqual(magic) else { throw malformed }
        guard bytes[8] == version else {
            throw AssetPackError(.unsupportedFormat, "signature block version \(bytes[8]) is not supported")
        }
        guard bytes[9] == kind.rawValue else { throw malformed }
        let publisher = try PublisherKey(rawRepresentation: Array(bytes[10..<42]))
        let count = UInt64(bytes.count - minimumSize) / 32
        var stated: UInt64 = 0
        for i in 0..<8 { stated |= UInt64(bytes[fixedSize + 64 + i]) << (8 * i) }
        guard stated == count else { throw malformed }
        if !trusted.isEmpty {
            guard trusted.contains(publisher) else {
                throw AssetPackError(
                    .untrusted, "the pack is signed by key \(publisher.fingerprint), which is not a trusted key")
            }
            let message = context + Array(bytes[0..<signedSize])
            let signature = Array(bytes[signedSize..<fixedSize])
            guard message.withUnsafeBytes({ publisher.isValidSignature(signature, for: $0) }) else {
                throw AssetPackError(
                    .untrusted, "the pack's signature does not verify under key \(publisher.fingerprint)")
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[fixedSize...])
            guard SHA256Hasher.digest(body).elementsEqual(bytes[42..<74]) else {
                throw AssetPackError(.untrusted, "the pack's signed manifest was altered")
            }
        }
        return PackSignature(
            kind: kind, publisher: publisher, headDigest: Array(bytes[fixedSize..<fixedSize + 32]),
            dataDigest: Array(bytes[fixedSize + 32..<fixedSize + 64]), items: Array(bytes[minimumSize...]))
    }
}
