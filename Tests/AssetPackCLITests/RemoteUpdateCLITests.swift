#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `install URL` and remote reads as a user meets them, through the built binary against a real
/// nginx: an unsigned container update downloads only what changed, whichever way the secret is
/// given; no read leaves a copy of fetched bytes in `$TMPDIR`; a FIFO at the destination is
/// refused as a local install refuses it.
@Suite(.serialized, .slow) struct RemoteUpdateCLITests {
    let dir = TemporaryDirectory("remote-update-cli")

    /// The secret as a user gives it: `--password-file`, `--key-file`, `$ASSETPACK_PASSWORD` or `--password-env`.
    func secret(_ kind: String) throws -> (arguments: [String], password: String?, environment: [String: String]) {
        switch kind {
        case "--password-file":
            try Data("s3cret-file\n".utf8).write(to: dir.appending("pw.txt"))
            return (["--password-file", dir.appending("pw.txt").path], nil, [:])
        case "--key-file":
            try Data(testBytes(32, seed: 77)).write(to: dir.appending("pack.key"))
            return (["--key-file", dir.appending("pack.key").path], nil, [:])
        case "--password-env":
            return (["--password-env", "MY_PACK_PASSWORD"], nil, ["MY_PACK_PASSWORD": "s3cret-env"])
        default:
            return ([], "s3cret-default", [:])
        }
    }

    /// The new user's walk-through of issue 22: pack, serve, install, change one file (its size
    /// too, so that every later entry and the index move), re-pack to the same output, install
    /// again. Unchanged entries are copied from the installed pack, not downloaded.
    @Test(arguments: ["--password-file", "--key-file", "ASSETPACK_PASSWORD", "--password-env"])
    func anUnsignedContainerUpdateDownloadsOnlyWhatChanged(credential: String) throws {
        let (secretArguments, password, environment) = try secret(credential)
        func run(_ arguments: [String]) throws -> CLI.Run {
            try CLI.run(arguments + secretArguments, password: password, environment: environment)
        }
        var tree: [String: [UInt8]] = [
            "big/one.bin": testBytes(2_000_000, seed: 1), "big/two.bin": testBytes(2_000_000, seed: 2),
            "levels/a.txt": Array("version 1\n".utf8), "text/notes.txt": textBytes(300_000, seed: 3),
        ]
        let src = try dir.write(tree, under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.apack")
        let pack = { try run(["pack", src.path, "--format", "container", "-o", out.path]) }
        let first = try pack()
        #expect(first.status == 0, "\(first.stderr)")
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("p.apack").absoluteString
        let home = dir.appending("home").path
        let v1 = try run(["install", url, "--into", home])
        #expect(v1.status == 0, "\(v1.stderr)")

        tree["levels/a.txt"] = Array("version 2, a few bytes longer\n".utf8)
        try dir.write(["levels/a.txt": tree["levels/a.txt"]!], under: "src")
        let second = try pack()
        #expect(second.status == 0, "\(second.stderr)")
        // nginx's ETag is the mtime in seconds and the size: a version of its own either way.
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(20)], ofItemAtPath: out.path)
        let size = try FileSystem.stat(out.path).size

