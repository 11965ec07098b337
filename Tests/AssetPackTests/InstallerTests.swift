import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

@Suite struct PrivateInstallerTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        stat(path, &st)
        return st.st_mode & 0o777
    }

    @Test func installsPrivatelyAndVerified() throws {
        let dir = TemporaryDirectory()
        try dir.write(["bundle/assets.pack": testBytes(2_000_000)])
        let target = dir.appending("private/app")
        let result = try PrivateInstaller(directory: target).install(dir.appending("bundle/assets.pack"))
        #expect(result.copied)
        #expect(result.path.path == target.appendingPathComponent("assets.pack").path)
        #expect(mode(target.path) == 0o700)
        #expect(mode(result.path.path) == 0o600)
        #expect(try Data(contentsOf: result.path) == Data(testBytes(2_000_000)))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: target.path).filter {
            $0.hasPrefix(".assetpack-tmp-")
        }
        #expect(leftovers.isEmpty)
    }

    @Test func secondInstallOfTheSamePackCopiesNothing() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": testBytes(100_000)])
        let installer = PrivateInstaller(directory: dir.appending("p"))
        let first = try installer.install(dir.appending("assets.pack"))
        let inode = try FileManager.default.attributesOfItem(atPath: first.path.path)[.systemFileNumber] as? Int
        let second = try installer.install(dir.appending("assets.pack"))
        #expect(!second.copied)
        #expect(second.sha256 == first.sha256)
        #expect(try FileManager.default.attributesOfItem(atPath: second.path.path)[.systemFileNumber] as? Int == inode)
        // Same bytes, new mtime (e.g. an app update that re-bundled it): still no copy.
        try Data(testBytes(100_000)).write(to: dir.appending("assets.pack"))
        #expect(try !installer.install(dir.appending("assets.pack")).copied)
    }

    /// A record written before the installed head was recorded: the first install that finds
    /// the pack current checks its whole SHA-256 and records the head, so the next one reads 72
    /// KiB, not the whole pack (it read it all at every launch).
    @Test func aRecordWithoutTheInstalledHeadGetsItOnce() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": testBytes(300_000)])
        let installer = PrivateInstaller(directory: dir.appending("p"))
        try installer.install(dir.appending("assets.pack"))
        let recordURL = dir.appending("p/.assets.pack.install")
        var json = try JSONSerialization.jsonObject(with: Data(contentsOf: recordURL)) as! [String: Any]
        #expect(json["installedHead"] is String)
        json.removeValue(forKey: "installedHead")
        try JSONSerialization.data(withJSONObject: json).write(to: recordURL)
        #expect(!(try installer.install(dir.appending("assets.pack"))).copied)
        let after = try JSONSerialization.jsonObject(with: Data(contentsOf: recordURL)) as! [String: Any]
        #expect(after["installedHead"] is String, "the record got the installed head")
    }

    @Test func aNewVersionReplacesTheOldOne() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": testBytes(10_000, seed: 1)])
        let installer = PrivateInstaller(directory: dir.appending("p"))
        try installer.install(dir.appending("assets.pack"))
        try dir.write(["assets.pack": testBytes(12_000, seed: 2)])
        let result = try installer.install(dir.appending("assets.pack"))
        #expect(result.copied)
        #expect(try Data(contentsOf: result.path) == Data(testBytes(12_000, seed: 2)))
    }

    @Test func damagedInstalledCopyIsReplaced() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": testBytes(10_000)])
        let installer = PrivateInstaller(directory: dir.appending("p"))
        let first = try installer.install(dir.appending("assets.pack"))
        try Data(testBytes(500)).write(to: first.path)  // truncated by something outside our control
        #expect(try installer.install(dir.appending("assets.pack")).copied)
        #expect(try Data(contentsOf: first.path) == Data(testBytes(10_000)))
    }

    @Test func staleTemporariesAreCleanedAndPermissionsTightened() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": [1, 2, 3]])
        let target = dir.appending("p")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        chmod(target.path, 0o755)
        try Data([9]).write(to: target.appendingPathComponent(".assetpack-tmp-assets.pack-crashed"))
        try PrivateInstaller(directory: target).install(dir.appending("assets.pack"))
        #expect(mode(target.path) == 0o700)
        #expect(
            !FileManager.default.fileExists(
                atPath: target.appendingPathComponent(".assetpack-tmp-assets.pack-crashed").path))
    }

    @Test func concurrentInstallsDoNotCorrupt() throws {
        let dir = TemporaryDirectory()
        try dir.write(["assets.pack": testBytes(3_000_000)])
        let installer = PrivateInstaller(directory: dir.appending("p"))
        let failures = Counter()
        let copies = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                if try installer.install(dir.appending("assets.pack")).copied { copies.increment() }
            } catch { failures.increment() }
        }
        #expect(failures.value == 0)
        #expect(copies.value == 1)
        #expect(try Data(contentsOf: dir.appending("p/assets.pack")) == Data(testBytes(3_000_000)))
    }

    @Test func defaultDirectoryFollowsXDG() throws {
        #expect(
            try PrivateInstaller.defaultDirectory(appID: "com.example.game", environment: ["XDG_DATA_HOME": "/x/data"])
                .path
                == "/x/data/com.example.game")
        #expect(
            try PrivateInstaller.defaultDirectory(appID: "com.example.game", environment: ["HOME": "/home/u"]).path
                == "/home/u/.local/share/com.example.game")
        #expect(throws: AssetPackError.self) {
            try PrivateInstaller.defaultDirectory(appID: "../evil", environment: [:])
        }
    }

    /// Each platform's usual place (issue 38): every branch, whatever the host.
    @Test func defaultDirectoryIsEachPlatformsUsualPlace() throws {
        let env = ["XDG_DATA_HOME": "/x/data", "HOME": "/home/u"]
        let support = URL(fileURLWithPath: "/var/mobile/Containers/Data/Application/X/Library/Application Support")
        #expect(
            try PrivateInstaller.defaultDirectory(
                appID: "com.example.game", environment: env, platform: .apple(applicationSupport: support)
            ).path == support.path + "/com.example.game")
        #expect(
            try PrivateInstaller.defaultDirectory(appID: "com.example.game", environment: env, platform: .android).path
                == "/data/data/com.example.game/files")
        #expect(
            try PrivateInstaller.defaultDirectory(appID: "com.example.game", environment: env, platform: .xdg).path
                == "/x/data/com.example.game")
        for platform in [PrivateInstaller.Platform.android, .apple(applicationSupport: support), .xdg] {
            #expect(throws: AssetPackError.self) {
                try PrivateInstaller.defaultDirectory(appID: "..", environment: env, platform: platform)
            }
        }
        #if os(Linux)
        if case .xdg = PrivateInstaller.Platform.current {} else { Issue.record("Linux is an XDG platform") }
        #endif
    }
}

