#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack` as a build step: incremental re-packs by default, `--fresh`, the summary's
/// reused/packed counts, a progress bar only on a terminal, and Ctrl-C / SIGTERM leaving the
/// previous pack intact with no temporary files behind.
/// The results of concurrent CLI runs, by index.
final class ConcurrentRuns: @unchecked Sendable {
    private let lock = NSLock()
    private var runs: [Int: CLI.Run?] = [:]
    func set(_ k: Int, _ run: CLI.Run?) { lock.withLock { runs[k] = run } }
    var all: [CLI.Run?] { lock.withLock { runs.keys.sorted().map { runs[$0]! } } }
}

@Suite struct PackBuildStepTests {
    static let password = "build-step"

    static func tree(_ dir: TemporaryDirectory) throws -> URL {
        try dir.write(
            [
                "a.txt": textBytes(20_000, seed: 1), "b/c.bin": testBytes(70_000, seed: 2), "b/d.json": textBytes(300),
                "e.dat": testBytes(4096, seed: 3),
            ], under: "src")
    }

    static func pack(_ source: URL, _ output: URL, _ format: PackFormat, _ extra: [String] = []) throws -> CLI.Run {
        try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue] + extra, password: password)
    }

    static func summary(_ run: CLI.Run) -> String {
        run.stderr.split(separator: "\n").last.map(String.init) ?? ""
    }

    @Test(arguments: [PackFormat.zip, .container])
    func repackReusesUnchangedEntriesAndSaysSo(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        let output = dir.appending("out.pack")
        let first = try Self.pack(source, output, format)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(Self.summary(first).hasSuffix(": 0 reused, 4 packed, 0 removed"), "\(first.stderr)")

        let second = try Self.pack(source, output, format)
        #expect(Self.summary(second).hasSuffix(": 4 reused, 0 packed, 0 removed"), "\(second.stderr)")

        try Data(textBytes(20_000, seed: 9)).write(to: source.appendingPathComponent("a.txt"))
        let third = try Self.pack(source, output, format)
        #expect(Self.summary(third).hasSuffix(": 3 reused, 1 packed, 0 removed"), "\(third.stderr)")
        let cat = try CLI.run(["cat", output.path, "a.txt"], password: Self.password)
        #expect(cat.status == 0 && cat.stdout == textBytes(20_000, seed: 9))

        let fresh = try Self.pack(source, output, format, ["--fresh"])
        #expect(Self.summary(fresh).hasSuffix(": 0 reused, 4 packed, 0 removed"), "\(fresh.stderr)")
        let verify = try CLI.run(["verify", output.path, "--quiet"], password: Self.password)
        #expect(verify.status == 0, "\(verify.stderr)")

        // Another password, with --fresh: the old pack is replaced, nothing reused.
        let other = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue, "--fresh"], password: "another")
        #expect(Self.summary(other).contains(": 0 reused, 4 packed"), "\(other.stderr)")
    }

    /// A re-pack whose password does not open the pack at --output (mistyped, or a build machine
    /// with another secret) must not replace it: every device would get a pack its app cannot
    /// open. Exit 2, the pack byte for byte as it was; --fresh replaces it.
    @Test(arguments: [PackFormat.zip, .container])
    func aRepackWithAnotherPasswordIsRefusedUnlessFresh(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        let output = dir.appending("out.pack")
        #expect(try Self.pack(source, output, format).status == 0)
        let before = try Data(contentsOf: output)

        let other = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue], password: "another")
        #expect(other.status == 2, "\(other.stderr)")
        #expect(other.stderr.contains("does not open"), "\(other.stderr)")
        #expect(other.stderr.contains("--fresh"), "\(other.stderr)")
        #expect(try Data(contentsOf: output) == before)
        #expect(try CLI.run(["verify", output.path, "--quiet"], password: Self.password).status == 0)
        #expect(try CLI.run(["verify", output.path, "--quiet"], password: "another").status == 2)

        if format == .zip {
            // ZipCrypto reuses nothing, but refuses what any re-pack refuses.
            let legacy = try CLI.run(
                ["pack", source.path, "--output", output.path, "--format", "zip", "--encryption", "zipcrypto"],
                password: "another")
            #expect(legacy.status == 2, "\(legacy.stderr)")
            #expect(try Data(contentsOf: output) == before)
        }
        if format == .container {
            // Another kind of credential (a raw key for a password pack) is refused the same way.
            let key = dir.appending("k.key")
            try Data((0..<32).map { UInt8($0) }).write(to: key)
            let keyed = try CLI.run(
                ["pack", source.path, "--output", output.path, "--format", "container", "--key-file", key.path])
            #expect(keyed.status == 2, "\(keyed.stderr)")
            #expect(try Data(contentsOf: output) == before)
        }

        let fresh = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue, "--fresh"], password: "another")
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(try CLI.run(["verify", output.path, "--quiet"], password: "another").status == 0)
        #expect(try CLI.run(["verify", output.path, "--quiet"], password: Self.password).status == 2)
    }

    /// A zip re-pack with nothing changed leaves the file as it is (bytes and modification time,
    /// so a server's ETag), signed for the same release too; a change, a new release or dropping
    /// the signature rewrites it. Before, every zip re-pack re-encrypted its manifest: other
    /// bytes, which installers that have a signed version refuse as that version.
    @Test func aZipRepackWithNothingChangedLeavesTheFileAsItIs() throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        let output = dir.appending("out.zip")
        let keygen = try CLI.run(["keygen", "--out", dir.appending("k").path])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let sign = ["--sign-key", dir.appending("k.key").path]
        func state() throws -> (Data, Date) {
            let attributes = try FileManager.default.attributesOfItem(atPath: output.path)
            return (try Data(contentsOf: output), attributes[.modificationDate] as! Date)
        }
        for signing in [[], sign + ["--pack-version", "5"]] {
            #expect(try Self.pack(source, output, .zip, signing + ["--fresh"]).status == 0)
            let before = try state()
            Thread.sleep(forTimeInterval: 0.05)
            let again = try Self.pack(source, output, .zip, signing)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(Self.summary(again).contains(": 4 reused, 0 packed"), "\(again.stderr)")
            let after = try state()
            #expect(after.0 == before.0, "\(signing): the bytes changed")
            #expect(after.1 == before.1, "\(signing): the modification time changed")
        }
        // A new release, dropping the signature, and a changed file each rewrite it.
        var last = try state().0
        for step in ["a new release", "no signature", "a changed file"] {
            var extra: [String] = []
            switch step {
            case "a new release": extra = sign + ["--pack-version", "6"]
            case "a changed file":
                try Data(textBytes(21_000, seed: 4)).write(to: source.appendingPathComponent("a.txt"))
            default: break
            }
            let run = try Self.pack(source, output, .zip, extra)
            #expect(run.status == 0, "\(step): \(run.stderr)")
            let now = try state().0
            #expect(now != last, "\(step) left the file as it was")
            last = now
        }
        let cat = try CLI.run(["cat", output.path, "a.txt"], password: Self.password)
        #expect(cat.stdout == textBytes(21_000, seed: 4))
    }

    /// `--encryption none` over an encrypted zip would publish the assets readable by anyone:
    /// refused (exit 1, the pack unchanged) unless --fresh. Adding encryption needs nothing.
    @Test func droppingEncryptionFromAZipIsRefusedUnlessFresh() throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        let output = dir.appending("out.zip")
        #expect(try Self.pack(source, output, .zip).status == 0)
        let before = try Data(contentsOf: output)
        let plain = try Self.pack(source, output, .zip, ["--encryption", "none"])
        #expect(plain.status == 1, "\(plain.stderr)")
        #expect(plain.stderr.contains("is an encrypted pack, and this one would not be"), "\(plain.stderr)")
        #expect(try Data(contentsOf: output) == before)
        let fresh = try Self.pack(source, output, .zip, ["--encryption", "none", "--fresh"])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(try CLI.run(["verify", output.path, "--quiet"]).status == 0)
        let encrypted = try Self.pack(source, output, .zip)
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        #expect(try CLI.run(["cat", output.path, "a.txt"]).status == 2)
    }

    /// A container re-pack after one byte of a large file changed re-seals only the chunks
    /// around it and copies the rest, and says so: "C of N chunks reused, B bytes written". It
    /// appends it and then zeroes the replaced chunk's earlier bytes and the earlier index in
    /// place (the summary says how many), so they are not left in the file; --compact drops the
    /// zeros.
    @Test func aContainerRepackReSealsOnlyTheChangedChunks() throws {
        let dir = TemporaryDirectory()
        var big = testBytes(1 << 20, seed: 5)
        let source = try dir.write(["big.bin": big, "small.txt": textBytes(500)], under: "src")
        let output = dir.appending("out.apack")
        let first = try Self.pack(source, output, .container, ["--chunk-kib", "4"])
        #expect(first.status == 0, "\(first.stderr)")
        let firstSize = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! Int
        let firstBytes = [UInt8](try Data(contentsOf: output))
        big[big.count / 2] ^= 0xFF
        try Data(big).write(to: source.appendingPathComponent("big.bin"))
        let second = try Self.pack(source, output, .container, ["--chunk-kib", "4"])
        let line = Self.summary(second)
        let numbers = line.firstMatch(of: /; ([0-9]+) of ([0-9]+) chunks reused, ([0-9]+) bytes written[,)]/)
        let (reused, chunks, _) = try #require(numbers.map { (Int($0.1)!, Int($0.2)!, Int($0.3)!) }, "\(line)")
        #expect(chunks > 100 && chunks - reused >= 1 && chunks - reused <= 2, "\(line)")
        let size = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! Int
        // Appended, and then the replaced chunk and the earlier index zeroed in place: below the
        // previous end, no byte changed but to zero (and the new header slot), and the zeros
        // include a run as long as a chunk (random bytes are stored: at least the 1 KiB minimum).
        let before = firstBytes
        let after = [UInt8](try Data(contentsOf: output))
        #expect(size > firstSize, "\(line), \(firstSize) → \(size) bytes")
        var changed = 0
        var run = 0
        var longest = 0
        for p in 8192..<firstSize {
            if after[p] != before[p] {
                #expect(after[p] == 0, "byte \(p) changed to \(after[p]), not zeroed")
                changed += 1
            }
            run = after[p] == 0 ? run + 1 : 0
            longest = max(longest, run)
        }
        let zeroed = try #require(
            line.firstMatch(of: /appended: ([0-9]+) bytes of removed or replaced content and earlier indexes zeroed/),
            "\(line)")
        #expect(
            Int(zeroed.1)! >= changed && longest >= 1024, "\(line): \(changed) bytes zeroed, longest run \(longest)")
        #expect(line.hasSuffix(": 1 reused, 1 packed, 0 removed"), "\(line)")
        let cat = try CLI.run(["cat", output.path, "big.bin"], password: Self.password)
        #expect(cat.status == 0 && cat.stdout == big)
        // A re-pack with nothing changed writes nothing.
        let unchanged = try Self.pack(source, output, .container, ["--chunk-kib", "4"])
        #expect(Self.summary(unchanged).contains(" 0 bytes written"), "\(unchanged.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! Int == size)
        // A file added: appended in place (the new chunks, an index and a header slot), the
        // earlier index zeroed, and the summary says how many bytes no entry reads, which
        // --compact drops.
        try Data(testBytes(40_000, seed: 6)).write(to: source.appendingPathComponent("added.bin"))
        let added = try Self.pack(source, output, .container, ["--chunk-kib", "4"])
        let addedLine = Self.summary(added)
        let kept = try #require(
            addedLine.firstMatch(of: /; the file keeps ([0-9]+) bytes no entry reads \(--compact drops them\)/),
            "\(addedLine)")
        let grown = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! Int
        #expect(grown > size + 40_000 && grown < size + 60_000, "\(size) → \(grown)")
        let compact = try Self.pack(source, output, .container, ["--chunk-kib", "4", "--compact"])
        #expect(
            compact.status == 0 && !Self.summary(compact).contains("appended")
                && !Self.summary(compact).contains("half of the file"), "\(compact.stderr)")
        #expect(
            Self.summary(compact).contains(
                "rewritten whole: \(kept.1) bytes of removed or replaced content and earlier versions dropped"),
            "\(compact.stderr)")
        // --compact is the container's: refused for a zip, as --codec is.
        let zip = try Self.pack(source, dir.appending("z.zip"), .zip, ["--compact"])
        #expect(zip.status == 64 && zip.stderr.contains("--compact applies to container packs only"), "\(zip.stderr)")
        let compacted = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! Int
        #expect(compacted == grown - Int(kept.1)!, "\(grown) → \(compacted)")
        let again = try CLI.run(["cat", output.path, "big.bin"], password: Self.password)
        #expect(again.status == 0 && again.stdout == big)
    }

    /// `--codec` picks the container's codec (zstd by default), and is refused for a zip.
    @Test(.slow) func codecIsTheContainersChoice() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["t.txt": textBytes(100_000)], under: "src")
        for codec in ["zstd", "deflate"] {
            let output = dir.appending("\(codec).apack")
            let extra = codec == "zstd" ? [] : ["--codec", codec]
            #expect(try Self.pack(source, output, .container, extra).status == 0)
            let list = try CLI.run(["list", output.path, "--json"], password: Self.password)
            #expect(list.text.contains("\"compression\" : \"\(codec)\""), "\(list.text)")
            let cat = try CLI.run(["cat", output.path, "t.txt"], password: Self.password)
            #expect(cat.status == 0 && cat.stdout == textBytes(100_000))
        }
        let zip = try Self.pack(source, dir.appending("z.zip"), .zip, ["--codec", "deflate"])
        #expect(zip.status == 64 && zip.stderr.contains("--codec applies to container packs only"), "\(zip.stderr)")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func offATerminalOnlyTheSummary(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let run = try Self.pack(try Self.tree(dir), dir.appending("out.pack"), format)
        #expect(run.status == 0)
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("\r") && !run.stderr.contains("\u{1B}"))
        let quiet = try Self.pack(try Self.tree(dir), dir.appending("out.pack"), format, ["--quiet"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    /// On a pseudo-terminal (util-linux `script`), stderr shows the bar: entries, bytes, then the summary.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "util-linux script is not installed"),
        arguments: [PackFormat.zip, .container])
    func onATerminalAProgressBar(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try Self.tree(dir)
        func onTerminal(_ extra: String) throws -> String {
            let command =
                "'\(CLI.binary.path)' pack '\(source.path)' --output '\(dir.appending("out.pack").path)' --format \(format.rawValue) --fresh \(extra)"
            let run = try CLI.run(
                ["-qec", command, "/dev/null"], password: Self.password, executable: "/usr/bin/script")
            #expect(run.status == 0, "\(run.stderr)")
            return run.text
        }
        let screen = try onTerminal("")
        #expect(screen.contains("\r["), "no bar: \(screen.debugDescription)")
        #expect(screen.contains("4/4 files"), "\(screen.debugDescription)")
        // Binary units, as everywhere else: 94,396 bytes.
        #expect(screen.contains("/92.2 KiB"), "bytes missing: \(screen.debugDescription)")
        #expect(!screen.contains(" MB"), "\(screen.debugDescription)")
        #expect(screen.contains("packed 4 entries"))
        let quiet = try onTerminal("--quiet")
        #expect(!quiet.contains("files") && !quiet.contains("packed"), "\(quiet.debugDescription)")
    }

    /// SIGINT or SIGTERM while a pack is being written: the previous pack stays byte for byte,
    /// no temporary file is left, and the process dies of the signal.
    /// (Zip packs, AES and ZipCrypto: ZipInterruptTests.)
    @Test(.slow, arguments: [(PackFormat.container, SIGINT), (.container, SIGTERM)])
    func interruptedPackLeavesThePreviousPack(format: PackFormat, signal: Int32) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(
            ["small.txt": textBytes(100)], under: "src")
        let output = dir.appending("out.pack")
        #expect(try Self.pack(source, output, format).status == 0)
        let before = try Data(contentsOf: output)
        // Large enough that the write takes a while: random bytes in 8 MiB files.
        for i in 0..<12 {
            try Data(testBytes(8 << 20, seed: UInt64(100 + i))).write(to: source.appendingPathComponent("r\(i).bin"))
        }

        let run = try CLI.interruptWhileWriting(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue, "--fresh"],
            password: Self.password, in: dir.url, signal: signal)
        #expect(run.sawTemporary, "the pack finished before it could be interrupted")
        #expect(run.diedOfSignal)
        #expect(run.left == ["out.pack", "src"], "left behind: \(run.left)")
        #expect(try Data(contentsOf: output) == before)
        // Not silent: the last line says what became of the output.
        #expect(
            run.stderr.hasSuffix(
                "assetpack: interrupted: \(output.path) was not changed (the previous pack is kept)\n"),
            "\(run.stderr.debugDescription)")
    }

    /// Two re-packs of one container at once, from two sources with different edits: whatever
    /// the timing, each either succeeds or fails saying the pack changed under it, and the pack
    /// that is left verifies and holds one source's files exactly (an append over another's
    /// append used to corrupt it).
    @Test(.slow) func concurrentRepacksNeverCorruptThePack() throws {
        let dir = TemporaryDirectory()
        let base = testBytes(24 << 20, seed: 41)
        let output = dir.appending("out.pack")
        let first = try dir.write(["a.bin": base], under: "first")
        #expect(try Self.pack(first, output, .container, ["--scrypt-cost", "10"]).status == 0)
        var sources: [(URL, [UInt8])] = []
        for k in 0..<2 {
            var edited = base
            for i in 0..<(3 << 20) { edited[(k * 8 << 20) + i] ^= 0x5A }
            sources.append((try dir.write(["a.bin": edited], under: "edit\(k)"), edited))
        }
        let paths = sources.map(\.0)
        for round in 0..<3 {
            let runs = ConcurrentRuns()
            DispatchQueue.concurrentPerform(iterations: 2) { k in
                let run = try? Self.pack(paths[k], output, .container, ["--scrypt-cost", "10"])
                runs.set(k, run)
            }
            let results = runs.all
            #expect(results.contains { $0?.status == 0 }, "round \(round): neither succeeded")
            for case let run? in results where run.status != 0 {
                #expect(run.stderr.contains("changed while it was being re-packed"), "round \(round): \(run.stderr)")
            }
            let verify = try CLI.run(["verify", output.path, "--quiet"], password: Self.password)
            #expect(verify.status == 0, "round \(round): \(verify.stderr)")
            let cat = try CLI.run(["cat", output.path, "a.bin"], password: Self.password)
            let holdsOne = cat.stdout == sources[0].1 || cat.stdout == sources[1].1  // a Bool: no byte dump
            #expect(cat.status == 0 && holdsOne, "round \(round)")
        }
    }

    /// SIGINT while a re-pack appends to the container at the output in place (no temporary
    /// file): the append is cut back, so the pack stays byte for byte, and the process dies of
    /// the signal saying so. At several points of the append: the writer thread's next write
    /// used to grow the file again after the handler cut it (3 of 15 trials: +42 MB, sparse).
    @Test(.slow, arguments: [0, 30_000, 80_000, 150_000, 250_000] as [useconds_t])
    func interruptedAppendLeavesThePreviousPack(after delay: useconds_t) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["small.txt": textBytes(100)], under: "src")
        let output = dir.appending("out.pack")
        #expect(try Self.pack(source, output, .container).status == 0)
        let before = try Data(contentsOf: output)
        for i in 0..<12 {
            try Data(testBytes(8 << 20, seed: UInt64(100 + i))).write(to: source.appendingPathComponent("r\(i).bin"))
        }
        for trial in 0..<3 {
            let run = try CLI.interruptWhileWriting(
                ["pack", source.path, "--output", output.path, "--format", "container"],
                password: Self.password, in: dir.url, signal: SIGINT, growing: output, after: delay)
            guard run.diedOfSignal else {
                // Finished before the signal: nothing to check at this point.
                #expect(run.stderr.contains("appended"), "\(run.stderr)")
                return
            }
            #expect(run.sawTemporary, "the pack finished before it could be interrupted")
            #expect(run.left == ["out.pack", "src"], "left behind: \(run.left)")
            #expect(try Data(contentsOf: output) == before, "trial \(trial) after \(delay) µs: the pack changed")
            #expect(
                run.stderr.hasSuffix(
                    "assetpack: interrupted: \(output.path) was not changed (the previous pack is kept)\n"),
                "\(run.stderr.debugDescription)")
        }
    }

    /// Ctrl-C on a terminal: the progress bar is cleared before the line that says what became of
    /// the output, and no bar is drawn after it. A first pack interrupted leaves no pack, and says so.
    @Test(
        .slow,
        arguments: [(PackFormat.container, true), (.zip, false)])
    func interruptedOnATerminalClearsTheBarAndSaysSo(format: PackFormat, previous: Bool) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["small.txt": textBytes(100)], under: "src")
        let output = dir.appending("out.pack")
        if previous { #expect(try Self.pack(source, output, format).status == 0) }
        for i in 0..<12 {
            try Data(testBytes(8 << 20, seed: UInt64(100 + i))).write(to: source.appendingPathComponent("r\(i).bin"))
        }
        let run = try CLI.interruptWhileWriting(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue, "--fresh"],
            password: Self.password, in: dir.url, signal: SIGINT, terminal: true)
        #expect(run.sawTemporary && run.diedOfSignal)
        #expect(run.stderr.contains("\r["), "no bar drawn: \(run.stderr.debugDescription)")
        // Binary units: 12 × 8 MiB and 100 bytes; a rate, once shown, in MiB/s.
        #expect(run.stderr.contains("/96.0 MiB"), "\(run.stderr.suffix(300).debugDescription)")
        #expect(!run.stderr.contains(" MB"), "\(run.stderr.suffix(300).debugDescription)")
        let said =
            previous
            ? "\(output.path) was not changed (the previous pack is kept)" : "\(output.path) was not written"
        let line = "\r\u{1B}[Kassetpack: interrupted: \(said)\r\n"
        #expect(run.stderr.hasSuffix(line), "\(run.stderr.suffix(300).debugDescription)")
        #expect(run.left == (previous ? ["out.pack", "src"] : ["src"]), "\(run.left)")
    }
}
#endif
