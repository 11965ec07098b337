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

    @Test func aPathReadTwiceKeepsItsLastReadingAndOneKeptThenReadKeepsTheReading() throws {
        // Names whose UTF-8 interleaves ASCII and not: the file's order is by bytes.
        let names = ["b", "é", "z", "ä"]
        try dir.write(Dictionary(uniqueKeysWithValues: names.map { ("src/\($0).bin", Array($0.utf8)) }))
        func path(_ name: String) -> String { dir.appending("src/\(name).bin").path }
        func digest(_ name: String, _ round: UInt8) -> [UInt8] {
            Array(repeating: round, count: 32 - name.utf8.count) + Array(name.utf8)
        }
        let first = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        for name in names { first.remember(name, status: try FileSystem.stat(path(name)), sha256: digest(name, 1)) }
        first.save()
        let second = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        for name in names { #expect(second.digest(of: name, at: path(name)) == digest(name, 1), "\(name)") }
        // z kept, then read after all (no start over); é read twice; ä and b kept.
        for name in ["z", "ä", "b"] { second.kept(name) }
        second.remember("z", status: try FileSystem.stat(path("z")), sha256: digest("z", 2))
        second.remember("é", status: try FileSystem.stat(path("é")), sha256: digest("é", 2))
        second.remember("é", status: try FileSystem.stat(path("é")), sha256: digest("é", 3))
        second.save()
        let third = SourceStatusCache(folder: folder, output: output)
        #expect(third.digest(of: "z", at: path("z")) == digest("z", 2))
        #expect(third.digest(of: "é", at: path("é")) == digest("é", 3))
        #expect(third.digest(of: "ä", at: path("ä")) == digest("ä", 1))
        #expect(third.digest(of: "b", at: path("b")) == digest("b", 1))
    }

    /// A loaded cache holds its records in arrays of the size they need: estimated from the file's
    /// size, they grew by doubling when paths were short, and a million files' re-pack held 152 MB
    /// of records where 80 MB were used (heaptrack).
    @Test func aLoadedCacheReservesWhatItsRecordsNeed() throws {
        let file = try source()
        let status = try FileSystem.stat(file.path)
        let cache = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        let count = 20_000
        for i in 0..<count { cache.remember(String(format: "f%06d", i), status: status, sha256: digest) }
        cache.save()
        let loaded = SourceStatusCache(folder: folder, output: output)
        #expect(loaded.digest(of: "f000123", at: file.path) == digest)
        let remembered = loaded.remembered
        #expect(remembered.records.count == count && remembered.ends.count == count)
        for capacity in [remembered.records.capacity, remembered.ends.capacity] {
            #expect(capacity <= count + count / 64, "capacity \(capacity) for \(count) records")
        }
        #expect(remembered.paths.capacity <= 7 * count + 7 * count / 64, "\(remembered.paths.capacity) path bytes")
    }

    @Test func aCacheFileWhoseRecordsAreNotSortedIsNoCache() throws {
        try dir.write(["src/a.bin": [1], "src/b.bin": [2]])
        let cache = SourceStatusCache(folder: folder, output: output, racyMargin: 0)
        for name in ["a", "b"] {
            cache.remember(name, status: try FileSystem.stat(dir.appending("src/\(name).bin").path), sha256: digest)
        }
        cache.save()
        #expect(
            SourceStatusCache(folder: folder, output: output).digest(of: "a", at: dir.appending("src/a.bin").path)
                == digest)
        // Swap the two records' one-byte names: the file is then b before a.
        var bytes = [UInt8](try Data(contentsOf: cache.file))
        func names(_ c: Character) -> [Int] {  // a one-byte name: u32 length 1, then the byte
            bytes.indices.filter {
                $0 >= 4 && bytes[$0] == c.asciiValue! && bytes[($0 - 4)..<$0].elementsEqual([1, 0, 0, 0])
            }
        }
        let (a, b) = (names("a"), names("b"))
        #expect(a.count == 1 && b.count == 1)
        bytes[a[0]] = UInt8(ascii: "b")
        bytes[b[0]] = UInt8(ascii: "a")
        try Data(bytes).write(to: cache.file)
        #expect(
            SourceStatusCache(folder: folder, output: output).digest(of: "a", at: dir.appending("src/a.bin").path)
                == nil)
        #expect(
            SourceStatusCache(folder: folder, output: output).digest(of: "b", at: dir.appending("src/b.bin").path)
                == nil)
    }
}