        let v2 = try run(["install", url, "--into", home])
        #expect(v2.status == 0, "\(v2.stderr)")
        #expect(
            FileManager.default.contents(atPath: home + "/p.apack") == FileManager.default.contents(atPath: out.path))
        let (downloaded, reused) = try #require(Self.summary(v2.stderr), "\(v2.stderr)")
        #expect(reused > size * 9 / 10, "reused \(reused) of \(size): \(v2.stderr)")
        #expect(downloaded < size / 10, "downloaded \(downloaded) of \(size): \(v2.stderr)")
        for (path, bytes) in tree {
            let cat = try run(["cat", home + "/p.apack", path])
            let same = cat.stdout == bytes  // a Bool: a failure does not print every byte
            #expect(cat.status == 0 && same, "\(path): \(cat.stderr)")
        }
    }

    /// `downloaded N bytes in R requests, reused M bytes` from install's summary.
    static func summary(_ stderr: String) -> (downloaded: UInt64, reused: UInt64)? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.contains("downloaded") }) else { return nil }
        let words = line.split(separator: " ")
        guard let d = words.firstIndex(of: "downloaded"), let r = words.firstIndex(of: "reused"),
            d + 1 < words.count, r + 1 < words.count,
            let downloaded = UInt64(words[d + 1]), let reused = UInt64(words[r + 1])
        else { return nil }
        return (downloaded, reused)
    }

    /// A remote read keeps fetched bytes in a 0600 file in a private folder of `$TMPDIR`: after
    /// the command, whether it succeeded or failed, nothing of it is left. (Streamed reads fetch
    /// on threads of their own, which may still be winding down when the command ends.)
    @Test func remoteReadsLeaveNothingInTheTemporaryDirectory() throws {
        let tree: [String: [UInt8]] = [
            "a.txt": Array("hello".utf8), "big.bin": testBytes(6_000_000, seed: 9),
            "mid.bin": testBytes(700_000, seed: 10),
        ]
        let src = try dir.write(tree, under: "src")
        #expect(try CLI.run(["keygen", "--out", dir.appending("k").path]).status == 0)
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        for format in ["container", "zip"] {
            let pack = try CLI.run(
                [
                    "pack", src.path, "-o", dir.appending("www/p.\(format)").path, "--format", format,
                    "--sign-key", dir.appending("k.key").path,
                ], password: "pw")
            #expect(pack.status == 0, "\(pack.stderr)")
        }
        let nginx = try NginxServer(root: dir.appending("www"))
        let tmp = dir.appending("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let pub = dir.appending("k.pub").path
        var left: [String] = []
        for round in 0..<8 {
            for format in ["container", "zip"] {
                let url = nginx.url("p.\(format)").absoluteString
                let runs: [([String], String?, Int32)] = [
                    (["cat", url, "big.bin", "-o", "/dev/null"], "pw", 0),
                    (["cat", url, "mid.bin", "-o", "/dev/null"], "pw", 0),
                    (["verify", url, "--trust", pub], "pw", 0),
                    (["cat", url, "no-such-entry"], "pw", 3),
                    (["cat", url, "big.bin", "-o", "/dev/null"], "wrong", 2),
                ]
                for (arguments, password, status) in runs {
                    let run = try CLI.run(arguments, password: password, environment: ["TMPDIR": tmp.path])
                    #expect(run.status == status, "\(arguments): \(run.stderr)")
                    let found = try FileManager.default.subpathsOfDirectory(atPath: tmp.path)
                    if !found.isEmpty {
                        left.append("round \(round) \(arguments[0]) \(format) \(arguments[2]): \(found)")
                        for name in try FileManager.default.contentsOfDirectory(atPath: tmp.path) {
                            try FileManager.default.removeItem(at: tmp.appendingPathComponent(name))
                        }
                    }
                }
            }
        }
        #expect(left.isEmpty, "\(left.count) runs left files in TMPDIR:\n\(left.joined(separator: "\n"))")
    }

    /// Ctrl-C in the middle of a remote read: the command dies of the signal, and its mirror
    /// file and folder in `$TMPDIR` go with it.
    @Test func anInterruptedRemoteReadLeavesNothingInTheTemporaryDirectory() throws {
        _ = try dir.write(["big.bin": testBytes(6_000_000, seed: 11)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.container").path
        #expect(
            try CLI.run(["pack", dir.appending("src").path, "-o", out, "--format", "container"], password: "pw")
                .status == 0)
        // 1 MB/s per response: the read lasts long enough to be interrupted in the middle.
        let nginx = try NginxServer(root: dir.appending("www"), rateLimit: 1 << 20)
        let tmp = dir.appending("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["cat", nginx.url("p.container").absoluteString, "big.bin", "-o", "/dev/null"]
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = tmp.path
        environment["ASSETPACK_PASSWORD"] = "pw"
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        var sawMirror = false
        while Date() < deadline, process.isRunning, !sawMirror {
            sawMirror =
                (try? FileManager.default.subpathsOfDirectory(atPath: tmp.path))?.contains { $0.hasSuffix("/pack") }
                == true
            usleep(20_000)
        }
        usleep(500_000)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(sawMirror)
        #expect(process.terminationReason == .uncaughtSignal, "it finished before the interrupt")
        let left = try FileManager.default.subpathsOfDirectory(atPath: tmp.path)
        #expect(left.isEmpty, "left in TMPDIR: \(left)")
    }

    /// A remote read that finishes leaves nothing in `$TMPDIR`. A mirror that a killed process
    /// left (SIGKILL, a crash: no chance to clean up) is named, as every temporary of ours, for
    /// its host and process, and the next remote read removes it; one of a live process stays.
    @Test func aFinishedRemoteReadLeavesNothingAndSweepsWhatAKilledOneLeft() throws {
        _ = try dir.write(["a.txt": Array("remote".utf8)], under: "src-sweep")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/sweep.container").path
        #expect(
            try CLI.run(["pack", dir.appending("src-sweep").path, "-o", out, "--format", "container"], password: "pw")
                .status == 0)
        let nginx = try NginxServer(root: dir.appending("www"))
        let tmp = dir.appending("tmp-sweep")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        func mirror(of pid: Int32) throws -> String {
            let name = AtomicFile.temporaryPrefix + AtomicFile.hostTag + "-\(pid)-" + UUID().uuidString
            try dir.write(["pack": [1, 2, 3]], under: "tmp-sweep/\(name)")
            return name
        }
        _ = try mirror(of: gone.processIdentifier)
        let live = try mirror(of: getpid())
        let cat = try CLI.run(
            ["cat", nginx.url("sweep.container").absoluteString, "a.txt"], password: "pw",
            environment: ["TMPDIR": tmp.path])
        #expect(cat.status == 0 && cat.stdout == Array("remote".utf8), "\(cat.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path) == [live])
    }

    /// A FIFO (or device) where the pack is to be installed: `install URL` refuses it before it
    /// downloads anything, with the local install's message and exit code, and leaves it be.
    @Test func aFIFOAtTheDestinationIsRefusedAsALocalInstallRefusesIt() throws {
        _ = try dir.write(["a.txt": Array("a".utf8)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.container").path
        #expect(
            try CLI.run(["pack", dir.appending("src").path, "-o", out, "--format", "container"], password: "pw").status
                == 0)
        let nginx = try NginxServer(root: dir.appending("www"))
        let home = dir.appending("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let fifo = home.appendingPathComponent("p.container").path
        #expect(mkfifo(fifo, 0o600) == 0)

        let local = try CLI.run(["install", out, "--into", home.path], password: "pw")
        let remote = try CLI.run(
            ["install", nginx.url("p.container").absoluteString, "--into", home.path], password: "pw")
        #expect(local.status != 0 && local.stderr.contains("not a regular file"), "\(local.stderr)")
        #expect(remote.status == local.status, "remote \(remote.status), local \(local.status): \(remote.stderr)")
        #expect(remote.stderr == local.stderr)
        #expect(CLITests.isFIFO(fifo), "the remote install replaced the FIFO")
        let names = try FileManager.default.contentsOfDirectory(atPath: home.path)
        #expect(!names.contains(".p.container.download"), "it downloaded before refusing: \(names)")
    }

    /// A zip with a stub in front (what `zip -A` leaves) reads over HTTP as it reads from disk.
    @Test func aZipWithAStubInFrontReadsFromAURL() throws {
        var builder = ZipBuilder([.init("a.txt", Array("alpha".utf8)), .init("d/b.bin", testBytes(9000, seed: 5))])
        builder.prefix = Array("#!/bin/sh\nexit 0\n".utf8) + testBytes(2000, seed: 6)
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        try builder.write(to: dir.appending("www/sfx.zip"))
        let nginx = try NginxServer(root: dir.appending("www"))
        let url = nginx.url("sfx.zip").absoluteString
        let list = try CLI.run(["list", url])
        #expect(list.status == 0 && list.text.contains("d/b.bin"), "\(list.stderr)")
        let cat = try CLI.run(["cat", url, "d/b.bin"])
        let same = cat.stdout == testBytes(9000, seed: 5)
        #expect(cat.status == 0 && same, "\(cat.stderr)")
        // Something that is neither still says so.
        try Data(testBytes(5000, seed: 7)).write(to: dir.appending("www/noise.bin"))
        let noise = try CLI.run(["list", nginx.url("noise.bin").absoluteString])
        #expect(
            noise.status == 1 && noise.stderr.contains("not an AssetPack container or a zip archive"), "\(noise.stderr)"
        )
    }
}
#endif
