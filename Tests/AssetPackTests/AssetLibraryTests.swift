import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

@Suite struct AssetLibraryTests {
    /// Packs `sampleTree()` (plus a JSON file) into `bundle/<name>` and returns the pack's URL.
    func bundledPack(
        in dir: TemporaryDirectory, format: PackFormat, credential: PackCredential, name: String = "assets.pack"
    )
        throws -> URL
    {
        var tree = sampleTree()
        tree["data/config.json"] = Array(#"{"title": "Hello", "lives": 3}"#.utf8)
        let source = try dir.write(tree, under: "src")
        var options = PackOptions.forTests
        options.format = format
        options.credential = credential
        let pack = dir.appending("bundle/\(name)")
        try FileManager.default.createDirectory(at: pack.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: pack, options: options)
        return pack
    }

    static let key = testBytes(32, seed: 42)

    @Test(arguments: [PackFormat.zip, .container])
    func installsOnceThenOpensAndReadsEveryEntry(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let credential: PackCredential = format == .zip ? .password("library-test") : .key(Self.key)
        let bundled = try bundledPack(in: dir, format: format, credential: credential)
        let installer = PrivateInstaller(directory: dir.appending("private/com.example.app"))

        let first = try AssetLibrary.openInstalling(bundled: bundled, installer: installer, credential: credential)
        #expect(first.installation?.copied == true)
        #expect(first.url.path == dir.appending("private/com.example.app/assets.pack").path)
        #expect(first.format == format)
        for (path, expected) in sampleTree() {
            #expect(try first.read(path) == expected)
            #expect(try first.readData(path) == Data(expected))
            let (bytes, timing) = try first.readTimed(path)
            #expect(bytes == expected)
            #expect(timing.bytesOut == UInt64(expected.count))
            #expect(first.entry(path)?.size == UInt64(expected.count))
            #expect(first.contains(path))
        }
        #expect(first.entries.count == sampleTree().count + 1)

        let second = try AssetLibrary.openInstalling(bundled: bundled, installer: installer, credential: credential)
        #expect(second.installation?.copied == false)
        #expect(second.installation?.sha256 == first.installation?.sha256)
        #expect(try second.readData("twenty.txt") == Data("twenty bytes here!!!".utf8))
    }

    @Test func installsUnderAnotherName() throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .zip, credential: .password("pw"))
        let library = try AssetLibrary.openInstalling(
            bundled: bundled, installer: PrivateInstaller(directory: dir.appending("p")), as: "v2.pack",
            credential: .password("pw"))
        #expect(library.url.lastPathComponent == "v2.pack")
        #expect(try library.read("one.bin") == [0x42])
    }

    @Test func opensInPlaceWithoutInstalling() throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .container, credential: .key(Self.key))
        let library = try AssetLibrary(contentsOf: bundled, credential: .key(Self.key))
        #expect(library.installation == nil)
        #expect(library.url == bundled)
        #expect(try library.read("a/b/c/d/deep.txt") == Array("deep\n".utf8))
    }

    @Test func decodesJSONEntries() throws {
        struct Config: Decodable, Equatable {
            var title: String
            var lives: Int
        }
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .zip, credential: .password("pw"))
        let library = try AssetLibrary(contentsOf: bundled, credential: .password("pw"))
        #expect(try library.decode(Config.self, from: "data/config.json") == Config(title: "Hello", lives: 3))
    }

    @Test func streamsLargeEntries() throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .container, credential: .key(Self.key))
        let library = try AssetLibrary(contentsOf: bundled, credential: .key(Self.key))
        var received: [UInt8] = []
        let timing = try library.stream("big/random.bin") { received.append(contentsOf: $0) }
        #expect(received == testBytes(300_000, seed: 7))
        #expect(timing.bytesOut == 300_000)
    }

    @Test func errorsKeepTheirCodes() throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .zip, credential: .password("right"))
        let installer = PrivateInstaller(directory: dir.appending("p"))
        let library = try AssetLibrary.openInstalling(
            bundled: bundled, installer: installer, credential: .password("right"))

        let missing = #expect(throws: AssetPackError.self) { try library.readData("no/such.txt") }
        #expect(missing?.code == .entryNotFound)
        #expect(missing?.path == "no/such.txt")

        // Zip checks the password per entry, on read.
        let wrong = try AssetLibrary.openInstalling(
            bundled: bundled, installer: installer, credential: .password("wrong"))
        let denied = #expect(throws: AssetPackError.self) { try wrong.readData("twenty.txt") }
        #expect(denied?.code == .wrongPassword)

        let noBundle = #expect(throws: AssetPackError.self) {
            try AssetLibrary.openInstalling(
                bundled: dir.appending("bundle/missing.pack"), installer: installer, credential: .password("right"))
        }
        #expect(noBundle?.code == .io)

        let badID = #expect(throws: AssetPackError.self) {
            try AssetLibrary.openInstalling(bundled: bundled, appID: "../escape", credential: .password("right"))
        }
        #expect(badID?.code == .invalidArgument)
    }

    @Test func wrongKeyFailsWhenTheContainerOpens() throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .container, credential: .key(Self.key))
        let error = #expect(throws: AssetPackError.self) {
            try AssetLibrary.openInstalling(
                bundled: bundled, installer: PrivateInstaller(directory: dir.appending("p")),
                credential: .key(testBytes(32, seed: 43)))
        }
        #expect(error?.code == .wrongPassword)
    }

    @Test func asyncReadsMatchSyncReadsFromManyTasks() async throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .container, credential: .key(Self.key))
        let shared = try AssetLibrary(contentsOf: bundled, credential: .key(Self.key))
        let tree = sampleTree()
        try await withThrowingTaskGroup(of: (String, [UInt8], Data, EntryTiming).self) { group in
            for round in 0..<4 {
                for path in tree.keys.sorted() {
                    group.addTask {
                        let bytes = try await shared.loadBytes(path)
                        let data = try await shared.load(path)
                        let timed = try await shared.loadTimed(path)
                        _ = round
                        #expect(timed.bytes == bytes)
                        return (path, bytes, data, timed.timing)
                    }
                }
            }
            var reads = 0
            for try await (path, bytes, data, timing) in group {
                #expect(bytes == tree[path])
                #expect(data == Data(tree[path]!))
                #expect(timing.bytesOut == UInt64(tree[path]!.count))
                reads += 1
            }
            #expect(reads == tree.count * 4)
        }
        let missing = await #expect(throws: AssetPackError.self) { try await shared.load("nope") }
        #expect(missing?.code == .entryNotFound)
    }

    @Test func asyncOpenInstallingRunsTheSameChecks() async throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .zip, credential: .password("pw"))
        // The appID overload installs below $XDG_DATA_HOME or ~/.local/share, which a test must not
        // touch: check that its async form reports the same argument error without writing anything.
        let error = await #expect(throws: AssetPackError.self) {
            try await AssetLibrary.openInstalling(bundled: bundled, appID: "..", credential: .password("pw"))
        }
        #expect(error?.code == .invalidArgument)

        let library = try AssetLibrary.openInstalling(
            bundled: bundled, installer: PrivateInstaller(directory: dir.appending("p")), credential: .password("pw"))
        // A library is Sendable: hand it to a detached task and read there.
        let viaDetached = try await Task.detached { try await library.load("nineteen.txt") }.value
        #expect(viaDetached == Data("nineteen bytes here".utf8))
    }

    @Test func cancelledTasksDoNotStartReads() async throws {
        let dir = TemporaryDirectory()
        let bundled = try bundledPack(in: dir, format: .zip, credential: .password("pw"))
        let library = try AssetLibrary(contentsOf: bundled, credential: .password("pw"))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await library.load("twenty.txt")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}

