#if SystemLibraries  // builds its archives with libzip: the default configuration only
import AssetPackCore
import AssetPackTestSupport
import AssetPackZip
import Foundation
import Testing
internal import CLibzip

// Bulk WinZip AES decoding (issue #5): archives written by libzip itself (and by 7-Zip when
// installed), raw bytes read through ZIP_FL_ENCRYPTED | ZIP_FL_COMPRESSED, decoded by
// BulkAESDecoder, compared with libzip's own decrypting read and with the original bytes.

private let password = "correct horse"
private let sizes = [0, 1, 19, 20, 100 << 10, 3 << 20]

/// Deterministic test data: random bytes mixed with repeated text, so deflate has work to do.
private func sample(_ count: Int, seed: UInt64) -> [UInt8] {
    var x = seed | 1
    let text = Array("The quick brown fox jumps over the lazy dog. 0123456789\n".utf8)
    return (0..<count).map { i in
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        return (i / 256) % 3 == 0 ? UInt8(truncatingIfNeeded: x) : text[i % text.count]
    }
}

/// A zip archive opened with libzip, plus the helpers the tests need.
private final class Archive {
    let path: String
    let za: OpaquePointer

    init(path: String) throws {
        self.path = path
        var err: Int32 = 0
        guard let za = zip_open(path, ZIP_RDONLY, &err) else { throw AssetPackError(.io, "zip_open \(err)") }
        self.za = za
    }

