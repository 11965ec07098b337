#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// End-to-end: the built `assetpack` binary, its output and its exit codes.
@Suite struct CLITests {
    static let password = "cli-pass"

    /// Packs `tree` with the CLI and returns the pack's path.
    static func pack(
        _ tree: [String: [UInt8]], in dir: TemporaryDirectory, format: PackFormat = .zip, extra: [String] = []
    ) throws -> String {
        let source = try dir.write(tree, under: "src")
        let output = dir.appending("out.\(format.rawValue)").path
        let run = try CLI.run(
            ["pack", source.path, "--output", output, "--format", format.rawValue] + extra, password: password)
        #expect(run.status == 0, "\(run.stderr)")
        return output
    }

    @Test(arguments: PackFormat.allCases)
    func packListCatRoundTrip(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let pack = try Self.pack(tree, in: dir, format: format)
        for (path, bytes) in tree {
            let run = try CLI.run(["cat", pack, path], password: Self.password)
            #expect(run.status == 0, "\(path): \(run.stderr)")
            #expect(run.stdout == bytes, "\(path)")
        }
        let list = try CLI.run(["list", pack, "--json"], password: Self.password)
        #expect(list.status == 0)
        let doc = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        let entries = try #require(doc?["entries"] as? [[String: Any]])
        #expect(Set(entries.compactMap { $0["path"] as? String }) == Set(tree.keys))
        #expect(doc?["format"] as? String == format.rawValue)
    }

    /// `cat --timing`: the bytes on stdout are unchanged; one line on stderr names the entry,
    /// its size, a decoder and the pack's open time; without the flag, nothing.
    @Test(arguments: PackFormat.allCases)
    func catTimingPrintsOneRecord(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let bytes = testBytes(300_000)
        let pack = try Self.pack(["d/x.bin": bytes], in: dir, format: format)
        let timed = try CLI.run(["cat", pack, "d/x.bin", "--timing"], password: Self.password)
        #expect(timed.status == 0, "\(timed.stderr)")
        #expect(timed.stdout == bytes)
        let lines = timed.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(timed.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.hasPrefix("assetpack: timing: d/x.bin: 300000 bytes in "), "\(line)")
        #expect(line.contains("MiB/s): lookup ") && line.contains(" decrypt "), "\(line)")
        // The open, apart: where a container's key derivation is (scrypt: never 0.00 ms), named.
        let opened = line.split(separator: "; the open before it: ").last.flatMap { Double($0.prefix { $0 != " " }) }
        #expect((opened ?? -1) >= (format == .container ? 0.5 : 0), "\(line)")
        #expect(format == .container ? line.hasSuffix(" ms (scrypt 2^10)") : line.hasSuffix(" ms"), "\(line)")
        let plain = try CLI.run(["cat", pack, "d/x.bin"], password: Self.password)
        #expect(plain.stderr.isEmpty, "\(plain.stderr)")
    }

    @Test func exitCodesFollowTheContract() throws {
        let dir = TemporaryDirectory()
        let pack = try Self.pack(["a.txt": Array("hello".utf8)], in: dir)
        #expect(try CLI.run(["cat", pack, "a.txt"], password: "wrong").status == 2)
        let missing = try CLI.run(["cat", pack, "a.txt"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("password"))
        let notFound = try CLI.run(["cat", pack, "b.txt"], password: Self.password)
        #expect(notFound.status == 3)
        #expect(notFound.stderr.hasPrefix("assetpack: error:"))
        #expect(notFound.stderr.split(separator: "\n").count == 1)
        #expect(try CLI.run(["cat", pack], password: Self.password).status == 64)
        #expect(try CLI.run(["frobnicate"]).status == 64)
        #expect(try CLI.run(["cat", dir.appending("nonexistent").path, "a.txt"]).status == 1)
    }

    @Test func passwordFromFileOrNamedVariable() throws {
        let dir = TemporaryDirectory()
        let pack = try Self.pack(["a.txt": [65]], in: dir)
        try Data("\(Self.password)\n".utf8).write(to: dir.appending("pw"))
        #expect(try CLI.run(["cat", pack, "a.txt", "--password-file", dir.appending("pw").path]).stdout == [65])
        #expect(
            try CLI.run(["cat", pack, "a.txt", "--password-env", "MY_PW"], environment: ["MY_PW": Self.password]).stdout
                == [65])
        // No flag takes the password itself.
        #expect(try CLI.run(["cat", pack, "a.txt", "--password", Self.password]).status == 64)
    }

