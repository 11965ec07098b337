import AssetPackCore
import AssetPackCrypto
import Foundation

/// Constants of the AssetPack container format. The full layout is in `docs/FORMAT.md`.
package enum ContainerFormat {
    /// The eight bytes every container pack starts with: `"APACK\0\r\n"`.
    public static let magic: [UInt8] = [0x41, 0x50, 0x41, 0x43, 0x4B, 0x00, 0x0D, 0x0A]
    /// The format version this build writes for unsigned packs. It reads `readableVersions`.
    public static let version: UInt8 = 8
    /// The version of a publisher-signed pack: version 8 followed by a signature block.
    package static let signedVersion: UInt8 = 9
    /// Version 1 (round 1: keys and nonces bound to the entry's index position, fixed index
    /// nonce), version 2 (per-entry random key ids, plaintext SHA-256 in the index, random
    /// index nonce), so that unchanged entries can be reused by an incremental re-pack,
    /// version 3 (version 2 with a signature block after the index), version 4 (content-defined
    /// chunks with their own random nonces and digests, a codec per entry: deflate or zstd) and
    /// version 5 (version 4 with a signature block), version 6 (version 4 made appendable: two
    /// header slots, each chunk found by its offset, so a re-pack or an update appends what
    /// changed), version 7 (version 6 with a signature block), version 8 (version 6 with its
    /// index read in place: fixed-size records, a hash table and a string table, sealed in
    /// segments) and version 9 (version 8 with a signature block).
    static let readableVersions: ClosedRange<UInt8> = 1...9
    /// The versions followed by a signature block.
    static let signedVersions: Set<UInt8> = [3, 5, 7, 9]
    /// Size of a version-2 entry key id, in bytes.
    static let keyIDSize = 16
    /// Size of the random nonce in front of a version-2 index.
    static let indexNonceSize = 12
    /// Cipher suite 1: AES-256-GCM, HKDF-SHA256 subkeys, HMAC-SHA256 key commitment.
    public static let cipherSuite: UInt8 = 1
    /// Size of the fixed header of versions 1 to 5, in bytes.
    public static let headerSize = 104
    /// Size of one header slot of versions 6 and 7.
    package static let slotSize = 128
    /// Where slot `i` of a version-6 or -7 pack starts: slot 0 at 0, slot 1 a file-system block
    /// (4 KiB) further, so that writing one slot never rewrites a block (or disk sector) holding
    /// the other, or any chunk: a torn write damages only the slot being written.
    package static let slotStride = 4096
    /// Where the data of a version-6 or -7 pack starts: after the two slots' blocks. The bytes
    /// between the slots and up to here are zero and never read.
    package static let appendableDataStart = 2 * slotStride
    /// Bytes of a slot covered by its commitment (everything before it).
    static let slotCommittedSize = 88

    package static let tagSize = 16
    static let commitmentOffset = 72
    static let chunkShifts: ClosedRange<UInt8> = 12...24

    /// What the digest a chunked entry's record carries starts with (docs/FORMAT.md, "Entry
    /// digests").
    static let entryDigestLabel = Array("AssetPack entry digest v1\0".utf8)

    /// The digest a version-4-or-later writer records for an entry of `size` bytes cut into
    /// `chunks`: SHA-256 of the label, `u64le(size)` and each chunk's plaintext SHA-256 in order.
    /// The chunks' digests are taken anyway (a re-pack finds unchanged chunks by them), so the
    /// entry costs one short hash more instead of a second pass over its bytes: on a 64 MiB entry
    /// that pass was ~45 ms of CPU of a full pack and of a re-pack after a one-byte edit. Equal
    /// contents cut the same way (chunk bounds and scale) give equal digests. Packs by 0.4 and
    /// earlier hold the plaintext's SHA-256 instead: a re-pack compares digests only for equality,
    /// and `PackDigests.entry(_:is:)` recognises such an entry by this formula over its chunks'
    /// digests. Which chunks are reused is decided by the chunks' own digests either way.
    static func entryDigest(size: UInt64, chunks: [ChunkRecord]) -> [UInt8] {
        entryDigest(size: size, chunkDigests: chunks.lazy.map(\.digest))
    }

    /// ``entryDigest(size:chunks:)`` of chunks with the plaintext digests `chunkDigests`.
    static func entryDigest(size: UInt64, chunkDigests: some Sequence<[UInt8]>) -> [UInt8] {
        let hasher = SHA256Hasher()
        hasher.update(entryDigestLabel)
        withUnsafeBytes(of: size.littleEndian) { hasher.update($0) }
        for digest in chunkDigests { hasher.update(digest) }
        return hasher.finalize()
    }
}

