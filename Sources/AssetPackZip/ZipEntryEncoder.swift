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

    /// How much of an entry `.auto` compresses first to decide whether deflate pays.
    static let sampleSize = 64 << 10

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

    /// What to do with an entry before reading it: `.store`, `.deflate`, or `nil` (sample it).
    func decisionByName(_ file: SourceFile) -> Bool? {
        switch policy {
        case .store: return false
        case .deflate: return file.size > 0
        case .auto:
            let ext = (file.path as NSString).pathExtension.lowercased()
            if CompressionPolicy.compressedExtensions.contains(ext) || file.size < 32 { return false }
            return nil
        }
    }

    /// Most deflated bytes an entry of `size` may take: `.auto` wants a saving of
    /// `CompressionPolicy.minimumSaving`; anything else only something smaller.
    func deflateLimit(_ size: Int) -> Int {
        policy == .auto ? Int(Double(size) * (1 - CompressionPolicy.minimumSaving)) : size - 1
    }

    /// Whether a sample of the data deflates enough for `.auto`.
    func samplePays(_ sample: UnsafeRawBufferPointer, compressor: RawDeflate.FastCompressor, scratch: OwnedBuffer)
        -> Bool
    {
        let limit = deflateLimit(sample.count)
        guard limit > 0 else { return false }
        return compressor.compress(sample, into: UnsafeMutableRawBufferPointer(rebasing: scratch.memory[0..<limit]))
            != nil
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
        if decision == nil, size > Self.sampleSize {
            deflate = samplePays(
                UnsafeRawBufferPointer(rebasing: plain[0..<Self.sampleSize]), compressor: worker.compressor,
                scratch: worker.sampleScratch)
        }
        var stored = buffer
        if deflate, size > 0 {
            let limit = deflateLimit(size)
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
        return EncodedEntry(record: record, data: stored, sha256: hasher.finalize())
    }
}

/// One entry compressed and encrypted in memory, ready to be written.
struct EncodedEntry: @unchecked Sendable {
    var record: ZipEntryRecord
    var data: OwnedBuffer
    var sha256: [UInt8]
}

/// What one worker thread keeps between tasks.
final class ZipWorkerContext {
    let compressor: RawDeflate.FastCompressor
    let sampleScratch = OwnedBuffer(capacity: ZipEntryEncoder.sampleSize)

    init(level: Int32) {
        compressor = RawDeflate.FastCompressor(level: level)
    }
}

/// Reading source files for the writer.
enum SourceReader {
    /// Opens `file` for reading and checks it still has the size it was scanned with.
    /// - Returns: The descriptor (the caller closes it) and the DOS modification time.
    static func open(_ file: SourceFile) throws -> (fd: Int32, mtime: (UInt16, UInt16)) {
        let fd = Glibc.open(file.url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileOutput.error("cannot open \(file.url.path)") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let error = FileOutput.error("cannot stat \(file.url.path)")
            close(fd)
            throw error
        }
        guard UInt64(st.st_size) == file.size else {
            close(fd)
            throw changed(file)
        }
        return (fd, ZipEntryRecord.dosDateTime(Int(st.st_mtim.tv_sec)))
    }

    /// Fills `buffer` from `fd` at `offset`.
    /// - Throws: `.io` for a read error, or a file that ends early (it changed while packing).
    static func read(_ fd: Int32, _ file: SourceFile, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64)
        throws
    {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileOutput.error("cannot read \(file.url.path)")
            }
            if n == 0 { throw changed(file) }
            done += n
        }
    }

    static func changed(_ file: SourceFile) -> AssetPackError {
        AssetPackError(.io, "\(file.url.path) changed size while it was being packed", path: file.path)
    }
}