    @Test func flippedByteInAStoredEntryExits4WithNothingOnStdout() throws {
        let dir = TemporaryDirectory()
        let payload = testBytes(10_000, seed: 11)
        let pack = try Self.pack(["x.bin": payload], in: dir, extra: ["--compression", "store"])
        // The AES ciphertext of a stored entry sits in the middle of this small zip.
        let size = try FileManager.default.attributesOfItem(atPath: pack)[.size] as! Int
        try flipByte(at: size / 2, in: pack, with: 0x04)
        let run = try CLI.run(["cat", pack, "x.bin"], password: Self.password)
        #expect(run.status == 4)
        #expect(run.stdout.isEmpty)
        let verify = try CLI.run(["verify", pack], password: Self.password)
        #expect(verify.status == 4)
        #expect(verify.text.contains("FAIL"))
    }

    @Test func unencryptedZipNeedsNoPassword() throws {
        let dir = TemporaryDirectory()
        let pack = try Self.pack(["a.txt": [1, 2]], in: dir, extra: ["--encryption", "none"])
        #expect(try CLI.run(["cat", pack, "a.txt"]).stdout == [1, 2])
    }

    @Test func zipCryptoWarns() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": [1]], under: "src")
        let run = try CLI.run(
            ["pack", source.path, "-o", dir.appending("z.zip").path, "--encryption", "zipcrypto"],
            password: Self.password)
        #expect(run.status == 0)
        #expect(run.stderr.contains("ZipCrypto is broken"))
    }

    @Test func packErrorsAreClear() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appending("empty"), withIntermediateDirectories: true)
        let empty = try CLI.run(
            ["pack", dir.appending("empty").path, "-o", dir.appending("e.zip").path], password: "p")
        #expect(empty.status == 1)
        #expect(empty.stderr.contains("no files"))
        let noPassword = try CLI.run(["pack", dir.appending("empty").path, "-o", dir.appending("e.zip").path])
        #expect(noPassword.status == 2)
        #expect(noPassword.stderr.contains("a password is needed: set $ASSETPACK_PASSWORD"), "\(noPassword.stderr)")
        // Set but empty (a CI secret that did not expand) is said as such, not "set it".
        let emptyPassword = try CLI.run(
            ["pack", dir.appending("empty").path, "-o", dir.appending("e.zip").path],
            environment: ["ASSETPACK_PASSWORD": ""])
        #expect(emptyPassword.status == 2)
        #expect(emptyPassword.stderr.contains("$ASSETPACK_PASSWORD is set but empty"), "\(emptyPassword.stderr)")
    }

    @Test(arguments: PackFormat.allCases)
    func verifyPrintsEveryEntryWithItsTime(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let pack = try Self.pack(tree, in: dir, format: format)
        let run = try CLI.run(["verify", pack], password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        for path in tree.keys { #expect(run.text.contains(path)) }
        #expect(run.stderr.contains("\(tree.count) of \(tree.count) entries verified"))
    }

    @Test(arguments: PackFormat.allCases)
    func extractWritesVerifiedFiles(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let tree = sampleTree()
        let pack = try Self.pack(tree, in: dir, format: format)
        let out = dir.appending("x")
        let all = try CLI.run(["extract", pack, "--into", out.path], password: Self.password)
        #expect(all.status == 0, "\(all.stderr)")
        for (path, bytes) in tree { #expect(try Data(contentsOf: out.appendingPathComponent(path)) == Data(bytes)) }
        let some = try CLI.run(
            ["extract", pack, "one.bin", "--into", dir.appending("y").path], password: Self.password)
        #expect(some.status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appending("y").path) == ["one.bin"])
        #expect(
            try CLI.run(["extract", pack, "nope", "--into", dir.appending("z").path], password: Self.password).status
                == 3)
    }

    @Test(arguments: PackFormat.allCases)
    func installPrintsThePrivatePath(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let pack = try Self.pack(["a.txt": [1]], in: dir, format: format)
        let run = try CLI.run(["install", pack, "--into", dir.appending("priv").path])
        #expect(run.status == 0, "\(run.stderr)")
        let installed = run.text.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(installed == dir.appending("priv").appendingPathComponent("out.\(format.rawValue)").path)
        var st = stat()
        stat(installed, &st)
        #expect(st.st_mode & 0o777 == 0o600)
        stat(dir.appending("priv").path, &st)
        #expect(st.st_mode & 0o777 == 0o700)
        let again = try CLI.run(["install", pack, "--into", dir.appending("priv").path])
        #expect(again.status == 0)
        #expect(again.stderr.contains("already installed"))
        let xdg = try CLI.run(
            ["install", pack, "--app-id", "com.example.t"], environment: ["XDG_DATA_HOME": dir.appending("xdg").path])
        #expect(xdg.text.hasPrefix(dir.appending("xdg/com.example.t").path))
        let notAPack = dir.appending("junk")
        try Data(testBytes(100)).write(to: notAPack)
        #expect(try CLI.run(["install", notAPack.path, "--into", dir.appending("priv2").path]).status == 1)
    }

    /// `cat -o` to a device, FIFO or socket writes into it; it must never rename a temporary
    /// file over it (as root, `cat -o /dev/null` once replaced /dev/null with a regular file).
    /// A FIFO stands in for /dev/null here, so a regression cannot damage the machine.
    /// `pack` and `keygen`, which need a file to rename into place, refuse such a target.
    @Test(.slow, arguments: PackFormat.allCases)
    func outputToAFIFOIsWrittenIntoNotReplaced(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let bytes = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }  // fits a pipe's buffer
        let pack = try Self.pack(["a.bin": bytes], in: dir, format: format)
        let fifo = dir.appending("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // Open the read end first (non-blocking) so the writer's open does not wait for a reader.
        let readEnd = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(readEnd >= 0)
        defer { close(readEnd) }
        let run = try CLI.run(["cat", pack, "a.bin", "-o", fifo], password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        #expect(received.count == bytes.count && received == bytes, "\(received.count) bytes through the FIFO")
        #expect(Self.isFIFO(fifo), "the FIFO was replaced")

        // A name of a descriptor that is a regular file (`-o /dev/stdout` with stdout redirected
        // to a file) is written through the descriptor, not replaced, and a `>>` stays an
        // append. /proc/self/fd/1 stands in for /dev/stdout.
        let redirected = dir.appending("stdout").path
        try Data("HEAD".utf8).write(to: URL(fileURLWithPath: redirected))
        let shell = try CLI.run(
            ["-c", "exec \"$0\" cat \"$1\" a.bin -o /proc/self/fd/1 >> \"$2\"", CLI.binary.path, pack, redirected],
            password: Self.password, executable: "/bin/sh")
        #expect(shell.status == 0, "\(shell.stderr)")
        #expect(FileManager.default.contents(atPath: redirected) == Data("HEAD".utf8) + Data(bytes))

        for arguments in [
            ["pack", dir.appending("src").path, "--output", fifo, "--format", format.rawValue],
            ["keygen", "--out", dir.appending("k").path, "--force"],
        ] {
            if arguments[0] == "keygen" { #expect(mkfifo(dir.appending("k.pub").path, 0o600) == 0) }
            let refused = try CLI.run(arguments, password: Self.password)
            #expect(refused.status == 64 || refused.status == 1, "\(arguments[0]): \(refused.stderr)")
            #expect(refused.stderr.contains("not a regular file"), "\(arguments[0]): \(refused.stderr)")
        }
        #expect(Self.isFIFO(fifo), "pack replaced the FIFO")
        #expect(Self.isFIFO(dir.appending("k.pub").path), "keygen replaced the FIFO")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("k.key").path))
    }

    static func isFIFO(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFIFO
    }
}
#endif