/// KDF identifiers as stored in the header.
enum KDFID: UInt8 {
    case none = 0, scrypt = 1, pbkdf2SHA256 = 2
}

/// The fixed 104-byte header, all integers little-endian.
package struct ContainerHeader: Equatable {
    package var version: UInt8 = ContainerFormat.version
    var kdf: KDFID
    package var chunkShift: UInt8
    var params: [UInt32]  // three KDF parameters
    var salt: [UInt8]
    package var indexOffset: UInt64
    package var indexLength: UInt64
    var commitment: [UInt8] = []
    /// Versions 6 and 7: the slot's generation (the valid slot with the higher one is the pack),
    /// where this generation's last byte ends (bytes after it are an unfinished append), and
    /// which of the two slots (0 or 1) it was read from.
    package var generation: UInt64 = 0
    package var end: UInt64 = 0
    package var slot = 0

    package var chunkSize: Int { 1 << Int(chunkShift) }
    /// Whether the pack has two header slots and chunks found by their offsets (versions 6, 7).
    package var isAppendable: Bool { version >= 6 }
    /// Where the sealed chunks start: after the header (versions 1–5) or the two slots.
    package var dataStart: UInt64 {
        UInt64(isAppendable ? ContainerFormat.appendableDataStart : ContainerFormat.headerSize)
    }
    /// Where the pack ends in a file of `fileSize` bytes: the file's end (versions 1–5), or
    /// this generation's end (versions 6, 7), after which an unfinished append may have left bytes.
    /// - Throws: `.integrityFailure` when the file ends first.
    package func packEnd(fileSize: UInt64) throws -> UInt64 {
        guard isAppendable else { return fileSize }
        guard end <= fileSize else { throw AssetPackError(.integrityFailure, "container is truncated") }
        return end
    }

    /// The file offset of this header (slot).
    package var slotOffset: UInt64 { UInt64(slot * ContainerFormat.slotStride) }
    /// Whether a signature block follows the index (versions 3, 5 and 7).
    package var isSigned: Bool { ContainerFormat.signedVersions.contains(version) }
    /// Whether the index has a chunk table (versions 4 to 7): content-defined chunks, each
    /// with its own nonce; otherwise chunks are `chunkSize` bytes with derived nonces.
    package var hasChunkTable: Bool { version >= 4 }
    /// Whether the index is read in place (versions 8 and 9: ``IndexTable``).
    package var hasIndexInPlace: Bool { version >= 8 }

    /// The header bytes covered by the commitment (everything before it).
    func committedBytes() -> [UInt8] {
        var w = ByteWriter()
        w.bytes(ContainerFormat.magic)
        w.u8(version)
        w.u8(ContainerFormat.cipherSuite)
        w.u8(kdf.rawValue)
        w.u8(chunkShift)
        for p in params { w.u32(p) }
        w.bytes(salt)
        w.u64(indexOffset)
        w.u64(indexLength)
        if isAppendable {
            w.u64(generation)
            w.u64(end)
        }
        precondition(
            w.out.count == (isAppendable ? ContainerFormat.slotCommittedSize : ContainerFormat.commitmentOffset))
        return w.out
    }

    /// The header as stored: the committed bytes and `commitment`, then (versions 6 and 7) the
    /// slot's check, the first 8 bytes of the SHA-256 of everything before it.
    func stored(commitment: [UInt8]) -> [UInt8] {
        let bytes = committedBytes() + commitment
        guard isAppendable else { return bytes }
        return bytes + SHA256Hasher.digest(bytes).prefix(8)
    }

    /// Reads the header of the container in `source` (its magic already checked): the fixed
    /// header of versions 1–5, or the valid slot of the higher generation of versions 6 and 7. A
    /// slot is valid when its magic, version and check are; a torn slot write fails its check.
    /// - Returns: The header's bytes as stored (the index's associated data) and the header.
    /// - Throws: `.integrityFailure` (truncated, both slots damaged, two slots of one
    ///   generation), `.unsupportedFormat`.
    /// The generation the local file `source` holds now, when it is not this header's: what a
    /// reader opened has since been re-packed or updated in place (and what that version
    /// dropped, zeroed). `nil` otherwise, and for a remote source (which keeps what it read at
    /// open, and would make a request of it).
    package func generationNow(in source: any ByteSource) -> UInt64? {
        guard isAppendable, source is FileByteSource, let now = try? ContainerHeader.read(from: source).header,
            now.generation != generation
        else { return nil }
        return now.generation
    }

    package static func read(from source: any ByteSource) throws -> (bytes: [UInt8], header: ContainerHeader) {
        let truncated = AssetPackError(.integrityFailure, "container is truncated")
        guard source.size >= UInt64(ContainerFormat.headerSize) else { throw truncated }
        // Both slots in one read (one request to a server): the first 4224 bytes.
        let span = ContainerFormat.slotStride + ContainerFormat.slotSize
        let head = try preadArray(source, count: Int(min(source.size, UInt64(span))), at: 0)
        let first = Array(head[0..<ContainerFormat.headerSize])
        let slots: [[UInt8]] =
            source.size >= UInt64(ContainerFormat.appendableDataStart)
            ? (0..<2).map {
                Array(
                    head[$0 * ContainerFormat.slotStride..<$0 * ContainerFormat.slotStride + ContainerFormat.slotSize])
            } : []
        // A valid slot 1 makes the file version 6 or 7, whatever slot 0 holds: slot 0 damaged
        // (its magic, or a version byte of 1 to 5) is a damaged slot, not another format.
        // So does slot 1's magic where slot 0 has none (slot 0 wiped by the append that wrote
        // slot 1, and slot 1 damaged since): a damaged version-6 or -7 pack.
        let slot1Valid =
            slots.count == 2
            && (isValidSlot(slots[1])
                || (!first.starts(with: ContainerFormat.magic) && slots[1].starts(with: ContainerFormat.magic)))
        guard (6...9).contains(first[8]) || slot1Valid else {
            return (first, try first.withUnsafeBytes { try parse($0) })
        }
        guard slots.count == 2 else { throw truncated }
        var best: (bytes: [UInt8], header: ContainerHeader)?
        var tie = false
        for slot in 0..<2 {
            let bytes = slots[slot]
            guard isValidSlot(bytes) else { continue }
            var header = try bytes.withUnsafeBytes { try parse($0) }
            header.slot = slot
            if let b = best, b.header.generation == header.generation { tie = true }
            if best == nil || header.generation > best!.header.generation { best = (bytes, header) }
        }
        guard let best else {
            throw AssetPackError(.integrityFailure, "container header is corrupt (both header slots are damaged)")
        }
        // The other slot is empty (zeros: a new pack's, or one a writer wiped once the next
        // generation was synced) or valid. Anything else is a damaged slot, which may be the
        // newer generation's: reading the valid one would serve an earlier version in its place
        // (a rollback no key is needed for), so the pack is refused.
        let other = slots[1 - best.header.slot]
        if !isValidSlot(other), other.contains(where: { $0 != 0 }) {
            throw AssetPackError(
                .integrityFailure,
                "container header is corrupt (header slot \(1 - best.header.slot) is damaged; the pack is refused "
                    + "rather than read as the generation in the other slot, which may be an earlier version)")
        }
        guard !tie else {
            throw AssetPackError(.integrityFailure, "container header is corrupt (two slots of one generation)")
        }
        return best
    }

    /// Whether `bytes` is a valid header slot of version 6 or 7: its magic, version and check
    /// (the first 8 bytes of the SHA-256 of the rest). Nothing else is authenticated yet.
    static func isValidSlot(_ bytes: [UInt8]) -> Bool {
        let size = ContainerFormat.slotSize
        return bytes.count == size && bytes[0..<8].elementsEqual(ContainerFormat.magic) && (6...9).contains(bytes[8])
            && SHA256Hasher.digest(Array(bytes[0..<size - 8])).prefix(8).elementsEqual(bytes[(size - 8)...])
    }

    /// Whether `source` holds a container: the magic at offset 0, or a valid version 6 or 7
    /// slot at the second slot's place (slot 0 damaged; ``read(from:)`` takes slot 1), unless
    /// the file starts as a zip does ("PK"): a zip may store a container uncompressed, whose
    /// slot could lie at byte 4096.
    package static func recognizes(_ source: any ByteSource) throws -> Bool {
        let magic = ContainerFormat.magic
        let first = try source.prefix(at: 0, count: magic.count)
        if first == magic { return true }
        guard !first.starts(with: [0x50, 0x4B]) else { return false }
        let slot = ContainerFormat.slotStride
        guard source.size >= UInt64(ContainerFormat.appendableDataStart) else { return false }
        // Slot 1 valid, or holding the magic at least: a container whose slot 0 is gone (wiped
        // by the append that wrote slot 1) and whose slot 1 is damaged is a damaged container
        // (`read(from:)` says so), not "not a pack".
        let second = try preadArray(source, count: ContainerFormat.slotSize, at: UInt64(slot))
        return isValidSlot(second) || second.starts(with: magic)
    }

    /// Parses and sanity-checks a header. Nothing here is authenticated yet.
    package static func parse(_ b: UnsafeRawBufferPointer) throws -> ContainerHeader {
        var r = ByteReader(b, structure: "container")
        guard try r.bytes(8) == ContainerFormat.magic else {
            throw AssetPackError(.unsupportedFormat, "not an AssetPack container")
        }
        let version = try r.u8(), suite = try r.u8(), kdfRaw = try r.u8(), shift = try r.u8()
        guard ContainerFormat.readableVersions.contains(version) else {
            throw AssetPackError(.unsupportedFormat, "container version \(version) is not supported")
        }
        guard suite == ContainerFormat.cipherSuite else {
            throw AssetPackError(.unsupportedFormat, "container cipher suite \(suite) is not supported")
        }
        guard let kdf = KDFID(rawValue: kdfRaw) else {
            throw AssetPackError(.unsupportedFormat, "container KDF \(kdfRaw) is not supported")
        }
        guard ContainerFormat.chunkShifts.contains(shift) else {
            throw AssetPackError(.integrityFailure, "container header is corrupt (chunk size)")
        }
        let params = [try r.u32(), try r.u32(), try r.u32()]
        let salt = try r.bytes(32), indexOffset = try r.u64(), indexLength = try r.u64()
        let generation = version >= 6 ? try r.u64() : 0, end = version >= 6 ? try r.u64() : 0
        return ContainerHeader(
            version: version, kdf: kdf, chunkShift: shift, params: params, salt: salt,
            indexOffset: indexOffset, indexLength: indexLength, commitment: try r.bytes(32),
            generation: generation, end: end)
    }

    /// Refuses KDF parameters that are malformed or cost more than `limits` allow,
    /// before any work is done.
    package func checkKDF(_ limits: ReadLimits) throws {
        let bad = AssetPackError(.integrityFailure, "container header is corrupt (KDF parameters)")
        switch kdf {
        case .none:
            guard params == [0, 0, 0] else { throw bad }
        case .pbkdf2SHA256:
            guard params[0] >= 1, params[1] == 0, params[2] == 0 else { throw bad }
            guard params[0] <= limits.maxKDFIterations else {
                throw AssetPackError(
                    .limitExceeded, "PBKDF2 iterations \(params[0]) exceed the limit \(limits.maxKDFIterations)")
            }
        case .scrypt:
            let (logN, r, p) = (UInt64(params[0]), UInt64(params[1]), UInt64(params[2]))
            guard (1...62).contains(logN), r >= 1, p >= 1, r * p < 1 << 30 else { throw bad }
            let n = UInt64(1) << logN
            // scrypt needs 128·r·N bytes for V plus 128·r·p for B.
            let (nr, o1) = n.multipliedReportingOverflow(by: 128 * r)
            let (mem, o2) = nr.addingReportingOverflow(128 * r * p)
            guard !o1, !o2, mem <= limits.maxKDFMemory else {
                throw AssetPackError(
                    .limitExceeded, "scrypt parameters need more memory than the limit \(limits.maxKDFMemory)")
            }
            let (work, o3) = n.multipliedReportingOverflow(by: p)
            guard !o3, work <= UInt64(limits.maxKDFIterations) else {
                throw AssetPackError(.limitExceeded, "scrypt cost N·p exceeds the limit \(limits.maxKDFIterations)")
            }
            // swift-crypto's scrypt gives BoringSSL 128·N·r·p bytes plus a page, where N + p + 1
            // blocks of 128·r are needed: with p = 1 that holds for r ≤ 16 only (4 KiB pages).
            // Refused by name rather than failing as a wrong key; our packs use r = 8.
            guard p > 1 || r <= 16 else {
                throw AssetPackError(
                    .unsupportedFormat,
                    "scrypt with block size r = \(r) and p = 1 is not supported (r up to 16, or p of 2 and more; AssetPack packs use r = 8)"
                )
            }
        }
    }
}

