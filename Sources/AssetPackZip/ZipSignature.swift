import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation

/// The publisher signature of a zip pack: the reserved entry `.assetpack/signature`, stored
/// and unencrypted, last in the file and last in the central directory (docs/FORMAT.md, "Signed
/// zip packs"). Its content is a ``PackSignature`` block of kind zip:
/// - the head digest is the SHA-256 of the central directory before the signature's record;
/// - item `i` is the SHA-256 of entry `i`'s *span*, in central directory order: the bytes from
///   its local header to the next entry's local header (or, for the last entry, to the
///   signature's), so local header, data, data descriptor and any gap are all covered.
///
/// The first entry starts at offset 0, and everything from the signature entry's local header
/// to the end of the file except the block itself (its local header, its central record, the
/// end records) must be exactly what ``tail(block:offset:directorySize:count:)`` writes: a
/// reader rebuilds those bytes and compares. So every byte of a signed pack is either signed
/// or rebuilt, and a changed byte anywhere is refused when the entry holding it is read (or,
/// for the directory and the signature, at open).
package enum ZipSignature {
    package static let entryName = ".assetpack/signature"
    static let nameBytes = Array(entryName.utf8)

    /// Whether `record` can be the signature entry of a zip of `count` central records: its
    /// name, and a stored size no larger than a block for that many entries. What a remote
    /// reader fetches before it knows whether the pack is signed.
    package static func mayBeSignature(_ record: ZipStructure.Record, records count: Int) -> Bool {
        record.name == nameBytes && record.compressedSize <= UInt64(PackSignature.size(items: count) + 1024)
    }

    /// The signature entry's record, for a block of `length` bytes with `crc` at `offset`.
    static func record(length: Int, crc: UInt32, offset: UInt64) -> ZipEntryRecord {
        ZipEntryRecord(
            name: nameBytes, encrypted: false, compression: 0, dosTime: 0, dosDate: 0x21, crc32: crc,
            compressedSize: UInt64(length), size: UInt64(length), localZip64: false, offset: offset)
    }

    /// The bytes that follow the central directory's other records: the signature entry's
    /// central record and the end records.
    static func directoryTail(_ record: ZipEntryRecord, directoryOffset: UInt64, otherRecords: UInt64, count: Int)
        -> [UInt8]
    {
        var central = ZipBytes()
        record.appendCentralRecord(to: &central)
        return central.data
            + ZipEntryRecord.endOfDirectory(
                count: count, directoryOffset: directoryOffset, directorySize: otherRecords + UInt64(central.data.count)
            )
    }

    /// Signs the complete zip in `fd` (our writer's or libzip's): appends the signature entry
    /// after the last entry, and rewrites the central directory and end records after it.
    /// - Parameter release: What the signature states (its size is the signed zip's, computed
    ///   here: every length after the entries follows from the entry count and the name).
    /// - Throws: `.invalidArgument` for a zip that already holds a signature or does not start
    ///   with an entry; `.io`; what ``ZipStructure`` throws for a damaged zip.
    package static func sign(_ fd: FileDescriptor, path: String, key: PublisherSigningKey, release: PackRelease)
        throws
    {
        let size = try fileSize(fd, path: path)
        let read = reader(fd, path: path)
        let structure = try ZipStructure(fileSize: size, limits: .default, read: read)
        let records = structure.records
        guard !records.contains(where: { $0.name == nameBytes }) else {
            throw AssetPackError(.invalidArgument, "\(path) already holds a signature")
        }
        guard records.isEmpty || records.map(\.localHeaderOffset).min() == 0 else {
            throw AssetPackError(.invalidArgument, "\(path) has bytes before its first entry")
        }
        let items = try spanDigests(records, fd: fd, path: path)
        let directory = try read(structure.directoryOffset, Int(structure.directorySize))
        let at = structure.directoryOffset
        var release = release
        let length = PackSignature.size(items: records.count, release: release)
        if !release.isLegacy {
            // The CRC-32 changes no length, so a record with any CRC sizes the tail.
            let probe = record(length: length, crc: 0, offset: at)
            let directoryAt = at + UInt64(probe.localHeader().count + length)
            let tail = directoryTail(
                probe, directoryOffset: directoryAt, otherRecords: structure.directorySize, count: records.count + 1)
            release.size = directoryAt + structure.directorySize + UInt64(tail.count)
        }
        let block = PackSignature(
            kind: .zip, publisher: key.publicKey, headDigest: SHA256Hasher.digest(directory),
            dataDigest: try SHA256Hasher.digest(of: fd, 0..<structure.directoryOffset, path: path), items: items,
            release: release
        ).signed(with: key)
        precondition(block.count == length)
        let record = record(length: block.count, crc: CRC32.checksum(block), offset: at)
        let local = record.localHeader()
        let newDirectory = at + UInt64(local.count + block.count)
        let tail = directoryTail(
            record, directoryOffset: newDirectory, otherRecords: structure.directorySize, count: records.count + 1)
        let bytes = local + block + directory + tail
        precondition(release.size.map { $0 == at + UInt64(bytes.count) } ?? true)
        do {
            try bytes.withUnsafeBytes { try fd.pwriteAll($0, at: at) }
            try fd.truncate(to: at + UInt64(bytes.count))
        } catch let error as Errno { throw error.io("cannot write \(path)") }
    }

    /// The SHA-256 of every record's span, in directory order, hashed on every core.
    private static func spanDigests(_ records: RecordTable, fd: FileDescriptor, path: String) throws
        -> [UInt8]
    {
        var digests = [UInt8](repeating: 0, count: 32 * records.count)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let tasks = max(1, min(records.count, cores * 4))
        let failure = FirstError()
        digests.withUnsafeMutableBytes { out in
            let out = UncheckedBuffer(out)
            DispatchQueue.concurrentPerform(iterations: tasks) { task in
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
                defer { buffer.deallocate() }
                let hasher = SHA256Hasher()
                for i in (records.count * task / tasks)..<(records.count * (task + 1) / tasks) {
                    do {
                        hasher.reset()
                        try hashSpan(records[i], buffer: buffer, into: hasher) {
                            try preadFully(fd, $0, at: $1, path: path)
                        }
                        let digest = hasher.finalize()
                        UnsafeMutableRawBufferPointer(rebasing: out.value[32 * i..<32 * i + 32]).copyBytes(from: digest)
                    } catch {
                        failure.record(error)
                        return
                    }
                }
            }
        }
        try failure.rethrow()
        return digests
    }

    /// Adds bytes `[from, record.end)` of `record`'s span to `hasher`, read through `buffer`.
    /// - Parameter read: Fills a buffer at an offset; fewer bytes only at the end of the file.
    static func hashSpan(
        _ record: ZipStructure.Record, from: UInt64? = nil, buffer: UnsafeMutableRawBufferPointer,
        into hasher: SHA256Hasher, read: (UnsafeMutableRawBufferPointer, UInt64) throws -> Int
    ) throws {
        var offset = from ?? record.localHeaderOffset
        while offset < record.end {
            let want = Int(min(UInt64(buffer.count), record.end - offset))
            let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
            guard try read(piece, offset) == want else {
                throw AssetPackError(.integrityFailure, "zip is truncated")
            }
            hasher.update(UnsafeRawBufferPointer(piece))
            offset += UInt64(want)
        }
    }

    /// Whether the zip in `source` ends with a signature entry (not checked).
    package static func isPresent(_ source: any ByteSource) throws -> Bool {
        try ZipStructure(fileSize: source.size, limits: .default, read: ZipStructure.reader(source)).records.last?
            .name == nameBytes
    }

    /// Checks the signature of the zip in `source` without a password: the block, the central
    /// directory and the end records, and every entry span as one stream (what an installer can
    /// check; a reader checks each entry's span as it reads it).
    /// - Returns: The verified block (its key and release).
    /// - Throws: `.untrusted`, `.integrityFailure`, `.unsupportedFormat`, `.io`.
    package static func trustedSignature(_ source: any ByteSource, trusting trusted: [PublisherKey]) throws
        -> PackSignature
    {
        let read = ZipStructure.reader(source)
        let structure = try ZipStructure(fileSize: source.size, limits: .default, signed: true, read: read)
        let block = try verify(structure, fileSize: source.size, trusted: trusted, read: read)
        let entries = 0..<structure.records.last!.localHeaderOffset
        guard try SHA256Hasher.digest(of: source, entries) == block.dataDigest else {
            throw AssetPackError(.untrusted, "the pack's entries are not the ones its publisher signed")
        }
        return block
    }

    /// The signature block of the zip in `source`, checked against its own key (so it is intact,
    /// not trusted); `nil` for an unsigned zip. Reads (and a remote source keeps) only the
    /// directory, the end records and the signature entry. Its items describe ``spans(_:)``.
    /// - Throws: `.untrusted` or `.integrityFailure` for a damaged block, `.limitExceeded`, `.io`.
    package static func signature(_ source: any ByteSource, limits: ReadLimits = .default) throws
        -> PackSignature?
    {
        try ZipStructure.retainDirectory(of: source, limits: limits)
        let size = source.size
        let read = ZipStructure.reader(source)
        let structure = try ZipStructure(fileSize: size, limits: limits, signed: true, read: read)
        // The signature entry is the last one before the directory; only it is read (an
        // unsigned zip's last entry may be large, and is not needed to know it is unsigned).
        guard let last = structure.records.last, last.name == nameBytes,
            mayBeSignature(last, records: structure.records.count)
        else { return nil }
        let headerLength = 30 + nameBytes.count
        guard PackSignature.isPossibleSize(last.compressedSize, items: structure.records.count - 1) else {
            throw AssetPackError(.integrityFailure, "the signature entry's size is not a signature block's")
        }
        let length = Int(last.compressedSize)
        guard last.localHeaderOffset + UInt64(headerLength + length) <= size else {
            throw AssetPackError(.integrityFailure, "the signature entry runs past the end of the zip")
        }
        try source.retain(last.localHeaderOffset..<structure.directoryOffset)
        let raw = try read(last.localHeaderOffset + UInt64(headerLength), length)
        let publisher = try raw.withUnsafeBytes { try PackSignature.parse($0, kind: .zip, trusted: []) }.publisher
        return try verify(structure, fileSize: size, trusted: [publisher], read: read)
    }

    /// Every entry's span in `source` (the signature entry excepted), in directory order: what a
    /// signature's items describe.
    package static func spans(_ source: any ByteSource) throws -> [Range<UInt64>] {
        try ZipStructure(fileSize: source.size, limits: .default, read: ZipStructure.reader(source)).records
            .filter { $0.name != nameBytes }.map { $0.localHeaderOffset..<$0.end }
    }

    private static func fileSize(_ fd: FileDescriptor, path: String) throws -> UInt64 {
        do { return try fd.status().size } catch { throw error.io("cannot stat \(path)") }
    }

    /// Reads exactly `count` bytes at an offset of `fd`; a short file is `.integrityFailure`.
    private static func reader(_ fd: FileDescriptor, path: String) -> (UInt64, Int) throws -> [UInt8] {
        { offset, count in
            try [UInt8](unsafeUninitializedCapacity: count) { buffer, n in
                n = try preadFully(fd, UnsafeMutableRawBufferPointer(buffer), at: offset, path: path)
                guard n == count else { throw AssetPackError(.integrityFailure, "zip is truncated") }
            }
        }
    }

    /// Checks a signed zip's signature when it is opened with trusted keys.
    ///
    /// - Parameters:
    ///   - structure: The pack's structure, parsed with `signed: true`.
    ///   - read: Reads exactly `count` bytes at an offset.
    /// - Returns: The verified block, whose items the reads compare spans with.
    /// - Throws: `.untrusted` when the pack is not signed, is signed by a key not in `trusted`,
    ///   or its directory, signature entry or end records are not the signed or canonical ones.
    package static func verify(
        _ structure: ZipStructure, fileSize: UInt64, trusted: [PublisherKey],
        read: (_ offset: UInt64, _ count: Int) throws -> [UInt8]
    ) throws -> PackSignature {
        let records = structure.records
        guard let last = records.last, last.name == nameBytes, let (digestBefore, lastBytes) = structure.lastRecord
        else {
            throw AssetPackError(.untrusted, "the pack is not signed, and trusted keys were given")
        }
        let others = records.dropLast()
        guard !others.contains(where: { $0.name == nameBytes }) else {
            throw AssetPackError(.untrusted, "the pack holds more than one signature entry")
        }
        // The block's size follows from the entry count (and a name of at most 255 bytes), so
        // nothing is read on a hostile size.
        guard PackSignature.isPossibleSize(last.compressedSize, items: others.count) else {
            throw AssetPackError(.untrusted, "the signature entry is not where a signed pack keeps it")
        }
        let length = Int(last.compressedSize)
        let headerLength = 30 + nameBytes.count
        guard last.localHeaderOffset + UInt64(headerLength + length) == structure.directoryOffset,
            others.allSatisfy({ $0.localHeaderOffset < last.localHeaderOffset }),
            records.map(\.localHeaderOffset).min() == 0
        else {
            throw AssetPackError(.untrusted, "the signature entry is not where a signed pack keeps it")
        }
        let region = try read(last.localHeaderOffset, headerLength + length)
        let block = Array(region[headerLength...])
        let record = record(length: length, crc: CRC32.checksum(block), offset: last.localHeaderOffset)
        let directoryEnd = structure.directoryOffset + structure.directorySize
        let expectedTail = directoryTail(
            record, directoryOffset: structure.directoryOffset,
            otherRecords: structure.directorySize - UInt64(lastBytes.count), count: records.count)
        let tail = try read(directoryEnd - UInt64(lastBytes.count), Int(fileSize - directoryEnd) + lastBytes.count)
        guard region[..<headerLength].elementsEqual(record.localHeader()), tail == expectedTail else {
            throw AssetPackError(.untrusted, "the signature entry or the end records were altered")
        }
        let signature = try block.withUnsafeBytes { try PackSignature.parse($0, kind: .zip, trusted: trusted) }
        try signature.checkSize(fileSize)
        guard signature.headDigest == digestBefore else {
            throw AssetPackError(.untrusted, "the central directory is not the one its publisher signed")
        }
        return signature
    }
}

/// Fills `buffer` from `offset`; fewer bytes only at the end of the file.
private func preadFully(_ fd: FileDescriptor, _ buffer: UnsafeMutableRawBufferPointer, at offset: UInt64, path: String)
    throws -> Int
{
    do { return try fd.preadFully(into: buffer, at: offset) } catch { throw error.io("cannot read \(path)") }
}

private struct UncheckedBuffer: @unchecked Sendable {
    let value: UnsafeMutableRawBufferPointer
    init(_ value: UnsafeMutableRawBufferPointer) { self.value = value }
}
