import AssetPack
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Testing

/// One suite, run against both backends: what every PackReader must do.
@Suite struct BackendConformanceTests {
    static let password = "correct horse"

    static func makePack(_ format: PackFormat, _ tree: [String: [UInt8]] = sampleTree(), in dir: TemporaryDirectory)
        throws -> String
    {
        try dir.pack(tree, format, as: "pack.\(format.rawValue)", password: password).path
    }

    @Test(arguments: PackFormat.allCases)
    func sniffsTheFormatFromMagicBytes(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let pack = try Self.makePack(format, in: dir)
        let renamed = dir.appending("misleading.txt").path
        try FileManager.default.copyItem(atPath: pack, toPath: renamed)
        #expect(try AssetPacks.sniff(renamed) == format)
        #expect(try AssetPacks.open(renamed, credential: .password(Self.password)).format == format)
    }

    @Test(arguments: PackFormat.allCases)
    func everyEntryReadsBackIdentical(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let reader = try AssetPacks.open(Self.makePack(format, tree, in: dir), credential: .password(Self.password))
        #expect(reader.entries.count == tree.count)
        #expect(
            reader.entries.map(\.path)
                == reader.entries.map(\.path).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        for entry in reader.entries {
            let expected = try #require(tree[entry.path])
            let (bytes, timing) = try reader.readTimed(entry.path)
            #expect(bytes == expected, "\(format) \(entry.path)")
            #expect(entry.size == UInt64(expected.count))
            #expect(timing.bytesOut == UInt64(expected.count))
            #expect(timing.total > 0)
            #expect(timing.lookup + timing.keyDerivation + timing.decrypt + timing.crc <= timing.total * 1.001 + 1e-6)
            var streamed: [UInt8] = []
            try reader.stream(entry.path) { streamed.append(contentsOf: $0) }
            #expect(streamed == expected)
        }
        #expect(try reader.readData("a/b/c/d/deep.txt") == Data("deep\n".utf8))
    }