/// The master key and every subkey derived from it for one pack.
struct ContainerKeys: Sendable {
    /// HKDF-Extract(salt: pack salt, IKM: master key).
    let prk: [UInt8]

    init(master: [UInt8], salt: [UInt8]) {
        prk = KeyDerivation.hkdfExtract(inputKeyMaterial: master, salt: salt)
    }

    private func expand(_ info: [UInt8]) -> [UInt8] {
        KeyDerivation.hkdfExpand(pseudoRandomKey: prk, info: info, count: 32)
    }

    static let commitmentInfo = Array("AssetPack container v1 commitment".utf8)
    static let indexInfo = Array("AssetPack container v1 index".utf8)
    static let entryInfo = Array("AssetPack container v1 entry".utf8)
    static let indexInfoV2 = Array("AssetPack container v2 index".utf8)
    static let entryInfoV2 = Array("AssetPack container v2 entry".utf8)
    static let indexInfoV4 = Array("AssetPack container v4 index".utf8)
    static let entryInfoV4 = Array("AssetPack container v4 entry".utf8)
    static let indexInfoV8 = Array("AssetPack container v8 index".utf8)

    /// Key of the header's HMAC-SHA256 key commitment (both versions).
    var commitmentKey: [UInt8] { expand(Self.commitmentInfo) }
    /// Key sealing the index of a pack of `version`.
    func indexKey(version: UInt8) -> [UInt8] {
        expand(
            version == 1
                ? Self.indexInfo : version < 4 ? Self.indexInfoV2 : version < 8 ? Self.indexInfoV4 : Self.indexInfoV8)
    }
    /// Key sealing the chunks of a version-1 entry: bound to its position `id` in the index.
    func entryKey(_ id: UInt32) -> [UInt8] {
        var info = Self.entryInfo
        withUnsafeBytes(of: id.littleEndian) { info.append(contentsOf: $0) }
        return expand(info)
    }
    /// Key sealing the chunks of a version-2 entry: bound to its random 16-byte key id, so it
    /// does not change when other entries are added or removed.
    func entryKey(keyID: [UInt8]) -> [UInt8] { expand(Self.entryInfoV2 + keyID) }
    /// Key sealing the chunks of a version-4 entry: its own label, so no version-2 key (whose
    /// nonces are chunk positions) is ever a version-4 key (whose nonces are random).
    func entryKeyV4(keyID: [UInt8]) -> [UInt8] { expand(Self.entryInfoV4 + keyID) }
    /// Key sealing the chunks of `entry`, any version.
    func entryKey(_ entry: ContainerEntry) -> [UInt8] {
        guard let keyID = entry.keyID else { return entryKey(entry.id) }
        return entry.codec == nil ? entryKey(keyID: keyID) : entryKeyV4(keyID: keyID)
    }