    /// Writes a libzip archive: one AES entry per (name, bytes, deflate).
    static func create(_ entries: [(String, [UInt8], Bool)], method: UInt16, password: String) throws -> Archive {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("winzipaes-\(UUID()).zip").path
        var err: Int32 = 0
        let za = try #require(zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err))
        for (name, bytes, deflate) in entries {
            let copy = malloc(max(bytes.count, 1))!
            bytes.withUnsafeBytes { if $0.count > 0 { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            let source = try #require(zip_source_buffer(za, copy, UInt64(bytes.count), 1))
            let index = zip_file_add(za, name, source, 0)
            try #require(index >= 0)
            try #require(zip_set_file_compression(za, UInt64(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0)
            try #require(zip_file_set_encryption(za, UInt64(index), method, password) == 0)
        }
        try #require(zip_close(za) == 0)
        let archive = try Archive(path: path)
        // libzip holds the file open from here on: the name can go now. The fixtures are
        // globals, never deinitialised, and left 4 MB behind in the temporary folder every run.
        unlink(path)
        return archive
    }

    deinit { zip_discard(za) }

    var count: Int { Int(zip_get_num_entries(za, 0)) }

    func stat(_ index: Int) -> zip_stat_t {
        var st = zip_stat_t()
        zip_stat_index(za, UInt64(index), 0, &st)
        return st
    }

    func name(_ index: Int) -> String { String(cString: stat(index).name) }

    /// The decoder for entry `index`, as the zip reader would set it up.
    func decoder(_ index: Int) -> BulkAESDecoder {
        let st = stat(index)
        return BulkAESDecoder(
            rawSize: st.comp_size, strength: WinZipAESKeyStrength(libzipMethod: st.encryption_method)!,
            compression: st.comp_method == 0 ? .store : .deflate, size: st.size,
            crc32: BulkAESDecoder.expectedCRC(stored: st.crc))
    }

    /// Runs `body` with a raw handle's `zip_fread` as the source (the production path).
    func withRawSource<T>(_ index: Int, _ body: (BulkAESDecoder.RawSource) throws -> T) throws -> T {
        let file = try #require(zip_fopen_index(za, UInt64(index), zip_flags_t(ZIP_FL_ENCRYPTED | ZIP_FL_COMPRESSED)))
        defer { zip_fclose(file) }
        return try body { buffer in
            let n = zip_fread(file, buffer.baseAddress, UInt64(buffer.count))
            guard n >= 0 else { throw AssetPackError(.io, "zip_fread failed") }
            return Int(n)
        }
    }

    /// The raw stored bytes (salt | verifier | ciphertext | MAC), exactly `comp_size` of them.
    func raw(_ index: Int) throws -> [UInt8] {
        let count = Int(stat(index).comp_size)
        return try withRawSource(index) { source in
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let n = try bytes.withUnsafeMutableBytes {
                    try source(UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
                }
                if n == 0 { break }
                filled += n
            }
            return Array(bytes[..<filled])
        }
    }

    /// libzip's own decrypting read to the end of the entry; `nil` when libzip reports an error.
    func libzipRead(_ index: Int, password: String) -> [UInt8]? {
        guard let file = zip_fopen_index_encrypted(za, UInt64(index), 0, password) else { return nil }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = zip_fread(file, &buffer, UInt64(buffer.count))
            if n < 0 { zip_fclose(file); return nil }
            if n == 0 { break }
            out += buffer[..<Int(n)]
        }
        return zip_fclose(file) == 0 ? out : nil
    }
}

/// An in-memory raw source handing out at most `piece` bytes per call.
private func memorySource(_ bytes: [UInt8], piece: Int = .max) -> BulkAESDecoder.RawSource {
    var offset = 0
    return { buffer in
        let n = min(buffer.count, bytes.count - offset, piece)
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        offset += n
        return n
    }
}

private func decode(_ decoder: BulkAESDecoder, _ raw: [UInt8], password: String = password, piece: Int = .max) throws
    -> [UInt8]
{
    var timing = EntryTiming(path: "entry")
    return try decoder.decode(password: Array(password.utf8), timing: &timing, from: memorySource(raw, piece: piece))
}

private func streamed(_ decoder: BulkAESDecoder, _ raw: [UInt8], password: String = password) throws -> [UInt8] {
    var timing = EntryTiming(path: "entry")
    var out: [UInt8] = []
    try decoder.stream(password: Array(password.utf8), timing: &timing, from: memorySource(raw)) { out += $0 }
    return out
}

private func code(_ body: () throws -> Any) -> AssetPackError.Code? {
    do { _ = try body() } catch let error as AssetPackError { return error.code } catch { return nil }
    return nil
}

private func message(_ body: () throws -> Any) -> String {
    do { _ = try body() } catch { return "\(error)" }
    return ""
}

/// One libzip archive per strength with every size, stored and deflated; built once.
nonisolated(unsafe) private let fixtures: [WinZipAESKeyStrength: Archive] = {
    var result: [WinZipAESKeyStrength: Archive] = [:]
    for strength in WinZipAESKeyStrength.allCases {
        var entries: [(String, [UInt8], Bool)] = []
        for size in sizes {
            for deflate in [false, true] {
                entries.append(("\(deflate ? "d" : "s")-\(size).bin", sample(size, seed: UInt64(size) + 7), deflate))
            }
        }
        result[strength] = try! Archive.create(entries, method: strength.libzipMethod, password: password)
    }
    return result
}()

private let fixtureLock = NSLock()

/// Runs `body` on the fixture archive (libzip's `zip_t` is not thread-safe).
private func withFixture<T>(_ strength: WinZipAESKeyStrength, _ body: (Archive) throws -> T) rethrows -> T {
    fixtureLock.lock()
    defer { fixtureLock.unlock() }
    return try body(fixtures[strength]!)
}

@Suite("WinZipAES")
struct WinZipAESTests {
    @Test("bulk decode equals libzip's read and the original", .slow, arguments: WinZipAESKeyStrength.allCases)
    func roundTrip(strength: WinZipAESKeyStrength) throws {
        try withFixture(strength) { archive in
            #expect(archive.count == sizes.count * 2)
            for index in 0..<archive.count {
                let name = archive.name(index)
                let st = archive.stat(index)
                let original = sample(Int(st.size), seed: st.size + 7)
                let decoder = archive.decoder(index)
                #expect(decoder.strength == strength)
                #expect(name.hasPrefix("d") == (decoder.compression == .deflate), "\(name)")

                // Production path: zip_fread on the raw handle as the source.
                var timing = EntryTiming(path: name)
                let bulk = try archive.withRawSource(index) {
                    try decoder.decode(password: Array(password.utf8), timing: &timing, from: $0)
                }
                #expect(bulk == original, "\(name)")
                #expect(archive.libzipRead(index, password: password) == original, "\(name)")
                #expect(timing.decoder == "bulk-aes")
                #expect(timing.bytesIn == st.comp_size && timing.bytesOut == st.size)
                #expect(timing.crcChecked == (st.crc != 0), "\(name)")
                #expect(timing.keyDerivation > 0)

                // Raw layout: salt | verifier | ciphertext | MAC.
                let raw = try archive.raw(index)
                #expect(raw.count == Int(st.comp_size))
                if decoder.compression == .store { #expect(raw.count == Int(st.size) + strength.overhead) }

                // Odd piece sizes and a chunk size that is no multiple of 16: the counter carries on.
                var odd = decoder
                odd.chunkSize = 1000
                #expect(try decode(odd, raw, piece: 777) == original, "\(name)")
                #expect(try streamed(decoder, raw) == original, "\(name)")
                #expect(try streamed(odd, raw) == original, "\(name)")
            }
        }
    }

    @Test("decrypting in pieces of any length equals one call")
    func decryptorPieces() throws {
        let (raw, strength) = try withFixture(.aes192) { archive in
            let i = (0..<archive.count).first { archive.name($0) == "s-102400.bin" }!
            return (try archive.raw(i), archive.decoder(i).strength)
        }
        let salt = Array(raw[..<strength.saltLength])
        let verifier = Array(raw[strength.saltLength..<strength.headerLength])
        let body = Array(raw[strength.headerLength..<(raw.count - 10)])
        let mac = Array(raw.suffix(10))
        var whole = body
        let one = try WinZipAESDecryptor(
            password: Array(password.utf8), strength: strength, salt: salt, verifier: verifier)
        whole.withUnsafeMutableBytes { one.decrypt($0) }
        try one.verify(mac: mac)
        try one.verify(mac: mac)  // verifying twice is fine
        var pieces = body
        let many = try WinZipAESDecryptor(
            password: Array(password.utf8), strength: strength, salt: salt, verifier: verifier)
        var offset = 0
        var step = 1
        pieces.withUnsafeMutableBytes { buffer in
            while offset < buffer.count {
                let end = min(offset + step, buffer.count)
                many.decrypt(UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<end]))
                offset = end
                step = step * 3 % 40_009 + 1
            }
        }
        try many.verify(mac: mac)
        #expect(pieces == whole)
        #expect(whole == sample(100 << 10, seed: (100 << 10) + 7))
        var badMAC = mac
        badMAC[0] ^= 1
        #expect(code { try many.verify(mac: badMAC) } == .integrityFailure)
    }

