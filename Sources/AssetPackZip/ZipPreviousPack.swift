import AssetPackCore
import AssetPackCrypto
import Foundation

/// The zip pack already at the output, opened so that a re-pack can copy its unchanged entries.
///
/// Only a pack with a manifest (`.assetpack/manifest`) that opens with the writer's credential
/// offers anything: the manifest is decrypted (one PBKDF2) and its MAC checked, so it was written
/// with this password. An entry is offered for reuse only if its central record and local header
/// still match what the manifest recorded and what this writer writes: name, size, CRC-32, no
/// data descriptor, our flags, the expected method and AES strength. The writer then checks the
/// SHA-256 of its stored data against the manifest (``storedDataMatches(_:)``) before copying it,
/// so a damaged or replaced entry is packed again instead of copied (damage never propagates).
/// Anything unexpected means that entry, or the whole pack, is simply packed fresh.
final class PreviousPack: @unchecked Sendable {
    /// One entry that may be reused: where its raw bytes (local header and data) are, and what
    /// the new central directory and manifest say about it.
    struct Candidate: Sendable {
        var record: ZipEntryRecord
        var rawOffset: UInt64
        var rawLength: UInt64
        var manifest: ZipManifest.Record
    }

    let fd: FileDescriptor
    /// Reusable entries by path.
    let candidates: [String: Candidate]
    /// The entries a source could have given it: all but the reserved ones (the deletion record
    /// is a source file). With every new entry reused, equal to their count means the same list.
    let entryCount: Int
    /// Whether it holds a signature entry (intact or not).
    let hasSignatureEntry: Bool

    private init(fd: FileDescriptor, read: (candidates: [String: Candidate], entryCount: Int, hasSignatureEntry: Bool))
    {
        self.fd = fd
        self.candidates = read.candidates
        self.entryCount = read.entryCount
        self.hasSignatureEntry = read.hasSignatureEntry
    }

    deinit { try? fd.close() }

    /// The largest manifest read (100,000 entries take about 8 MB).
    static let maxManifestSize: UInt64 = 64 << 20

    /// Opens the pack at `path` for reuse by a writer using `encoder`'s encryption and password.
    /// - Returns: `nil` when there is no such file, it is no zip or not one this writer wrote, or
    ///   has no readable manifest (all mean: pack fresh).
    /// - Throws: ``AssetPackError/outputOpensWithAnotherCredential(_:because:)`` when its manifest does
    ///   not open with the password.
    static func open(_ path: String, encoder: ZipEntryEncoder) throws -> PreviousPack? {
        // O_NONBLOCK: an output path naming a FIFO must not block the pack here.
        guard let fd = try? FileDescriptor.open(path, .readOnly, options: .init(rawValue: O_NONBLOCK)) else {
            return nil
        }
        do {
            let status = try fd.status()
            guard status.kind == .regular else { throw AssetPackError(.unsupportedFormat, "not a regular file") }
            return PreviousPack(
                fd: fd, read: try readCandidates(fd: fd, path: path, fileSize: status.size, encoder: encoder))
        } catch let e as AssetPackError where e.code == .wrongPassword {
            try? fd.close()
            throw AssetPackError.outputOpensWithAnotherCredential(path, because: e)
        } catch let refusal as Refusal {
            try? fd.close()
            throw refusal.error
        } catch {
            try? fd.close()
            return nil
        }
    }

    /// A previous pack that must not be replaced without `fresh`, whatever else it holds.
    private struct Refusal: Error { var error: AssetPackError }

