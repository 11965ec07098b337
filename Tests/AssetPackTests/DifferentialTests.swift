import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Differential, property-based: pack a seeded tree (entry sizes on and around every boundary a
/// reader or writer uses, text and random content, non-ASCII nested names) in every format ×
/// encryption/chunk size × compression, then read every entry through every library read path and
/// compare with the source bytes, its CRC-32 and the entry's `EntryInfo`.
///
/// Seeds: `DifferentialSeeds` (`ASSETPACK_SEED=N` to reproduce one, `ASSETPACK_SOAK_SEEDS=K`, `make soak`).
@Suite(.slow) struct DifferentialTests {
    static let password = "differential pässword"

    struct Case: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var combination: PackCombination
        var testDescription: String { "seed \(seed) \(combination)" }
    }

    static var cases: [Case] {
        DifferentialSeeds.current.flatMap { seed in PackCombination.all.map { Case(seed: seed, combination: $0) } }
    }

    /// Records failures with everything needed to reproduce them.
    struct Context {
        var seed: UInt64
        var combination: PackCombination

        func describe(_ entry: GeneratedEntry?, _ readPath: String) -> String {
            let what = entry.map { "entry \"\($0.path)\" size \($0.bytes.count) (\($0.kind.rawValue))" } ?? "pack"
            return "seed \(seed), \(combination), \(what), read path \(readPath) — "
                + DifferentialSeeds.reproduce(seed, filter: "DifferentialTests")
        }

        func fail(
            _ entry: GeneratedEntry?, _ readPath: String, _ problem: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            Issue.record("\(problem) | \(describe(entry, readPath))", sourceLocation: sourceLocation)
        }

        /// Compares `got` with the entry's bytes; records a failure naming the read path.
        func compare(
            _ got: UnsafeRawBufferPointer, _ entry: GeneratedEntry, _ readPath: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            if let difference = byteDifference(got, entry.bytes) {
                fail(entry, readPath, "wrong bytes: \(difference)", sourceLocation: sourceLocation)
            } else if CRC32.checksum(got) != entry.crc32 {
                fail(
                    entry, readPath, "CRC-32 of the bytes read differs from the source's",
                    sourceLocation: sourceLocation)
            }
        }

        func compare(
            _ got: [UInt8], _ entry: GeneratedEntry, _ readPath: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            got.withUnsafeBytes { compare($0, entry, readPath, sourceLocation: sourceLocation) }
        }

        func compare(
            _ got: Data, _ entry: GeneratedEntry, _ readPath: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            got.withUnsafeBytes { compare($0, entry, readPath, sourceLocation: sourceLocation) }
        }

        /// Runs one read; a thrown error is a failure of that read path (the others still run).
        func attempt(
            _ entry: GeneratedEntry?, _ readPath: String, sourceLocation: SourceLocation = #_sourceLocation,
            _ body: () throws -> Void
        ) {
            do { try body() } catch { fail(entry, readPath, "threw: \(error)", sourceLocation: sourceLocation) }
        }

        func attemptAsync(
            _ entry: GeneratedEntry?, _ readPath: String, sourceLocation: SourceLocation = #_sourceLocation,
            _ body: () async throws -> Void
        ) async {
            do { try await body() } catch { fail(entry, readPath, "threw: \(error)", sourceLocation: sourceLocation) }
        }
    }

    /// Writes the seed's tree and packs it with `combination`.
    static func makePack(_ tree: GeneratedTree, _ combination: PackCombination, in dir: TemporaryDirectory) throws
        -> URL
    {
        let source = try dir.write(tree.files, under: "src")
        let output = dir.appending(combination.format == .zip ? "pack.zip" : "pack.apack")
        try AssetPacks.pack(source: source, to: output, options: combination.options(password: password))
        return output
    }

    @Test("every library read path returns the source bytes", arguments: cases)
    func everyReadPathReturnsTheSource(_ c: Case) async throws {
        let tree = TreeGenerator.tree(seed: c.seed).tested(with: c.combination)
        let ctx = Context(seed: c.seed, combination: c.combination)
        let dir = TemporaryDirectory("assetpack-differential")
        let pack: URL
        do { pack = try Self.makePack(tree, c.combination, in: dir) } catch {
            ctx.fail(nil, "AssetPacks.pack", "packing threw: \(error)")
            return
        }
        let credential: PackCredential? = c.combination.encrypted ? .password(Self.password) : nil
        let reader: any PackReader
        let library: AssetLibrary
        do {
            reader = try AssetPacks.open(pack.path, credential: credential)
            library = try AssetLibrary(contentsOf: pack, credential: credential)
        } catch {
            ctx.fail(nil, "AssetPacks.open / AssetLibrary(contentsOf:)", "opening threw: \(error)")
            return
        }
        #expect(reader.format == c.combination.format, "\(ctx.describe(nil, "format"))")
        Self.checkEntries(reader, tree, ctx)
        Self.readEverythingSynchronously(reader, library, tree, ctx)
        await Self.readEverythingAsynchronously(library, tree, ctx)
        if let container = reader as? ContainerPackReader {
            Self.readRanges(container, tree, ctx)
        } else if c.combination.format == .container {
            ctx.fail(nil, "readRange", "a container pack did not open as a ContainerPackReader")
        }
    }

    /// The entry list: exactly the source paths, sorted by UTF-8 bytes, with the right size and CRC-32.
    static func checkEntries(_ reader: any PackReader, _ tree: GeneratedTree, _ ctx: Context) {
        let expectedPaths = tree.entries.map(\.path).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let paths = reader.entries.map(\.path)
        if paths != expectedPaths {
            let missing = Set(expectedPaths).subtracting(paths).sorted()
            let extra = Set(paths).subtracting(expectedPaths).sorted()
            let sorted = paths == paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            ctx.fail(
                nil, "entries",
                "entry list differs: missing \(missing), extra \(extra), \(sorted ? "sorted" : "not sorted")")
        }
        for entry in tree.entries {
            guard let info = reader.entry(entry.path) else {
                ctx.fail(entry, "entry(_:)", "no entry at this path")
                continue
            }
            if info.path != entry.path { ctx.fail(entry, "entry(_:)", "EntryInfo.path is \"\(info.path)\"") }
            if info.size != UInt64(entry.bytes.count) { ctx.fail(entry, "entry(_:)", "EntryInfo.size is \(info.size)") }
            if let crc = info.crc32 {
                if crc != entry.crc32 {
                    ctx.fail(
                        entry, "entry(_:)",
                        "EntryInfo.crc32 is \(String(crc, radix: 16)), source's is \(String(entry.crc32, radix: 16))")
                }
            } else if !(ctx.combination.format == .zip && ctx.combination.encryption == .aes256) {
                // Only WinZip AE-2 entries may leave the CRC out (the MAC covers them).
                ctx.fail(entry, "entry(_:)", "EntryInfo.crc32 is nil")
            }
            // Lookup normalises: the NFD spelling finds the same entry.
            let nfd = entry.path.decomposedStringWithCanonicalMapping
            if nfd != entry.path, reader.entry(nfd) != info {
                ctx.fail(entry, "entry(_:) by NFD path", "the NFD spelling did not find the same entry")
            }
        }
    }

    static func readEverythingSynchronously(
        _ reader: any PackReader, _ library: AssetLibrary, _ tree: GeneratedTree, _ ctx: Context
    ) {
        for entry in tree.entries {
            let p = entry.path
            ctx.attempt(entry, "PackReader.readTimed") {
                let (bytes, timing) = try reader.readTimed(p)
                ctx.compare(bytes, entry, "PackReader.readTimed")
                if timing.bytesOut != UInt64(entry.bytes.count) {
                    ctx.fail(entry, "PackReader.readTimed", "timing.bytesOut is \(timing.bytesOut)")
                }
            }
            ctx.attempt(entry, "PackReader.read") { ctx.compare(try reader.read(p), entry, "PackReader.read") }
            ctx.attempt(entry, "PackReader.readData") {
                ctx.compare(try reader.readData(p), entry, "PackReader.readData")
            }
            ctx.attempt(entry, "PackReader.stream") {
                var sink = ByteSink(capacity: entry.bytes.count)
                try reader.stream(p) { sink.append($0) }
                ctx.compare(sink.data, entry, "PackReader.stream")
            }
            ctx.attempt(entry, "AssetLibrary.read") { ctx.compare(try library.read(p), entry, "AssetLibrary.read") }
            ctx.attempt(entry, "AssetLibrary.readData") {
                ctx.compare(try library.readData(p), entry, "AssetLibrary.readData")
            }
            ctx.attempt(entry, "AssetLibrary.readTimed") {
                ctx.compare(try library.readTimed(p).bytes, entry, "AssetLibrary.readTimed")
            }
            ctx.attempt(entry, "AssetLibrary.stream") {
                var sink = ByteSink(capacity: entry.bytes.count)
                try library.stream(p) { sink.append($0) }
                ctx.compare(sink.data, entry, "AssetLibrary.stream")
            }
        }
    }

    /// The `async` reads (`load…`, distinct names, so no call can silently pick a synchronous
    /// overload); the cancellation probe below checks they run as async functions, since only
    /// they check for cancellation.
    static func readEverythingAsynchronously(_ library: AssetLibrary, _ tree: GeneratedTree, _ ctx: Context) async {
        for entry in tree.entries {
            let p = entry.path
            await ctx.attemptAsync(entry, "AssetLibrary.load") {
                let data: Data = try await library.load(p)
                ctx.compare(data, entry, "AssetLibrary.load")
            }
            await ctx.attemptAsync(entry, "AssetLibrary.loadBytes") {
                let bytes: [UInt8] = try await library.loadBytes(p)
                ctx.compare(bytes, entry, "AssetLibrary.loadBytes")
            }
            await ctx.attemptAsync(entry, "AssetLibrary.loadTimed") {
                let (bytes, _) = try await library.loadTimed(p)
                ctx.compare(bytes, entry, "AssetLibrary.loadTimed")
            }
        }
        if let first = tree.entries.first {
            let p = first.path
            let probes: [(String, @Sendable () async throws -> Void)] = [
                ("load", { _ = try await library.load(p) }),
                ("loadBytes", { _ = try await library.loadBytes(p) }),
                ("loadTimed", { _ = try await library.loadTimed(p) }),
            ]
            for (name, call) in probes {
                let task = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    try await call()
                }
                let result = await task.result
                guard case .failure(let error) = result, error is CancellationError else {
                    ctx.fail(
                        first, "async AssetLibrary.\(name) (cancelled task)",
                        "a cancelled task's read did not throw CancellationError"
                    )
                    continue
                }
            }
        }
    }

    /// Container `readRange`: whole entry, first and last byte, ranges straddling chunk boundaries,
    /// and a few seeded random ranges; a range past the end must throw.
    static func readRanges(_ reader: ContainerPackReader, _ tree: GeneratedTree, _ ctx: Context) {
        let chunk = ctx.combination.chunkSize
        var rng = SplitMix64(seed: ctx.seed ^ 0x0DDB_A11_5EED)
        for entry in tree.entries {
            let size = entry.bytes.count
            var ranges: [(Int, Int)] = [(0, size), (0, 0), (size, 0)]
            if size > 0 { ranges += [(0, 1), (size - 1, 1)] }
            var boundary = chunk
            var crossed = 0
            while boundary < size && crossed < 3 {
                ranges.append((boundary - 1, 2))
                let back = min(boundary, 1 + Int(rng.next() % UInt64(chunk)))
                ranges.append(
                    (boundary - back, min(size - boundary + back, back + 1 + Int(rng.next() % UInt64(chunk)))))
                ranges.append((boundary - 1, min(size - boundary + 1, chunk + 2)))  // spans a whole chunk and both ends
                boundary += chunk * (1 + Int(rng.next() % 4))
                crossed += 1
            }
            if size > 0 {
                for _ in 0..<2 {
                    let offset = Int(rng.next() % UInt64(size))
                    ranges.append((offset, Int(rng.next() % UInt64(size - offset + 1))))
                }
            }
            for (offset, count) in ranges {
                let label = "ContainerPackReader.readRange(offset: \(offset), count: \(count))"
                ctx.attempt(entry, label) {
                    let got = try reader.readRange(entry.path, offset: UInt64(offset), count: count)
                    let expected = Array(entry.bytes[offset..<(offset + count)])
                    if let difference = got.withUnsafeBytes({ byteDifference($0, expected) }) {
                        ctx.fail(entry, label, "wrong bytes: \(difference)")
                    }
                }
            }
            let past = "ContainerPackReader.readRange(offset: \(size), count: 1)"
            do {
                _ = try reader.readRange(entry.path, offset: UInt64(size), count: 1)
                ctx.fail(entry, past, "a range past the end did not throw")
            } catch let error as AssetPackError where error.code == .invalidArgument {
            } catch {
                ctx.fail(entry, past, "a range past the end threw \(error), not .invalidArgument")
            }
        }
    }

    /// The fixed seeds really cover every boundary size in both text and random content.
    @Test func fixedSeedsCoverEveryBoundaryInBothKinds() {
        var covered = Set<String>()
        for seed in DifferentialSeeds.fixed {
            for (size, kind) in TreeGenerator.plan(seed: seed) { covered.insert("\(size)-\(kind.rawValue)") }
        }
        for size in TreeGenerator.smallBoundaries + TreeGenerator.streamBoundaries {
            for kind in [GeneratedEntry.Kind.text, .random] {
                #expect(covered.contains("\(size)-\(kind.rawValue)"), "size \(size) \(kind.rawValue) is not covered")
            }
        }
    }

    /// The generator is deterministic per seed and its names are NFC, nested and non-ASCII.
    @Test func generatorIsDeterministic() {
        let seed: UInt64 = 0xC0FFEE
        let a = TreeGenerator.plan(seed: seed), b = TreeGenerator.plan(seed: seed)
        #expect(a.map(\.size) == b.map(\.size))
        #expect(a.map(\.kind) == b.map(\.kind))
        let tree = TreeGenerator.tree(seed: DifferentialSeeds.fixed[0])
        #expect(Set(tree.entries.map(\.path)).count == tree.entries.count)
        #expect(tree.entries.allSatisfy { $0.path == $0.path.precomposedStringWithCanonicalMapping })
        #expect(tree.entries.contains { $0.path.contains("/") })
        #expect(tree.entries.contains { $0.path.unicodeScalars.contains { !$0.isASCII } })
    }
}
