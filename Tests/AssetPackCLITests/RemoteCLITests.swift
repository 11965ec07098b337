#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// URLs wherever the CLI takes a pack, through the built binary against a real nginx: the same
/// bytes as local reads, exit 6 for a failing server, 4 for corrupt bytes, and `install URL`.
@Suite(.serialized, .slow) struct RemoteCLITests {
    let dir = TemporaryDirectory("remote-cli")
    let tree: [String: [UInt8]] = [
        "a.txt": Array("hello, remote world".utf8), "img/big.bin": testBytes(300_000, seed: 4),
        "img/small.bin": testBytes(4096, seed: 5), "empty": [],
    ]

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    /// A signed pack of `format` in `www/`, and the publisher's public key file.
    func setUp(_ format: String) throws -> (pack: String, pub: String) {
        _ = try dir.write(tree, under: "src")
        #expect(try run(["keygen", "--out", dir.appending("k").path]).status == 0)
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.\(format)").path
        let pack = try run([
            "pack", dir.appending("src").path, "-o", out, "--format", format, "--sign-key", dir.appending("k.key").path,
        ])
        #expect(pack.status == 0, "\(pack.stderr)")
        return (out, dir.appending("k.pub").path)
    }

    @Test(arguments: ["zip", "container"])
    func everyReadingCommandTakesAURL(format: String) throws {
        let (local, pub) = try setUp(format)
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.\(format)").absoluteString

        let list = try run(["list", url, "--trust", pub])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.text == (try run(["list", local])).text)
        for (path, bytes) in tree {
            let cat = try run(["cat", url, path, "--trust", pub, "--timing"])
            #expect(cat.status == 0 && cat.stdout == bytes, "\(path): \(cat.stderr)")
            #expect(cat.stderr.hasPrefix("assetpack: timing: \(path): \(bytes.count) bytes in "), "\(cat.stderr)")
        }
        let into = dir.appending("out-\(format)").path
        let extract = try run(["extract", url, "--into", into])
        #expect(extract.status == 0, "\(extract.stderr)")
        for (path, bytes) in tree {
            #expect(FileManager.default.contents(atPath: into + "/" + path).map { [UInt8]($0) } == bytes, "\(path)")
        }
        let verify = try run(["verify", url, "--trust", pub])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.text.contains("sig+"), "\(verify.text)")
        let perf = try run(["perf", "--pack", url, "--pack", local, "--iterations", "1"])
        #expect(perf.status == 0, "\(perf.stderr)")
        #expect(perf.text.contains("\(format == "zip" ? "zip" : "container")-remote"), "\(perf.text)")
    }

    @Test func serverFailuresExitSixAndCorruptBytesExitFour() throws {
        let (local, pub) = try setUp("container")
        let plain = try NginxServer(root: dir.appending("www"), allowRanges: false)
        let refused = try run(["cat", plain.url("p.container").absoluteString, "a.txt"])
        #expect(refused.status == 6 && refused.stdout.isEmpty, "\(refused.stderr)")
        #expect(refused.stderr.contains("ignores Range"), "\(refused.stderr)")
        let missing = try run(["list", plain.url("nothing.container").absoluteString])
        #expect(missing.status == 6 && missing.stderr.contains("404"), "\(missing.stderr)")
        // install takes the whole file from it, signed and checked, and says what that costs.
        let whole = try run(["install", plain.url("p.container").absoluteString, "--into", dir.appending("w").path])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(
            whole.stderr.contains("(the server ignores Range requests: no delta update and no resume from it)"),
            "\(whole.stderr)")
        let withRanges = try NginxServer(root: dir.appending("www"))
        let ranged = try run([
            "install", withRanges.url("p.container").absoluteString, "--into", dir.appending("r").path,
        ])
        #expect(ranged.status == 0 && !ranged.stderr.contains("ignores Range"), "\(ranged.stderr)")

        let faulty = try FaultyHTTPServer(root: dir.appending("www"))
        // Flip a byte in the middle of the pack: inside img/big.bin's chunks.
        let size = try FileSystem.stat(local).size
        try faulty.setFault(.corruptByte(offsetInFile: Int(size / 2)))
        let corrupt = try run(["cat", faulty.url("p.container").absoluteString, "img/big.bin"])
        #expect(corrupt.status == 4 && corrupt.stdout.isEmpty, "\(corrupt.stderr)")
        // Installed with --trust: exit 5, and the message says which download failed and why,
        // as it does without --trust.
        let url = faulty.url("p.container").absoluteString
        let home = dir.appending("home").path
        let trusted = try run(["install", url, "--into", home, "--trust", pub])
        #expect(trusted.status == 5, "\(trusted.status) \(trusted.stderr)")
        #expect(
            trusted.stderr.contains("the pack downloaded from \(url)")
                && trusted.stderr.contains("changed on the server during the download"), "\(trusted.stderr)")
        let untrusted = try run(["install", url, "--into", home])
        #expect(untrusted.status == 4 && untrusted.stderr.contains(url), "\(untrusted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/p.container"))
    }

    /// An `install URL` of a 6 MB container from nginx at 1 MB/s per response, started and
    /// followed until its download file appears: long enough to be killed in the middle.
    /// Its stderr goes to `stderr` (or nowhere).
    func startSlowInstall(seed: UInt64, stderr: Pipe? = nil) throws -> (
        process: Process, url: String, home: URL, out: String, staging: String, nginx: NginxServer
    ) {
        _ = try dir.write(["big.bin": testBytes(6_000_000, seed: seed), "a.txt": Array("a".utf8)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.container").path
        #expect(try run(["pack", dir.appending("src").path, "-o", out, "--format", "container"]).status == 0)
        let nginx = try NginxServer(root: dir.appending("www"), rateLimit: 1 << 20)
        let url = nginx.url("p.container").absoluteString
        let home = dir.appending("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["install", url, "--into", home.path]
        process.environment = ProcessInfo.processInfo.environment.merging(["ASSETPACK_PASSWORD": "pw"]) { $1 }
        process.standardError = stderr ?? FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let staging = home.appendingPathComponent(".p.container.download").path
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning, !FileManager.default.fileExists(atPath: staging) {
            usleep(20_000)
        }
        #expect(FileManager.default.fileExists(atPath: staging), "the download never started")
        return (process, url, home, out, staging, nginx)
    }

    /// The install directory holds the installed pack and its records, nothing else.
    func expectInstalled(_ install: (url: String, home: URL, out: String)) throws {
        let again = try run(["install", install.url, "--into", install.home.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            FileManager.default.contents(atPath: install.home.appendingPathComponent("p.container").path)
                == FileManager.default.contents(atPath: install.out))
        let left = try FileManager.default.contentsOfDirectory(atPath: install.home.path).sorted()
        #expect(left == [".assetpack.lock", ".p.container.install", "p.container"], "\(left)")
    }

    @Test func aKilledInstallLeavesNothingTornAndTheNextOneCompletes() throws {
        let install = try startSlowInstall(seed: 8)
        usleep(300_000)
        kill(install.process.processIdentifier, SIGKILL)
        install.process.waitUntilExit()
        #expect(!FileManager.default.fileExists(atPath: install.home.appendingPathComponent("p.container").path))
        try expectInstalled((install.url, install.home, install.out))
    }

    /// Ctrl-C (SIGINT) during `install URL` keeps what arrived, recorded, and says so: the same
    /// install then resumes it. (It left the bytes unrecorded before the first 32 MiB save, so
    /// the next install downloaded everything again.)
    @Test func ctrlCDuringAnInstallKeepsTheDownloadToResume() throws {
        let stderr = Pipe()
        let install = try startSlowInstall(seed: 9, stderr: stderr)
        usleep(1_200_000)
        kill(install.process.processIdentifier, SIGINT)
        let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        install.process.waitUntilExit()
        #expect(install.process.terminationReason == .uncaughtSignal && install.process.terminationStatus == SIGINT)
        #expect(
            said.contains("interrupted: nothing was installed; the same install goes on from what was downloaded"),
            "\(said)")
        #expect(FileManager.default.fileExists(atPath: install.staging + ".json"), "no progress record")
        #expect(!FileManager.default.fileExists(atPath: install.home.appendingPathComponent("p.container").path))

        let again = try run(["install", install.url, "--into", install.home.path])
        #expect(again.status == 0, "\(again.stderr)")
        let resumed = again.stderr.firstMatch(of: /resumed (\d+) bytes/).flatMap { UInt64($0.1) } ?? 0
        #expect(resumed > 500_000, "\(again.stderr)")
        try expectInstalled((install.url, install.home, install.out))
    }

    /// A wrong password for an unsigned container from a URL is found from its header and index,
    /// before the download (it was found after downloading all of it), and the message names the URL.
    @Test func aWrongPasswordIsFoundBeforeTheDownload() throws {
        _ = try dir.write(["big.bin": testBytes(3_000_000, seed: 10)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/u.container").path
        #expect(try run(["pack", dir.appending("src").path, "-o", out, "--format", "container"]).status == 0)
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("u.container").absoluteString
        let home = dir.appending("home").path
        let wrong = try CLI.run(["install", url, "--into", home], password: "not it")
        #expect(wrong.status == 2, "\(wrong.status) \(wrong.stderr)")
        #expect(wrong.stderr.contains(url) && wrong.stderr.contains("nothing was downloaded"), "\(wrong.stderr)")
        let sent = try nginx.accessLog().reduce(0) { $0 + $1.bodyBytes }
        #expect(sent < 300_000, "\(sent) bytes sent for a refused install")
        #expect(!FileManager.default.fileExists(atPath: home + "/u.container"))
        #expect(try run(["install", url, "--into", home]).status == 0)
    }

    /// libcurl is loaded when a URL is first opened, not at process start (docs/PERFORMANCE.md,
    /// "Process start"): a local read loads none of it, a remote one does (the dynamic loader's own
    /// record, `LD_DEBUG=files`); and a libcurl that cannot be loaded is a remote failure, exit 6,
    /// whose message names the library and what to install.
    @Test func libcurlIsLoadedForURLsOnly() throws {
        let (local, _) = try setUp("container")
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.container").absoluteString
        let trace = ["LD_DEBUG": "files"]
        let here = try CLI.run(["cat", local, "a.txt"], password: "pw", environment: trace)
        #expect(here.status == 0 && here.stdout == tree["a.txt"], "\(here.stderr)")
        #expect(here.stderr.contains("file=libc.so"), "LD_DEBUG gave no record: \(here.stderr.prefix(300))")
        #expect(!here.stderr.contains("libcurl"), "a local read loaded libcurl")
        let there = try CLI.run(["cat", url, "a.txt"], password: "pw", environment: trace)
        #expect(there.status == 0 && there.stdout == tree["a.txt"], "\(there.stderr.suffix(300))")
        #expect(there.stderr.contains("file=libcurl.so"), "a remote read did not load libcurl")
        let requests = try nginx.accessLog().count

        let missing = dir.appending("no-such-libcurl.so").path
        let without = try CLI.run(["cat", url, "a.txt"], password: "pw", environment: ["ASSETPACK_LIBCURL": missing])
        #expect(without.status == 6 && without.stdout.isEmpty, "\(without.status) \(without.stderr)")
        #expect(
            without.stderr.contains("remote packs need libcurl") && without.stderr.contains(missing)
                && without.stderr.contains("apt-get install libcurl4"), "\(without.stderr)")
        #expect(try nginx.accessLog().count == requests, "a read without libcurl reached the server")
    }

    @Test func installTakesAURL() throws {
        let (local, pub) = try setUp("zip")
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.zip").absoluteString
        let home = dir.appending("home").path
        let first = try run(["install", url, "--into", home, "--trust", pub])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.text == home + "/p.zip\n")
        #expect(
            first.stderr.contains("downloaded") && first.stderr.contains("signed by trusted key"), "\(first.stderr)")
        #expect(FileManager.default.contents(atPath: home + "/p.zip") == FileManager.default.contents(atPath: local))
        let again = try run(["install", url, "--into", home, "--trust", pub])
        #expect(again.status == 0 && again.stderr.contains("already installed"), "\(again.stderr)")
        let stranger = try run(["keygen", "--out", dir.appending("other").path])
        #expect(stranger.status == 0)
        let untrusted = try run([
            "install", url, "--into", dir.appending("home2").path, "--trust", dir.appending("other.pub").path,
        ])
        #expect(untrusted.status == 5, "\(untrusted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home2/p.zip").path))
    }

    /// A signed pack with bytes after its end, as an interrupted re-pack of a container leaves
    /// them: a local container reads (its slot says where it ends, FORMAT.md), a zip does not
    /// (its end record must end the file); a trusted install from the file refuses both (it
    /// copied a container's extra bytes before). From a URL both are refused before the download (the
    /// server's size is not the signed one; a zip's directory is not found), and for a container
    /// the message says where such bytes come from.
    @Test(arguments: ["zip", "container"])
    func aSignedPackWithBytesAfterItsEndFromAURLSaysWhy(format: String) throws {
        let (local, pub) = try setUp(format)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: local))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.\(format)").absoluteString
        // From a file, too (the bytes were copied into the private folder before).
        let fromFile = try run(["install", local, "--into", dir.appending("from-file").path, "--trust", pub])
        #expect(fromFile.status == 4, "\(fromFile.stderr)")
        let fromURL = try run(["install", url, "--into", dir.appending("from-url").path, "--trust", pub])
        #expect(fromURL.status == 4, "\(fromURL.status) \(fromURL.stderr)")
        if format == "container" {
            #expect(fromURL.stderr.contains("1 byte after the signed end"), "\(fromURL.stderr)")
            #expect(fromURL.stderr.contains("the next re-pack cuts them"), "\(fromURL.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("from-url/p.\(format)").path))
    }

    /// On a pseudo-terminal (util-linux `script`), `install URL` draws a progress line before its
    /// summary, in bytes and the binary units the rest of the CLI uses (it read "0/0 MiB  0.3/0.3
    /// MB": a count in MiB, then bytes in MB); `--quiet` draws nothing.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "util-linux script is not installed"))
    func installShowsProgressOnATerminal() throws {
        _ = try setUp("container")
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.container").absoluteString
        func onTerminal(_ home: String, _ extra: String) throws -> String {
            let command = "'\(CLI.binary.path)' install '\(url)' --into '\(dir.appending(home).path)' \(extra)"
            let run = try CLI.run(["-qec", command, "/dev/null"], password: "pw", executable: "/usr/bin/script")
            #expect(run.status == 0, "\(run.stderr)")
            return run.text
        }
        let screen = try onTerminal("tty", "")
        #expect(screen.contains("\r["), "no progress line: \(screen.debugDescription)")
        #expect(screen.contains(" KiB  p.container"), "\(screen.debugDescription)")
        #expect(!screen.contains(" MB") && !screen.contains("MiB  0."), "\(screen.debugDescription)")
        #expect(screen.contains("downloaded"), "\(screen.debugDescription)")
        let quiet = try onTerminal("tty-quiet", "--quiet")
        #expect(!quiet.contains("\r[") && !quiet.contains("downloaded"), "\(quiet.debugDescription)")
    }
}
#endif
