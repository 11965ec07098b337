import AssetPackCore
import Foundation

/// Decodes one WinZip AES entry (AE-1 or AE-2) from its raw stored bytes, in bulk.
///
/// The bytes are the entry's stored data, `salt | verifier | ciphertext | MAC` (the central
/// record's compressed size), read by the reader from the offsets ``ZipStructure`` checked. The
/// decoder never asks the source for more than `rawSize` bytes.
///
/// Work is pipelined in `chunkSize` pieces: read, HMAC, decrypt in place, inflate, CRC.
/// Stored entries are decrypted straight into the result; deflated ones are inflated straight into it.
package struct BulkAESDecoder {
    /// A source of raw stored bytes: fills a prefix of the buffer and returns how many bytes it
    /// wrote, `0` at the end. Throw `AssetPackError` for read failures.
    package typealias RawSource = (UnsafeMutableRawBufferPointer) throws -> Int

    /// The entry's stored size (`comp_size`): salt, verifier, ciphertext and MAC.
    package var rawSize: UInt64
    /// The entry's key strength.
    package var strength: WinZipAESKeyStrength
    /// How the plaintext is compressed (`.store` or `.deflate`).
    package var compression: EntryCompression
    /// The declared uncompressed size.
    package var size: UInt64
    /// The CRC-32 to check, or `nil` when the entry stores none (see ``expectedCRC(stored:)``).
    package var crc32: UInt32?
    /// Limits applied before any allocation.
    package var limits: ReadLimits
    /// Raw bytes processed per step (and the size of streamed chunks).
    package var chunkSize = BulkAESDecoder.defaultChunkSize
    /// The pieces the decoder reads and works on.
    package static let defaultChunkSize = 256 << 10
    /// Stored entries from this size up are read with HMAC-SHA1 on a second thread (`.max`: never).
    package var pipelineThreshold = 8 << 20

    /// Describes the entry to decode.
    package init(
        rawSize: UInt64, strength: WinZipAESKeyStrength, compression: EntryCompression,
        size: UInt64, crc32: UInt32?, limits: ReadLimits = .default
    ) {
        self.rawSize = rawSize
        self.strength = strength
        self.compression = compression
        self.size = size
        self.crc32 = crc32
        self.limits = limits
    }

    /// The CRC to check for an AES entry whose directory stores `crc`.
    ///
    /// AE-2 entries (7-Zip, zip4j, WinZip; libzip below 20 bytes) store 0 and rely on the MAC;
    /// AE-1 entries and libzip's AE-2 entries store the real CRC. A real CRC of 0 then goes
    /// unchecked, which is harmless: the MAC still authenticates every byte.
    package static func expectedCRC(stored crc: UInt32) -> UInt32? { crc == 0 ? nil : crc }

    /// Reads, authenticates and decodes the whole entry.
    ///
    /// No byte is returned unless the HMAC (and the CRC, when given) matched.
    /// - Parameters:
    ///   - password: The password bytes.
    ///   - timing: Adds to `keyDerivation` (PBKDF2), `decrypt` (HMAC, AES, inflate) and `crc`;
    ///     sets `bytesIn`, `bytesOut`, `decoder` ("bulk-aes") and `crcChecked`. `total` and
    ///     `lookup` are the caller's. Errors name `timing.path` when it is not empty.
    ///   - source: The raw stored bytes.
    /// - Returns: Exactly `size` bytes.
    /// - Throws: `.limitExceeded` (before allocating), `.wrongPassword`, `.integrityFailure`
    ///   (HMAC, CRC, truncated, corrupt or over-long data), `.unsupportedFormat`, or what `source` throws.
    package func decode(password: [UInt8], timing: inout EntryTiming, from source: RawSource) throws -> [UInt8] {
        try naming(timing.path, source) { source in
            let payload = try validatedPayload()
            var reader = RawReader(source: source, remaining: rawSize)
            let decryptor = try open(password: password, reader: &reader, timing: &timing)
            let count = Int(size)
            var crc = CRC32()
            let pipelined =
                compression == .store && count >= pipelineThreshold && ProcessInfo.processInfo.activeProcessorCount > 1
            let output = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                let out = UnsafeMutableRawBufferPointer(buffer)
                adviseHugePages(out)
                if pipelined {
                    try decryptPipelined(into: out, reader: &reader, decryptor: decryptor, crc: &crc, timing: &timing)
                } else if compression == .store {
                    var pos = 0
                    while pos < count {
                        let piece = UnsafeMutableRawBufferPointer(rebasing: out[pos..<min(pos + chunkSize, count)])
                        try reader.readExactly(piece)
                        Stopwatch.time(&timing.decrypt) { decryptor.decrypt(piece) }
                        if crc32 != nil { Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(piece)) } }
                        pos += piece.count
                    }
                } else {
                    try inflate(
                        payload: payload, into: out, reader: &reader, decryptor: decryptor,
                        crc: &crc, timing: &timing)
                }
                initialized = count
            }
            if compression == .store && !pipelined { try finish(reader: &reader, decryptor: decryptor) }
            try check(crc: crc, timing: &timing)
            timing.bytesIn = rawSize
            timing.bytesOut = UInt64(count)
            timing.decoder = "bulk-aes"
            return output
        }
    }

    /// Streams the decoded entry to `body` in chunks of at most `chunkSize` bytes.
    ///
    /// The HMAC and CRC are checked only at the end: everything `body` received is tentative
    /// until this returns without throwing. Output beyond `size` fails at once.
    /// - Parameters:
    ///   - password: The password bytes.
    ///   - timing: As for ``decode(password:timing:from:)``; time spent in `body` is not counted.
    ///   - source: The raw stored bytes.
    ///   - body: Receives each decoded chunk; the buffer is valid only during the call.
    /// - Throws: As ``decode(password:timing:from:)``, or what `body` throws.
    package func stream(
        password: [UInt8], timing: inout EntryTiming, from source: RawSource,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try naming(timing.path, source) { source in
            let payload = try validatedPayload()
            var reader = RawReader(source: source, remaining: rawSize)
            let decryptor = try open(password: password, reader: &reader, timing: &timing)
            let scratch = UnsafeMutableRawBufferPointer.allocate(
                byteCount: max(1, min(chunkSize, payload)), alignment: 64)
            defer { scratch.deallocate() }
            var crc = CRC32()
            let inflater = compression == .deflate ? Inflater(chunkSize: chunkSize) : nil
            var remaining = payload
            var failure: Error?  // an inflate error: the rest is only authenticated, the MAC checked first
            var bodyFailed = false
            while remaining > 0 {
                let piece = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<min(remaining, scratch.count)])
                try reader.readExactly(piece)
                remaining -= piece.count
                guard failure == nil else {
                    decryptor.authenticateOnly(UnsafeRawBufferPointer(piece))
                    continue
                }
                Stopwatch.time(&timing.decrypt) { decryptor.decrypt(piece) }
                if let inflater {
                    do {
                        try inflater.inflate(UnsafeRawBufferPointer(piece), limit: size, seconds: &timing.decrypt) {
                            chunk in
                            if crc32 != nil { Stopwatch.time(&timing.crc) { crc.update(chunk) } }
                            do { try body(chunk) } catch { bodyFailed = true; throw error }
                        }
                    } catch  where !bodyFailed {
                        failure = error
                    }
                } else {
                    if crc32 != nil { Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(piece)) } }
                    try body(UnsafeRawBufferPointer(piece))
                }
            }
            if failure == nil, let inflater, !inflater.isFinished || inflater.totalOut != size {
                failure = AssetPackError(.integrityFailure, "compressed data ends early")
            }
            try finish(reader: &reader, decryptor: decryptor)
            if let failure { throw failure }
            try check(crc: crc, timing: &timing)
            timing.bytesIn = rawSize
            timing.bytesOut = size
            timing.decoder = "bulk-aes"
        }
    }

    // MARK: - Steps

    /// Checks sizes against the format and the limits; returns the ciphertext length.
    private func validatedPayload() throws -> Int {
        guard compression == .store || compression == .deflate else {
            throw AssetPackError(.unsupportedFormat, "compression method not supported under WinZip AES")
        }
        let overhead = UInt64(strength.overhead)
        guard rawSize >= overhead, rawSize - overhead <= UInt64(Int.max) else {
            throw AssetPackError(.integrityFailure, "stored data is too short for a WinZip AES entry")
        }
        let payload = rawSize - overhead
        try limits.check(
            EntryInfo(
                path: "", size: size, storedSize: rawSize, compression: compression,
                encryption: strength.entryEncryption, crc32: crc32))
        guard compression == .deflate || payload == size else {
            throw AssetPackError(.integrityFailure, "stored entry holds \(payload) bytes but declares \(size)")
        }
        return Int(payload)
    }

    /// Reads salt and verifier, derives the keys (timed as `keyDerivation`).
    private func open(password: [UInt8], reader: inout RawReader, timing: inout EntryTiming) throws
        -> WinZipAESDecryptor
    {
        var header = [UInt8](repeating: 0, count: strength.headerLength)
        try header.withUnsafeMutableBytes { try reader.readExactly($0) }
        return try Stopwatch.time(&timing.keyDerivation) {
            try WinZipAESDecryptor(
                password: password, strength: strength, salt: Array(header[..<strength.saltLength]),
                verifier: Array(header[strength.saltLength...]))
        }
    }

    /// Stored whole read on two threads: a helper runs HMAC-SHA1 over each chunk once it is read,
    /// while this thread reads the next chunk, then decrypts and CRCs the authenticated one.
    private func decryptPipelined(
        into out: UnsafeMutableRawBufferPointer, reader: inout RawReader, decryptor: WinZipAESDecryptor,
        crc: inout CRC32, timing: inout EntryTiming
    ) throws {
        let watch = Stopwatch()
        var readSeconds = 0.0
        var crcSeconds = 0.0
        // Each thread owns one half: the helper the MAC, this thread the keystream.
        let (keystream, authenticator) = decryptor.split()
        let pipeline = MACPipeline(buffer: out, chunkSize: chunkSize, authenticator: authenticator)
        Thread { pipeline.authenticateAll() }.start()
        var helperStopped = false
        defer {
            if !helperStopped { pipeline.stopAndWait() }
            timing.crc += crcSeconds
            timing.decrypt += watch.elapsed - readSeconds - crcSeconds
        }
        try Stopwatch.time(&readSeconds) { try reader.readExactly(pipeline.chunk(0)) }
        pipeline.published(1)
        for k in 0..<pipeline.chunks {
            if k + 1 < pipeline.chunks {
                try Stopwatch.time(&readSeconds) { try reader.readExactly(pipeline.chunk(k + 1)) }
                pipeline.published(k + 2)
            }
            pipeline.waitAuthenticated(k + 1)
            let piece = pipeline.chunk(k)
            keystream.apply(piece)
            if crc32 != nil { Stopwatch.time(&crcSeconds) { crc.update(UnsafeRawBufferPointer(piece)) } }
        }
        // The helper has returned: the MAC is this thread's again.
        pipeline.stopAndWait()
        helperStopped = true
        try authenticator.verify(mac: reader.readMAC())
    }

    /// Deflated whole read: decrypt each raw piece, inflate it straight into `out`.
    ///
    /// After an inflate error the rest is still authenticated, so tampering is reported as an
    /// HMAC mismatch; the inflate error is thrown only if the MAC holds.
    private func inflate(
        payload: Int, into out: UnsafeMutableRawBufferPointer, reader: inout RawReader,
        decryptor: WinZipAESDecryptor, crc: inout CRC32, timing: inout EntryTiming
    ) throws {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, min(chunkSize, payload)), alignment: 64)
        defer { scratch.deallocate() }
        let inflater = Inflater()
        defer { inflater.end() }
        var remaining = payload
        var pos = 0
        var failure: Error?
        while remaining > 0 {
            let piece = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<min(remaining, scratch.count)])
            try reader.readExactly(piece)
            remaining -= piece.count
            guard failure == nil else {
                decryptor.authenticateOnly(UnsafeRawBufferPointer(piece))
                continue
            }
            let start = pos
            do {
                try Stopwatch.time(&timing.decrypt) {
                    decryptor.decrypt(piece)
                    pos = try inflater.inflate(UnsafeRawBufferPointer(piece), into: out, at: pos)
                }
            } catch {
                failure = error
                continue
            }
            if crc32 != nil {
                Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(rebasing: out[start..<pos])) }
            }
        }
        if failure == nil, !inflater.isFinished || pos != out.count {
            failure = AssetPackError(.integrityFailure, "compressed data ends early")
        }
        try finish(reader: &reader, decryptor: decryptor)
        if let failure { throw failure }
    }

    /// Reads the stored MAC and checks it.
    private func finish(reader: inout RawReader, decryptor: WinZipAESDecryptor) throws {
        try decryptor.verify(mac: reader.readMAC())
    }

    private func check(crc: CRC32, timing: inout EntryTiming) throws {
        guard let expected = crc32 else { return }
        try CRC32.check(crc.value, expected: expected, path: timing.path, authenticated: true)
        timing.crcChecked = true
    }

    /// Runs `body` with `source`, naming `path` in the `AssetPackError`s it throws.
    private func naming<T>(_ path: String, _ source: RawSource, _ body: (@escaping RawSource) throws -> T) throws -> T {
        do {
            return try withoutActuallyEscaping(source) { try body($0) }
        } catch let error as AssetPackError where !path.isEmpty {
            throw error.naming(path)
        }
    }
}

