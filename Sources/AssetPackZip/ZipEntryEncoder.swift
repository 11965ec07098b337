import AssetPackCore
import AssetPackCrypto
import Foundation

/// A heap buffer owned by one value at a time (freed on deinit), so results can move between
/// threads without copies.
final class OwnedBuffer: @unchecked Sendable {
    let memory: UnsafeMutableRawBufferPointer
    /// Bytes in use, from the start.
    var count: Int

    init(capacity: Int) {
        memory = .allocate(byteCount: max(capacity, 1), alignment: 64)
        count = capacity
    }

    deinit { memory.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: memory[0..<count]) }
    var mutableBytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: memory[0..<count]) }
}

/// How the writer compresses, encrypts and describes entries: the settings every thread shares.
struct ZipEntryEncoder: Sendable {
    /// Zip encryption: `.aes256` or `.none` (ZipCrypto goes through libzip).
    var encrypted: Bool
    /// The password's bytes (empty when not encrypted).
    var password: [UInt8]
    var policy: CompressionPolicy
    /// libdeflate level.
    var level: Int32
    /// Test hook: salts from this seed instead of the system's random generator.
    var saltSeed: UInt64?

    /// Bytes before and after the payload in the stored data (salt + verifier, MAC).
    var head: Int { encrypted ? WinZipAESKeyStrength.aes256.headerLength : 0 }
    var tail: Int { encrypted ? WinZipAES.macLength : 0 }

    /// The salt of salt number `n` (entry order; later numbers for entries written twice).
    func salt(_ n: Int) -> [UInt8] {
        guard let saltSeed else { return secureRandomBytes(WinZipAESKeyStrength.aes256.saltLength) }
        var rng = SplitMix64(seed: saltSeed &+ UInt64(n) &* 0x9E37_79B9)
        return (0..<2).flatMap { _ in withUnsafeBytes(of: rng.next().littleEndian, Array.init) }
    }

    /// The keys for salt number `n`.
    func keys(_ n: Int) throws -> WinZipAESEntryKeys {
        try WinZipAESEntryKeys(password: password, salt: salt(n))
    }

    /// The record of an entry whose sizes and CRC are known.
    func record(
        path: String, deflated: Bool, crc: UInt32, size: UInt64, compressedSize: UInt64, mtime: (UInt16, UInt16)
    ) -> ZipEntryRecord {
        ZipEntryRecord(
            name: Array(path.utf8), encrypted: encrypted, compression: deflated ? 8 : 0,
            aesVendorVersion: ZipEntryRecord.aesVendorVersion(size: size), dosTime: mtime.0, dosDate: mtime.1,
            crc32: crc, compressedSize: compressedSize, size: size,
            localZip64: ZipEntryRecord.needsLocalZip64(size: size))
    }

    /// Compresses (where it pays) and encrypts a whole entry held in memory.
    ///
    /// `buffer` holds the plaintext at `head ..< head + size` with `head` bytes free before and
    /// `tail` after. The result is the stored data: `buffer` itself (stored) or a new buffer.
    func seal(
        _ buffer: OwnedBuffer, size: Int, path: String, saltNumber: Int, mtime: (UInt16, UInt16),
        decision: Bool?, worker: ZipWorkerContext
    ) throws -> EncodedEntry {
        let plain = UnsafeRawBufferPointer(rebasing: buffer.memory[head..<(head + size)])
        var crc = CRC32()
        crc.update(plain)
        let hasher = SHA256Hasher()
        hasher.update(plain)
        var deflate = decision ?? true
        if decision == nil, size > CompressionPolicy.sampleSize {
            deflate = policy.samplePays(
                UnsafeRawBufferPointer(rebasing: plain[0..<CompressionPolicy.sampleSize]),
                compressor: worker.sampler, scratch: worker.sampleScratch.mutableBytes)
        }
        var stored = buffer
        if deflate, size > 0 {
            let limit = policy.deflateLimit(size)
            if limit > 0 {
                let out = OwnedBuffer(capacity: head + limit + tail)
                if let n = worker.compressor.compress(
                    plain, into: UnsafeMutableRawBufferPointer(rebasing: out.memory[head..<(head + limit)]))
                {
                    out.count = head + n + tail
                    stored = out
                } else {
                    deflate = false
                }
            } else {
                deflate = false
            }
        }
        if encrypted { try winZipAESSeal(stored.mutableBytes, keys: keys(saltNumber)) }
        let record = record(
            path: path, deflated: deflate, crc: crc.value, size: UInt64(size),
            compressedSize: UInt64(stored.count), mtime: mtime)
        let storedHasher = SHA256Hasher()
        storedHasher.update(stored.bytes)
        return EncodedEntry(
            record: record, data: stored, sha256: hasher.finalize(), storedSHA256: storedHasher.finalize())
    }
}

/// One entry compressed and encrypted in memory, ready to be written.
struct EncodedEntry: @unchecked Sendable {
    var record: ZipEntryRecord
    var data: OwnedBuffer
    /// SHA-256 of the plaintext and of `data` (for the manifest).
    var sha256: [UInt8]
    var storedSHA256: [UInt8]
}

/// What one worker thread keeps between tasks.
final class ZipWorkerContext {
    /// Compresses entries, at the pack's level.
    let compressor: RawDeflate.FastCompressor
    /// Compresses `.auto`'s samples at ``CompressionPolicy/packLevel`` whatever the pack's level,
    /// so that both levels store and deflate the same entries, and a slow level's cost is spent
    /// only on entries that are kept deflated.
    let sampler: RawDeflate.FastCompressor
    let sampleScratch = OwnedBuffer(capacity: CompressionPolicy.sampleSize)

    init(level: Int32) {
        compressor = RawDeflate.FastCompressor(level: level)
        sampler =
            level == CompressionPolicy.packLevel
            ? compressor : RawDeflate.FastCompressor(level: CompressionPolicy.packLevel)
    }
}

/// Reading source files for the writer.
enum SourceReader {
    /// Opens `file` for reading and checks it still has the size it was scanned with.
    /// - Returns: The descriptor (the caller closes it) and the DOS modification time.
    static func open(_ file: SourceFile) throws -> (fd: FileDescriptor, mtime: (UInt16, UInt16)) {
        let fd = try file.openForPacking()
        let status: FileStatus
        do { status = try fd.status() } catch {
            try? fd.close()
            throw error.io("cannot stat \(file.diskPath)")
        }
        guard status.size == file.size else {
            try? fd.close()
            throw changed(file)
        }
        return (fd, ZipEntryRecord.dosDateTime(Int(status.modificationTime / 1_000_000_000)))
    }

    /// Fills `buffer` from `fd` at `offset`.
    /// - Throws: `.io` for a read error, or a file that ends early (it changed while packing).
    static func read(
        _ fd: FileDescriptor, _ file: SourceFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64
    ) throws {
        let n: Int
        do { n = try fd.preadFully(into: buffer, at: offset) } catch { throw error.io("cannot read \(file.diskPath)") }
        guard n == buffer.count else { throw changed(file) }
    }

    static func changed(_ file: SourceFile) -> AssetPackError {
        AssetPackError(.io, "\(file.diskPath) changed size while it was being packed", path: file.path)
    }
}
