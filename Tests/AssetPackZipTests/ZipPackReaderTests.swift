import AssetPackCore
import AssetPackTestSupport
@testable import AssetPackZip
#if SystemLibraries
internal import CLibzip
#endif
import Foundation
import Testing

/// Packs `tree` into a zip in `dir` and returns the pack's path.
func makeZip(
    _ tree: [String: [UInt8]], in dir: TemporaryDirectory, encryption: PackEncryption = .aes256,
    compression: CompressionPolicy = .auto, password: String = "s3cret"
) throws -> String {
    let source = try dir.write(tree, under: "src")
    var options = PackOptions()
    options.zip.encryption = encryption
    options.compression = compression
    options.credential = .password(password)
    let output = dir.appending("pack-\(encryption.rawValue)-\(compression.rawValue).zip").path
    try ZipPackWriter().write(SourceTree.scan(root: source, includeHidden: false), to: output, options: options)
    return output
}

/// Where an entry's data starts in a zip: after its local header, name and extra field.
func localDataOffset(of name: String, in bytes: [UInt8]) -> Int? {
    let nameBytes = Array(name.utf8)
    var i = 0
    while i + 30 <= bytes.count {
        if bytes[i] == 0x50, bytes[i + 1] == 0x4B, bytes[i + 2] == 3, bytes[i + 3] == 4 {
            let n = Int(bytes[i + 26]) | Int(bytes[i + 27]) << 8
            let m = Int(bytes[i + 28]) | Int(bytes[i + 29]) << 8
            if n == nameBytes.count, Array(bytes[(i + 30)..<(i + 30 + n)]) == nameBytes { return i + 30 + n + m }
        }
        i += 1
    }
    return nil
}

@Suite struct ZipPackReaderTests {
    static let combinations: [(PackEncryption, CompressionPolicy)] = [
        (.aes256, .auto), (.aes256, .store), (.aes256, .deflate), (.zipCrypto, .auto), (.none, .auto), (.none, .store),
        (.none, .deflate),
    ].filter { BuildConfiguration.zipEncryptions.contains($0.0) }

