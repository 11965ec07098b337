#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// End-to-end: the commands behave the same way for the same situation, data goes to stdout and
/// chatter to stderr, and every message is one clear line.
@Suite struct ConsistencyTests {
    static let password = CLITests.password

    // MARK: - A directory given as a pack

    @Test func aDirectoryGivenAsAPackSaysSo() throws {
        let dir = TemporaryDirectory()
        let folder = dir.appending("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let commands: [[String]] = [
            ["list", folder.path], ["cat", folder.path, "a.txt"],
            ["extract", folder.path, "--into", dir.appending("x").path],
            ["verify", folder.path], ["install", folder.path, "--into", dir.appending("priv").path],
        ]
        for arguments in commands {
            let run = try CLI.run(arguments, password: Self.password)
            #expect(run.status == 1, "\(arguments): \(run.stderr)")
            // The reading commands also take an installed release's directory, and say what is missing.
            let expected =
                arguments[0] == "install"
                ? "\(folder.path) is a directory"
                : "\(folder.path) is a directory with no installed release in it (no .assetpack.release)"
            #expect(run.stderr == "assetpack: error: \(expected)\n", "\(arguments)")
        }
    }

    // MARK: - Special files in the source

    @Test func packWarnsAboutSpecialFilesItSkips() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1]], under: "src")
        #expect(mkfifo(source.appendingPathComponent("pipe").path, 0o644) == 0)
        let run = try CLI.run(["pack", source.path, "--output", dir.appending("p.zip").path], password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("assetpack: warning: skipped special file pipe (FIFO)"), "\(run.stderr)")
        #expect(try CLI.run(["list", dir.appending("p.zip").path, "--json"]).text.contains("a.txt"))
    }

    // MARK: - --output and --into

    @Test(arguments: PackFormat.allCases)
    func packOutputIntoAMissingFolderIsOneClearError(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1]], under: "src")
        let output = dir.appending("missing/p.pack").path
        let run = try CLI.run(
            ["pack", source.path, "--output", output, "--format", format.rawValue], password: Self.password)
        #expect(run.status == 1)
        let folder = String(output.dropLast("/p.pack".count))  // as spelled in the argument
        #expect(run.stderr == "assetpack: error: cannot write \(output): folder \(folder) does not exist\n")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("missing").path), "pack does not create folders")
    }

    @Test(arguments: PackFormat.allCases)
    func packOutputNamingADirectoryIsOneClearError(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1]], under: "src")
        let output = dir.appending("existing").path
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let run = try CLI.run(
            ["pack", source.path, "--output", output, "--format", format.rawValue], password: Self.password)
        #expect(run.status == 1)
        #expect(run.stderr == "assetpack: error: \(output) is a directory\n")
    }

    @Test func libraryPackChecksTheOutputBeforeScanning() throws {
        let dir = TemporaryDirectory()
        var options = PackOptions.forTests
        options.credential = .password(Self.password)
        // The source is missing too: the output's problem is reported first, before any work.
        let error = #expect(throws: AssetPackError.self) {
            try AssetPacks.pack(source: dir.appending("nosource"), to: dir.appending("missing/p.zip"), options: options)
        }
        let folder = String(dir.appending("missing/p.zip").path.dropLast("/p.zip".count))
        #expect(error?.message.contains("folder \(folder) does not exist") == true, "\(String(describing: error))")
    }

    @Test func extractIntoCreatesTheFolderWithItsParents() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(["a.txt": [7]], in: dir)
        let into = dir.appending("new/nested/out")
        let run = try CLI.run(["extract", pack, "--into", into.path], password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: into.appendingPathComponent("a.txt")) == Data([7]))
        try Data([1]).write(to: dir.appending("file"))
        let onFile = try CLI.run(["extract", pack, "--into", dir.appending("file").path], password: Self.password)
        #expect(onFile.status == 1)
        #expect(onFile.stderr == "assetpack: error: \(dir.appending("file").path) is not a directory\n")
    }

    /// cat --output: the file appears only after the entry verified; a failing cat leaves the old
    /// file as it was and no temporary file beside it.
    @Test(arguments: PackFormat.allCases)
    func catOutputAppearsOnlyVerified(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let payload = testBytes(300_000, seed: 21)
        let pack = try CLITests.pack(["x.bin": payload], in: dir, format: format, extra: ["--compression", "store"])
        let out = dir.appending("out.bin").path
        let good = try CLI.run(["cat", pack, "x.bin", "--output", out], password: Self.password)
        #expect(good.status == 0 && good.stdout.isEmpty, "\(good.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(payload))
        try Data("previous".utf8).write(to: URL(fileURLWithPath: out))
        let size = try FileManager.default.attributesOfItem(atPath: pack)[.size] as! Int
        try flipByte(at: size / 2, in: pack, with: 0x10)
        let bad = try CLI.run(["cat", pack, "x.bin", "--output", out], password: Self.password)
        #expect(bad.status == 4, "\(bad.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("previous".utf8), "the old file is untouched")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix(".assetpack-tmp-")
        }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    // MARK: - Credentials

    @Test func conflictingCredentialOptionsAreAUsageError() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(["a.txt": [1]], in: dir)
        try Data("\(Self.password)\n".utf8).write(to: dir.appending("pw"))
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        let pw = dir.appending("pw").path
        let key = dir.appending("key").path
        for extra in [
            ["--password-env", "X", "--password-file", pw], ["--key-file", key, "--password-file", pw],
            ["--key-file", key, "--password-env", "ASSETPACK_PASSWORD"],
        ] {
            let run = try CLI.run(["cat", pack, "a.txt"] + extra, password: Self.password)
            #expect(run.status == 64, "\(extra): \(run.stderr)")
            #expect(run.stderr.contains("only one of --password-env, --password-file and --key-file"), "\(run.stderr)")
        }
        // Each alone is fine, including --password-env naming the default variable.
        #expect(
            try CLI.run(["cat", pack, "a.txt", "--password-env", "ASSETPACK_PASSWORD"], password: Self.password).status
                == 0)
        #expect(try CLI.run(["cat", pack, "a.txt", "--password-file", pw]).status == 0)
    }

    // MARK: - stdout is data, stderr is chatter; --quiet

    @Test(.slow, arguments: PackFormat.allCases)
    func summariesGoToStderrAndQuietSilencesThem(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1], "b.txt": [2]], under: "src")
        let pack = dir.appending("p.\(format.rawValue)").path
        let packed = try CLI.run(
            ["pack", source.path, "--output", pack, "--format", format.rawValue], password: Self.password)
        #expect(packed.status == 0)
        #expect(packed.stdout.isEmpty, "pack: \(packed.text)")
        #expect(packed.stderr.contains("packed 2 entries"))
        let quietPack = try CLI.run(
            ["pack", source.path, "--output", pack, "--format", format.rawValue, "--quiet"], password: Self.password)
        #expect(quietPack.status == 0 && quietPack.stdout.isEmpty && quietPack.stderr.isEmpty, "\(quietPack.stderr)")

        let verify = try CLI.run(["verify", pack], password: Self.password)
        #expect(verify.status == 0)
        #expect(
            verify.text.split(separator: "\n").count == 3,
            "verify: a header and one row per entry on stdout: \(verify.text)")
        #expect(!verify.text.contains("verified"), "the summary is not on stdout")
        #expect(verify.stderr.contains("2 of 2 entries verified"))
        let quietVerify = try CLI.run(["verify", pack, "--quiet"], password: Self.password)
        #expect(
            quietVerify.status == 0 && quietVerify.stdout.isEmpty && quietVerify.stderr.isEmpty, "\(quietVerify.stderr)"
        )

        let into = dir.appending("x").path
        let extract = try CLI.run(["extract", pack, "--into", into], password: Self.password)
        #expect(extract.status == 0)
        #expect(extract.text == "\(into)/a.txt\n\(into)/b.txt\n", "extract prints the files it wrote, nothing else")
        #expect(extract.stderr.contains("extracted 2 entries"))
        let quietExtract = try CLI.run(
            ["extract", pack, "--into", into, "--quiet", "--force"], password: Self.password)
        #expect(quietExtract.status == 0 && quietExtract.stderr.isEmpty, "\(quietExtract.stderr)")
        #expect(quietExtract.text == extract.text, "--quiet keeps the data on stdout")

        let priv = dir.appending("priv").path
        #expect(try CLI.run(["install", pack, "--into", priv]).text == "\(priv)/p.\(format.rawValue)\n")
        let again = try CLI.run(["install", pack, "--into", priv])
        #expect(again.text == "\(priv)/p.\(format.rawValue)\n")
        #expect(again.stderr.contains("already installed"))
        let quietInstall = try CLI.run(["install", pack, "--into", priv, "--quiet"])
        #expect(quietInstall.text == "\(priv)/p.\(format.rawValue)\n")
        #expect(quietInstall.stderr.isEmpty, "\(quietInstall.stderr)")

        let list = try CLI.run(["list", pack], password: Self.password)
        #expect(
            list.text.split(separator: "\n").count == 3, "list: a header and one line per entry on stdout: \(list.text)"
        )
        #expect(list.stderr.contains("2 entries"))
        let quietList = try CLI.run(["list", pack, "--quiet"], password: Self.password)
        #expect(quietList.text == list.text && quietList.stderr.isEmpty)
    }

    @Test func quietStillReportsErrorsAndWarnings() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1]], under: "src")
        let run = try CLI.run(
            ["pack", source.path, "-o", dir.appending("z.zip").path, "--encryption", "zipcrypto", "--quiet"],
            password: Self.password)
        #expect(run.status == 0)
        #expect(run.stderr.contains("ZipCrypto is broken"))
        let missing = try CLI.run(["verify", dir.appending("nope").path, "--quiet"], password: Self.password)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("assetpack: error:"))
    }

    // MARK: - verify

    struct VerifyDocument: Decodable {
        struct Entry: Decodable {
            var path: String
            var size: UInt64
            var status: String
            var check: String?
            var seconds: Double?
            var error: String?
        }
        var format: String
        var entries: [Entry]
    }

    @Test(arguments: PackFormat.allCases)
    func verifyJSONIsADocumentOnStdout(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let pack = try CLITests.pack(tree, in: dir, format: format)
        let run = try CLI.run(["verify", pack, "--json"], password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        let doc = try JSONDecoder().decode(VerifyDocument.self, from: Data(run.stdout))
        #expect(doc.format == format.rawValue)
        #expect(Set(doc.entries.map(\.path)) == Set(tree.keys))
        #expect(doc.entries.allSatisfy { $0.status == "ok" && $0.error == nil && ($0.seconds ?? -1) >= 0 })
        // libzip writes AE-2 (no CRC, the MAC is the only check) for entries under 20 bytes.
        for e in doc.entries {
            let expected = format == .container ? "gcm+crc" : (e.size < 20 ? "mac" : "mac+crc")
            #expect(e.check == expected, "\(e.path) (\(e.size) bytes): \(String(describing: e.check))")
        }
        #expect(doc.entries.first { $0.path == "one.bin" }?.size == 1)
    }

    @Test func verifyJSONReportsFailures() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(
            ["x.bin": testBytes(10_000, seed: 11)], in: dir, extra: ["--compression", "store"])
        let size = try FileManager.default.attributesOfItem(atPath: pack)[.size] as! Int
        try flipByte(at: size / 2, in: pack, with: 0x04)
        let run = try CLI.run(["verify", pack, "--json"], password: Self.password)
        #expect(run.status == 4)
        let doc = try JSONDecoder().decode(VerifyDocument.self, from: Data(run.stdout))
        #expect(doc.entries.count == 1)
        #expect(doc.entries[0].status == "fail")
        #expect(doc.entries[0].check == nil && doc.entries[0].seconds == nil)
        #expect(doc.entries[0].error?.isEmpty == false)
    }

    @Test func verifyShowsWhatWasChecked() throws {
        let dir = TemporaryDirectory()
        let tree: [String: [UInt8]] = ["a.txt": Array("hello".utf8), "long.txt": textBytes(1000, seed: 2)]
        let cases: [(PackFormat, [String], String)] = [
            // "hello" is under 20 bytes: libzip writes it as AE-2, whose only check is the MAC.
            (.container, [], "gcm+crc"), (.zip, [], "mac"), (.zip, ["--encryption", "zipcrypto"], "crc"),
            (.zip, ["--encryption", "none"], "crc"),
        ]
        for (i, (format, extra, check)) in cases.enumerated() {
            let sub = TemporaryDirectory()
            let pack = try CLITests.pack(tree, in: sub, format: format, extra: extra)
            let run = try CLI.run(["verify", pack], password: Self.password)
            #expect(run.status == 0, "\(i): \(run.stderr)")
            let row = run.text.split(separator: "\n").first { $0.hasSuffix(" a.txt") }.map(String.init) ?? ""
            #expect(row.split(separator: " ").contains(Substring(check)), "\(format) \(extra): \(row)")
            #expect(run.stderr.contains("gcm = "), "a legend explains the CHECK column")
            if format == .zip && extra.isEmpty {
                let long = run.text.split(separator: "\n").first { $0.hasSuffix(" long.txt") } ?? ""
                #expect(long.split(separator: " ").contains("mac+crc"), "AE-1 entry: \(long)")
            }
        }
        _ = dir
        let help = try CLI.run(["verify", "--help"])
        #expect(help.text.contains("gcm+crc"))
    }

    // MARK: - Wide characters in tables

    /// Terminal columns as a terminal shows them: CJK two, combining marks none (test's own rule).
    static func columns(_ text: Substring) -> Int {
        text.unicodeScalars.reduce(0) { n, s in
            switch s.value {
            case 0x0300...0x036F: n
            case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFF00...0xFF60: n + 2
            default: n + 1
            }
        }
    }

    @Test func perfTableLinesUpWithWideCharacters() throws {
        let dir = TemporaryDirectory("perf-wide")
        let body = Array("fifteen bytes!\n".utf8)
        let source = try dir.write(["日本語.txt": body, "abc.txt": body, "cafe\u{301}.txt": body], under: "src")
        let run = try CLI.run(
            ["perf", source.path, "--iterations", "1"], password: Self.password, environment: ["TMPDIR": dir.path])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.text.split(separator: "\n")
        // Every entry row and the header: the SIZE column ("15 B") ends in the same terminal column.
        let rows = lines.filter { $0.contains(".txt") && $0.contains("15 B") }
        #expect(rows.count == 3, "\(run.text)")
        let header = try #require(lines.first { $0.hasPrefix("ENTRY") })
        let headerEnd = Self.columns(header[..<header.range(of: "SIZE")!.upperBound])
        for row in rows {
            let end = Self.columns(row[..<row.range(of: "15 B")!.upperBound])
            #expect(end == headerEnd, "misaligned: \(row)\n\(header)")
        }
    }
}

