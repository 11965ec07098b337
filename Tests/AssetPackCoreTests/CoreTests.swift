import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@Suite struct EntryPathTests {
    @Test(arguments: [
        ("a/b.txt", "a/b.txt"),
        ("a\\b.txt", "a/b.txt"),
        ("./a//b/./c.txt", "a/b/c.txt"),
        ("/abs/x", "abs/x"),
        ("cafe\u{301}.txt", "caf\u{E9}.txt"),  // NFD → NFC
    ])
    func normalizes(input: String, expected: String) {
        #expect(EntryPath.normalize(input) == expected)
    }

    @Test(arguments: ["", "/etc/passwd", "../x", "a/../../x", "a\\..\\x", "C:/x", "a/\u{0}b", "a//b", "a/./b", "a/"])
    func refusesUnsafeNames(name: String) {
        #expect(throws: AssetPackError.self) { try EntryPath.safeComponents(name) }
    }

    /// The byte-scanning fast path agrees with the plain definition (NFC, `\\` → `/`, drop empty
    /// and `.` components) on every string of up to 5 pieces from an alphabet of the tricky ones.
    @Test func fastPathAgreesWithTheDefinition() {
        let pieces = ["a", "/", ".", "\\", "\u{E9}", "e\u{301}", "..", "x."]
        func reference(_ path: String) -> String {
            path.precomposedStringWithCanonicalMapping.replacingOccurrences(of: "\\", with: "/")
                .split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }.joined(separator: "/")
        }
        var checked = 0
        func walk(_ prefix: String, _ depth: Int) {
            #expect(EntryPath.normalize(prefix) == reference(prefix), "\(prefix.debugDescription)")
            checked += 1
            guard depth < 5 else { return }
            for piece in pieces { walk(prefix + piece, depth + 1) }
        }
        walk("", 0)
        #expect(checked == 37_449)
    }

    @Test func acceptsOrdinaryNames() throws {
        #expect(try EntryPath.safeComponents("images/icons/日本-star.png") == ["images", "icons", "日本-star.png"])
    }
}

@Suite struct ChecksumAndDeflateTests {
    /// The one CRC check both backends use: one message, naming the entry and both values.
    @Test func crcCheckNamesBothValuesAndWhatMatched() throws {
        try CRC32.check(0x1234, expected: 0x1234, path: "a.txt", authenticated: false)
        let plain = #expect(throws: AssetPackError.self) {
            try CRC32.check(0xABC, expected: 0x1234_5678, path: "a.txt", authenticated: false)
        }
        #expect(plain?.code == .integrityFailure && plain?.path == "a.txt")
        #expect(plain?.message == "CRC-32 mismatch (expected 12345678, got 00000abc)")
        let sealed = #expect(throws: AssetPackError.self) {
            try CRC32.check(1, expected: 2, path: "b.bin", authenticated: true)
        }
        #expect(sealed?.message.hasSuffix("the MAC or tag matched, so the entry was written wrong") == true)
    }

    @Test func crc32MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test func crc32IsIncremental() {
        let bytes = testBytes(100_000)
        var c = CRC32()
        c.update(Array(bytes[0..<33_333]))
        c.update(Array(bytes[33_333...]))
        #expect(c.value == CRC32.checksum(bytes))
    }

    @Test(arguments: [0, 1, 1000, 300_000])
    func deflateRoundTrips(count: Int) throws {
        let input = textBytes(count)
        let packed = input.withUnsafeBytes { RawDeflate.compress($0) }
        var output = [UInt8](repeating: 0, count: count)
        try packed.withUnsafeBytes { src in
            try output.withUnsafeMutableBytes { try RawDeflate.decompress(src, into: $0) }
        }
        #expect(output == input)
    }

    @Test func inflateStopsAtTheDeclaredSize() throws {
        // A "bomb": 10 MB of zeros declared as 10 bytes must fail with bounded memory.
        let bomb = [UInt8](repeating: 0, count: 10_000_000).withUnsafeBytes { RawDeflate.compress($0) }
        var output = [UInt8](repeating: 0, count: 10)
        let error = #expect(throws: AssetPackError.self) {
            try bomb.withUnsafeBytes { src in
                try output.withUnsafeMutableBytes { try RawDeflate.decompress(src, into: $0) }
            }
        }
        #expect(error?.code == .integrityFailure)
    }

    @Test func inflateRejectsTruncatedAndCorruptStreams() {
        let packed = textBytes(50_000).withUnsafeBytes { RawDeflate.compress($0) }
        var output = [UInt8](repeating: 0, count: 50_000)
        #expect(throws: AssetPackError.self) {
            try Array(packed.prefix(packed.count / 2)).withUnsafeBytes { src in
                try output.withUnsafeMutableBytes { try RawDeflate.decompress(src, into: $0) }
            }
        }
        var corrupt = packed
        corrupt[0] = 0xFF  // invalid block type
        #expect(throws: AssetPackError.self) {
            try corrupt.withUnsafeBytes { src in
                try output.withUnsafeMutableBytes { try RawDeflate.decompress(src, into: $0) }
            }
        }
    }
}

