#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// A real HTTP server the tests can start.
enum RealServer: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case nginx, apache, lighttpd

    var testDescription: String { rawValue }

    var binary: String {
        switch self {
        case .nginx: NginxServer.binary
        case .apache: ApacheServer.binary
        case .lighttpd: LighttpdServer.binary
        }
    }

    var package: String {
        switch self {
        case .nginx: "nginx-light"
        case .apache: "apache2"
        case .lighttpd: "lighttpd"
        }
    }

    /// A running server: how to make a URL, and how to stop it.
    struct Running {
        var url: (String) -> URL
        var stop: () -> Void
    }

    /// Starts the server on `root`. When its binary is missing the test is skipped (cancelled) with
    /// a message saying what to install, except in CI (`CI=true`), where that is a failure.
    func start(root: URL) throws -> Running {
        if !FileManager.default.isExecutableFile(atPath: binary) {
            let message = "\(rawValue) is not installed (\(binary)); apt-get install \(package), or make test-deps"
            if ProcessInfo.processInfo.environment["CI"] == "true" { throw HTTPTestServerError("CI: " + message) }
            try Test.cancel(Comment(rawValue: "skipped: " + message))
        }
        switch self {
        case .nginx:
            let server = try NginxServer(root: root)
            return Running(url: server.url, stop: server.stop)
        case .apache:
            let server = try ApacheServer(root: root)
            return Running(url: server.url, stop: server.stop)
        case .lighttpd:
            let server = try LighttpdServer(root: root)
            return Running(url: server.url, stop: server.stop)
        }
    }
}

