import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// ``ContainerKeyPrefetch``: a re-pack derives the previous pack's key while it scans its sources
/// (docs/INCREMENTAL.md, "Cost"). The first open of that pack with that password takes the key;
/// nothing else does, and nothing is derived ahead that an open would refuse to derive.
@Suite struct ContainerKeyPrefetchTests {
    static func packed(_ password: String = "right") throws -> IncrementalTests.Tree {
        let tree = try IncrementalTests.Tree(["a.txt": Array("abc".utf8)])
        try tree.pack(credential: .password(password))
        return tree
    }

    @Test func theFirstOpenWithThePasswordTakesTheKeyAndLaterOnesDeriveTheirOwn() throws {
        let tree = try Self.packed()
        let prefetch = try #require(
            ContainerKeyPrefetch.start(output: tree.output, credential: .password("right"), limits: .default))
        defer { prefetch.finish() }
        #expect(try tree.reader(.password("right")).read("a.txt") == Array("abc".utf8))
        #expect(prefetch.wasTaken)
        // Taken once: the next open derives, and gets the same key (it reads).
        #expect(try tree.reader(.password("right")).read("a.txt") == Array("abc".utf8))
    }

    @Test func aPrefetchForAnotherPasswordIsNotTakenAndAWithdrawnOneIsNot() throws {
        let tree = try Self.packed()
        let other = try #require(
            ContainerKeyPrefetch.start(output: tree.output, credential: .password("wrong"), limits: .default))
        #expect(try tree.reader(.password("right")).read("a.txt") == Array("abc".utf8))
        #expect(!other.wasTaken)
        other.finish()
        // Its own password's open would take it, had it not been withdrawn.
        let withdrawn = try #require(
            ContainerKeyPrefetch.start(output: tree.output, credential: .password("right"), limits: .default))
        withdrawn.finish()
        #expect(try tree.reader(.password("right")).read("a.txt") == Array("abc".utf8))
        #expect(!withdrawn.wasTaken)
        // The wrong password still fails as one, prefetched or not.
        let wrong = try #require(
            ContainerKeyPrefetch.start(output: tree.output, credential: .password("wrong"), limits: .default))
        defer { wrong.finish() }
        let error = #expect(throws: AssetPackError.self) { try tree.reader(.password("wrong")) }
        #expect(error?.code == .wrongPassword && wrong.wasTaken)
    }

    @Test func nothingIsDerivedAheadWithoutAPasswordAPackOrParametersTheLimitsAllow() throws {
        let tree = try Self.packed()
        var tight = ReadLimits.default
        tight.maxKDFMemory = 1 << 20  // below scrypt N = 2^10, r = 8's ~1 MiB and a margin
        #expect(ContainerKeyPrefetch.start(output: tree.output, credential: .password("right"), limits: tight) == nil)
        #expect(ContainerKeyPrefetch.start(output: tree.output, credential: testKey, limits: .default) == nil)
        #expect(
            ContainerKeyPrefetch.start(output: tree.output + ".none", credential: .password("right"), limits: .default)
                == nil)
        let keyed = try IncrementalTests.Tree(["a.txt": [1]])
        try keyed.pack()
        #expect(
            ContainerKeyPrefetch.start(output: keyed.output, credential: .password("right"), limits: .default) == nil)
    }
}