    @Test(arguments: combinations)
    func roundTripsEveryKindOfEntry(encryption: PackEncryption, compression: CompressionPolicy) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let pack = try makeZip(tree, in: dir, encryption: encryption, compression: compression)
        let reader = try ZipPackReader(path: pack, credential: .password("s3cret"))
        #expect(reader.entries.map(\.path) == tree.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        for (path, bytes) in tree {
            let (read, timing) = try reader.readTimed(path)
            #expect(read == bytes, "\(path)")
            #expect(timing.bytesOut == UInt64(bytes.count))
            #expect(timing.total >= timing.decrypt)
            let info = try #require(reader.entry(path))
            #expect(info.size == UInt64(bytes.count))
            // libzip's AE-2 entries below 20 bytes store no CRC; every other entry is CRC-checked.
            let expectCRC = !(encryption == .aes256 && bytes.count < 20)
            #expect(timing.crcChecked == expectCRC, "\(path)")
            #expect((info.crc32 != nil) == expectCRC)
        }
    }

    @Test func flippedDataByteInAStoredEntryFailsTheCRC() throws {
        // The end-of-entry pitfall: libzip checks the CRC only when a read reaches the end.
        let dir = TemporaryDirectory()
        let payload = testBytes(4096, seed: 5)
        let pack = try makeZip(
            ["x.bin": payload, "y.bin": [1, 2, 3]], in: dir, encryption: .none, compression: .store)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pack)))
        let offset = try #require(localDataOffset(of: "x.bin", in: bytes))
        try flipByte(at: offset + 100, in: pack, with: 0x01)
        let reader = try ZipPackReader(path: pack, credential: nil)
        let error = #expect(throws: AssetPackError.self) { try reader.read("x.bin") }
        #expect(error?.code == .integrityFailure)
        #expect(error?.path == "x.bin")
        #expect(try reader.read("y.bin") == [1, 2, 3])
        #expect(throws: AssetPackError.self) { try reader.stream("x.bin") { _ in } }
    }

    @Test(arguments: BuildConfiguration.zipEncryptions.filter { $0 != .none })
    func flippedCiphertextByteIsAnIntegrityFailure(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let pack = try makeZip(
            ["x.bin": testBytes(50_000, seed: 2)], in: dir, encryption: encryption, compression: .store)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pack)))
        let offset = try #require(localDataOffset(of: "x.bin", in: bytes))
        try flipByte(at: offset + 25_000, in: pack, with: 0x10)
        let reader = try ZipPackReader(path: pack, credential: .password("s3cret"))
        let error = #expect(throws: AssetPackError.self) { try reader.read("x.bin") }
        #expect(error?.code == .integrityFailure)
    }

    @Test(arguments: BuildConfiguration.zipEncryptions.filter { $0 != .none })
    func wrongAndMissingPasswordsAreDistinct(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let pack = try makeZip(["a.txt": textBytes(3000)], in: dir, encryption: encryption)
        let wrong = try ZipPackReader(path: pack, credential: .password("not-it"))
        let wrongError = #expect(throws: AssetPackError.self) { try wrong.read("a.txt") }
        // ZipCrypto's 1-byte check passes 1 wrong password in 256; the CRC then catches it.
        #expect(
            wrongError?.code == .wrongPassword || (encryption == .zipCrypto && wrongError?.code == .integrityFailure))
        let missing = try ZipPackReader(path: pack, credential: nil)
        #expect(missing.entries.count == 1)  // listing needs no password
        let missingError = #expect(throws: AssetPackError.self) { try missing.read("a.txt") }
        #expect(missingError?.code == .missingPassword)
    }

    @Test func missingEntryIsEntryNotFound() throws {
        let dir = TemporaryDirectory()
        let reader = try ZipPackReader(path: makeZip(["a.txt": [1]], in: dir), credential: .password("s3cret"))
        let error = #expect(throws: AssetPackError.self) { try reader.read("b.txt") }
        #expect(error?.code == .entryNotFound)
        #expect(error?.path == "b.txt")
    }

    @Test func lookupNormalisesTheRequestedPath() throws {
        let dir = TemporaryDirectory()
        let reader = try ZipPackReader(path: makeZip(sampleTree(), in: dir), credential: .password("s3cret"))
        let nfd = "nai\u{308}ve cafe\u{301}\\日本語.txt"
        #expect(try reader.read(nfd) == Array("non-ASCII name\n".utf8))
        #expect(reader.contains("./a/b//c/d/deep.txt"))
    }

    @Test func streamingYieldsTheSameBytes() throws {
        let dir = TemporaryDirectory()
        let tree = ["big.bin": testBytes(1_000_000, seed: 4), "t.json": textBytes(700_000)]
        let reader = try ZipPackReader(path: makeZip(tree, in: dir), credential: .password("s3cret"))
        for (path, bytes) in tree {
            var streamed: [UInt8] = []
            let timing = try reader.stream(path) { streamed.append(contentsOf: $0) }
            #expect(streamed == bytes)
            #expect(timing.crcChecked)
        }
    }

    @Test func readsFromManyThreadsAtOnce() throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let reader = try ZipPackReader(path: makeZip(tree, in: dir), credential: .password("s3cret"))
        let paths = tree.keys.sorted()
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let path = paths[(i * 7) % paths.count]
            if (try? reader.read(path)) != tree[path] { failures.increment() }
        }
        #expect(failures.value == 0)
    }

    @Test func notAZipIsUnsupportedFormat() throws {
        let dir = TemporaryDirectory()
        try dir.write(["junk.zip": testBytes(1000)])
        let error = #expect(throws: AssetPackError.self) {
            try ZipPackReader(path: dir.appending("junk.zip").path, credential: nil)
        }
        #expect(error?.code == .unsupportedFormat)
    }

    @Test func truncatedZipFailsCleanly() throws {
        let dir = TemporaryDirectory()
        let pack = try makeZip(["a.bin": testBytes(20_000)], in: dir)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: pack))
        for cut in stride(from: 0, to: bytes.count, by: 997) {
            let path = dir.appending("cut.zip").path
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: path))
            do {
                let reader = try ZipPackReader(path: path, credential: .password("s3cret"))
                _ = try reader.read("a.bin")
                Issue.record("truncated at \(cut) still read")
            } catch let error as AssetPackError {
                #expect([.integrityFailure, .unsupportedFormat, .entryNotFound].contains(error.code))
            }
        }
    }
}

@Suite struct ZipWriterErrorTests {
    @Test(
        "a full disk during zip_close says 'No space left on device', not a bare 'Write error'",
        .enabled(if: SmallFileSystem.isAvailable, "needs root to mount a small tmpfs"))
    func fullDiskNamesTheSystemError() throws {
        let disk = try SmallFileSystem(megabytes: 1)
        let dir = TemporaryDirectory()
        let source = dir.appending("big.bin")
        try Data(testBytes(3 << 20, seed: 11)).write(to: source)
        var options = PackOptions()
        options.zip.encryption = .none
        options.compression = .store
        let output = disk.url.appendingPathComponent("out.zip").path
        let error = #expect(throws: AssetPackError.self) {
            try ZipPackWriter().write(
                [SourceFile(path: "big.bin", url: source, size: 3 << 20)], to: output, options: options)
        }
        #expect(error?.code == .io)
        #expect(error?.message.contains("No space left on device") == true, "\(String(describing: error))")
    }
}

