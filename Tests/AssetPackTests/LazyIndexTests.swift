import AssetPack
import AssetPackCore
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Synchronization
import Testing

/// A version-8 container's index table is opened a segment at a time, as reads reach it
/// (docs/FORMAT.md, "Version 8"): the open reads the head's segment, a read the segments its
/// lookup reads, `checkIndex` all of them; a damaged segment fails what reaches it (never as an
/// entry that is not there) and nothing else.
@Suite struct LazyIndexTests {
    let dir = TemporaryDirectory("lazy-index")

    /// A local file that counts the bytes read from it.
    final class CountingSource: ByteSource {
        let file: FileByteSource
        let bytes = Atomic<Int>(0)
        init(_ path: String) throws { file = try FileByteSource(path: path) }
        var size: UInt64 { file.size }
        var name: String { file.name }
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
            let n = try file.read(into: buffer, at: offset)
            bytes.add(n, ordering: .relaxed)
            return n
        }
        func retain(_ span: Range<UInt64>) throws {}
        func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T { try body() }
        var read: Int { bytes.load(ordering: .relaxed) }
    }

    /// The 2.6 MB table of three segments: opening reads the first (and the header), reading an
    /// entry whose path lies there reads no other, one whose path lies in the last reads that
    /// one too, and `checkIndex` reads the rest. Opened whole, the open read all of it.
    @Test func theOpenReadsTheHeadsSegmentAndAReadTheOnesItReaches() throws {
        let url = try dir.pack(LargeIndexPack.files, .container, as: "big.apack")
        let segment = 1 << 20
        let source = try CountingSource(url.path)
        let reader = try AssetPacks.open(source, credential: .password("pw"))
        let opened = source.read
        #expect(opened > segment && opened < segment + segment / 4, "\(opened) bytes read to open")
        #expect(reader.entries.count == LargeIndexPack.count)
        #expect(try reader.read(LargeIndexPack.path(0)) == LargeIndexPack.content(0))
        #expect(source.read - opened < 4096, "\(source.read - opened) bytes read for the first entry")
        let last = LargeIndexPack.count - 1
        #expect(try reader.read(LargeIndexPack.path(last)) == LargeIndexPack.content(last))
        let two = source.read
        #expect(two - opened > 100_000 && two < 2 * segment, "\(two - opened) bytes read for the last entry")
        try reader.checkIndex()
        #expect(source.read - two > segment / 2, "\(source.read - two) bytes read to check the index")
    }

    @Test func aDamagedSegmentFailsTheReadsThatReachItAndNoOther() throws {
        let url = try dir.pack(LargeIndexPack.files, .container, as: "big.apack")
        try LargeIndexPack.damageLastIndexSegment(of: url)
        let reader = try AssetPacks.open(url.path, credential: .password("pw"))
        #expect(try reader.read(LargeIndexPack.path(0)) == LargeIndexPack.content(0))
        let last = LargeIndexPack.path(LargeIndexPack.count - 1)
        for failing in [{ _ = try reader.read(last) }, { _ = try reader.lookup(last) }, { try reader.checkIndex() }] {
            let error = #expect(throws: AssetPackError.self) { try failing() }
            #expect(error?.code == .integrityFailure, "\(String(describing: error))")
            #expect(error?.message.contains("container index failed authentication") == true)
        }
        #expect(reader.entry(last) == nil && !reader.contains(last))
    }

    /// Eight threads read entries across all three segments of one reader just opened, each
    /// segment reached by several of them at once: every read returns its entry's bytes (a
    /// segment is opened by one thread while the others wait, and read by all once it is ready).
    @Test func readsFromManyThreadsOpenEachSegmentOnce() throws {
        let url = try dir.pack(LargeIndexPack.files, .container, as: "big.apack")
        for _ in 0..<3 {
            let source = try CountingSource(url.path)
            let reader = try AssetPacks.open(source, credential: .password("pw"))
            let wrong = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for i in stride(from: LargeIndexPack.count - 1 - thread, through: 0, by: -37) {
                    if (try? reader.read(LargeIndexPack.path(i))) != LargeIndexPack.content(i) {
                        wrong.add(1, ordering: .relaxed)
                    }
                }
            }
            #expect(wrong.load(ordering: .relaxed) == 0)
            // Every segment read from the file once: the table's bytes and a little more.
            #expect(source.read < 2_650_000, "\(source.read) bytes read")  // the 2.55 MB table once
        }
    }

    /// A segment that failed its tag fails every later read that reaches it at once: it is not
    /// read and decrypted again (a listing of a damaged pack would otherwise decrypt it per entry).
    @Test func aFailedSegmentIsNotReadAgain() throws {
        let url = try dir.pack(LargeIndexPack.files, .container, as: "big.apack")
        try LargeIndexPack.damageLastIndexSegment(of: url)
        let source = try CountingSource(url.path)
        let reader = try AssetPacks.open(source, credential: .password("pw"))
        let last = LargeIndexPack.path(LargeIndexPack.count - 1)
        #expect(throws: AssetPackError.self) { try reader.read(last) }
        let after = source.read
        for _ in 0..<3 { #expect(throws: AssetPackError.self) { try reader.read(last) } }
        #expect(source.read == after, "\(source.read - after) bytes read again")
    }

    /// With trusted keys the whole index is opened at open, right after the signature was checked
    /// over it: no segment is read from the file later, where it could have been sealed anew.
    @Test func aTrustedOpenOpensTheWholeIndex() throws {
        let signing = PublisherSigningKey.generate()
        let url = try dir.pack(LargeIndexPack.files, .container, as: "signed.apack", signedBy: signing)
        let untrusted = try CountingSource(url.path)
        _ = try AssetPacks.open(untrusted, credential: .password("pw"))
        let trusted = try CountingSource(url.path)
        let reader = try AssetPacks.open(trusted, credential: .password("pw"), trustedKeys: [signing.publicKey])
        #expect(trusted.read > untrusted.read + (1 << 20), "\(trusted.read) against \(untrusted.read)")
        let opened = trusted.read
        #expect(
            try reader.read(LargeIndexPack.path(LargeIndexPack.count - 1))
                == LargeIndexPack.content(LargeIndexPack.count - 1))
        #expect(trusted.read - opened < 4096, "\(trusted.read - opened) bytes read for the last entry")
    }

    /// `AssetLibrary.loadIndex()` leaves the library holding its whole index: the file's index
    /// region zeroed after it (as an update in place zeroes the previous version's), every entry
    /// still reads; a library that did not call it fails the lookups that need what is gone.
    @Test func aLibraryThatLoadedItsIndexNoLongerReadsItFromTheFile() throws {
        let url = try dir.pack(LargeIndexPack.files, .container, as: "big.apack")
        let held = try AssetLibrary(contentsOf: url, credential: .password("pw"))
        try held.loadIndex()
        let lazy = try AssetLibrary(contentsOf: url, credential: .password("pw"))
        let base = try dir.pack(["base.txt": Array("base\n".utf8)], .container, as: "base.apack")
        let set = try AssetLibrary(contentsOf: [base, url], credentials: [.password("pw")])
        try set.loadIndex()  // every pack's
        var bytes = [UInt8](try Data(contentsOf: url))
        let end = bytes.count - (32 * 2 * LargeIndexPack.count + 16) - 16
        for i in end - 400_000..<end { bytes[i] = 0 }  // the table's last segment, in the file
        let handle = try FileHandle(forWritingTo: url)  // the same file, as an update in place writes it
        try handle.write(contentsOf: bytes)
        try handle.close()
        let last = LargeIndexPack.path(LargeIndexPack.count - 1)
        #expect(try held.read(last) == LargeIndexPack.content(LargeIndexPack.count - 1))
        #expect(try set.read(last) == LargeIndexPack.content(LargeIndexPack.count - 1))
        #expect(throws: AssetPackError.self) { try lazy.read(last) }
    }

    /// In a set, a top pack that cannot read the segment its lookup of a path reaches stops the
    /// lookup: the base's older entry at that path is not served in its place.
    @Test func aSetDoesNotServeALowerPackWhenTheTopCannotReadItsIndex() throws {
        let last = LargeIndexPack.path(LargeIndexPack.count - 1)
        let base = try dir.pack([last: Array("old\n".utf8)], .container, as: "base.apack")
        let top = try dir.pack(LargeIndexPack.files, .container, as: "top.apack")
        try LargeIndexPack.damageLastIndexSegment(of: top)
        let set = try PackSet(opening: [base.path, top.path], credentials: [.password("pw")])
        #expect(try set.read(LargeIndexPack.path(0)) == LargeIndexPack.content(0))
        for failing in [{ _ = try set.read(last) }, { _ = try set.lookup(last) }] {
            let error = #expect(throws: AssetPackError.self) { try failing() }
            #expect(error?.code == .integrityFailure && error?.pack == top.path, "\(String(describing: error))")
        }
        #expect(set.entry(last) == nil && set.member(serving: last) == nil)
    }
}