    /// The commitment over `committed` header bytes.
    func commitment(_ committed: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(committed, key: commitmentKey)
    }

    /// Derives the master key from a credential, with the KDF and parameters of `header`, or
    /// takes it from a prefetch started for exactly these (``ContainerKeyPrefetch``).
    static func master(_ credential: PackCredential, header: ContainerHeader) throws -> [UInt8] {
        if let key = ContainerKeyPrefetch.take(credential, header: header) { return key }
        return try derive(credential, header: header)
    }

    /// Derives the master key from a credential, with the KDF and parameters of `header`.
    static func derive(_ credential: PackCredential, header: ContainerHeader) throws -> [UInt8] {
        switch (credential, header.kdf) {
        case (.key(let key), .none):
            guard key.count == 32 else {
                throw AssetPackError(.invalidArgument, "a container key must be 32 bytes, not \(key.count)")
            }
            return key
        case (.key, _):
            throw AssetPackError(.wrongPassword, "this pack is opened with a password, not a raw key")
        case (.password, .none):
            throw AssetPackError(.wrongPassword, "this pack is opened with a raw 32-byte key, not a password")
        case (.password(let password), let kdf):
            let pw = Array(password.precomposedStringWithCanonicalMapping.utf8)
            guard !pw.isEmpty else { throw AssetPackError(.wrongPassword, "empty password") }
            let p = header.params
            do {
                if kdf == .scrypt {
                    // checkKDF bounded N·r·128·(p+1) by ReadLimits.maxKDFMemory before this runs;
                    // OpenSSL's own cap is set just above what these parameters need.
                    let n = UInt64(1) << UInt64(p[0]), r = UInt64(p[1]), par = UInt64(p[2])
                    let need = 128 &* r &* (n &+ par &+ 2) &+ (1 << 20)
                    return try KeyDerivation.scrypt(
                        password: pw, salt: header.salt, n: n, r: r, p: par, maxMemory: need, count: 32)
                }
                return try KeyDerivation.pbkdf2SHA256(
                    password: pw, salt: header.salt, iterations: Int(p[0]), count: 32)
            } catch {
                throw AssetPackError(.integrityFailure, "key derivation refused the header's parameters")
            }
        }
    }
}

