import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackCore

/// ``SourceStatusCache`` on its own (docs/INCREMENTAL.md, "Skipping unchanged sources"): what it
/// remembers and loads back, the racy margin, and every field of a status counting.
@Suite struct SourceStatusCacheTests {
    let dir = TemporaryDirectory("status-cache")
    var folder: URL { dir.appending("cache") }
    var output: String { dir.appending("p.apack").path }
    let digest = Array(repeating: UInt8(0xAB), count: 32)

    /// Remembers `file` as it is now (margin 0), saves, and returns a fresh load of the cache.
    func rememberNow(_ file: URL) throws -> SourceStatusCache {
        let cache = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        cache.remember("a.bin", status: try FileSystem.stat(file.path), sha256: digest)
        cache.save()
        return SourceStatusCache(folder: folder, output: output)
    }

    func source() throws -> URL {
        try dir.write(["src/a.bin": Array("some bytes".utf8)])
        return dir.appending("src/a.bin")
    }

    @Test func aFileIsRememberedOnlyWhenItsTimesAreOlderThanThePacksStartByTheMargin() throws {
        let file = try source()
        let status = try FileSystem.stat(file.path)
        // Written a moment ago: inside a margin of an hour, so not remembered.
        let racy = SourceStatusCache(folder: folder, output: output, racyMargin: 3_600_000_000_000)
        racy.remember("a.bin", status: status, sha256: digest)
        racy.save()
        #expect(SourceStatusCache(folder: folder, output: output).digest(of: "a.bin", at: file.path) == nil)
        // Outside a margin of 0: remembered, saved and loaded back.
        let loaded = try rememberNow(file)
        #expect(loaded.digest(of: "a.bin", at: file.path) == digest)
        #expect(loaded.digest(of: "other", at: file.path) == nil)
        // Another output's cache is another file.
        #expect(SourceStatusCache(folder: folder, output: output + ".2").digest(of: "a.bin", at: file.path) == nil)
        // Not kept unread: the next pack does not remember it.
        loaded.save()
        #expect(SourceStatusCache(folder: folder, output: output).digest(of: "a.bin", at: file.path) == nil)
    }

    @Test func aChangedStatusIsNotTheRememberedOne() throws {
        let file = try source()
        #expect(try rememberNow(file).digest(of: "a.bin", at: file.path) == digest)
        // Only the change time moves (a chmod to the same mode), after a clock tick.
        Thread.sleep(forTimeInterval: 0.05)
        #expect(chmod(file.path, 0o644) == 0)
        #expect(SourceStatusCache(folder: folder, output: output).digest(of: "a.bin", at: file.path) == nil)
        // A file renamed over it (another inode) is not it either.
        #expect(try rememberNow(file).digest(of: "a.bin", at: file.path) == digest)
        try dir.write(["src/b.bin": Array("some bytes".utf8)])
        #expect(rename(dir.appending("src/b.bin").path, file.path) == 0)
        #expect(SourceStatusCache(folder: folder, output: output).digest(of: "a.bin", at: file.path) == nil)
    }

    @Test func aDamagedCacheIsNoCache() throws {
        let file = try source()
        let cache = try rememberNow(file)
        var bytes = [UInt8](try Data(contentsOf: cache.file))
        bytes.removeLast(5)  // a record cut short
        try Data(bytes).write(to: cache.file)
        #expect(SourceStatusCache(folder: folder, output: output).digest(of: "a.bin", at: file.path) == nil)
        #expect(try FileSystem.stat(cache.file.path).permissions == 0o600)
    }

    @Test func aPackThatKeepsSomeFilesAndReadsOthersRemembersEachOnceTheLastReadingWinning() throws {
        let names = ["a", "b", "c", "d", "e", "f"]
        try dir.write(Dictionary(uniqueKeysWithValues: names.map { ("src/\($0).bin", Array($0.utf8)) }))
        func path(_ name: String) -> String { dir.appending("src/\(name).bin").path }
        func digest(_ name: String, _ round: UInt8) -> [UInt8] { Array(repeating: round, count: 31) + Array(name.utf8) }
        let first = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        for name in ["b", "d", "f"] {
            first.remember(name, status: try FileSystem.stat(path(name)), sha256: digest(name, 1))
        }
        first.save()
        // The next pack keeps d and f unread, reads a, e and c (not in path order), and reads f
        // again after starting over once (what it kept before is forgotten, what it read is not).
        let second = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        for name in ["d", "f"] {
            #expect(second.digest(of: name, at: path(name)) == digest(name, 1))
            second.kept(name)
        }
        second.remember("e", status: try FileSystem.stat(path("e")), sha256: digest("e", 2))
        second.startOver()
        #expect(second.skipped == 0)
        second.kept("d")
        for name in ["a", "c", "f"] {
            second.remember(name, status: try FileSystem.stat(path(name)), sha256: digest(name, 2))
        }
        #expect(second.skipped == 1)
        second.save()
        let third = SourceStatusCache(folder: folder, output: output)
        for name in ["a", "c", "e", "f"] {
            #expect(third.digest(of: name, at: path(name)) == digest(name, 2), "\(name)")
        }
        #expect(third.digest(of: "d", at: path("d")) == digest("d", 1))
        #expect(third.digest(of: "b", at: path("b")) == nil)  // neither kept nor read
    }
}