@Suite struct ExtractorTests {
    @Test(arguments: PackFormat.allCases)
    func extractsEverythingBelowTheDirectory(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let reader = try AssetPacks.open(
            BackendConformanceTests.makePack(format, tree, in: dir),
            credential: .password(BackendConformanceTests.password))
        let out = dir.appending("out")
        try Extractor(directory: out).extract(from: reader)
        for (path, bytes) in tree {
            #expect(try Data(contentsOf: out.appendingPathComponent(path)) == Data(bytes))
        }
    }

    @Test func refusesToWriteThroughASymlinkedDirectory() throws {
        let dir = TemporaryDirectory()
        let reader = try AssetPacks.open(
            BackendConformanceTests.makePack(.zip, ["a/b.txt": [1]], in: dir),
            credential: .password(BackendConformanceTests.password))
        let out = dir.appending("out")
        let elsewhere = dir.appending("elsewhere")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: out.appendingPathComponent("a"), withDestinationURL: elsewhere)
        #expect(throws: AssetPackError.self) { try Extractor(directory: out).extract(from: reader) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
    }
}

/// A different pack must never be taken for the installed one, even with equal size and mtime.
@Suite struct InstallerIdentityTests {
    /// Packs `files` into `dir/<name>/assets.pack` and pins its mtime to 2020-01-01, as reproducible builds do.
    static func pinnedPack(
        _ files: [String: [UInt8]], _ name: String, in dir: TemporaryDirectory, format: PackFormat,
        password: String = "pw", compression: CompressionPolicy = .auto
    ) throws -> URL {
        let source = try dir.write(files, under: "src-\(name)")
        var options = PackOptions.forTests
        options.format = format
        options.compression = compression
        options.credential = .password(password)
        let pack = dir.appending("\(name)/assets.pack")
        try FileManager.default.createDirectory(at: pack.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: pack, options: options)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_577_836_800)], ofItemAtPath: pack.path)
        return pack
    }

    static func assertReplaces(_ first: URL, _ second: URL, in dir: TemporaryDirectory) throws {
        let a = try FileManager.default.attributesOfItem(atPath: first.path)
        let b = try FileManager.default.attributesOfItem(atPath: second.path)
        try #require(a[.size] as? Int == b[.size] as? Int, "the repro needs two packs of one size")
        try #require(a[.modificationDate] as? Date == b[.modificationDate] as? Date)
        let installer = PrivateInstaller(directory: dir.appending("private"))
        #expect(try installer.install(first).copied)
        let result = try installer.install(second)
        #expect(result.copied)
        #expect(try Data(contentsOf: result.path) == Data(contentsOf: second))
        #expect(try !installer.install(second).copied)  // and an unchanged launch copies nothing
    }

    @Test(
        "two same-sized packs with equal mtimes: the second install replaces the first",
        arguments: [PackFormat.container, .zip])
    func sameSizeSameMtimeDifferentContent(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let r1 = try Self.pinnedPack(
            ["a.bin": testBytes(1024, seed: 1), "b.bin": testBytes(1024, seed: 2)], "r1", in: dir, format: format,
            compression: .store)
        // A second pack of the same size: a zip's manifest is always deflated, and zlib (the
        // portable build's) shortens it by a byte more or less depending on its digests, so
        // look for contents that give the same size (the first ones do with libdeflate).
        let size = { (url: URL) in try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int }
        var r2 = r1
        for seed in stride(from: UInt64(3), to: 60, by: 2) {
            r2 = try Self.pinnedPack(
                ["a.bin": testBytes(1024, seed: seed), "b.bin": testBytes(1024, seed: seed + 1)], "r2-\(seed)",
                in: dir, format: format, compression: .store)
            if try size(r2) == size(r1) { break }
        }
        try Self.assertReplaces(r1, r2, in: dir)
    }

    @Test("the same zip content under a new password is a different pack")
    func samePlaintextNewPassword() throws {
        let dir = TemporaryDirectory()
        let files = ["a.txt": textBytes(5_000), "b.bin": testBytes(3_000)]
        let old = try Self.pinnedPack(files, "old", in: dir, format: .zip, password: "old-secret")
        let new = try Self.pinnedPack(files, "new", in: dir, format: .zip, password: "new-secret")
        try Self.assertReplaces(old, new, in: dir)
    }
}
