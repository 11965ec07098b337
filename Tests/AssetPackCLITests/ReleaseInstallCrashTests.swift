#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// A release install killed at many points, and a release from nginx, through the built binary.
@Suite(.serialized, .slow) struct ReleaseInstallCrashTests {
    let dir = TemporaryDirectory("release-crash")
    var home: String { dir.appending("home").path }

    init() throws {
        let keygen = try CLI.run(["keygen", "--out", dir.appending("k").path, "--quiet"])
        #expect(keygen.status == 0, "\(keygen.stderr)")
    }

    /// Packs `files` (name → bytes) as `folder/name.pack`, signed with `version`.
    func pack(_ name: String, in folder: String, version: Int, files: [String: [UInt8]]) throws {
        let src = try dir.write(files, under: "src-\(folder)-\(name)")
        let out = dir.appending(folder).appendingPathComponent("\(name).pack")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        let made = try CLI.run([
            "pack", src.path, "-o", out.path, "--encryption", "none", "--compression", "store", "--sign-key",
            dir.appending("k.key").path, "--pack-version", String(version), "--quiet",
        ])
        #expect(made.status == 0, "\(made.stderr)")
    }

    func release(in folder: String, version: Int, packs: [String], name: String? = nil) throws -> String {
        let out = dir.appending(folder).appendingPathComponent("\(name ?? "game").json").path
        let made = try CLI.run(
            ["release"] + packs.map { dir.appending(folder).appendingPathComponent("\($0).pack").path } + [
                "--release-version", String(version), "--sign-key", dir.appending("k.key").path, "-o", out, "--quiet",
            ] + (name.map { ["--release-name", $0] } ?? []))
        #expect(made.status == 0, "\(made.stderr)")
        return out
    }

    /// The installed release, every pack of it checked against the manifest's SHA-256.
    func installedWhole() throws -> UInt64? {
        guard let installed = try PrivateInstaller(directory: URL(fileURLWithPath: home)).installedRelease() else {
            return nil
        }
        for (pack, url) in zip(installed.manifest.packs, installed.packs) {
            #expect(try PrivateInstaller.sha256(of: url.path) == pack.sha256, "pack \(pack.name) torn or mixed")
        }
        return installed.manifest.version
    }