    @Test("wrong password is reported as such", arguments: WinZipAESKeyStrength.allCases)
    func wrongPassword(strength: WinZipAESKeyStrength) throws {
        let entries = try withFixture(strength) { archive in
            try (0..<archive.count).map { (archive.decoder($0), try archive.raw($0)) }
        }
        for (decoder, raw) in entries.prefix(4) {
            #expect(code { try decode(decoder, raw, password: "wrong horse") } == .wrongPassword)
            #expect(code { try streamed(decoder, raw, password: "") } == .wrongPassword)
        }
        #expect(message { try decode(entries[0].0, entries[0].1, password: "x") }.hasPrefix("entry: "))
    }

    @Test("corrupt MAC, corrupt ciphertext and truncation are integrity failures", arguments: [false, true])
    func corruption(deflated: Bool) throws {
        let (decoder, raw) = try withFixture(.aes256) { archive in
            let i = (0..<archive.count).first { archive.name($0) == (deflated ? "d-102400.bin" : "s-102400.bin") }!
            return (archive.decoder(i), try archive.raw(i))
        }
        #expect(try decode(decoder, raw) == sample(100 << 10, seed: (100 << 10) + 7))

        var badMAC = raw
        badMAC[raw.count - 3] ^= 0x40
        #expect(code { try decode(decoder, badMAC) } == .integrityFailure)
        #expect(message { try decode(decoder, badMAC) }.contains("HMAC mismatch"))
        #expect(code { try streamed(decoder, badMAC) } == .integrityFailure)

        for position in [decoder.strength.headerLength, raw.count / 2, raw.count - 11] {
            var bad = raw
            bad[position] ^= 0x01
            // Even when the flipped bit breaks the deflate stream, the MAC failure is what is reported.
            #expect(message { try decode(decoder, bad) }.contains("HMAC mismatch"), "byte \(position)")
            #expect(code { try streamed(decoder, bad) } == .integrityFailure, "byte \(position)")
        }

        for cut in [1, 10, 11, raw.count / 2, raw.count - 17, raw.count] {
            let short = Array(raw.dropLast(cut))
            #expect(code { try decode(decoder, short) } == .integrityFailure, "cut \(cut)")
            #expect(code { try streamed(decoder, short) } == .integrityFailure, "cut \(cut)")
            var told = decoder
            told.rawSize = UInt64(short.count)  // the directory itself says less
            #expect(code { try decode(told, short) } == .integrityFailure, "cut \(cut)")
        }
    }