@Suite struct SourceTreeTests {
    @Test func listsFilesSortedNormalizedAndWithoutHiddenOnes() throws {
        let dir = TemporaryDirectory()
        try dir.write(["b.txt": [1], "a/z.txt": [2], "a/cafe\u{301}.txt": [3], ".DS_Store": [4], ".git/config": [5]])
        #expect(FileManager.default.fileExists(atPath: dir.appending("a/cafe\u{301}.txt").path))
        let files = try SourceTree.scan(root: dir.url, includeHidden: false)
        #expect(files.map(\.path) == ["a/caf\u{E9}.txt", "a/z.txt", "b.txt"])
        let all = try SourceTree.scan(root: dir.url, includeHidden: true)
        #expect(all.map(\.path).contains(".DS_Store"))
        #expect(all.map(\.path).contains(".git/config"))
    }

    @Test func refusesSymlinksLeavingTheTree() throws {
        let outside = TemporaryDirectory()
        try outside.write(["secret.txt": [9]])
        let dir = TemporaryDirectory()
        try dir.write(["ok.txt": [1]])
        try FileManager.default.createSymbolicLink(
            atPath: dir.appending("leak.txt").path, withDestinationPath: outside.appending("secret.txt").path)
        let error = #expect(throws: AssetPackError.self) { try SourceTree.scan(root: dir.url, includeHidden: false) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("outside") == true)
    }

    @Test func followsSymlinksInsideTheTree() throws {
        let dir = TemporaryDirectory()
        try dir.write(["real/a.txt": [1]])
        try FileManager.default.createSymbolicLink(
            atPath: dir.appending("alias.txt").path, withDestinationPath: "real/a.txt")
        let files = try SourceTree.scan(root: dir.url, includeHidden: false)
        #expect(files.map(\.path) == ["alias.txt", "real/a.txt"])
    }