/// Errors an app can show (issue 39): `localizedDescription` is the pack, the entry and the message,
/// and a first launch with the wrong secret copies nothing.
@Suite struct AppFacingErrorTests {
    @Test(arguments: [PackFormat.zip, .container])
    func localizedDescriptionNamesThePackAndTheEntry(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let credential: PackCredential = format == .zip ? .password("right") : .key(AssetLibraryTests.key)
        let pack = try AssetLibraryTests().bundledPack(in: dir, format: format, credential: credential)
        let wrong: PackCredential = format == .zip ? .password("wrong") : .key(testBytes(32, seed: 9))
        // The wrong secret: at open (container) or at the first read (zip, per entry).
        do {
            let library = try AssetLibrary(contentsOf: pack, credential: wrong)
            _ = try library.readData(sampleTree().keys.sorted()[0])
            Issue.record("the wrong secret read an entry")
        } catch {
            let text = error.localizedDescription
            #expect(text.hasPrefix(pack.path + ": "), "\(text)")
            #expect((error as? AssetPackError)?.code == .wrongPassword)
            #expect(!text.contains("The operation could not be completed"), "\(text)")
        }
        let library = try AssetLibrary(contentsOf: pack, credential: credential)
        let missing = #expect(throws: AssetPackError.self) { try library.readData("levels/none.json") }
        #expect(missing?.pack == pack.path)
        #expect(
            (missing as (any Error)?)?.localizedDescription
                == "\(pack.path): levels/none.json: \(missing?.message ?? "")")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aFirstLaunchWithTheWrongSecretCopiesNothing(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let credential: PackCredential = format == .zip ? .password("right") : .key(AssetLibraryTests.key)
        let bundled = try AssetLibraryTests().bundledPack(in: dir, format: format, credential: credential)
        let installer = PrivateInstaller(directory: dir.appending("private/app"))
        let wrong: PackCredential = format == .zip ? .password("wrong") : .key(testBytes(32, seed: 9))
        let error = #expect(throws: AssetPackError.self) {
            try AssetLibrary.openInstalling(bundled: bundled, installer: installer, credential: wrong)
        }
        #expect(error?.code == .wrongPassword)
        #expect(error?.pack == bundled.path, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("private/app/assets.pack").path))
        let library = try AssetLibrary.openInstalling(bundled: bundled, installer: installer, credential: credential)
        #expect(library.installation?.copied == true)
        // Installed: a later launch with the wrong secret copies nothing either, and fails at open or read.
        #expect(throws: AssetPackError.self) {
            let again = try AssetLibrary.openInstalling(bundled: bundled, installer: installer, credential: wrong)
            _ = try again.read(sampleTree().keys.sorted()[0])
        }
    }
}