/// The built binary against hand-made hostile zips (generated here by `ZipBuilder`).
@Suite struct HostileArchiveCLITests {
    /// Attack: two records named dup.txt, the second corrupt. verify used to read only the first
    /// (looked up by path) and print "2 of 2 entries verified".
    @Test func verifyFailsOnADuplicatePathNamingIt() throws {
        let dir = TemporaryDirectory()
        var bytes = ZipBuilder([
            .init("dup.txt", Array("first copy".utf8)), .init("dup.txt", Array("SECOND COPY".utf8)),
        ]).build()
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: Array("SECOND".utf8)) })
        bytes[at] ^= 0x20
        let path = dir.appending("dup.zip").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let run = try CLI.run(["verify", path])
        #expect(run.status == 4, "\(run.stderr)")
        #expect(run.stderr.contains("assetpack: error: dup.txt: 2 entries have this path"), "\(run.stderr)")
        #expect(run.stderr.contains("0 of 2 entries verified"), "\(run.stderr)")
        let extract = try CLI.run(["extract", path, "--into", dir.appending("x").path])
        #expect(extract.status == 4, "\(extract.stderr)")
    }

    /// Attack: a name holding a newline forges a table row; an escape sequence recolours the
    /// terminal. Human output escapes both; --json keeps the exact name. (libzip 1.7.3 passes \n
    /// and \t through but turns other C0 bytes in an unflagged name into CP437 glyphs, and refuses
    /// them in a UTF-8-flagged one; the container keeps any name, so both formats are tried.)
    @Test(.slow, arguments: PackFormat.allCases)
    func controlCharactersInNamesAreEscapedInTablesButExactInJSON(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let forged = "\n         1          1 store    none       00000000 forged.txt"
        let evil = format == .zip ? "a\(forged)\tb" : "a\(forged)\u{1B}[31m"
        let path: String
        if format == .zip {
            path = dir.appending("evil.zip").path
            try Data(ZipBuilder([.init(evil, [1])]).build()).write(to: URL(fileURLWithPath: path))
        } else {
            path = try CLITests.pack([evil: [1]], in: dir, format: .container)
        }
        let escaped = format == .zip ? "a\\n" : "\\u{1B}[31m"
        for command in ["list", "verify"] {
            let run = try CLI.run([command, path], password: CLITests.password)
            #expect(run.status == 0, "\(command): \(run.stderr)")
            #expect(run.text.split(separator: "\n").count == 2, "\(command): a header and one row: \(run.text)")
            #expect(run.text.contains(escaped), "\(command): \(run.text)")
            #expect(
                !run.text.contains("\u{1B}") && !run.text.contains("\t"),
                "\(command): a raw control character on stdout")
            let json = try CLI.run([command, path, "--json"], password: CLITests.password)
            let doc = try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any]
            let entries = doc?["entries"] as? [[String: Any]]
            #expect(entries?.first?["path"] as? String == evil, "\(command) --json keeps the exact name")
        }
        let extract = try CLI.run(["extract", path, "--into", dir.appending("x").path], password: CLITests.password)
        #expect(extract.status == 1)
        #expect(extract.stderr.split(separator: "\n").count == 1, "one line: \(extract.stderr)")
        #expect(extract.stderr.contains("control character"))
    }
}
#endif