    /// A scanned file's disk path is kept as the root and its relative path where no link is on
    /// the way (no string of its own); each is the file as it is on disk: an NFD name as written,
    /// a file below a linked folder and a linked file at the link's target.
    @Test func diskPathsAreTheFilesOnDisk() throws {
        let dir = TemporaryDirectory()
        // `.store` is hidden, so reached only through the link (a link to a folder scanned
        // already is skipped as a cycle).
        try dir.write(["real/a.txt": [1], "real/sub/b.txt": [2], "cafe\u{301}.txt": [3], ".store/c.txt": [4]])
        try FileManager.default.createSymbolicLink(atPath: dir.appending("linked").path, withDestinationPath: ".store")
        try FileManager.default.createSymbolicLink(
            atPath: dir.appending("alias.txt").path, withDestinationPath: "real/a.txt")
        let root = try FileSystem.realpath(dir.url.path)
        let files = try SourceTree.scan(root: dir.url, includeHidden: false)
        let disk = Dictionary(uniqueKeysWithValues: files.map { ($0.path, $0.diskPath) })
        #expect(disk["real/a.txt"] == root + "/real/a.txt")
        #expect(disk["real/sub/b.txt"] == root + "/real/sub/b.txt")
        #expect(disk["caf\u{E9}.txt"].map { Array($0.utf8) } == Array((root + "/cafe\u{301}.txt").utf8))
        #expect(disk["alias.txt"] == root + "/real/a.txt")
        #expect(disk["linked/c.txt"] == root + "/.store/c.txt")
        for f in files { #expect(try Data(contentsOf: f.url).count == 1, "\(f.path)") }
        // One file, described either way, is one file.
        let b = try #require(files.first { $0.path == "real/sub/b.txt" })
        let same = SourceFile(path: b.path, diskPath: root + "/real/sub/b.txt", size: b.size)
        #expect(b == same && Set([b, same]).count == 1)
        var moved = b
        moved.diskPath = root + "/real/a.txt"
        #expect(moved != b && moved.diskPath == root + "/real/a.txt")
    }

    /// The pack being written, when it is inside the tree, is not a source: nor is a symbolic
    /// or hard link to it (the same file under another name).
    @Test func theExcludedFileIsLeftOutWhateverItIsCalled() throws {
        let dir = TemporaryDirectory()
        try dir.write(["a.txt": [1], "out/p.apack": [2], "b.txt": [3]])
        try FileManager.default.createSymbolicLink(
            atPath: dir.appending("alias.apack").path, withDestinationPath: "out/p.apack")
        try FileManager.default.linkItem(
            atPath: dir.appending("out/p.apack").path, toPath: dir.appending("hard.apack").path)
        let files = try SourceTree.scan(root: dir.url, includeHidden: false, excluding: dir.appending("out/p.apack"))
        #expect(files.map(\.path) == ["a.txt", "b.txt"])
        let missing = try SourceTree.scan(root: dir.url, includeHidden: false, excluding: dir.appending("none.apack"))
        #expect(missing.map(\.path) == ["a.txt", "alias.apack", "b.txt", "hard.apack", "out/p.apack"])
    }

    @Test func refusesEmptyAndMissingSources() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appending("sub"), withIntermediateDirectories: true)
        #expect(throws: AssetPackError.self) { try SourceTree.scan(root: dir.url, includeHidden: false) }
        #expect(throws: AssetPackError.self) {
            try SourceTree.scan(root: dir.appending("missing"), includeHidden: false)
        }
    }

    @Test func refusesNamesThatNormaliseAlike() throws {
        let dir = TemporaryDirectory()
        // Swift compares strings canonically, so the two spellings cannot share one dictionary.
        try dir.write(["caf\u{E9}.txt": [1]])
        try dir.write(["cafe\u{301}.txt": [2]])
        #expect(throws: AssetPackError.self) { try SourceTree.scan(root: dir.url, includeHidden: false) }
    }

    @Test func autoCompressionStoresMediaAndIncompressibleData() throws {
        let dir = TemporaryDirectory()
        try dir.write(["a.png": textBytes(10_000), "b.bin": testBytes(10_000), "c.json": textBytes(10_000)])
        let files = try SourceTree.scan(root: dir.url, includeHidden: false)
        let decisions = try files.map { try CompressionPolicy.auto.decide($0) }
        #expect(decisions == [false, false, true])
        #expect(try CompressionPolicy.deflate.decide(files[1]))
        #expect(try !CompressionPolicy.store.decide(files[2]))
        // By name alone: media and tiny files are stored, the rest needs a sample.
        #expect(files.map { CompressionPolicy.auto.decisionByName($0) } == [false, nil, nil])
    }
}

@Suite struct PrintableNameTests {
    @Test("control characters and bidi overrides are escaped; ordinary names are unchanged")
    func escapes() {
        #expect(EntryPath.printable("images/日本語 café.png") == "images/日本語 café.png")
        #expect(EntryPath.printable("a\nb") == "a\\nb")
        #expect(EntryPath.printable("x\u{1B}[31mred") == "x\\u{1B}[31mred")
        #expect(EntryPath.printable("evil\u{202E}gpj.exe") == "evil\\u{202E}gpj.exe")
        #expect(!EntryPath.printable("a\u{85}b\u{7F}").unicodeScalars.contains { $0.value == 0x85 || $0.value == 0x7F })
    }

    @Test("an error naming a path with a newline is one line")
    func errorsAreOneLine() {
        let error = AssetPackError(.integrityFailure, "CRC mismatch", path: "fake\n  ok   12 bytes")
        #expect(!error.description.contains("\n"))
    }

    @Test("a name longer than PATH_MAX is refused before anything is written, even with short components")
    func overlongNamesAreRefused() {
        let long = Array(repeating: String(repeating: "d", count: 200), count: 50).joined(separator: "/")
        #expect(long.utf8.count > EntryPath.maxPathBytes)
        #expect(throws: AssetPackError.self) { try EntryPath.safeComponents(long) }
    }
}
