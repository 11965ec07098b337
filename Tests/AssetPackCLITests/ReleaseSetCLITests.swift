#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `list`, `cat`, `extract`, `verify` over a release through the built binary: a release manifest
/// (packs beside it) or an installed release's directory is read as the set of its packs, each
/// entry naming the pack that serves it; with --trust the manifest's key and each pack's SHA-256.
@Suite struct ReleaseSetCLITests {
    let dir = TemporaryDirectory("release-set")
    var pub: URL { dir.appending("pub") }
    var trust: [String] { ["--trust", dir.appending("k.pub").path] }

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    init() throws {
        try FileManager.default.createDirectory(at: dir.appending("pub"), withIntermediateDirectories: true)
        try CLI.keygen(["k", "other"], in: dir)
    }

    /// `pub/<name>.pack` of `files`, signed by `key` (extra arguments appended).
    @discardableResult
    func pack(_ name: String, _ files: [String: String], key: String = "k", _ extra: [String] = []) throws -> String {
        let src = try dir.write(files.mapValues { Array($0.utf8) }, under: "src-\(name)-\(UUID().uuidString)")
        let out = pub.appendingPathComponent("\(name).pack").path
        let made = try run(
            [
                "pack", src.path, "-o", out, "--encryption", "none", "--compression", "store", "--sign-key",
                dir.appending("\(key).key").path, "--quiet",
            ] + extra)
        #expect(made.status == 0, "\(made.stderr)")
        return out
    }