/// The remote commands end to end, through the built binary, against every real server the tests
/// start (nginx, Apache httpd, lighttpd), and against servers that cap or ignore ranges
/// (docs/REMOTE.md, "Servers").
@Suite(.serialized, .slow) struct ServerConformanceTests {
    let dir = TemporaryDirectory("servers")

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    func tree(changed: Bool = false) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [
            "a.txt": Array("hello, servers".utf8), "img/big.bin": testBytes(1_500_000, seed: 4),
            "img/small.bin": testBytes(4096, seed: 5), "empty": [],
        ]
        for i in 0..<10 { files["s/\(i).bin"] = testBytes(20_000, seed: UInt64(10 + i)) }
        if changed {
            files["s/3.bin"] = testBytes(20_000, seed: 999)
            files["new.txt"] = Array("added in v2".utf8)
        }
        return files
    }

    /// Packs `files` (signed container) straight to `www/p.container`, as a CI pipeline publishes,
    /// and makes its mtime "now": the next request comes within the second that follows a change.
    func publish(_ files: [String: [UInt8]]) throws -> URL {
        let source = dir.appending("src")
        try? FileManager.default.removeItem(at: source)
        _ = try dir.write(files, under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.container")
        let pack = try run([
            "pack", source.path, "-o", out.path, "--format", "container", "--sign-key", dir.appending("k.key").path,
        ])
        #expect(pack.status == 0, "\(pack.stderr)")
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: out.path)
        return out
    }

    /// list, cat, verify, install, an install that is current, a delta update; each install right
    /// after a (re-)publish, when Apache's validators are weak.
    @Test(arguments: RealServer.allCases)
    func remoteCommandsWorkAgainst(server kind: RealServer) throws {
        #expect(try run(["keygen", "--out", dir.appending("k").path]).status == 0)
        let pub = dir.appending("k.pub").path
        let v1 = try publish(tree())
        let server = try kind.start(root: dir.appending("www"))
        defer { server.stop() }
        let url = server.url("p.container").absoluteString
        let home = dir.appending("home").path

        let first = try run(["install", url, "--into", home, "--trust", pub])
        #expect(first.status == 0, "\(kind) install right after publishing: \(first.stderr)")
        #expect(
            FileManager.default.contents(atPath: home + "/p.container") == FileManager.default.contents(atPath: v1.path)
        )

        let list = try run(["list", url, "--trust", pub])
        let localList = try run(["list", v1.path])
        #expect(list.status == 0 && list.text == localList.text, "\(kind): \(list.stderr)")
        for (path, bytes) in tree() {
            let cat = try run(["cat", url, path, "--trust", pub])
            #expect(cat.status == 0 && cat.stdout == bytes, "\(kind) \(path): \(cat.stderr)")
        }
        let verify = try run(["verify", url, "--trust", pub])
        #expect(verify.status == 0 && verify.text.contains("sig+"), "\(kind): \(verify.stderr)")

        // Past the second that makes Apache's validators weak: the install is current.
        Thread.sleep(forTimeInterval: 1.2)
        let current = try run(["install", url, "--into", home, "--trust", pub])
        #expect(current.status == 0 && current.stderr.contains("already installed"), "\(kind): \(current.stderr)")

        // A new version, installed at once: a delta.
        let v2 = try publish(tree(changed: true))
        let update = try run(["install", url, "--into", home, "--trust", pub])
        #expect(update.status == 0, "\(kind) install right after re-publishing: \(update.stderr)")
        #expect(update.stderr.contains("reused"), "\(kind): \(update.stderr)")
        let installed = FileManager.default.contents(atPath: home + "/p.container")
        #expect(installed == FileManager.default.contents(atPath: v2.path), "\(kind): not the new version")
        if let downloaded = Self.downloaded(update.stderr), let size = installed?.count {
            #expect(downloaded < size / 4, "\(kind): downloaded \(downloaded) of \(size)")
        }
        // The validators went from weak to strong (Apache) meanwhile: still the same version.
        Thread.sleep(forTimeInterval: 1.2)
        let again = try run(["install", url, "--into", home, "--trust", pub])
        #expect(again.status == 0 && again.stderr.contains("already installed"), "\(kind): \(again.stderr)")
    }

    /// The byte count of `assetpack: downloaded N bytes …`.
    static func downloaded(_ stderr: String) -> Int? {
        guard let range = stderr.range(of: "downloaded ") else { return nil }
        return Int(stderr[range.upperBound...].prefix { $0.isNumber })
    }

    /// lighttpd sends no validators for a file type it has no `mimetype.assign` for: refused
    /// clearly, with exit 6 and what to configure.
    @Test func lighttpdWithoutATypeForThePackIsRefusedClearly() throws {
        if !FileManager.default.isExecutableFile(atPath: LighttpdServer.binary) {
            _ = try RealServer.lighttpd.start(root: dir.url)  // skips, or fails in CI
        }
        #expect(try run(["keygen", "--out", dir.appending("k").path]).status == 0)
        _ = try publish(tree())
        let server = try LighttpdServer(root: dir.appending("www"), assignTypes: false)
        let list = try run(["list", server.url("p.container").absoluteString])
        #expect(list.status == 6, "\(list.stderr)")
        #expect(list.stderr.contains("neither ETag nor Last-Modified"), "\(list.stderr)")
    }

    /// A server that answers every range with at most 256 KiB (complete `206`s shorter than asked):
    /// cat and install work, as they would against an uncapped server.
    @Test func aServerThatCapsRangesServesCatAndInstall() throws {
        #expect(try run(["keygen", "--out", dir.appending("k").path]).status == 0)
        let local = try publish(tree())
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .capRanges(bytes: 256 << 10))
        let url = server.url("p.container").absoluteString
        let cat = try run(["cat", url, "img/big.bin"])
        #expect(cat.status == 0 && cat.stdout == tree()["img/big.bin"], "\(cat.stderr)")
        let home = dir.appending("home").path
        let install = try run(["install", url, "--into", home, "--trust", dir.appending("k.pub").path])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(
            FileManager.default.contents(atPath: home + "/p.container")
                == FileManager.default.contents(atPath: local.path))
        // Each response was whole: no request was a retry of a failure.
        let log = try server.requests().filter { $0.uri == "/p.container" }
        #expect(log.allSatisfy { $0.status == 206 && $0.bodyBytes <= 256 << 10 }, "\(log)")
    }

    /// A server without Range support: `install URL` downloads the whole file once, verified as
    /// always; range reads (`cat`, `list`) still exit 6 saying why.
    @Test func aServerWithoutRangeInstallsWithOneDownload() throws {
        #expect(try run(["keygen", "--out", dir.appending("k").path]).status == 0)
        let local = try publish(tree())
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .ignoreRange)
        let url = server.url("p.container").absoluteString
        let cat = try run(["cat", url, "a.txt"])
        #expect(cat.status == 6 && cat.stderr.contains("ignores Range"), "\(cat.stderr)")
        let list = try run(["list", url])
        #expect(list.status == 6 && list.stderr.contains("ignores Range"), "\(list.stderr)")

        let home = dir.appending("home").path
        try server.resetRequests()
        let install = try run(["install", url, "--into", home, "--trust", dir.appending("k.pub").path])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(
            FileManager.default.contents(atPath: home + "/p.container")
                == FileManager.default.contents(atPath: local.path))
        let size = try FileSystem.stat(local.path).size
        let log = try server.requests()
        let whole = log.filter { $0.uri == "/p.container" && $0.range == nil }
        #expect(whole.count == 1 && whole.first?.bodyBytes == Int(size), "\(log)")
        let again = try run(["install", url, "--into", home, "--trust", dir.appending("k.pub").path])
        #expect(again.status == 0 && again.stderr.contains("already installed"), "\(again.stderr)")
        // A download that fails verification is not installed, and not kept.
        let stranger = try run(["keygen", "--out", dir.appending("other").path])
        #expect(stranger.status == 0)
        let untrusted = try run([
            "install", url, "--into", dir.appending("home2").path, "--trust", dir.appending("other.pub").path,
        ])
        #expect(untrusted.status == 5, "\(untrusted.stderr)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dir.appending("home2").path)) ?? []
        #expect(!left.contains("p.container") && !left.contains(".p.container.download"), "\(left)")
    }
}
#endif