    /// Whether the stored data of `candidate` (the bytes after its local header) still has the
    /// SHA-256 its manifest record gives. Reads them once; safe from any thread.
    func storedDataMatches(_ candidate: Candidate) -> Bool {
        let size = candidate.record.compressedSize
        let headerLength = candidate.rawLength - size
        let hasher = SHA256Hasher()
        let chunk = OwnedBuffer(capacity: Int(min(size, 1 << 20)))
        var done: UInt64 = 0
        while done < size {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: chunk.memory[0..<Int(min(size - done, UInt64(chunk.memory.count)))])
            guard let n = try? fd.preadFully(into: piece, at: candidate.rawOffset + headerLength + done),
                n == piece.count
            else { return false }
            hasher.update(UnsafeRawBufferPointer(piece))
            done += UInt64(n)
        }
        return hasher.finalize() == candidate.manifest.storedSHA256
    }

    private static func readCandidates(
        fd: FileDescriptor, path: String, fileSize: UInt64, encoder: ZipEntryEncoder
    ) throws -> (candidates: [String: Candidate], entryCount: Int, hasSignatureEntry: Bool) {
        let read: (UInt64, Int) throws -> [UInt8] = { offset, count in
            var bytes = [UInt8](repeating: 0, count: count)
            let n: Int
            do { n = try bytes.withUnsafeMutableBytes { try fd.preadFully(into: $0, at: offset) } } catch let e as Errno
            {
                throw e.io("cannot read the previous pack")
            }
            guard n == count else { throw AssetPackError(.integrityFailure, "previous pack is truncated") }
            return bytes
        }
        let structure = try ZipStructure(fileSize: fileSize, limits: .default, read: read)
        var byName: [[UInt8]: Int] = [:]
        var repeated: Set<[UInt8]> = []
        for (i, r) in structure.records.enumerated() where byName.updateValue(i, forKey: r.name) != nil {
            repeated.insert(r.name)
        }
        let entryCount = structure.records.count {
            let name = String(decoding: $0.name, as: UTF8.self)
            return !ZipManifest.isReserved(name) || name == DeletionRecord.entryName
        }
        let hasSignatureEntry = byName[ZipSignature.nameBytes] != nil
        let manifestName = Array(ZipManifest.entryName.utf8)
        guard !repeated.contains(manifestName), let m = byName[manifestName] else {
            return ([:], entryCount, hasSignatureEntry)
        }
        if !encoder.encrypted, structure.records[m].flags & ZipEntryRecord.encryptedFlag != 0 {
            throw Refusal(
                error: AssetPackError(
                    .invalidArgument,
                    "\(path) is an encrypted pack, and this one would not be (anyone could read its entries), so it was left as it is. To replace it with an unencrypted pack all the same, pack with --fresh"
                ))
        }

        // The manifest: decrypted (or read) and checked like any entry.
        let header = try LocalHeader(structure, m, encoder: encoder, read: read)
        let record = structure.records[m]
        guard record.compressedSize <= maxManifestSize, record.size <= maxManifestSize else {
            return ([:], entryCount, hasSignatureEntry)
        }
        let raw = try read(header.dataStart, Int(record.compressedSize))
        let content: [UInt8]
        if encoder.encrypted {
            var consumed = 0
            var timing = EntryTiming(path: ZipManifest.entryName)
            content = try BulkAESDecoder(
                rawSize: record.compressedSize, strength: .aes256,
                compression: header.record.compression == 8 ? .deflate : .store, size: record.size,
                crc32: BulkAESDecoder.expectedCRC(stored: record.crc32)
            ).decode(password: encoder.password, timing: &timing) { buffer in
                let n = min(buffer.count, raw.count - consumed)
                raw.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + consumed, byteCount: n) }
                consumed += n
                return n
            }
        } else {
            if header.record.compression == 8 {
                var out = [UInt8](repeating: 0, count: Int(record.size))
                try raw.withUnsafeBytes { i in try out.withUnsafeMutableBytes { try RawDeflate.decompress(i, into: $0) }
                }
                content = out
            } else {
                content = raw
            }
            try CRC32.check(
                CRC32.checksum(content), expected: record.crc32, path: ZipManifest.entryName, authenticated: false)
        }
        let manifest = try ZipManifest(decoding: content)

        var candidates: [String: Candidate] = [:]
        for entry in manifest.records {
            let name = Array(entry.path.utf8)
            guard !repeated.contains(name), let i = byName[name], !ZipManifest.isReserved(entry.path) else { continue }
            let r = structure.records[i]
            guard r.size == entry.size, r.crc32 == entry.crc32, !r.hasDataDescriptor,
                let local = try? LocalHeader(structure, i, encoder: encoder, read: read),
                !encoder.encrypted || r.compressedSize >= UInt64(WinZipAESKeyStrength.aes256.overhead)
            else { continue }
            // The policy asked for now must allow how the entry was stored: `.store` reuses stored
            // entries only, `.deflate` deflated ones (and empty ones), `.auto` either.
            switch encoder.policy {
            case .store: guard local.record.compression == 0 else { continue }
            case .deflate: guard local.record.compression == 8 || r.size == 0 else { continue }
            case .auto: break
            }
            candidates[entry.path] = Candidate(
                record: local.record, rawOffset: r.localHeaderOffset,
                rawLength: local.dataStart - r.localHeaderOffset + r.compressedSize, manifest: entry)
        }
        return (candidates, entryCount, hasSignatureEntry)
    }

    /// An entry's local header, checked against its central record and against what this writer
    /// would have written (flags, method, AES field), turned into the record the new directory uses.
    private struct LocalHeader {
        var dataStart: UInt64
        var record: ZipEntryRecord

        init(
            _ structure: ZipStructure, _ index: Int, encoder: ZipEntryEncoder,
            read: (UInt64, Int) throws -> [UInt8]
        ) throws {
            let central = structure.records[index]
            dataStart = try structure.checkLocalHeader(index, read: read)
            let bytes = try read(central.localHeaderOffset, Int(dataStart - central.localHeaderOffset))
            let unexpected = AssetPackError(.unsupportedFormat, "entry was not written by this writer")
            let fields = try bytes.withUnsafeBytes { buffer in
                var r = ByteReader(buffer, structure: "zip")
                try r.skip(6)
                let flags = try r.u16(), method = try r.u16(), time = try r.u16(), date = try r.u16()
                try r.skip(12)
                let nameLength = Int(try r.u16()), extraLength = Int(try r.u16())
                try r.skip(nameLength)
                var aes: (vendor: UInt16, strength: UInt8, method: UInt16)?
                var zip64 = false
                var extra = ByteReader(try r.raw(extraLength), structure: "zip")
                while extra.remaining >= 4 {
                    let id = try extra.u16(), length = Int(try extra.u16())
                    var field = ByteReader(try extra.raw(length), structure: "zip")
                    if id == ZipEntryRecord.zip64ExtraID { zip64 = true }
                    if id == ZipEntryRecord.aesExtraID, length == 7 {
                        let vendor = try field.u16()
                        guard try field.bytes(2) == [0x41, 0x45] else { throw unexpected }
                        aes = (vendor, try field.u8(), try field.u16())
                    }
                }
                return (flags, method, time, date, aes, zip64)
            }
            let (flags, method, time, date, aes, zip64) = fields
            let compression: UInt16
            if encoder.encrypted {
                guard flags == ZipEntryRecord.utf8Flag | ZipEntryRecord.encryptedFlag,
                    method == ZipEntryRecord.aesMethod,
                    let aes, aes.vendor == 1 || aes.vendor == 2, aes.strength == WinZipAESKeyStrength.aes256.rawValue,
                    aes.method == 0 || aes.method == 8
                else { throw unexpected }
                compression = aes.method
            } else {
                guard flags == ZipEntryRecord.utf8Flag, method == 0 || method == 8, aes == nil else { throw unexpected }
                compression = method
            }
            record = ZipEntryRecord(
                name: central.name, encrypted: encoder.encrypted, compression: compression,
                aesVendorVersion: aes?.vendor ?? 2, dosTime: time, dosDate: date, crc32: central.crc32,
                compressedSize: central.compressedSize, size: central.size, localZip64: zip64)
        }
    }
}
