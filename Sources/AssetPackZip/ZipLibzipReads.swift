import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
#if SystemLibraries
internal import CLibzip
#endif
import Foundation

/// The entries libzip decodes: ZipCrypto (its cipher is libzip's, not ours to write) and every
/// entry under `Decoder.libzip`, through a handle from the reader's pool. Without libzip (the
/// portable configuration) they are refused by name.
extension ZipPackReader {
    #if SystemLibraries
    /// A ZipCrypto entry, or any entry with `Decoder.libzip`: libzip decodes it.
    func readThroughLibzip(_ entry: Entry, timing: EntryTiming, watch: Stopwatch) throws -> (
        bytes: [UInt8], timing: EntryTiming
    ) {
        var timing = timing
        timing.decoder = "libzip"
        try checkSpanFirst(entry)
        let size = Int(entry.info.size)
        var crc = CRC32()
        let bytes = try [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var keyDerivation = 0.0
            defer { timing.keyDerivation = keyDerivation }
            try withOpenEntry(entry, &keyDerivation) { zf in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                try Stopwatch.time(&timing.decrypt) {
                    try readToEnd(zf, entry, into: raw)
                }
            }
            initialized = size
            Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(buffer)) }
        }
        try check(crc.value, entry, &timing)
        timing.bytesOut = UInt64(size)
        timing.total = watch.elapsed
        return (bytes, timing)
    }
    #else
    func readThroughLibzip(_ entry: Entry, timing: EntryTiming, watch: Stopwatch) throws -> (
        bytes: [UInt8], timing: EntryTiming
    ) {
        throw Self.needsLibzip(entry)
    }
    #endif

    #if SystemLibraries
    func streamThroughLibzip(
        _ entry: Entry, timing: EntryTiming, watch: Stopwatch, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> EntryTiming {
        var timing = timing
        timing.decoder = "libzip"
        try checkSpanFirst(entry)
        var crc = CRC32()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { chunk.deallocate() }
        var keyDerivation = 0.0
        defer { timing.keyDerivation = keyDerivation }
        try withOpenEntry(entry, &keyDerivation) { zf in
            var remaining = entry.info.size
            while remaining > 0 {
                let want = Int(min(UInt64(chunk.count), remaining))
                let piece = UnsafeMutableRawBufferPointer(rebasing: chunk[0..<want])
                try Stopwatch.time(&timing.decrypt) { try fill(zf, entry, piece) }
                Stopwatch.time(&timing.crc) { crc.update(UnsafeRawBufferPointer(piece)) }
                try body(UnsafeRawBufferPointer(piece))
                remaining -= UInt64(want)
            }
            try Stopwatch.time(&timing.decrypt) { try expectEnd(zf, entry) }
        }
        try check(crc.value, entry, &timing)
        timing.bytesOut = entry.info.size
        timing.total = watch.elapsed
        return timing
    }
    #else
    func streamThroughLibzip(
        _ entry: Entry, timing: EntryTiming, watch: Stopwatch, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> EntryTiming {
        throw Self.needsLibzip(entry)
    }
    #endif

    /// What the portable configuration says of an entry only libzip decodes (ZipCrypto).
    static func needsLibzip(_ entry: Entry) -> AssetPackError {
        AssetPackError(
            .unsupportedFormat,
            "entry is encrypted with ZipCrypto, which this build of AssetPack cannot decode (the portable "
                + "configuration, without libzip): pack it with --encryption aes256",
            path: entry.info.path)
    }

    #if SystemLibraries
    /// A signed pack read with trusted keys, for an entry libzip decodes (ZipCrypto, unencrypted,
    /// `Decoder.libzip`): hashes the entry's span and compares it with the signed digest before
    /// libzip reads it. (libzip reads the file again; the pack is one the app keeps in its own
    /// 0600 file, see docs/SECURITY.md.)
    func checkSpanFirst(_ entry: Entry) throws {
        guard let signature else { return }
        let record = structure.records[Int(entry.index)]
        try finishSpan(entry, record, from: record.localHeaderOffset, hasher: SHA256Hasher(), signature: signature)
    }

    #endif

    #if SystemLibraries
    /// Opens the entry on a borrowed handle (key derivation happens here for AES), runs
    /// `body`, and closes it, mapping every libzip failure to an `AssetPackError`.
    func withOpenEntry(
        _ entry: Entry, _ keyDerivation: inout Double, _ body: (OpaquePointer) throws -> Void
    ) throws {
        if entry.info.compression == .other {
            throw AssetPackError(
                .unsupportedFormat, "compression method \(entry.compressionMethod) is not supported",
                path: entry.info.path)
        }
        // libzip 1.7.3 leaks the entry's window source when asked to open an encryption method
        // it cannot decrypt (`_zip_source_zip_new`, fixed upstream in 1.11): refuse those here.
        if entry.info.encryption == .other {
            throw AssetPackError(
                .unsupportedFormat, "encryption method \(entry.encryptionMethod) is not supported",
                path: entry.info.path)
        }
        if entry.info.encryption != .none && password == nil {
            throw AssetPackError(
                .missingPassword, "entry is encrypted and no password was given", path: entry.info.path)
        }
        let record = structure.records[Int(entry.index)]
        try pool.withHandle(confinedTo: (record.localHeaderOffset..<record.end, entry.info.path)) { za in
            let opened = Stopwatch.time(&keyDerivation) {
                zip_fopen_index_encrypted(za, entry.index, 0, entry.info.encryption == .none ? nil : password)
            }
            guard let zf = opened else {
                throw LibzipError.from(zip_get_error(za), path: entry.info.path, context: "cannot open entry")
            }
            var closed = false
            defer { if !closed { zip_fclose(zf) } }
            try body(zf)
            closed = true
            let rc = zip_fclose(zf)
            if rc != 0 { throw LibzipError.make(rc, path: entry.info.path, context: "entry failed its check") }
        }
    }

    /// Fills `buffer` completely from the entry, then confirms the entry ends there.
    func readToEnd(_ zf: OpaquePointer, _ entry: Entry, into buffer: UnsafeMutableRawBufferPointer) throws {
        try fill(zf, entry, buffer)
        try expectEnd(zf, entry)
    }

    func fill(_ zf: OpaquePointer, _ entry: Entry, _ buffer: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let n = zip_fread(zf, buffer.baseAddress! + offset, UInt64(buffer.count - offset))
            if n < 0 {
                throw LibzipError.from(zip_file_get_error(zf), path: entry.info.path, context: "read failed")
            }
            if n == 0 {
                throw AssetPackError(
                    .integrityFailure, "entry ends after \(offset) of \(entry.info.size) bytes", path: entry.info.path)
            }
            offset += Int(n)
        }
    }

    /// libzip checks CRC and HMAC only when a read hits the end of the entry: read once
    /// more and require end-of-entry (0), so the checks really run.
    func expectEnd(_ zf: OpaquePointer, _ entry: Entry) throws {
        var probe: UInt8 = 0
        let n = zip_fread(zf, &probe, 1)
        if n < 0 {
            throw LibzipError.from(zip_file_get_error(zf), path: entry.info.path, context: "entry failed its check")
        }
        if n > 0 {
            throw AssetPackError(
                .integrityFailure, "entry holds more data than its declared size", path: entry.info.path)
        }
    }

    func check(_ computed: UInt32, _ entry: Entry, _ timing: inout EntryTiming) throws {
        guard let expected = entry.info.crc32 else { return }  // AE-2: the HMAC was the check
        // libzip decodes ZipCrypto and unencrypted entries: nothing authenticated them.
        try CRC32.check(computed, expected: expected, path: entry.info.path, authenticated: false)
        timing.crcChecked = true
    }
    #endif
}
