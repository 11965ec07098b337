import AssetPackCore
import AssetPackCrypto

/// The signature block of a publisher-signed pack, shared by both formats (docs/FORMAT.md,
/// "Signature block"). Writers write version 2; readers read versions 1 and 2.
///
/// Version 2 (`m` the name's length, 1…255):
/// ```
/// off     size  field
///   0        8  magic "APSIG\0\r\n"
///   8        1  version (2)
///   9        1  kind: 1 = zip, 2 = container
///  10       32  the publisher's Ed25519 public key
///  42       32  SHA-256 of the body (bytes 163 + m …)
///  74        8  release version (u64 LE)
///  82        8  expiry, unix seconds (u64 LE; 0 = none)
///  90        8  the whole pack file's size in bytes (u64 LE)
///  98        1  name length m
///  99        m  name (UTF-8)
///  99 + m   64  Ed25519 signature of "AssetPack signature v2\0" ‖ bytes 0 ..< 99 + m
/// 163 + m   72 + 32·n  body, as in version 1
/// ```
///
/// Version 1 (no release: ``PackRelease/legacy``):
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
/// The signature covers a short message, which in turn fixes the body through its SHA-256:
/// Ed25519 hashes its message with SHA-512, which runs at less than half the speed of SHA-256
/// with the SHA extensions, and a 10,000-entry pack's body is 320 KB. The two versions sign
/// under different context strings, so neither signature verifies as the other.
package struct PackSignature: Sendable, Equatable {
    /// What the pack is: part of the signed bytes, so a zip's block cannot pass for a container's.
    package enum Kind: UInt8, Sendable {
        case zip = 1, container = 2
    }

    package static let magic: [UInt8] = [0x41, 0x50, 0x53, 0x49, 0x47, 0x00, 0x0D, 0x0A]
    /// The block version writers write (1 only for a ``PackRelease/legacy`` release).
    package static let version: UInt8 = 2
    /// Bytes of a version-1 block before the body.
    package static let fixedSize = 138
    /// Bytes of a version-1 block with no items.
    package static let minimumSize = fixedSize + 32 + 32 + 8
    /// Bytes of a version-2 block before the name.
    static let releaseHeaderSize = 99
    /// Bytes of a version-2 block with no items, less its name.
    static let minimumSizeV2 = releaseHeaderSize + 64 + 32 + 32 + 8
    static let signedSize = 74
    static let context = Array("AssetPack signature v1\0".utf8)
    static let contextV2 = Array("AssetPack signature v2\0".utf8)

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
    /// What the signature states about the release; ``PackRelease/legacy`` for a version-1 block,
    /// which is what ``signed(with:)`` then writes. A version-2 block needs a name and a size.
    package var release: PackRelease
    /// The SHA-256 of the body, as the block states it: with the release, what identifies the
    /// signed pack (an installer compares it to tell two packs of one version apart).
    package var bodyDigest: [UInt8] = []

    package init(
        kind: Kind, publisher: PublisherKey, headDigest: [UInt8], dataDigest: [UInt8], items: [UInt8],
        release: PackRelease = .legacy
    ) {
        precondition(headDigest.count == 32 && dataDigest.count == 32 && items.count % 32 == 0)
        self.kind = kind
        self.publisher = publisher
        self.headDigest = headDigest
        self.dataDigest = dataDigest
        self.items = items
        self.release = release
    }

    /// How many item digests the block holds.
    package var itemCount: Int { items.count / 32 }

    /// Item `i` (32 bytes; `i` below ``itemCount``).
    package func item(_ i: Int) -> ArraySlice<UInt8> { items[32 * i..<32 * i + 32] }

    /// Whether item `i` is `digest`.
    package func item(_ i: Int, is digest: [UInt8]) -> Bool {
        i >= 0 && i < itemCount && items[32 * i..<32 * i + 32].elementsEqual(digest)
    }

    /// The size of a version-1 block with `count` items.
    package static func size(items count: Int) -> Int { minimumSize + 32 * count }

    /// The size of the block that signs `release` with `count` items (version 1 for a legacy release).
    package static func size(items count: Int, release: PackRelease) -> Int {
        guard let name = release.name else { return size(items: count) }
        return minimumSizeV2 + name.utf8.count + 32 * count
    }

    /// The largest block of either version with `count` items.
    package static func maximumSize(items count: Int) -> Int {
        minimumSizeV2 + PackRelease.maxNameBytes + 32 * count
    }

    /// Whether a block of `length` bytes with `count` items is one of the sizes a block can have
    /// (version 1, or version 2 with a name of 1 to 255 bytes): a reader checks this before it
    /// reads a block whose length a file states.
    package static func isPossibleSize(_ length: UInt64, items count: Int) -> Bool {
        let base = UInt64(32 * count)
        if length == UInt64(minimumSize) + base { return true }
        let least = UInt64(minimumSizeV2 + 1) + base
        return length >= least && length <= least + UInt64(PackRelease.maxNameBytes - 1)
    }

    /// The block's bytes, signed with `key` (whose public key must be `publisher`): version 2,
    /// or version 1 when ``release`` is legacy.
    package func signed(with key: PublisherSigningKey) -> [UInt8] {
        var body = headDigest + dataDigest
        body.reserveCapacity(72 + items.count)
        withUnsafeBytes(of: UInt64(itemCount).littleEndian) { body.append(contentsOf: $0) }
        body.append(contentsOf: items)
        var out = Self.magic
        out.reserveCapacity(Self.maximumSize(items: 0) + body.count)
        out.append(release.isLegacy ? 1 : Self.version)
        out.append(kind.rawValue)
        out.append(contentsOf: publisher.rawRepresentation)
        out.append(contentsOf: SHA256Hasher.digest(body))
        var context = Self.context
        if let name = release.name {
            precondition(release.size != nil && (1...PackRelease.maxNameBytes).contains(name.utf8.count))
            for field in [release.version, release.expirySeconds, release.size ?? 0] {
                withUnsafeBytes(of: field.littleEndian) { out.append(contentsOf: $0) }
            }
            out.append(UInt8(name.utf8.count))
            out.append(contentsOf: name.utf8)
            context = Self.contextV2
        }
        let signature = (context + out).withUnsafeBytes { key.signature(for: $0) }
        out.append(contentsOf: signature)
        out.append(contentsOf: body)
        return out
    }

    /// Parses and checks a whole block of `kind` against `trusted` keys.
    ///
    /// Checks, in order: the length and magic, the version and kind, the name (version 2), that
    /// the stated item count fills the block exactly, that the key is one of `trusted`, the Ed25519
    /// signature, and the body's SHA-256. With `trusted` empty only the structure is checked (a
    /// reader that was given no keys reads a signed pack as an unsigned one). The expiry and the
    /// size are not checked here: the caller knows the time and the file.
    /// - Throws: `.integrityFailure` for a malformed block; `.unsupportedFormat` for an unknown
    ///   version; `.untrusted` for a key not in `trusted`, a signature that does not verify, or a
    ///   body that is not the signed one.
    package static func parse(_ bytes: UnsafeRawBufferPointer, kind: Kind, trusted: [PublisherKey]) throws
        -> PackSignature
    {
        let malformed = AssetPackError(.integrityFailure, "the pack's signature block is malformed")
        guard bytes.count >= 10, bytes.prefix(8).elementsEqual(magic) else { throw malformed }
        // Where the signature and the body start, the signed context, and the release.
        let signatureAt: Int
        let signingContext: [UInt8]
        var release = PackRelease.legacy
        switch bytes[8] {
        case 1:
            guard bytes.count >= minimumSize, (bytes.count - minimumSize) % 32 == 0 else { throw malformed }
            signatureAt = signedSize
            signingContext = context
        case 2:
            guard bytes.count >= releaseHeaderSize else { throw malformed }
            let m = Int(bytes[releaseHeaderSize - 1])
            guard m >= 1, bytes.count >= minimumSizeV2 + m, (bytes.count - minimumSizeV2 - m) % 32 == 0,
                let name = String(validating: bytes[releaseHeaderSize..<releaseHeaderSize + m], as: UTF8.self)
            else { throw malformed }
            func u64(_ at: Int) -> UInt64 {
                var value: UInt64 = 0
                for i in 0..<8 { value |= UInt64(bytes[at + i]) << (8 * i) }
                return value
            }
            release = PackRelease(
                name: name, version: u64(74), expires: PackRelease.expiry(seconds: u64(82)), size: u64(90))
            signatureAt = releaseHeaderSize + m
            signingContext = contextV2
        default:
            throw AssetPackError(.unsupportedFormat, "signature block version \(bytes[8]) is not supported")
        }
        guard bytes[9] == kind.rawValue else { throw malformed }
        let bodyAt = signatureAt + 64
        let publisher = try PublisherKey(rawRepresentation: Array(bytes[10..<42]))
        let count = UInt64(bytes.count - bodyAt - 72) / 32
        var stated: UInt64 = 0
        for i in 0..<8 { stated |= UInt64(bytes[bodyAt + 64 + i]) << (8 * i) }
        guard stated == count else { throw malformed }
        if !trusted.isEmpty {
            guard trusted.contains(publisher) else {
                throw AssetPackError(
                    .untrusted, "the pack is signed by key \(publisher.fingerprint), which is not a trusted key")
            }
            let message = signingContext + Array(bytes[0..<signatureAt])
            let signature = Array(bytes[signatureAt..<bodyAt])
            guard message.withUnsafeBytes({ publisher.isValidSignature(signature, for: $0) }) else {
                throw AssetPackError(
                    .untrusted, "the pack's signature does not verify under key \(publisher.fingerprint)")
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[bodyAt...])
            guard SHA256Hasher.digest(body).elementsEqual(bytes[42..<74]) else {
                throw AssetPackError(.untrusted, "the pack's signed manifest was altered")
            }
        }
        var block = PackSignature(
            kind: kind, publisher: publisher, headDigest: Array(bytes[bodyAt..<bodyAt + 32]),
            dataDigest: Array(bytes[bodyAt + 32..<bodyAt + 64]), items: Array(bytes[(bodyAt + 72)...]),
            release: release)
        block.bodyDigest = Array(bytes[42..<74])
        return block
    }

    /// Refuses a block whose signed size is not `fileSize` (a version-1 block states none).
    /// - Throws: `.untrusted`.
    package func checkSize(_ fileSize: UInt64) throws {
        guard let size = release.size, size != fileSize else { return }
        throw AssetPackError(
            .untrusted, "the pack is \(fileSize) bytes, and its publisher signed a pack of \(size) bytes")
    }
}
