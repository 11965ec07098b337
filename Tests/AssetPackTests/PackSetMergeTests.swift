import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `PackSet`'s merged index against a plain model of the rules (the one-pass, bottom-first
/// dictionary walk the set was first built with), over many seeded random sets of in-memory
/// packs: which entries the set lists and in what order, which pack serves each path (in any
/// Unicode form), and which error a bad set gets (the first one a bottom-first walk meets).
@Suite struct PackSetMergeTests {
    /// A pack that is only a listing: its reads return `"<name>:<stored path>"`.
    final class ListedPack: PackReader {
        let name: String
        let format = PackFormat.container
        let entries: EntryList
        let deletedPaths: [String]
        let openSeconds = 0.0
        var publisher: PublisherKey? { nil }
        /// Path → entry, keyed by `String` (canonical equivalence), as a reader's index is.
        private let index: [String: EntryInfo]

        init(_ name: String, paths: [String], deleting: [String]) {
            self.name = name
            let list = Self.sorted(paths).map {
                EntryInfo(path: $0, size: 1, storedSize: 1, compression: .store, encryption: .none, crc32: nil)
            }
            entries = EntryList(list)
            index = Dictionary(list.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
            deletedPaths = Self.sorted(deleting)
        }

        /// Sorted by UTF-8 bytes, byte-equal repeats dropped (as a pack's index is).
        static func sorted(_ paths: [String]) -> [String] {
            var out: [String] = []
            for path in paths.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            where out.last.map({ !$0.utf8.elementsEqual(path.utf8) }) ?? true {
                out.append(path)
            }
            return out
        }

        func stored(_ path: String) throws -> String {
            guard let e = entry(path) else { throw AssetPackError(.entryNotFound, "no such entry", path: path) }
            return e.path
        }
        /// As a reader looks up: the path as given, then normalised.
        func entry(_ path: String) -> EntryInfo? { index[path] ?? index[EntryPath.normalize(path)] }
        func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
            (Array("\(name):\(try stored(path))".utf8), EntryTiming(path: path))
        }
        func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
            let (bytes, timing) = try readTimed(path)
            try bytes.withUnsafeBytes(body)
            return timing
        }
        func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
            try readTimed(path).timing
        }
        func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
            _ = try stored(path)
        }
    }

    /// The rules, written the simplest way: walk the packs bottom first through one dictionary
    /// keyed by `String` (whose equality is canonical equivalence); a pack's deletions, then its
    /// entries. The first rule broken is the error.
    struct Model {
        struct Slot {
            var member: Int
            var path: String
            var deleted: Bool
        }
        var entries: [(path: String, pack: String)] = []
        var index: [String: Slot] = [:]
        var error: String?

        init(_ packs: [ListedPack]) {
            var slots: [String: Slot] = [:]
            func sameBytes(_ path: String, _ slot: Slot, _ member: Int) -> Bool {
                guard slot.path.utf8.elementsEqual(path.utf8) else {
                    error =
                        "\(packs[slot.member].name) and \(packs[member].name) hold \(EntryPath.printable(path)) in different Unicode forms"
                    return false
                }
                return true
            }
            for (m, pack) in packs.enumerated() {
                for path in pack.deletedPaths {
                    guard let slot = slots[path] else {
                        error = "\(pack.name) deletes \(EntryPath.printable(path)), which no pack below it has"
                        return
                    }
                    guard sameBytes(path, slot, m) else { return }
                    slots[path]!.deleted = true
                }
                for entry in pack.entries {
                    if let slot = slots[entry.path], !sameBytes(entry.path, slot, m) { return }
                    slots[entry.path] = Slot(member: m, path: entry.path, deleted: false)
                }
            }
            index = slots
            entries = slots.values.filter { !$0.deleted }.map { ($0.path, packs[$0.member].name) }
                .sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        }

        /// The slot serving `path` (as the set looks it up: as given, then normalised).
        func resolve(_ path: String) -> Slot? {
            let slot = index[path] ?? index[EntryPath.normalize(path)]
            return slot.flatMap { $0.deleted ? nil : $0 }
        }
    }

    /// One path in several spellings: ASCII, NFC and NFD, the Kelvin sign (NFC: `K`), the
    /// Ångström sign (NFC: `Å`), and paths that share prefixes with all of them.
    static let spellings: [[String]] = [
        ["a.txt"], ["b/c.txt"], ["b/d.txt"], ["b.txt"], ["ba"], ["z"], ["shared/1.bin"], ["shared/10.bin"],
        ["caf\u{E9}.txt", "cafe\u{301}.txt"], ["K.png", "\u{212A}.png"], ["\u{C5}", "\u{212B}", "A\u{30A}"],
        ["d/\u{E9}", "d/e\u{301}"], ["d/e"], ["\u{65E5}\u{672C}/\u{8A9E}.txt"], ["x\u{1F600}"], ["k.png"],
        // Past 16 bytes, sharing the first 16 (the merge compares those as integers first).
        ["levels/world-01/a.json"], ["levels/world-01/b.json"], ["levels/world-01/a.json.bak"],
        ["levels/world-01/"], ["levels/world-01"], ["levels/world-0"],
        ["levels/world-01/caf\u{E9}", "levels/world-01/cafe\u{301}"],
    ]

    static func randomSet(seed: UInt64) -> [ListedPack] {
        var rng = Generator(seed: seed)
        let count = 1 + Int(rng.next() % 5)
        let odd = rng.next() % 4 == 0  // other spellings in this set
        var packs: [ListedPack] = []
        var below: [String] = []
        for i in 0..<count {
            func spelling(_ forms: [String]) -> String {
                odd ? forms[Int(rng.next() % UInt64(forms.count))] : forms[0]
            }
            var paths: [String] = []
            for forms in spellings where rng.next() % 3 == 0 { paths.append(spelling(forms)) }
            if odd && rng.next() % 8 == 0, let forms = spellings.filter({ $0.count > 1 }).randomElement(using: &rng) {
                paths += forms  // one pack holding one path in two forms
            }
            var deleting: [String] = []
            for path in below where rng.next() % 4 == 0 { deleting.append(path) }
            if rng.next() % 10 == 0 { deleting.append(spelling(spellings.randomElement(using: &rng)!)) }
            below += paths
            packs.append(ListedPack("p\(i)", paths: paths, deleting: deleting))
        }
        return packs
    }

    @Test(.slow, arguments: 0..<40) func theMergedIndexFollowsTheRules(batch: Int) throws {
        var errors = 0
        var formErrors = 0
        var deletions = 0
        var otherForms = 0
        for seed in (0..<100).map({ UInt64(batch * 100 + $0) }) {
            let packs = Self.randomSet(seed: seed)
            let model = Model(packs)
            let members = packs.map { PackSet.Member(name: $0.name, reader: $0) }
            guard model.error == nil else {
                errors += 1
                if model.error?.contains("Unicode forms") == true { formErrors += 1 }
                let error = #expect(throws: AssetPackError.self, "seed \(seed)") { try PackSet(members).checkIndex() }
                #expect(error?.code == .integrityFailure, "seed \(seed)")
                #expect(error?.message == model.error, "seed \(seed)")
                continue
            }
            let set = try PackSet(members)
            try set.checkIndex()
            #expect(
                set.entries.map { Array($0.path.utf8) } == model.entries.map { Array($0.path.utf8) }, "seed \(seed)")
            #expect(set.entries.map(\.pack) == model.entries.map(\.pack), "seed \(seed)")
            deletions += packs.reduce(0) { $0 + $1.deletedPaths.count }
            otherForms += set.entries.filter { !$0.path.utf8.allSatisfy { $0 < 0x80 } }.count
            for path in Self.spellings.joined() + ["c.txt", "b/", "b", "/a.txt", "b//c.txt"] {
                let expected = model.resolve(path)
                let entry = set.entry(path)
                #expect(
                    entry.map { Array($0.path.utf8) } == expected.map { Array($0.path.utf8) }, "seed \(seed) \(path)")
                #expect(entry?.pack == expected.map { packs[$0.member].name }, "seed \(seed) \(path)")
                #expect(set.member(serving: path)?.name == expected.map { packs[$0.member].name }, "seed \(seed)")
                if let expected {
                    #expect(
                        try set.read(path) == Array("\(packs[expected.member].name):\(expected.path)".utf8),
                        "seed \(seed) \(path)")
                } else {
                    let error = #expect(throws: AssetPackError.self) { try set.read(path) }
                    #expect(error?.code == .entryNotFound, "seed \(seed) \(path)")
                }
            }
        }
        // The random sets exercise both outcomes, both errors, deletions and non-ASCII paths.
        #expect(errors > 0 && errors < 100 && deletions > 0, "\(errors) of 100 sets refused, \(deletions) deletions")
        #expect(formErrors > 0 && formErrors < errors, "\(formErrors) of \(errors) errors about Unicode forms")
        #expect(otherForms > 0)
    }

    /// A sorted list's order is the contract of `PackReader.entries`; a reader that breaks it
    /// still gets a correct set.
    @Test func aReaderWhoseEntriesAreNotSortedStillMergesCorrectly() throws {
        final class Unsorted: PackReader {
            let format = PackFormat.container
            let entries = EntryList(
                ["b", "a", "c"].map {
                    EntryInfo(path: $0, size: 1, storedSize: 1, compression: .store, encryption: .none, crc32: nil)
                })
            let openSeconds = 0.0
            var publisher: PublisherKey? { nil }
            func entry(_ path: String) -> EntryInfo? { entries.first { $0.path == path } }
            func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
                (Array(path.utf8), EntryTiming(path: path))
            }
            func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
                EntryTiming(path: path)
            }
            func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
                EntryTiming(path: path)
            }
            func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {}
        }
        let base = ListedPack("base", paths: ["a", "b", "d"], deleting: [])
        let set = try PackSet([.init(name: "base", reader: base), .init(name: "top", reader: Unsorted())])
        #expect(set.entries.map(\.path) == ["a", "b", "c", "d"])
        #expect(set.entries.map(\.pack) == ["top", "top", "top", "base"])
    }

    /// SplitMix64, local to the test.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