/// The HMAC half of ``BulkAESDecoder``'s two-thread stored read. Counters are guarded by `condition`.
private final class MACPipeline: @unchecked Sendable {
    private let condition = NSCondition()
    private let buffer: UnsafeMutableRawBufferPointer
    private let chunkSize: Int
    private let authenticator: WinZipAESAuthenticator
    private var read = 0  // chunks read by the caller
    private var authenticated = 0  // chunks fed to the MAC by the helper
    private var stopped = false
    private var running = true
    let chunks: Int

    init(buffer: UnsafeMutableRawBufferPointer, chunkSize: Int, authenticator: WinZipAESAuthenticator) {
        self.buffer = buffer
        self.chunkSize = chunkSize
        self.authenticator = authenticator
        chunks = (buffer.count + chunkSize - 1) / chunkSize
    }

    func chunk(_ k: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffer[k * chunkSize..<min((k + 1) * chunkSize, buffer.count)])
    }

    /// Helper thread: authenticate each chunk as soon as it has been read.
    func authenticateAll() {
        for k in 0..<chunks {
            condition.lock()
            while read <= k && !stopped { condition.wait() }
            let stop = stopped
            condition.unlock()
            if stop { break }
            authenticator.authenticate(UnsafeRawBufferPointer(chunk(k)))
            condition.lock()
            authenticated = k + 1
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        running = false
        condition.broadcast()
        condition.unlock()
    }

    func published(_ chunksRead: Int) {
        condition.lock()
        read = chunksRead
        condition.broadcast()
        condition.unlock()
    }

    func waitAuthenticated(_ count: Int) {
        condition.lock()
        while authenticated < count && running { condition.wait() }
        condition.unlock()
    }

    /// Stops the helper early if it is still waiting, and waits until it has returned.
    func stopAndWait() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while running { condition.wait() }
        condition.unlock()
    }
}

/// Pulls exactly the bytes asked for from a raw source, never more than the entry holds (the
/// AES and the plain decoder's one reader).
struct RawReader {
    let source: BulkAESDecoder.RawSource
    var remaining: UInt64
    /// What a short read is called in the error ("encrypted data", "entry data").
    var what = "encrypted data"

    mutating func readExactly(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard UInt64(buffer.count) <= remaining else { throw truncated() }
        var filled = 0
        while filled < buffer.count {
            let n = try source(UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            guard n > 0 else { throw truncated() }
            precondition(n <= buffer.count - filled, "raw source returned more bytes than asked for")
            filled += n
        }
        remaining -= UInt64(filled)
    }

    /// Reads the 10-byte MAC stored after the ciphertext.
    mutating func readMAC() throws -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: WinZipAES.macLength)
        try mac.withUnsafeMutableBytes { try readExactly($0) }
        return mac
    }

    private func truncated() -> AssetPackError {
        AssetPackError(.integrityFailure, "\(what) is truncated")
    }
}
