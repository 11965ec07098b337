#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `install URL` and remote reads through the built binary against a hostile server: endless
/// data, slow retrieval, an unsigned pack nothing can check; and the options that set the
/// bounds (docs/REMOTE.md, "Deadlines" and "Bounded downloads").
@Suite(.serialized, .slow) struct UpdateAttackCLITests {
    let dir = TemporaryDirectory("update-attack-cli")

    func pack(_ format: String = "container") throws -> String {
        _ = try dir.write(["a.txt": Array("hello".utf8), "big.bin": testBytes(200_000, seed: 3)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.\(format)").path
        let packed = try CLI.run(
            ["pack", dir.appending("src").path, "-o", out, "--format", format], password: "pw")
        #expect(packed.status == 0, "\(packed.stderr)")
        return out
    }

    /// Serves a pack of `format`, installs it into `home` from the server, then re-packs it with a
    /// `big.bin` of `size` random bytes (the update the test then installs): the server, the URL,
    /// the installed pack's bytes and the re-packed pack's path.
    func installThenUpdate(_ format: String, into home: String, bigBin size: Int, seed: UInt64) throws -> (
        server: FaultyHTTPServer, url: String, old: Data, local: String
    ) {
        let local = try pack(format)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let url = server.url("p.\(format)").absoluteString
        #expect(try CLI.run(["install", url, "--into", home], password: "pw").status == 0)
        let old = try Data(contentsOf: URL(fileURLWithPath: home + "/p.\(format)"))
        _ = try dir.write(["big.bin": testBytes(size, seed: seed)], under: "src")
        #expect(try CLI.run(["pack", dir.appending("src").path, "-o", local], password: "pw").status == 0)
        return (server, url, old, local)
    }

    func leftovers(_ home: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: home)) ?? []).filter { $0 != ".assetpack.lock" }
    }

    @Test func anEndlessServerIsRefusedBeforeAnythingIsWritten() throws {
        _ = try pack()
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.claimSize(8 << 40))
        let url = server.url("p.container").absoluteString
        let home = dir.appending("home").path
        let limited = try CLI.run(["install", url, "--into", home], password: "pw")
        #expect(limited.status == 1, "\(limited.stderr)")
        #expect(limited.stderr.contains("8796093022208 bytes") && limited.stderr.contains("--max-download"))
        #expect(leftovers(home).isEmpty, "\(leftovers(home))")
        let noRoom = try CLI.run(["install", url, "--into", home, "--max-download", "16T"], password: "pw")
        #expect(noRoom.status == 1 && noRoom.stderr.contains("not enough space"), "\(noRoom.stderr)")
        #expect(leftovers(home).isEmpty, "\(leftovers(home))")
        let read = try CLI.run(["cat", url, "a.txt"], password: "pw")
        #expect(read.status == 1 && read.stderr.contains("maxPackSize"), "\(read.stderr)")
        let sent = try server.requests().reduce(0) { $0 + $1.bodyBytes }
        #expect(sent < 1 << 20, "the server sent \(sent) bytes")
        // What `make update-figures` quotes: bytes written under the install directory.
        // (A failed first install removes the folder it made: then nothing at all was written.)
        let written = ((try? FileManager.default.subpathsOfDirectory(atPath: home)) ?? []).reduce(UInt64(0)) {
            $0 + ((try? FileSystem.stat(home + "/" + $1).size) ?? 0)
        }
        #expect(written == 0, "\(written) bytes written")
        print(
            "figure: an endless server (claims 8 TiB): install exit \(limited.status), \(written) bytes written, \(sent) body bytes sent by the server in all"
        )
    }

    /// Writes past the process's file-size limit fail with EFBIG (SIGXFSZ ignored), as on a
    /// file system that cannot hold the pack: exit 1, the download removed, the old pack kept.
    @Test func aFileSizeLimitDuringADownloadLeavesNothingAndKeepsTheOldPack() throws {
        let home = dir.appending("home").path
        let (server, url, old, _) = try installThenUpdate("container", into: home, bigBin: 4_000_000, seed: 4)
        defer { withExtendedLifetime(server) {} }
        let run = try CLI.run(
            [
                "-c", "ulimit -f 1024; trap '' XFSZ; exec \"$0\" install \"$1\" --into \"$2\"", CLI.binary.path, url,
                home,
            ], password: "pw", executable: "/bin/sh")
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("File too large"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home + "/p.container")) == old)
        #expect(leftovers(home).sorted() == [".p.container.install", "p.container"], "\(leftovers(home))")
    }

    /// A server that gzips its 206 answers (`Content-Encoding: gzip`) while an update downloads,
    /// for both formats: refused at each response's head (exit 6, the old pack kept), so nothing
    /// of the encoded bodies is kept for the next install, which succeeds once the server is put
    /// right. (The encoded bytes were taken 1 MiB at a time until the body overran its range and
    /// kept as downloaded: the next install, from a healthy server, exited 4, "does not read back".)
    @Test(arguments: ["container", "zip"])
    func encodedRangesAreRefusedAndNotKeptForTheNextInstall(format: String) throws {
        let home = dir.appending("home-encoded-\(format)").path
        let (server, url, old, local) = try installThenUpdate(format, into: home, bigBin: 6_000_000, seed: 9)

        try server.setFault(.encodeRanges(after: 3))
        let refused = try CLI.run(["install", url, "--into", home], password: "pw")
        #expect(refused.status == 6, "\(refused.status) \(refused.stderr)")
        #expect(refused.stderr.contains("Content-Encoding"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home + "/p.\(format)")) == old)
        try server.setFault(.none)
        let healed = try CLI.run(["install", url, "--into", home], password: "pw")
        #expect(healed.status == 0, "\(healed.status) \(healed.stderr)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: home + "/p.\(format)"))
                == Data(contentsOf: URL(fileURLWithPath: local)))
    }

    /// The default deadline against a server that sends 4 bytes a second: exit 6 after one
    /// rate window (10 s), not minutes.
    @Test func aDrippingServerFailsWithTheDefaultMinimumRate() throws {
        _ = try pack()
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.drip(bytesPerSecond: 4))
        let started = Date()
        let run = try CLI.run(["cat", server.url("p.container").absoluteString, "a.txt"], password: "pw")
        let seconds = Date().timeIntervalSince(started)
        #expect(run.status == 6 && run.stdout.isEmpty, "\(run.stderr)")
        #expect(run.stderr.contains("below the minimum rate of 4096 bytes/s"), "\(run.stderr)")
        #expect(seconds < 25, "took \(seconds) s")
        print(String(format: "figure: a 4 B/s server, default limits: cat exit %d after %.1f s", run.status, seconds))
    }

    @Test func theNetworkOptionsSetTheBounds() throws {
        _ = try pack()
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let url = server.url("p.container").absoluteString
        try server.setFault(.drip(bytesPerSecond: 5 << 10))
        // 5 KiB/s is above the default rate (4 KiB/s) but below a raised one; the open's first
        // request (64 KiB) outlasts the 10 s window.
        let slow = try CLI.run(["cat", url, "a.txt", "--min-rate", "64K"], password: "pw")
        #expect(slow.status == 6 && slow.stderr.contains("minimum rate of 65536"), "\(slow.stderr)")
        let late = try CLI.run(["cat", url, "a.txt", "--request-timeout", "1.5"], password: "pw")
        #expect(late.status == 6 && late.stderr.contains("deadline of 1.5 s"), "\(late.stderr)")
        for bad in [["--max-download", "12Q"], ["--min-rate", "-1"], ["--request-timeout", "0"]] {
            let refused = try CLI.run(["cat", url, "a.txt"] + bad, password: "pw")
            #expect(refused.status == 64, "\(bad): \(refused.stderr)")
        }
    }

    @Test func anUnsignedPackFromAURLNeedsSomethingToCheckItWith() throws {
        _ = try pack("zip")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let url = server.url("p.zip").absoluteString
        let home = dir.appending("home").path
        let refused = try CLI.run(["install", url, "--into", home])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("not signed") && refused.stderr.contains(".sha256"), "\(refused.stderr)")
        #expect(leftovers(home).isEmpty, "\(leftovers(home))")
        let installed = try CLI.run(["install", url, "--into", home], password: "pw")
        #expect(installed.status == 0, "\(installed.stderr)")
    }
}
#endif