    @Test("declared sizes are enforced before and during decoding")
    func declaredSizes() throws {
        let (stored, storedRaw, deflated, deflatedRaw) = try withFixture(.aes128) { archive in
            let s = (0..<archive.count).first { archive.name($0) == "s-102400.bin" }!
            let d = (0..<archive.count).first { archive.name($0) == "d-3145728.bin" }!
            return (archive.decoder(s), try archive.raw(s), archive.decoder(d), try archive.raw(d))
        }
        // Over the limit: refused before reading a byte.
        var limited = deflated
        limited.limits.maxEntrySize = 1 << 20
        var timing = EntryTiming(path: "big")
        var called = false
        #expect(
            code {
                try limited.decode(password: Array(password.utf8), timing: &timing) { _ in
                    called = true; return 0
                }
            } == .limitExceeded)
        #expect(!called)
        var ratio = deflated
        ratio.limits.maxCompressionRatio = 1
        #expect(code { try decode(ratio, deflatedRaw) } == .limitExceeded)

        // Inflating to more than declared stops at once; to less is "ends early". The MAC holds,
        // so these are the errors reported.
        for declared in [deflated.size - 1, 1000, 0, deflated.size + 1] {
            var wrong = deflated
            wrong.size = declared
            wrong.crc32 = nil
            #expect(code { try decode(wrong, deflatedRaw) } == .integrityFailure, "declared \(declared)")
            #expect(code { try streamed(wrong, deflatedRaw) } == .integrityFailure, "declared \(declared)")
        }
        var longer = stored
        longer.size += 1
        #expect(code { try decode(longer, storedRaw) } == .integrityFailure)
        var badCRC = stored
        badCRC.crc32 = stored.crc32.map { $0 ^ 1 }
        #expect(message { try decode(badCRC, storedRaw) }.contains("CRC"))
        var tiny = stored
        tiny.rawSize = 5
        #expect(code { try decode(tiny, Array(storedRaw.prefix(5))) } == .integrityFailure)
        var other = stored
        other.compression = .other
        #expect(code { try decode(other, storedRaw) } == .unsupportedFormat)
    }

    @Test("large stored entries (two-thread path) decode and fail like small ones", .slow)
    func largeStored() throws {
        let size = (9 << 20) + 17
        let original = sample(size, seed: 99)
        let archive = try Archive.create(
            [("big.bin", original, false)], method: WinZipAESKeyStrength.aes256.libzipMethod, password: password)
        let decoder = archive.decoder(0)
        var timing = EntryTiming(path: "big.bin")
        let bytes = try archive.withRawSource(0) {
            try decoder.decode(password: Array(password.utf8), timing: &timing, from: $0)
        }
        #expect(bytes == original)
        #expect(timing.crcChecked && timing.decrypt > 0 && timing.crc > 0)
        let raw = try archive.raw(0)
        #expect(try decode(decoder, raw, piece: 100_003) == original)
        for position in [16 + 2, raw.count / 3, raw.count - 11, raw.count - 1] {
            var bad = raw
            bad[position] ^= 0x80
            #expect(message { try decode(decoder, bad) }.contains("HMAC mismatch"), "byte \(position)")
        }
        for cut in [1, 11, raw.count / 2, raw.count - 100] {
            #expect(code { try decode(decoder, Array(raw.dropLast(cut))) } == .integrityFailure, "cut \(cut)")
        }
        #expect(code { try decode(decoder, raw, password: "nope") } == .wrongPassword)
    }

    @Test("key strength mapping")
    func strengths() {
        #expect(WinZipAESKeyStrength.allCases.map(\.saltLength) == [8, 12, 16])
        #expect(WinZipAESKeyStrength.allCases.map(\.keyLength) == [16, 24, 32])
        #expect(WinZipAESKeyStrength(strengthByte: 3) == .aes256)
        #expect(WinZipAESKeyStrength(strengthByte: 4) == nil)
        #expect(WinZipAESKeyStrength(libzipMethod: UInt16(ZIP_EM_AES_192)) == .aes192)
        #expect(WinZipAESKeyStrength(libzipMethod: UInt16(ZIP_EM_TRAD_PKWARE)) == nil)
        #expect(WinZipAESKeyStrength.aes128.libzipMethod == UInt16(ZIP_EM_AES_128))
    }

    @Test("standard AE-2 entries with CRC 0 (7-Zip) decode; libzip 1.7.3 rejects them")
    func sevenZipAE2() throws {
        let tool = ["/usr/bin/7zz", "/usr/local/bin/7zz", "/usr/bin/7z"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let tool else {
            print("skipping the 7-Zip AE-2 test: 7zz not installed (apt-get install 7zip)")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("winzipaes-7z-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = [
            ("text.txt", sample(300_000, seed: 3)), ("small.bin", sample(5, seed: 4)), ("empty.bin", [UInt8]()),
        ]
        for (name, bytes) in files { try Data(bytes).write(to: dir.appendingPathComponent(name)) }
        for (method, level) in [("AES256", "-mx=0"), ("AES256", "-mx=5"), ("AES128", "-mx=5"), ("AES192", "-mx=1")] {
            let zip = dir.appendingPathComponent("\(method)\(level).zip").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = ["a", "-tzip", "-mem=\(method)", "-p\(password)", level, zip] + files.map(\.0)
            process.currentDirectoryURL = dir
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0)
            let archive = try Archive(path: zip)
            for index in 0..<archive.count {
                let name = archive.name(index)
                let original = files.first { $0.0 == name }!.1
                let st = archive.stat(index)
                if original.isEmpty && st.encryption_method == 0 { continue }  // 7-Zip does not encrypt empty files
                #expect(st.crc == 0, "7-Zip writes AE-2 with CRC 0")
                var timing = EntryTiming(path: name)
                let decoder = archive.decoder(index)
                let bytes = try archive.withRawSource(index) {
                    try decoder.decode(password: Array(password.utf8), timing: &timing, from: $0)
                }
                #expect(bytes == original, "\(method) \(level) \(name)")
                #expect(!timing.crcChecked)
                #expect(try streamed(decoder, try archive.raw(index)) == original)
                if original.count >= 20 {  // libzip 1.7.3 trusts an AE-2 CRC from 20 bytes up
                    #expect(archive.libzipRead(index, password: password) == nil, "libzip 1.7.3 fails AE-2 on CRC")
                }
            }
        }
    }
}
#endif