    /// `pub/game.json` naming `packs` (under pub/), signed by `key`.
    @discardableResult
    func release(_ packs: [String], key: String = "k") throws -> String {
        let out = pub.appendingPathComponent("game.json").path
        let made = try run(
            ["release"] + packs.map { pub.appendingPathComponent("\($0).pack").path } + [
                "--release-name", "game", "--release-version", "1", "--sign-key", dir.appending("\(key).key").path,
                "-o", out,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        return out
    }

    /// Base and patch (a.txt changed, b.txt deleted, d.txt added), and the release naming both.
    func baseAndPatch() throws -> String {
        let base = try pack("base", ["a.txt": "base a", "b.txt": "base b", "c/c.txt": "base c"])
        try pack("patch", ["a.txt": "PATCHED", "c/c.txt": "base c", "d.txt": "new d"], ["--patch-of", base])
        return try release(["base", "patch"])
    }

    static func entries(_ run: CLI.Run) throws -> [[String: Any]] {
        let document = try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: Any]
        return document?["entries"] as? [[String: Any]] ?? []
    }

    @Test(.slow) func aReleaseManifestIsReadAsTheSetOfItsPacks() throws {
        let manifest = try baseAndPatch()

        let list = try run(["list", manifest, "--json"] + trust)
        #expect(list.status == 0, "\(list.stderr)")
        let entries = try Self.entries(list)
        #expect(entries.map { $0["path"] as? String } == ["a.txt", "c/c.txt", "d.txt"])
        #expect(entries.map { $0["pack"] as? String } == ["patch", "base", "patch"])
        let table = try run(["list", manifest])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.text.split(separator: "\n").first?.contains("PACK") == true)
        #expect(table.text.split(separator: "\n").contains { $0.hasSuffix("patch a.txt") }, "\(table.text)")
        #expect(table.stderr.contains("2 packs") && table.stderr.contains("release game"), "\(table.stderr)")

        let cat = try run(["cat", manifest, "a.txt"] + trust)
        #expect(cat.status == 0 && cat.text == "PATCHED", "\(cat.stderr)")
        let deleted = try run(["cat", manifest, "b.txt"])
        #expect(deleted.status == 3, "\(deleted.stderr)")

        let into = dir.appending("out").path
        let extract = try run(["extract", manifest, "--into", into] + trust)
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(try String(contentsOfFile: into + "/a.txt", encoding: .utf8) == "PATCHED")
        #expect(try String(contentsOfFile: into + "/c/c.txt", encoding: .utf8) == "base c")
        #expect(!FileManager.default.fileExists(atPath: into + "/b.txt"))

        let verify = try run(["verify", manifest, "--json"] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")
        let verified = try Self.entries(verify)
        #expect(verified.allSatisfy { $0["status"] as? String == "ok" })
        #expect(verified.filter { $0["served"] == nil }.count == 3, "\(verified)")
        // The base's records the patch replaces or deletes are read too, and marked.
        #expect(verified.contains { $0["served"] as? Bool == false && $0["path"] as? String == "b.txt" }, "\(verified)")
        #expect(verified.first { $0["path"] as? String == "d.txt" }?["pack"] as? String == "patch")

        // --over on top of a release: a later pack adds the deleted path back.
        let dlc = try pack("dlc", ["b.txt": "dlc b"])
        let back = try run(["cat", manifest, "b.txt", "--over", dlc])
        #expect(back.status == 0 && back.text == "dlc b", "\(back.stderr)")
    }

    /// `list --json` of a release names it: `release_manifest` holds its name, version and packs
    /// (in order); `entries` is unchanged, and a single pack's document has no such field.
    @Test func listJSONOfAReleaseNamesTheRelease() throws {
        let manifest = try baseAndPatch()
        let home = dir.appending("home").path
        #expect(try run(["install", manifest, "--into", home] + trust).status == 0)
        for (input, extra) in [(manifest, trust), (manifest, []), (home, trust)] {
            let list = try run(["list", input, "--json"] + extra)
            #expect(list.status == 0, "\(list.stderr)")
            let document = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
            let release = document?["release_manifest"] as? [String: Any]
            #expect(release?["name"] as? String == "game", "\(list.text)")
            #expect(release?["version"] as? Int == 1, "\(list.text)")
            #expect(release?["expires"] == nil)
            let packs = release?["packs"] as? [[String: Any]] ?? []
            #expect(packs.map { $0["name"] as? String } == ["base", "patch"], "\(list.text)")
            #expect(packs.allSatisfy { ($0["sha256"] as? String)?.count == 64 && ($0["size"] as? Int ?? 0) > 0 })
            #expect(try Self.entries(list).map { $0["pack"] as? String } == ["patch", "base", "patch"])
            #expect(document?["format"] as? String == "zip")
        }
        let single = try run(["list", pub.appendingPathComponent("base.pack").path, "--json"])
        let document = try JSONSerialization.jsonObject(with: Data(single.stdout)) as? [String: Any]
        #expect(document?["release_manifest"] == nil && document?["entries"] != nil)
    }

    @Test func anInstalledReleaseDirectoryIsReadAsTheSetOfItsPacks() throws {
        let manifest = try baseAndPatch()
        let home = dir.appending("home").path
        let install = try run(["install", manifest, "--into", home] + trust)
        #expect(install.status == 0, "\(install.stderr)")

        let list = try run(["list", home, "--json"] + trust)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(try Self.entries(list).map { $0["pack"] as? String } == ["patch", "base", "patch"])
        let cat = try run(["cat", home, "a.txt"] + trust)
        #expect(cat.status == 0 && cat.text == "PATCHED", "\(cat.stderr)")
        #expect(try run(["cat", home, "b.txt"]).status == 3)
        let verify = try run(["verify", home] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")

        // A directory with no release in it is not a pack either: a clear error.
        let empty = dir.appending("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let none = try run(["list", empty])
        #expect(none.status == 1 && none.stderr.contains("no installed release"), "\(none.stderr)")
    }

    @Test(.slow) func withTrustTheManifestKeyAndEachPackAreChecked() throws {
        // A release (and its pack) signed by a key the reader does not trust.
        try pack("base", ["a.txt": "base a"], key: "other")
        let other = try release(["base"], key: "other")
        let untrusted = try run(["list", other] + trust)
        #expect(untrusted.status == 5, "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("not a trusted key"), "\(untrusted.stderr)")
        #expect(try run(["list", other]).status == 0, "without --trust, the manifest's own signature suffices")

        // Mix-and-match: base swapped for another signed pack of the same size.
        try pack("base", ["a.txt": "base a"])
        let manifest = try release(["base"])
        try pack("base", ["a.txt": "base A"])
        let mixed = try run(["cat", manifest, "a.txt"] + trust)
        #expect(mixed.status == 5, "\(mixed.stderr)")
        #expect(
            mixed.stderr.contains("pack base") && mixed.stderr.contains("is not the pack the release names"),
            "\(mixed.stderr)")
        #expect(mixed.stdout.isEmpty)
        // Without --trust, sizes only: a pack of another size is refused too.
        try pack("base", ["a.txt": "base a, longer"])
        let resized = try run(["list", manifest])
        #expect(resized.status == 5 && resized.stderr.contains("bytes, the release names"), "\(resized.stderr)")

        // A manifest altered after signing: its signature fails, with or without --trust.
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"version\": 1,", with: "\"version\": 9,")
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let altered = try run(["list", manifest])
        #expect(altered.status == 5 && altered.stderr.contains("does not verify"), "\(altered.stderr)")
    }

    @Test(.slow) func aSetOfPacksOnAServerReadsAsOne() throws {
        let manifest = try baseAndPatch()
        let nginx = try NginxServer(root: pub)
        let base = nginx.url("base.pack").absoluteString
        let patch = nginx.url("patch.pack").absoluteString

        let list = try run(["list", base, "--over", patch, "--json"] + trust)
        #expect(list.status == 0, "\(list.stderr)")
        let entries = try Self.entries(list)
        #expect(entries.map { $0["path"] as? String } == ["a.txt", "c/c.txt", "d.txt"])
        #expect(entries.map { $0["pack"] as? String } == [patch, base, patch])
        let cat = try run(["cat", base, "a.txt", "--over", patch] + trust)
        #expect(cat.status == 0 && cat.text == "PATCHED", "\(cat.stderr)")
        let deleted = try run(["cat", base, "b.txt", "--over", patch])
        #expect(deleted.status == 3, "\(deleted.stderr)")
        let into = dir.appending("remote-out").path
        let extract = try run(["extract", base, "--over", patch, "--into", into])
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(try String(contentsOfFile: into + "/a.txt", encoding: .utf8) == "PATCHED")
        #expect(try String(contentsOfFile: into + "/c/c.txt", encoding: .utf8) == "base c")
        #expect(!FileManager.default.fileExists(atPath: into + "/b.txt"))
        let verify = try run(["verify", base, "--over", patch, "--json"] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(try Self.entries(verify).allSatisfy { $0["status"] as? String == "ok" })

        // A local base under a remote patch, and the release manifest itself from the server.
        let local = pub.appendingPathComponent("base.pack").path
        let mixed = try run(["cat", local, "a.txt", "--over", patch])
        #expect(mixed.status == 0 && mixed.text == "PATCHED", "\(mixed.stderr)")
        #expect(manifest.hasSuffix("game.json"))
        let release = nginx.url("game.json").absoluteString
        let remote = try run(["list", release, "--json"] + trust)
        #expect(remote.status == 0, "\(remote.stderr)")
        #expect(try Self.entries(remote).map { $0["pack"] as? String } == ["patch", "base", "patch"])
        #expect(try run(["cat", release, "b.txt"] + trust).status == 3)
    }
}
#endif