    @Test func aKilledReleaseInstallLeavesThePreviousReleaseWhole() throws {
        for (folder, version, seed) in [("v1", 1, UInt64(10)), ("v2", 2, UInt64(20))] {
            for (i, name) in ["base", "dlc"].enumerated() {
                try pack(
                    name, in: folder, version: version,
                    files: ["\(name).bin": testBytes(12 << 20, seed: seed + UInt64(i))])
            }
        }
        let v1 = try release(in: "v1", version: 1, packs: ["base", "dlc"])
        let v2 = try release(in: "v2", version: 2, packs: ["base", "dlc"])
        #expect(try CLI.run(["install", v1, "--into", home]).status == 0)
        var seen: Set<UInt64> = []
        for delayMs in [0, 3, 10, 25, 50, 80, 120, 180, 260, 400, 600] {
            try CLI.killed(["install", v2, "--into", home], afterMilliseconds: delayMs)
            let version = try installedWhole()
            #expect(version == 1 || version == 2, "after a kill at \(delayMs) ms")
            seen.insert(version ?? 0)
            if version == 2 {
                let back = try CLI.run(["install", v1, "--into", home, "--allow-rollback"])
                #expect(back.status == 0, "\(back.stderr)")
            }
        }
        print(
            "figure: release install killed at 11 points: the installed release was always whole (versions seen: \(seen.sorted()))"
        )
        let finish = try CLI.run(["install", v2, "--into", home])
        #expect(finish.status == 0, "\(finish.stderr)")
        #expect(try installedWhole() == 2)
        // Nothing of v1, of the killed installs or of their temporaries is left.
        let installed = try #require(try PrivateInstaller(directory: URL(fileURLWithPath: home)).installedRelease())
        let expected = Set(installed.packs.map(\.lastPathComponent)).union(
            installed.packs.map { ".\($0.lastPathComponent).install" }
        )
        .union([".assetpack.release", ".assetpack.lock"])
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: home))
        #expect(
            present == expected,
            "left behind: \(present.subtracting(expected)), missing: \(expected.subtracting(present))")
    }

    @Test func aReleaseFromNginxDownloadsOnlyWhatChanged() throws {
        let big = testBytes(2 << 20, seed: 30)
        try pack("base", in: "www", version: 1, files: ["base.bin": testBytes(1 << 20, seed: 31)])
        try pack("patch", in: "www", version: 1, files: ["big.bin": big, "small.txt": Array("one".utf8)])
        let trust = ["--trust", dir.appending("k.pub").path]
        _ = try release(in: "www", version: 1, packs: ["base", "patch"])
        let nginx = try NginxServer(root: dir.appending("www"))
        defer { nginx.stop() }
        let url = nginx.url("game.json").absoluteString
        let first = try CLI.run(["install", url, "--into", home] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try installedWhole() == 1)

        // The patch changes one small entry (re-packed in place: the rest is copied byte for byte).
        try pack("patch", in: "www", version: 2, files: ["big.bin": big, "small.txt": Array("two".utf8)])
        _ = try release(in: "www", version: 2, packs: ["base", "patch"])
        try nginx.resetAccessLog()
        let update = try CLI.run(["install", url, "--into", home] + trust)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(try installedWhole() == 2)
        let log = try nginx.accessLog()
        #expect(!log.contains { $0.uri.contains("base.pack") }, "the unchanged base is not fetched: \(log.map(\.uri))")
        let patchBytes = log.filter { $0.uri.contains("patch.pack") }.reduce(0) { $0 + $1.bodyBytes }
        #expect(patchBytes > 0 && patchBytes < big.count / 4, "a delta: \(patchBytes) bytes of the patch")
        print(
            "figure: release update over nginx: \(log.count) requests, \(patchBytes) bytes of the 2 MiB patch, 0 of the base"
        )

        // Rollback over the network: the old manifest served again is refused (exit 5).
        try FileManager.default.removeItem(at: dir.appending("www/game.json"))
        _ = try release(in: "www", version: 1, packs: ["base", "patch"])
        let older = try CLI.run(["install", url, "--into", home] + trust)
        #expect(older.status == 5 && older.stderr.contains("rollback: release game version 1"), "\(older.stderr)")

        // Another release line over the network (a demo of the same packs, version 1): refused
        // before a pack is fetched, unless the caller says it replaces the line.
        let demo = try release(in: "www", version: 1, packs: ["base", "patch"], name: "demo")
        #expect(FileManager.default.fileExists(atPath: demo))
        let other = try CLI.run(["install", nginx.url("demo.json").absoluteString, "--into", home] + trust)
        #expect(
            other.status == 5 && other.stderr.contains("release demo is another release line"), "\(other.stderr)")
        #expect(try installedWhole() == 2)
    }

    /// A release update whose download the server cuts, again and again, until the install gives
    /// up (exit 6): the previous release stays installed and readable, the part downloaded stays
    /// for the next run, which (the server well again) finishes the release and fetches less than
    /// the whole pack.
    @Test func aCutReleaseDownloadResumesOnTheNextRunAndThePreviousReleaseStaysReadable() throws {
        let base = testBytes(256 << 10, seed: 40)
        let (old, new) = (testBytes(6 << 20, seed: 41), testBytes(6 << 20, seed: 42))
        try pack("base", in: "www", version: 1, files: ["base.bin": base])
        try pack("dlc", in: "www", version: 1, files: ["dlc.bin": old])
        _ = try release(in: "www", version: 1, packs: ["base", "dlc"])
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        defer { server.stop() }
        let url = server.url("game.json").absoluteString
        let trust = ["--trust", dir.appending("k.pub").path]
        let first = try CLI.run(["install", url, "--into", home] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try installedWhole() == 1)

        // Release 2: the DLC replaced by other bytes (nothing of it to reuse), the base unchanged.
        try pack("dlc", in: "www", version: 2, files: ["dlc.bin": new])
        try FileManager.default.removeItem(at: dir.appending("www/game.json"))
        _ = try release(in: "www", version: 2, packs: ["base", "dlc"])
        let dlcSize = try #require(
            try FileManager.default.attributesOfItem(atPath: dir.appending("www/dlc.pack").path)[.size] as? Int)
        try server.resetRequests()
        try server.setFault(.truncateBody(afterBytes: 300 << 10, times: 10_000))
        let cut = try CLI.run(["install", url, "--into", home] + trust)
        #expect(cut.status == 6, "\(cut.stderr)")
        #expect(cut.stderr.contains("dlc"), "\(cut.stderr)")

        // In between: release 1, whole and readable through the CLI; the partial download kept.
        #expect(try installedWhole() == 1)
        let between = try CLI.run(["cat", home, "dlc.bin"] + trust)
        #expect(between.status == 0 && between.stdout == old, "\(between.stderr)")
        let list = try CLI.run(["list", home, "--json"] + trust)
        let document = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        #expect((document?["release_manifest"] as? [String: Any])?["version"] as? Int == 1, "\(list.text)")
        let staged = try FileManager.default.contentsOfDirectory(atPath: home).filter { $0.hasSuffix(".download") }
        #expect(staged.count == 1 && staged.first?.hasPrefix(".dlc-") == true, "\(staged)")
        let servedBefore = try server.requests().filter { $0.uri.contains("dlc.pack") }.reduce(0) { $0 + $1.bodyBytes }
        #expect(servedBefore > 0 && servedBefore < dlcSize, "\(servedBefore) of \(dlcSize) bytes before the cut")

        try server.setFault(.none)
        try server.resetRequests()
        let resumed = try CLI.run(["install", url, "--into", home] + trust)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try installedWhole() == 2)
        let after = try CLI.run(["cat", home, "dlc.bin"] + trust)
        #expect(after.status == 0 && after.stdout == new, "\(after.stderr)")
        let log = try server.requests()
        #expect(!log.contains { $0.uri.contains("base.pack") }, "the unchanged base is not fetched: \(log.map(\.uri))")
        // What the cut run fetched (more than 1 MiB: 5 requests of 300 KiB) is not fetched again.
        let servedAfter = log.filter { $0.uri.contains("dlc.pack") }.reduce(0) { $0 + $1.bodyBytes }
        #expect(servedBefore > 1 << 20, "\(servedBefore)")
        #expect(
            servedAfter <= dlcSize - servedBefore + (64 << 10),
            "resumed: \(servedAfter) of \(dlcSize) bytes after the cut, \(servedBefore) before")
        print(
            "figure: release download cut at 300 KiB per request: exit 6 after \(servedBefore) bytes, release 1 readable; the next run fetched \(servedAfter) of \(dlcSize) bytes"
        )
        let left = try FileManager.default.contentsOfDirectory(atPath: home).filter { $0.contains(".download") }
        #expect(left.isEmpty, "\(left)")
    }
}
#endif