/// The 12-byte AES-GCM nonce of a chunk: entry id, chunk index, flags (all u32 LE).
/// Flags: bit 0 = final chunk of the entry, bit 1 = payload is raw deflate. Version 2 writes
/// entry id 0: its entry key is already unique to the entry.
@inline(__always)
func chunkNonce(entry: UInt32, chunk: UInt32, final: Bool, deflated: Bool) -> [UInt8] {
    let flags: UInt32 = (final ? 1 : 0) | (deflated ? 2 : 0)
    var n = (entry.littleEndian, chunk.littleEndian, flags.littleEndian)
    return withUnsafeBytes(of: &n) { Array($0) }
}

/// The nonce of a version-1 index (its key sealed nothing else: each version-1 write has a
/// fresh salt). Version 2 keeps the salt across incremental re-packs, so its index nonce is
/// random and stored in front of the sealed index.
let indexNonceV1 = [UInt8](repeating: 0, count: 12)

/// Appends little-endian integers and bytes.
struct ByteWriter {
    var out: [UInt8] = []
    init() {}
    /// A writer whose buffer holds `capacity` bytes before it grows.
    init(capacity: Int) { out.reserveCapacity(capacity) }
    mutating func u8(_ v: UInt8) { out.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
    mutating func bytes(_ b: [UInt8]) { out.append(contentsOf: b) }
}
