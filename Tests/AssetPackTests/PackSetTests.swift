import AssetPack
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Testing

/// Several packs read as one namespace (`PackSet`).
@Suite struct PackSetTests {
    static let key = testBytes(32, seed: 9)

    /// Packs `files` into `name` in `dir` (a container with the test key, or a zip with a password).
    static func pack(
        _ files: [String: String], deleting: [String] = [], as name: String, format: PackFormat,
        in dir: TemporaryDirectory
    ) throws -> (path: String, credential: PackCredential) {
        let credential: PackCredential = format == .zip ? .password("set-\(name)") : .key(key)
        let pack = try dir.pack(files.mapValues { Array($0.utf8) }, format, as: name) {
            $0.credential = credential
            $0.deletions = deleting
        }
        return (pack.path, credential)
    }

    static func open(_ packs: [(path: String, credential: PackCredential)]) throws -> PackSet {
        try PackSet(opening: packs.map(\.path), credentials: packs.map(\.credential))
    }

    @Test func theLastPackThatHasAPathServesIt() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(
            ["a.txt": "base a", "b.txt": "base b", "img/c.png": "base c"], as: "base.zip", format: .zip, in: dir)
        let patch = try Self.pack(["b.txt": "patched b"], as: "patch.apack", format: .container, in: dir)
        let set = try Self.open([base, patch])
        #expect(String(decoding: try set.read("a.txt"), as: UTF8.self) == "base a")
        #expect(String(decoding: try set.read("b.txt"), as: UTF8.self) == "patched b")
        #expect(set.entries.map(\.path) == ["a.txt", "b.txt", "img/c.png"])
        #expect(set.entries.map(\.pack) == [base.path, patch.path, base.path])
        #expect(set.entry("b.txt")?.pack == patch.path)
        #expect(set.member(serving: "a.txt")?.name == base.path)
        #expect(try set.readTimed("b.txt").timing.pack == patch.path)
        #expect(try set.readTimed("a.txt").timing.pack == base.path)
        // Every read of the protocol goes to the serving pack.
        var buffer = [UInt8](repeating: 0, count: 9)
        let timing = try buffer.withUnsafeMutableBytes { try set.read("b.txt", into: $0) }
        #expect(String(decoding: buffer, as: UTF8.self) == "patched b")
        #expect(timing.pack == patch.path)
        #expect(String(decoding: try set.readRange("b.txt", offset: 2, count: 5), as: UTF8.self) == "tched")
        var streamed: [UInt8] = []
        try set.stream("a.txt") { streamed += $0 }
        #expect(String(decoding: streamed, as: UTF8.self) == "base a")
        let missing = #expect(throws: AssetPackError.self) { try set.read("nope.txt") }
        #expect(missing?.code == .entryNotFound)
        #expect(set.format == .container)
    }

    /// `PackSet(opening:)` opens its packs on every core. When several fail, the error is the
    /// lowest pack's, named, as when they were opened one after another (a missing file fails at
    /// once, a wrong key only after its index is read: the first failure to arrive is the
    /// higher pack's).
    @Test func whenSeveralPacksFailTheLowestOnesErrorIsThrown() throws {
        let dir = TemporaryDirectory()
        let packs = try (0..<6).map {
            try Self.pack(["f\($0).txt": "\($0)"], as: "p\($0).apack", format: .container, in: dir)
        }
        let paths = packs.map(\.path)
        var credentials = packs.map(\.credential)
        credentials[2] = .key(testBytes(32, seed: 99))
        try FileManager.default.removeItem(atPath: paths[4])
        for _ in 0..<5 {
            let error = #expect(throws: AssetPackError.self) { try PackSet(opening: paths, credentials: credentials) }
            #expect(error?.code == .wrongPassword && error?.pack == paths[2], "\(String(describing: error))")
        }
        credentials[2] = packs[2].credential
        let gone = #expect(throws: AssetPackError.self) { try PackSet(opening: paths, credentials: credentials) }
        #expect(gone?.pack == paths[4], "\(String(describing: gone))")
        _ = try Self.pack(["f4.txt": "4"], as: "p4.apack", format: .container, in: dir)
        let set = try PackSet(opening: paths, credentials: credentials)
        #expect(set.members.map(\.name) == paths)
        #expect(try (0..<6).allSatisfy { String(decoding: try set.read("f\($0).txt"), as: UTF8.self) == "\($0)" })

        // With passwords the packs are opened in order (each key derivation may take up to
        // ReadLimits.maxKDFMemory): the same answers.
        let zips = try (0..<4).map {
            try Self.pack(["z\($0).txt": "\($0)"], as: "z\($0).zip", format: .zip, in: dir)
        }
        let zipPaths = zips.map(\.path)
        let zipSet = try PackSet(opening: zipPaths, credentials: zips.map(\.credential))
        #expect(zipSet.members.map(\.name) == zipPaths)
        #expect(String(decoding: try zipSet.read("z3.txt"), as: UTF8.self) == "3")
        try Data("not a pack".utf8).write(to: URL(fileURLWithPath: zipPaths[1]))
        try FileManager.default.removeItem(atPath: zipPaths[3])
        let first = #expect(throws: AssetPackError.self) {
            try PackSet(opening: zipPaths, credentials: zips.map(\.credential))
        }
        #expect(first?.pack == zipPaths[1], "\(String(describing: first))")
    }

    @Test func aPatchDeletesAndALaterPackAddsBack() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "base a", "b.txt": "base b"], as: "base.apack", format: .container, in: dir)
        let patch = try Self.pack(["c.txt": "new c"], deleting: ["a.txt"], as: "patch.zip", format: .zip, in: dir)
        let dlc = try Self.pack(["a.txt": "dlc a"], as: "dlc.apack", format: .container, in: dir)

        let patched = try Self.open([base, patch])
        #expect(patched.entries.map(\.path) == ["b.txt", "c.txt"])
        #expect(patched.entry("a.txt") == nil)
        #expect(patched.deletedPaths == [])
        let gone = #expect(throws: AssetPackError.self) { try patched.read("a.txt") }
        #expect(gone?.code == .entryNotFound)
        #expect(gone?.message == "no such entry: deleted by \(patch.path)", "\(String(describing: gone))")
        let missing = #expect(throws: AssetPackError.self) { try patched.read("never.txt") }
        #expect(missing?.message == "no such entry")

        let readded = try Self.open([base, patch, dlc])
        #expect(readded.entries.map(\.path) == ["a.txt", "b.txt", "c.txt"])
        #expect(String(decoding: try readded.read("a.txt"), as: UTF8.self) == "dlc a")
        #expect(readded.entry("a.txt")?.pack == dlc.path)
    }

    /// A set merges nothing at open: a deletion of a path no pack below has is harmless to a read
    /// and refused by the set's check (what `list` and `verify` run).
    @Test func aDeletionOfAPathNoPackBelowHasIsRefusedByTheCheck() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "a"], as: "base.zip", format: .zip, in: dir)
        let patch = try Self.pack(["b.txt": "b"], deleting: ["ghost.txt"], as: "patch.zip", format: .zip, in: dir)
        let set = try Self.open([base, patch])
        #expect(try set.read("a.txt") == Array("a".utf8) && set.entry("ghost.txt") == nil)
        let error = #expect(throws: AssetPackError.self) { try set.checkIndex() }
        #expect(error?.code == .integrityFailure)
        #expect(error?.message.contains("\(patch.path) deletes ghost.txt, which no pack below it has") == true)
        // A patch alone deletes from nothing.
        #expect(throws: AssetPackError.self) { try Self.open([patch]).checkIndex() }
    }

    @Test func onePathInTwoUnicodeFormsIsRefusedByTheCheckNamingBothPacks() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["caf\u{E9}.txt": "nfc"], as: "base.apack", format: .container, in: dir)
        // The container writer stores the path it is given: an NFD one, for this test.
        let file = dir.appending("nfd.txt")
        try Data("nfd".utf8).write(to: file)
        var options = PackOptions.forTests
        options.format = .container
        options.credential = .key(Self.key)
        let other = dir.appending("other.apack")
        try AssetPacks.driver(for: .container).makeWriter().write(
            [SourceFile(path: "cafe\u{301}.txt", url: file, size: 3)], to: other.path, options: options)
        let reader = try AssetPacks.open(other.path, credential: .key(Self.key))
        #expect(reader.entries.first.map { Array($0.path.utf8) } == Array("cafe\u{301}.txt".utf8))
        let error = #expect(throws: AssetPackError.self) {
            try Self.open([base, (other.path, .key(Self.key))]).checkIndex()
        }
        #expect(error?.code == .integrityFailure)
        #expect(error?.message.contains("\(base.path) and \(other.path) hold") == true)
        #expect(error?.message.contains("different Unicode forms") == true)
    }

    @Test func aSinglePackIsASetOfOne() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "a", "d/b.txt": "b"], as: "base.zip", format: .zip, in: dir)
        let single = try AssetPacks.open(base.path, credential: base.credential)
        let set = try Self.open([base])
        #expect(set.entries.map(\.path) == single.entries.map(\.path))
        #expect(set.entries.allSatisfy { $0.pack == base.path })
        #expect(try set.read("d/b.txt") == single.read("d/b.txt"))
        #expect(single.entries.allSatisfy { $0.pack == nil })
        #expect(throws: AssetPackError.self) { try PackSet([]) }
    }

    @Test func anOpenErrorNamesThePack() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "a"], as: "base.zip", format: .zip, in: dir)
        let patch = try Self.pack(["b.txt": "b"], as: "patch.apack", format: .container, in: dir)
        let error = #expect(throws: AssetPackError.self) {
            try PackSet(
                opening: [base.path, patch.path], credentials: [base.credential, .key(testBytes(32, seed: 1))])
        }
        #expect(error?.code == .wrongPassword)
        #expect(error?.message.hasPrefix(patch.path) == true)
    }

    @Test func theLibraryReadsASet() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "base a", "b.txt": "base b"], as: "base.zip", format: .zip, in: dir)
        let patch = try Self.pack(["a.txt": "patch a"], deleting: ["b.txt"], as: "patch.zip", format: .zip, in: dir)
        let library = try AssetLibrary(
            contentsOf: [URL(fileURLWithPath: base.path), URL(fileURLWithPath: patch.path)],
            credentials: [base.credential, patch.credential])
        #expect(try library.readData("a.txt") == Data("patch a".utf8))
        #expect(!library.contains("b.txt"))
        #expect(library.entries.map(\.path) == ["a.txt"])
        #expect(library.url.path == patch.path)
    }

    @Test func foldersOfAPackAndOfASet() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(
            ["a/x.txt": "1", "a/b/y.txt": "2", "ab/z.txt": "3", "a.png": "file a", "caf\u{E9}/q.txt": "4"],
            as: "base.zip",
            format: .zip, in: dir)
        let patch = try Self.pack(
            ["a/new.txt": "5"], deleting: ["a/x.txt"], as: "patch.apack", format: .container, in: dir)
        let single = try AssetPacks.open(base.path, credential: base.credential)
        #expect(single.entries(under: "a").map(\.path) == ["a/b/y.txt", "a/x.txt"])
        #expect(single.entries(under: "a/").map(\.path) == ["a/b/y.txt", "a/x.txt"])
        #expect(single.entries(under: "./a//b").map(\.path) == ["a/b/y.txt"])
        #expect(single.entries(under: "cafe\u{301}").map(\.path) == ["caf\u{E9}/q.txt"])  // NFD finds NFC
        #expect(single.entries(under: "").count == 5)
        #expect(single.entries(under: "nothing").isEmpty)
        let set = try Self.open([base, patch])
        #expect(set.entries(under: "a").map(\.path) == ["a/b/y.txt", "a/new.txt"])
        #expect(set.entries(under: "a").map(\.pack) == [base.path, patch.path])
    }

    /// `pack` is absent from a single pack's JSON, present in a set's: other fields are unchanged.
    @Test func theJSONOfAnEntryNamesItsPackOnlyInASet() throws {
        var info = EntryInfo(path: "a", size: 1, storedSize: 1, compression: .store, encryption: .none, crc32: 1)
        let single = String(decoding: try JSONEncoder().encode(info), as: UTF8.self)
        #expect(!single.contains("pack"))
        info.pack = "base.zip"
        let inSet = String(decoding: try JSONEncoder().encode(info), as: UTF8.self)
        #expect(inSet.contains(#""pack":"base.zip""#))
    }
}