#if SystemLibraries  // libzip's errors: the default configuration only
extension ZipWriterErrorTests {
    @Test("the system error libzip recorded is reported, whatever errno holds by the time it is mapped")
    func mappingUsesTheRecordedSystemError() throws {
        errno = 0
        let error = LibzipError.make(ZIP_ER_WRITE, system: ENOSPC, context: "cannot write x.zip")
        #expect(error.message == "cannot write x.zip: Write error: No space left on device")
        errno = ENOENT
        let denied = LibzipError.make(ZIP_ER_OPEN, system: EACCES, context: "cannot open x.zip")
        #expect(denied.message.hasSuffix("Permission denied"), "\(denied.message)")
    }
}

extension ZipWriterErrorTests {
    @Test("without a recorded system error, a system-type libzip error has no stray 'Success'")
    func noRecordedSystemError() {
        #expect(LibzipError.make(ZIP_ER_READ, context: "cannot open x.zip").message == "cannot open x.zip: Read error")
    }
}

@Suite struct ZipHandleReuseTests {
    /// Opening reads the directory with our own parser: libzip's `zip_open` parsed every record
    /// again. Only ZipCrypto entries open a libzip handle, on their first read, and reuse it.
    @Test("AES and unencrypted packs open and read without libzip; ZipCrypto opens one handle on its first read")
    func libzipOnlyForZipCrypto() throws {
        let dir = TemporaryDirectory()
        for (encryption, handles) in [(PackEncryption.aes256, 0), (.none, 0), (.zipCrypto, 1)] {
            let pack = try makeZip(sampleTree(), in: dir, encryption: encryption)
            let reader = try ZipPackReader(path: pack, credential: .password("s3cret"))
            #expect(reader.libzipHandlesOpened == 0, "\(encryption)")
            for (path, bytes) in sampleTree() {
                let (read, timing) = try reader.readTimed(path)
                #expect(read == bytes)
                #expect(
                    timing.decoder
                        == (encryption == .zipCrypto ? "libzip" : encryption == .none ? "native" : "bulk-aes"))
            }
            #expect(reader.libzipHandlesOpened == handles, "\(encryption)")
        }
    }
}
#endif

#if SystemLibraries  // built with the ZipCrypto writer (libzip)
@Suite struct UnsupportedEncryptionTests {
    /// Attack/damage: a ZipCrypto zip whose every header also sets general-purpose bit 6 ("strong
    /// encryption"), which libzip reports as an unknown encryption method. libzip 1.7.3 leaks the
    /// entry's source when asked to open such an entry (found by `make fuzz`; the input is in
    /// Fuzz/regressions/FuzzZip). `make asan` runs this test under LeakSanitizer.
    @Test("an entry with an encryption method libzip cannot decrypt is refused, with both decoders, without a leak")
    func unknownEncryptionIsRefused() throws {
        let dir = TemporaryDirectory()
        var bytes = [UInt8](
            try Data(
                contentsOf: URL(
                    fileURLWithPath: try makeZip(["a.txt": Array("hello".utf8)], in: dir, encryption: .zipCrypto))))
        var i = 0
        while i + 4 <= bytes.count {
            if bytes[i] == 0x50, bytes[i + 1] == 0x4B, bytes[i + 2] == 3, bytes[i + 3] == 4 { bytes[i + 6] |= 0x40 }
            if bytes[i] == 0x50, bytes[i + 1] == 0x4B, bytes[i + 2] == 1, bytes[i + 3] == 2 { bytes[i + 8] |= 0x40 }
            i += 1
        }
        let hostile = dir.appending("strong.zip")
        try Data(bytes).write(to: hostile)
        for decoder in ZipPackReader.Decoder.allCases {
            let reader = try ZipPackReader(path: hostile.path, credential: .password("s3cret"), decoder: decoder)
            #expect(reader.entry("a.txt")?.encryption == .other)
            for _ in 0..<3 {
                let error = #expect(throws: AssetPackError.self) { try reader.read("a.txt") }
                #expect(error?.code == .unsupportedFormat)
                #expect(throws: AssetPackError.self) { try reader.stream("a.txt") { _ in } }
            }
        }
    }
}
#endif