    /// Ranges and caller buffers on the protocol: every entry of every kind (stored and
    /// deflated, encrypted or not, zip and container), at the start, middle and end, and empty.
    @Test(arguments: PackFormat.allCases, [PackEncryption.aes256, .none])
    func rangesAndCallerBuffersReadTheSameBytes(format: PackFormat, encryption: PackEncryption) throws {
        guard format == .zip || encryption == .aes256 else { return }  // a container is always encrypted
        let dir = TemporaryDirectory()
        var tree = sampleTree()
        tree["big/random.bin"] = testBytes(300_000, seed: 5)  // stored (incompressible)
        tree["big/text.txt"] = Array(String(repeating: "range read ", count: 30_000).utf8)  // deflated
        let source = try dir.write(tree, under: "src")
        var options = PackOptions.forTests
        options.format = format
        options.zip.encryption = encryption
        options.credential = encryption == .none ? nil : .password(Self.password)
        let output = dir.appending("pack.\(format.rawValue)")
        try AssetPacks.pack(source: source, to: output, options: options)
        let reader = try AssetPacks.open(output.path, credential: options.credential)
        for entry in reader.entries {
            let expected = try #require(tree[entry.path])
            var whole = [UInt8](repeating: 0xEE, count: expected.count + 3)
            let timing = try whole.withUnsafeMutableBytes { try reader.read(entry.path, into: $0) }
            #expect(
                Array(whole[..<expected.count]) == expected && whole.suffix(3) == [0xEE, 0xEE, 0xEE], "\(entry.path)")
            #expect(timing.bytesOut == UInt64(expected.count))
            let n = expected.count
            for (offset, count) in [
                (0, min(n, 7)), (n / 3, min(n - n / 3, 70_001)), (max(0, n - 5), min(n, 5)), (n, 0),
            ] {
                #expect(
                    try reader.readRange(entry.path, offset: UInt64(offset), count: count)
                        == Array(expected[offset..<offset + count]), "\(entry.path) \(offset)+\(count)")
            }
            #expect(throws: AssetPackError.self) { try reader.readRange(entry.path, offset: UInt64(n), count: 1) }
        }
        var small = [UInt8](repeating: 0, count: 10)
        let error = #expect(throws: AssetPackError.self) {
            try small.withUnsafeMutableBytes { _ = try reader.read("big/random.bin", into: $0) }
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test(arguments: PackFormat.allCases)
    func wrongPasswordIsReportedAsSuch(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let pack = try Self.makePack(format, in: dir)
        let error = #expect(throws: AssetPackError.self) {
            let reader = try AssetPacks.open(pack, credential: .password("wrong"))
            _ = try reader.read("big/text.json")
        }
        #expect(error?.code == .wrongPassword)
    }

    @Test(arguments: PackFormat.allCases)
    func missingPasswordIsReportedAsSuch(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let pack = try Self.makePack(format, in: dir)
        let error = #expect(throws: AssetPackError.self) {
            let reader = try AssetPacks.open(pack, credential: nil)
            _ = try reader.read("big/text.json")
        }
        #expect(error?.code == .missingPassword)
    }

    @Test(arguments: PackFormat.allCases)
    func missingEntryIsEntryNotFound(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(Self.makePack(format, in: dir), credential: .password(Self.password))
        let error = #expect(throws: AssetPackError.self) { try reader.read("nope.txt") }
        #expect(error?.code == .entryNotFound)
        #expect(reader.entry("nope.txt") == nil)
    }

    @Test(arguments: PackFormat.allCases)
    func lookupNormalisesPaths(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(Self.makePack(format, in: dir), credential: .password(Self.password))
        #expect(try reader.read("nai\u{308}ve cafe\u{301}/日本語.txt") == Array("non-ASCII name\n".utf8))
        #expect(try reader.read("a\\b\\c\\d\\deep.txt") == Array("deep\n".utf8))
    }

    @Test(arguments: PackFormat.allCases)
    func concurrentReadsReturnTheRightBytes(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let reader = try AssetPacks.open(Self.makePack(format, tree, in: dir), credential: .password(Self.password))
        let paths = tree.keys.sorted()
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 200) { i in
            let path = paths[(i * 5 + i / 7) % paths.count]
            if (try? reader.read(path)) != tree[path] { failures.increment() }
        }
        #expect(failures.value == 0)
    }
}

/// Format-specific pack options live under their format; the container's KDF is chosen through
/// `AssetPacks.pack` (it could not be before issue 12).
@Suite struct FormatOptionsTests {
    @Test(arguments: [
        (ContainerKDF.pbkdf2SHA256(iterations: 1000), UInt8(2), [UInt32(1000), 0, 0]),
        (.scrypt(logN: 11, r: 8, p: 1), 1, [11, 8, 1]),
    ])
    func containerKDFIsChosenThroughPackOptions(kdf: ContainerKDF, storedID: UInt8, params: [UInt32]) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("kdf".utf8)], under: "src")
        var options = PackOptions.forTests
        options.format = .container
        options.credential = .password("pw")
        options.container.kdf = kdf
        options.container.chunkSize = 4 << 10
        options.zip.encryption = .none  // ignored by the container
        let pack = dir.appending("p.apack")
        try AssetPacks.pack(source: source, to: pack, options: options)
        let header = [UInt8](try Data(contentsOf: pack).prefix(24))
        #expect(header[10] == storedID, "KDF id in the header (docs/FORMAT.md, offset 10)")
        let stored = (0..<3).map { i in
            header[12 + 4 * i..<16 + 4 * i].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        #expect(stored == params, "KDF parameters in the header (offsets 12, 16, 20)")
        #expect(header[11] == 14, "chunk shift: the largest chunk, 16 KiB for a 4 KiB average (FORMAT.md, version 4)")
        #expect(try AssetPacks.open(pack.path, credential: .password("pw")).read("a.txt") == Array("kdf".utf8))
    }
}
