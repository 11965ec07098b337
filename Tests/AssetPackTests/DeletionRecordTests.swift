import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// A patch pack's deletion record (`.assetpack/deleted`, docs/FORMAT.md "Deletion record").
@Suite struct DeletionRecordTests {
    static let key = testBytes(32, seed: 7)

    static func options(_ format: PackFormat) -> PackOptions {
        var options = PackOptions.forTests
        options.format = format
        options.credential = format == .zip ? .password("deletion-test") : .key(key)
        return options
    }

    /// The documented vector: `a.txt` and `dir/é.png` (NFC), 28 bytes.
    @Test func theRecordMatchesTheDocumentedVector() throws {
        let bytes = try DeletionRecord.encode(["dir/\u{E9}.png", "a.txt"])
        #expect(
            bytes.map { String(format: "%02x", $0) }.joined()
                == "4150444c01020000000500612e7478740a006469722fc3a92e706e67")
        #expect(try DeletionRecord.decode(bytes, limits: .default) { _ in false } == ["a.txt", "dir/\u{E9}.png"])
        #expect(try DeletionRecord.decode(try DeletionRecord.encode([]), limits: .default) { _ in false } == [])
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aPackCarriesItsDeletionsAndHidesTheRecord(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["keep.txt": Array("kept".utf8)], under: "src")
        var options = Self.options(format)
        options.deletions = ["old/gone.bin", "caf\u{E9}.txt"]
        let pack = dir.appending("patch.pack")
        try AssetPacks.pack(source: source, to: pack, options: options)
        let reader = try AssetPacks.open(pack.path, credential: options.credential)
        #expect(reader.deletedPaths == ["caf\u{E9}.txt", "old/gone.bin"])
        #expect(reader.entries.map(\.path) == ["keep.txt"])
        #expect(reader.entry(DeletionRecord.entryName) == nil)
        #expect(throws: AssetPackError.self) { try reader.read(DeletionRecord.entryName) }
        #expect(try reader.read("keep.txt") == Array("kept".utf8))

        // A pack without deletions has none.
        options.deletions = []
        try AssetPacks.pack(source: source, to: pack, options: options)
        #expect(try AssetPacks.open(pack.path, credential: options.credential).deletedPaths == [])
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aSignedPatchSignsItsRecord(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("a".utf8)], under: "src")
        var options = Self.options(format)
        options.deletions = ["b.txt"]
        let signing = PublisherSigningKey.generate()
        options.signingKey = signing
        let pack = dir.appending("patch.pack")
        try AssetPacks.pack(source: source, to: pack, options: options)
        let reader = try AssetPacks.open(pack.path, credential: options.credential, trustedKeys: [signing.publicKey])
        #expect(reader.deletedPaths == ["b.txt"])
        #expect(reader.publisher == signing.publicKey)
    }

    /// Other zip tools still open a patch zip: the record is an ordinary (here unencrypted) entry.
    @Test func otherZipToolsListTheRecordAsAFile() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("a".utf8)], under: "src")
        var options = PackOptions.forTests
        options.zip.encryption = .none
        options.deletions = ["b.txt"]
        let pack = dir.appending("patch.zip")
        try AssetPacks.pack(source: source, to: pack, options: options)
        let unzip = Process()
        unzip.executableURL = URL(fileURLWithPath: "/usr/bin/unzip")
        unzip.arguments = ["-t", pack.path]
        let out = Pipe()
        unzip.standardOutput = out
        try unzip.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        unzip.waitUntilExit()
        #expect(unzip.terminationStatus == 0)
        #expect(text.contains(".assetpack/deleted"))
    }

    @Test func thePackerRefusesBadDeletions() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("a".utf8)], under: "src")
        let pack = dir.appending("patch.pack")
        for (deletions, message) in [
            (["a.txt"], "both hold and delete"), (["e\u{301}.txt"], "normalised"), (["x", "x"], "twice"),
            ([".assetpack/manifest"], "normalised"),
        ] {
            var options = Self.options(.container)
            options.deletions = deletions
            let error = #expect(throws: AssetPackError.self) {
                try AssetPacks.pack(source: source, to: pack, options: options)
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(message) == true, "\(deletions): \(error?.message ?? "")")
        }
        #expect(!FileManager.default.fileExists(atPath: pack.path))
    }

    static func record(_ paths: [[UInt8]]) -> [UInt8] {
        var out = Array("APDL".utf8) + [1] + withUnsafeBytes(of: UInt32(paths.count).littleEndian, Array.init)
        for p in paths { out += withUnsafeBytes(of: UInt16(p.count).littleEndian, Array.init) + p }
        return out
    }

    @Test func malformedRecordsAreRefused() throws {
        let nfd = Array("e\u{301}.txt".utf8)
        let cases: [([UInt8], AssetPackError.Code)] = [
            (Array("APZM".utf8) + [1, 0, 0, 0, 0], .unsupportedFormat),
            (Array("APDL".utf8) + [2, 0, 0, 0, 0], .unsupportedFormat),
            (Array("APDL".utf8), .unsupportedFormat),
            (Self.record([Array("a".utf8)]).dropLast(), .integrityFailure),
            (Self.record([Array("a".utf8)]) + [0], .integrityFailure),
            (Self.record([nfd]), .integrityFailure),
            (Self.record([[0xFF, 0xFE]]), .integrityFailure),
            (Self.record([Array("b".utf8), Array("a".utf8)]), .integrityFailure),
            (Self.record([Array("a".utf8), Array("a".utf8)]), .integrityFailure),
            (Self.record([Array("./a".utf8)]), .integrityFailure),
            (Self.record([Array(".assetpack/x".utf8)]), .integrityFailure),
            (Self.record([Array("held.txt".utf8)]), .integrityFailure),
            (Array("APDL".utf8) + [1, 0xFF, 0xFF, 0xFF, 0xFF], .integrityFailure),
        ]
        for (bytes, code) in cases {
            let error = #expect(throws: AssetPackError.self) {
                try DeletionRecord.decode(Array(bytes), limits: .default) { $0 == "held.txt" }
            }
            #expect(error?.code == code, "\(bytes)")
        }
    }

    /// A pack whose record names a path it also holds fails to open, in both formats.
    @Test(arguments: [PackFormat.zip, .container])
    func aPackThatHoldsWhatItDeletesDoesNotOpen(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["held.txt": Array("h".utf8)], under: "src")
        let recordFile = dir.appending("record")
        let record = Self.record([Array("held.txt".utf8)])
        try Data(record).write(to: recordFile)
        let files = [
            SourceFile(path: "held.txt", url: source.appendingPathComponent("held.txt"), size: 1),
            SourceFile(path: DeletionRecord.entryName, url: recordFile, size: UInt64(record.count)),
        ]
        let options = Self.options(format)
        let pack = dir.appending("bad.pack")
        try AssetPacks.driver(for: format).makeWriter().write(files, to: pack.path, options: options)
        let error = #expect(throws: AssetPackError.self) {
            try AssetPacks.open(pack.path, credential: options.credential)
        }
        #expect(error?.code == .integrityFailure)
        #expect(error?.message.contains("both holds and deletes held.txt") == true)
    }
}
