import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Which entries `Extractor.extract(paths:)` writes when the same entry is named more than once.
@Suite struct ExtractorSelectionTests {
    @Test(arguments: PackFormat.allCases)
    func oneEntryNamedTwoWaysIsExtractedOnce(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(
            BackendConformanceTests.makePack(format, ["a.txt": [1, 2, 3], "b/c.txt": [4]], in: dir),
            credential: .password(BackendConformanceTests.password))
        let out = dir.appending("out")
        var written: [String] = []
        try Extractor(directory: out).extract(from: reader, paths: ["a.txt", "./a.txt", "b//c.txt", "b/c.txt"]) {
            url, _ in
            written.append(url.path)
        }
        #expect(written == [out.appendingPathComponent("a.txt").path, out.appendingPathComponent("b/c.txt").path])
        #expect(try Data(contentsOf: out.appendingPathComponent("a.txt")) == Data([1, 2, 3]))
        #expect(try Data(contentsOf: out.appendingPathComponent("b/c.txt")) == Data([4]))
    }

    @Test func theSameSpellingTwiceIsExtractedOnce() throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(
            BackendConformanceTests.makePack(.zip, ["a.txt": [1]], in: dir),
            credential: .password(BackendConformanceTests.password))
        var count = 0
        try Extractor(directory: dir.appending("out")).extract(from: reader, paths: ["a.txt", "a.txt"]) { _, _ in
            count += 1
        }
        #expect(count == 1)
    }
}

/// What `Extractor` checks before it writes anything, and what a failed extraction leaves behind.
@Suite struct ExtractorSafetyTests {
    /// The overlapping-entries bomb writes far more than the pack holds; a cap on the sum of the
    /// declared sizes, checked before the first byte, stops any such pack (ReadLimits.maxExtractBytes).
    @Test(arguments: PackFormat.allCases)
    func totalSizeIsCappedBeforeAnythingIsWritten(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(
            BackendConformanceTests.makePack(
                format, ["a.bin": testBytes(600), "b/c.bin": testBytes(600, seed: 2)], in: dir),
            credential: .password(BackendConformanceTests.password))
        var limits = ReadLimits()
        limits.maxExtractBytes = 1000
        let out = dir.appending("out")
        let error = #expect(throws: AssetPackError.self) {
            try Extractor(directory: out, limits: limits).extract(from: reader)
        }
        #expect(error?.code == .limitExceeded)
        #expect(
            error?.message.contains("1200 bytes") == true
                && error?.message.contains("ReadLimits.maxExtractBytes") == true)
        #expect(!FileManager.default.fileExists(atPath: out.path), "nothing, not even --into, is created")
        limits.maxExtractBytes = 1200
        try Extractor(directory: out, limits: limits).extract(from: reader)
        #expect(try Data(contentsOf: out.appendingPathComponent("b/c.bin")) == Data(testBytes(600, seed: 2)))
    }

    /// A destination over PATH_MAX used to create dozens of directories before ENAMETOOLONG; now it
    /// is refused before anything is created.
    @Test func aPathTooLongForTheSystemIsRefusedBeforeAnythingIsCreated() throws {
        let dir = TemporaryDirectory()
        // 16 components of 200 bytes: 3,215 bytes, a valid entry name (under 4,095).
        let name = (0..<16).map { String(repeating: Character(String(UnicodeScalar(UInt8(97 + $0)))), count: 200) }
            .joined(separator: "/")
        let zipPath = dir.appending("long.zip").path
        try Data(ZipBuilder([.init(name, Array("x".utf8))]).build()).write(to: URL(fileURLWithPath: zipPath))
        let longReader = try AssetPacks.open(zipPath, credential: nil)
        // --into 1,000 bytes deep: the destination would be over 4,200 bytes.
        let into = dir.appending((0..<5).map { _ in String(repeating: "d", count: 199) }.joined(separator: "/"))
        let error = #expect(throws: AssetPackError.self) { try Extractor(directory: into).extract(from: longReader) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("system's limit") == true, "\(String(describing: error))")
        let first = dir.appending(String(repeating: "d", count: 199))
        #expect(!FileManager.default.fileExists(atPath: first.path), "no directory was created")
    }

    /// A failed entry leaves no file, and the directories created for it are removed again;
    /// entries written before it stay.
    @Test func aFailedExtractionRemovesTheDirectoriesItCreated() throws {
        let dir = TemporaryDirectory()
        let marker = Array("BROKEN-ENTRY-CONTENT-".utf8) + testBytes(100, seed: 9)
        var bytes = ZipBuilder([.init("a.txt", [7]), .init("deep/nested/b.bin", marker)]).build()
        // Damage b.bin's stored data: it no longer matches its CRC, so its read fails at the end.
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: marker) })
        bytes[at + 50] ^= 0x01
        let path = dir.appending("p.zip").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try AssetPacks.open(path, credential: nil)
        let out = dir.appending("out")
        let error = #expect(throws: AssetPackError.self) { try Extractor(directory: out).extract(from: reader) }
        #expect(error?.code == .integrityFailure)
        #expect(try Data(contentsOf: out.appendingPathComponent("a.txt")) == Data([7]), "earlier entries stay")
        #expect(
            !FileManager.default.fileExists(atPath: out.appendingPathComponent("deep").path), "created folders removed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["a.txt"])
    }
}
