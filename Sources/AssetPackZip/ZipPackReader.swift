import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// Reads entries from a zip pack (WinZip AES, unencrypted, or ZipCrypto) by path.
///
/// The central directory is read once at open, by `ZipStructure` (our parser: libzip's
/// `zip_open` is not called), kept as fixed-size records and a name table, and indexed by
/// normalised path in a hash table (`ZipDirectoryIndex`): no object per entry at open. Every whole-entry read is
/// verified: WinZip AES entries by their HMAC and (AE-1) CRC in `BulkAESDecoder`, unencrypted
/// ones by their CRC in `PlainEntryDecoder`, both over the raw stored bytes. A corrupt entry
/// throws `.integrityFailure` naming the entry; wrong bytes are never returned.
///
/// ZipCrypto entries are decoded by libzip (its cipher is not one swift-crypto has, and we do
/// not write ciphers: docs/ARCHITECTURE.md, "Configurations"), on a libzip handle opened on the
/// first such read; the portable configuration, without libzip, refuses them by name.
/// `Decoder.libzip` has libzip decode every entry, for cross-checks; `EntryTiming.decoder`
/// says which path produced the bytes.
///
/// Thread safety: reads may run on many threads at once; a libzip read borrows its own handle
/// from a pool (see `ZipHandlePool`).
package final class ZipPackReader: PackReader, @unchecked Sendable {
    /// Which code decrypts and inflates entries.
    public enum Decoder: String, Sendable, CaseIterable {
        /// Our own decoders for WinZip AES and unencrypted entries; libzip for ZipCrypto. The default.
        case automatic
        #if SystemLibraries
        /// libzip for every entry (slow for AES, and rejects standard AE-2 entries): a cross-check.
        case libzip
        #endif
    }

    struct Entry: Sendable {
        var info: EntryInfo
        /// The record's position in ``ZipStructure/records`` (libzip's index too).
        var index: UInt64
        var encryptionMethod: UInt16
        var compressionMethod: UInt16
    }

    /// Always `.zip`.
    public let format = PackFormat.zip
    /// Every file entry (directories and the reserved `.assetpack/` entries excluded), sorted by path.
    public let entries: EntryList
    /// Seconds spent opening the pack and indexing its central directory.
    public private(set) var openSeconds: Double = 0
    /// The limits this reader enforces.
    public let limits: ReadLimits
    /// The trusted key that signed the pack, when the reader was given trusted keys.
    public let publisher: PublisherKey?
    /// What the verified signature states about the release, when the reader was given trusted keys.
    public let release: PackRelease?
    /// The paths this patch pack deletes from the packs below it (its `.assetpack/deleted`
    /// entry, read and checked at open), sorted by UTF-8 bytes; empty for most packs.
    public private(set) var deletedPaths: [String] = []

    /// The entries' index: sorted positions and a hash table over the records, nothing per entry.
    let directory: ZipDirectoryIndex
    let structure: ZipStructure
    let pool: ZipHandlePool
    let password: String?
    let decoder: Decoder
    /// With trusted keys: the verified signature, whose item `i` is the SHA-256 of record `i`'s span.
    let signature: PackSignature?

    /// Opens a zip pack.
    /// - Parameters:
    ///   - path: The pack's file path.
    ///   - credential: The password, or `nil` for unencrypted packs (encrypted entries then
    ///     fail to read with `.missingPassword`). A raw key is not valid for zip.
    ///   - limits: Safety limits for hostile or damaged packs.
    ///   - decoder: Which code decodes entries (default: bulk AES where it applies).
    ///   - trustedKeys: Publisher keys to require a signature from (docs/SECURITY.md). When not
    ///     empty, the pack must be signed by one of them and its central directory must be the
    ///     signed one and its signature must not have expired (checked here), and every read
    ///     compares the entry's stored bytes with their signed SHA-256 before it returns. Empty: a
    ///     signed pack reads as an unsigned one.
    /// - Throws: `AssetPackError` (`.untrusted` when trusted keys were given and the pack is
    ///   unsigned, signed by another key, altered or expired, `.io`, `.unsupportedFormat`, `.integrityFailure`,
    ///   `.limitExceeded`, `.invalidArgument` for a raw key).
    public convenience init(
        path: String, credential: PackCredential?, limits: ReadLimits = .default, decoder: Decoder = .automatic,
        trustedKeys: [PublisherKey] = []
    ) throws {
        let source: FileByteSource
        do { source = try FileByteSource(path: path) } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        try self.init(
            source: source, credential: credential, limits: limits, decoder: decoder, trustedKeys: trustedKeys)
    }

    /// Opens the zip held by `source` (see ``init(path:credential:limits:decoder:trustedKeys:)``).
    /// The end records and central directory (and, with trusted keys, the signature entry) are
    /// read first, and a remote source keeps them.
    package convenience init(
        source: any ByteSource, credential: PackCredential?, limits: ReadLimits = .default,
        decoder: Decoder = .automatic, trustedKeys: [PublisherKey] = []
    ) throws {
        do {
            try self.init(
                opening: source, credential: credential, limits: limits, decoder: decoder, trustedKeys: trustedKeys)
        } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
    }

    private init(
        opening source: any ByteSource, credential: PackCredential?, limits: ReadLimits, decoder: Decoder,
        trustedKeys: [PublisherKey]
    ) throws {
        self.decoder = decoder
        let watch = Stopwatch()
        switch credential {
        case .none: password = nil
        case .password(let p): password = p
        case .key: throw AssetPackError(.invalidArgument, "zip packs are opened with a password, not a raw key")
        }
        self.limits = limits
        let pool = ZipHandlePool(source: source)
        self.pool = pool
        let fileSize = source.size
        try ZipStructure.retainDirectory(of: source, limits: limits)
        // Our own structure checks first: they name damage precisely, and refuse overlapping
        // entries that libzip would read happily.
        let structure = try ZipStructure(fileSize: fileSize, limits: limits, signed: !trustedKeys.isEmpty) {
            try pool.read(at: $0, count: $1)
        }
        self.structure = structure
        pool.expectedRecords = structure.records.count
        signature =
            trustedKeys.isEmpty
            ? nil
            : try ZipSignature.verify(structure, fileSize: fileSize, trusted: trustedKeys) {
                try pool.read(at: $0, count: $1)
            }
        try signature?.release.checkNotExpired(now: Date())
        publisher = signature?.publisher
        release = signature?.release
        let directory = try ZipDirectoryIndex(structure.records)
        try limits.checkEntryCount(directory.visible.count)  // what the packer checked, its own records aside
        self.directory = directory
        self.entries = EntryList(count: directory.visible.count) { directory.entry(at: $0).info }
        if let position = directory.deletion {  // read like any entry (decrypted, checked, signed), then checked
            let deletion = directory.entry(record: position)
            try limits.checkDeletionRecord(deletion.info)  // before it is read
            let bytes = try readWhole(DeletionRecord.entryName, reserved: deletion).bytes
            deletedPaths = try DeletionRecord.decode(bytes, limits: limits) { directory.position(of: $0) != nil }
        }
        self.openSeconds = watch.elapsed
    }

    #if SystemLibraries
    /// How many libzip handles this reader opened (ZipCrypto reads and `Decoder.libzip` only);
    /// each parsed the central directory once.
    var libzipHandlesOpened: Int { pool.handlesOpened }
    #endif

    /// Looks up an entry by path (normalised first).
    public func entry(_ path: String) -> EntryInfo? {
        directory.position(of: path).map { directory.entry(at: $0).info }
    }

    /// Reads a whole entry into memory, verified, with its timing record.
    /// - Throws: `AssetPackError` naming the entry.
    public func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
        try accessing(path) { try readWhole(path) }
    }

    /// `reserved`: a hidden entry (the deletion record) read by the reader itself.
    private func readWhole(_ path: String, reserved: Entry? = nil) throws -> (bytes: [UInt8], timing: EntryTiming) {
        var timing = EntryTiming(path: path)
        let watch = Stopwatch()
        let (entry, dataStart) = try reserved.map { try prepare($0, &timing) } ?? find(path, &timing)
        if let bulk = try bulkDecoder(for: entry) {
            let bytes = try withRawEntry(entry, dataStart: dataStart) { source in
                try bulk.decode(password: Array(password!.utf8), timing: &timing, from: source)
            }
            timing.total = watch.elapsed
            return (bytes, timing)
        }
        if let plain = try plainDecoder(for: entry) {
            let bytes = try withRawEntry(entry, dataStart: dataStart) { source in
                try plain.decode(timing: &timing, from: source)
            }
            timing.total = watch.elapsed
            return (bytes, timing)
        }
        return try readThroughLibzip(entry, timing: timing, watch: watch)
    }

    /// Streams an entry in chunks of up to 256 KiB. Data is tentative until this returns:
    /// the HMAC and CRC are checked at the end.
    /// - Throws: `AssetPackError` naming the entry, or what `body` throws.
    @discardableResult
    public func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        try accessing(path) { try streamWhole(path, body) }
    }

    private func streamWhole(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        var timing = EntryTiming(path: path)
        let watch = Stopwatch()
        let (entry, dataStart) = try find(path, &timing)
        if let bulk = try bulkDecoder(for: entry) {
            try withRawEntry(entry, dataStart: dataStart) { source in
                try bulk.stream(password: Array(password!.utf8), timing: &timing, from: source, body)
            }
            timing.total = watch.elapsed
            return timing
        }
        if let plain = try plainDecoder(for: entry) {
            try withRawEntry(entry, dataStart: dataStart) { source in
                try plain.stream(timing: &timing, from: source, body)
            }
            timing.total = watch.elapsed
            return timing
        }
        return try streamThroughLibzip(entry, timing: timing, watch: watch, body)
    }

    // MARK: - Internals

    func find(_ path: String, _ timing: inout EntryTiming) throws -> (entry: Entry, dataStart: UInt64) {
        let found = Stopwatch.time(&timing.lookup) { directory.position(of: path).map(directory.entry(at:)) }
        guard let found else { throw AssetPackError(.entryNotFound, "no such entry", path: path) }
        return try prepare(found, &timing)
    }

    /// Checks `entry` before a read (ambiguity, limits, its local header).
    private func prepare(_ entry: Entry, _ timing: inout EntryTiming) throws -> (entry: Entry, dataStart: UInt64) {
        timing.path = entry.info.path
        timing.bytesIn = entry.info.storedSize
        if let count = directory.ambiguous[EntryPath.normalize(entry.info.path)] {
            throw AssetPackError(
                .integrityFailure, "\(count) entries have this path: which one is meant is ambiguous",
                path: entry.info.path)
        }
        try limits.check(entry.info)
        do {
            let dataStart = try structure.checkLocalHeader(Int(entry.index)) { try pool.read(at: $0, count: $1) }
            return (entry, dataStart)
        } catch let error as AssetPackError {
            throw untrustedIfAltered(entry) ?? error.naming(entry.info.path)
        }
    }

    /// With a signature: when reading `entry` failed, whether it failed because its bytes are not
    /// the signed ones. An altered entry is reported as `.untrusted` (what it is), not as the
    /// damage a check happened to meet first (a local header, a password verifier, a MAC).
    func untrustedIfAltered(_ entry: Entry) -> AssetPackError? {
        guard let signature else { return nil }
        let record = structure.records[Int(entry.index)]
        do {
            try finishSpan(entry, record, from: record.localHeaderOffset, hasher: SHA256Hasher(), signature: signature)
            return nil
        } catch let error as AssetPackError where error.code == .untrusted {
            return error
        } catch {
            return nil
        }
    }

    /// The bulk AES decoder for `entry`, or `nil` when libzip decodes it.
    private func bulkDecoder(for entry: Entry) throws -> BulkAESDecoder? {
        guard decoder == .automatic, let strength = WinZipAESKeyStrength(libzipMethod: entry.encryptionMethod) else {
            return nil
        }
        guard password != nil else {
            throw AssetPackError(
                .missingPassword, "entry is encrypted and no password was given", path: entry.info.path)
        }
        guard entry.info.compression != .other else {
            throw AssetPackError(
                .unsupportedFormat, "compression method \(entry.compressionMethod) is not supported",
                path: entry.info.path)
        }
        return BulkAESDecoder(
            rawSize: entry.info.storedSize, strength: strength, compression: entry.info.compression,
            size: entry.info.size, crc32: entry.info.crc32, limits: limits)
    }

    /// The decoder for an unencrypted entry, or `nil` when another path decodes it.
    private func plainDecoder(for entry: Entry) throws -> PlainEntryDecoder? {
        guard entry.info.encryption == .none, decoder == .automatic else { return nil }
        guard entry.info.compression != .other else {
            throw AssetPackError(
                .unsupportedFormat, "compression method \(entry.compressionMethod) is not supported",
                path: entry.info.path)
        }
        return PlainEntryDecoder(
            rawSize: entry.info.storedSize, compression: entry.info.compression, size: entry.info.size,
            crc32: entry.info.crc32 ?? 0)
    }

    /// Hands the entry's raw bytes (salt, verifier, ciphertext, MAC) to `body` with `pread`, from
    /// the offsets the structure checks validated, through the read hook (a remote pack's bytes
    /// arrive as they are read).
    ///
    /// Not libzip's raw read: on a stored AES entry libzip 1.7.3 wraps the raw handle in its CRC
    /// layer, which computes zlib's CRC-32 of the ciphertext for nothing (a seventh of a local
    /// 64 MiB read, measured with perf) and would compare it with the plaintext CRC at the end.
    ///
    /// A signed pack read with trusted keys hashes the entry's span as the bytes go by: the bytes
    /// decoded are the bytes hashed. The span's digest is compared with the signed one after
    /// `body` returns, before its result is handed on.
    private func withRawEntry<T>(
        _ entry: Entry, dataStart: UInt64, _ body: (BulkAESDecoder.RawSource) throws -> T
    ) throws -> T {
        let record = structure.records[Int(entry.index)]
        let hasher = signature == nil ? nil : SHA256Hasher()
        if let hasher {
            hasher.update(try pool.read(at: record.localHeaderOffset, count: Int(dataStart - record.localHeaderOffset)))
        }
        var offset = dataStart
        let dataEnd = dataStart + record.compressedSize
        let result: T
        do {
            result = try body { buffer in
                let want = Int(min(UInt64(buffer.count), dataEnd - offset))
                guard want > 0 else { return 0 }
                let n = try pool.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
                hasher?.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                offset += UInt64(n)
                return n
            }
        } catch let error as AssetPackError {
            throw (signature == nil ? nil : untrustedIfAltered(entry)) ?? error
        }
        if let hasher, let signature {
            try finishSpan(entry, record, from: offset, hasher: hasher, signature: signature)
        }
        return result
    }

    /// Adds the rest of `record`'s span from `offset` to `hasher` and compares the digest with
    /// the signed one.
    func finishSpan(
        _ entry: Entry, _ record: ZipStructure.Record, from offset: UInt64, hasher: SHA256Hasher,
        signature: PackSignature
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(min(256 << 10, max(1, record.end - offset))), alignment: 64)
        defer { buffer.deallocate() }
        try ZipSignature.hashSpan(record, from: offset, buffer: buffer, into: hasher) {
            try pool.read(into: $0, at: $1)
        }
        guard signature.item(Int(entry.index), is: hasher.finalize()) else {
            throw AssetPackError(.untrusted, "entry is not the one its publisher signed", path: entry.info.path)
        }
    }

    /// The entry's encryption from libzip's numbering of it (``ZipStructure/Record/encryptionMethod``).
    static func encryption(_ method: UInt16) -> EntryEncryption {
        switch method {
        case 0: .none
        case 1: .zipCrypto
        case 0x0101: .aes128
        case 0x0102: .aes192
        case 0x0103: .aes256
        default: .other
        }
    }
}
