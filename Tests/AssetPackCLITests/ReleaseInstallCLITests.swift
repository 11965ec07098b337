#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack release` and `assetpack install RELEASE.json` through the built binary: install,
/// update (unchanged packs cost nothing), rollback and mix-and-match refused (exit 5), kills at
/// many points leaving the previous release whole, and a release served by nginx.
@Suite(.serialized) struct ReleaseInstallCLITests {
    let dir = TemporaryDirectory("release-install")
    var pub: URL { dir.appending("pub") }
    var home: String { dir.appending("home").path }
    var trust: [String] { ["--trust", dir.appending("k.pub").path] }

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    init() throws {
        try FileManager.default.createDirectory(at: dir.appending("pub"), withIntermediateDirectories: true)
        try CLI.keygen(["k", "other"], in: dir)
    }

    /// `pub/<name>.pack`, signed by `key` with `version`, holding `size` bytes of seed `seed`.
    @discardableResult
    func pack(
        _ name: String, version: Int, seed: UInt64, size: Int = 50_000, key: String = "k", under folder: String = ""
    ) throws -> String {
        let src = try dir.write(["\(name).bin": testBytes(size, seed: seed)], under: "src-\(name)-\(seed)")
        let into = pub.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: into, withIntermediateDirectories: true)
        let out = into.appendingPathComponent("\(name).pack").path
        let made = try run([
            "pack", src.path, "-o", out, "--encryption", "none", "--compression", "store", "--sign-key",
            dir.appending("\(key).key").path, "--pack-version", String(version), "--quiet",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        return out
    }

    /// `pub/<file>` naming `packs` (names under pub/) as release `version`.
    @discardableResult
    func release(
        _ version: Int, _ packs: [String], file: String = "game.json", under folder: String = "", key: String = "k",
        name: String = "game"
    ) throws -> String {
        let into = pub.appendingPathComponent(folder)
        let out = into.appendingPathComponent(file).path
        let made = try run(
            ["release"] + packs.map { into.appendingPathComponent("\($0).pack").path } + [
                "--release-name", name, "--release-version", String(version), "--sign-key",
                dir.appending("\(key).key").path, "-o", out,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        return out
    }

    func current() throws -> PrivateInstaller.InstalledRelease? {
        try PrivateInstaller(directory: URL(fileURLWithPath: home)).installedRelease()
    }

    func inode(_ path: String) throws -> UInt64 {
        UInt64(
            (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0)
    }

    @Test func installThenUpdateCopiesOnlyWhatChanged() throws {
        try pack("base", version: 1, seed: 1)
        try pack("patch", version: 1, seed: 2)
        let v1 = try release(1, ["base", "patch"])
        let first = try run(["install", v1, "--into", home] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        let paths = first.text.split(separator: "\n").map(String.init)
        #expect(paths.count == 2 && paths[0].hasSuffix(".pack") && paths[0].contains("/base-"), "\(paths)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: paths[1]))
                == Data(contentsOf: pub.appendingPathComponent("patch.pack")))
        #expect(first.stderr.contains("2 copied or downloaded, 0 already installed"), "\(first.stderr)")
        let baseInode = try inode(paths[0])

        try pack("patch", version: 2, seed: 3)
        let v2 = try release(2, ["base", "patch"])
        let update = try run(["install", v2, "--into", home] + trust)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stderr.contains("1 copied or downloaded, 1 already installed"), "\(update.stderr)")
        let now = update.text.split(separator: "\n").map(String.init)
        let nowInode = try inode(now[0])
        #expect(now[0] == paths[0] && nowInode == baseInode, "the unchanged base is not copied again")
        #expect(!FileManager.default.fileExists(atPath: paths[1]), "the old patch is removed after the switch")
        #expect(try current()?.manifest.version == 2)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: home + "/.assetpack.release"))
                == Data(contentsOf: URL(fileURLWithPath: v2)))

        let again = try run(["install", v2, "--into", home] + trust)
        #expect(again.status == 0 && again.stderr.contains("already installed and current"), "\(again.stderr)")
        #expect(try run(["verify", now[1]] + trust).status == 0)
    }

    @Test func anOlderReleaseIsRefusedAsRollback() throws {
        try pack("base", version: 1, seed: 1, under: "1")
        let v1 = try release(1, ["base"], under: "1")
        try pack("base", version: 2, seed: 4, under: "2")
        let v2 = try release(2, ["base"], under: "2")
        #expect(try run(["install", v2, "--into", home] + trust).status == 0)
        let older = try run(["install", v1, "--into", home] + trust)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains("rollback: release game version 1 is older than the installed version 2"),
            "\(older.stderr)")
        #expect(try current()?.manifest.version == 2, "the newer release stays")
        let allowed = try run(["install", v1, "--into", home, "--allow-rollback"] + trust)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try current()?.manifest.version == 1)
    }

    /// While the publisher rotates keys the app trusts both: release 1 signed by the old key
    /// cannot replace the installed release 2 signed by the new one (the record was per key).
    @Test func anOlderReleaseOfTheOldKeyIsRefusedDuringARotation() throws {
        try pack("base", version: 1, seed: 1, under: "1")
        let v1 = try release(1, ["base"], under: "1")
        try pack("base", version: 2, seed: 4, key: "other", under: "2")
        let v2 = try release(2, ["base"], under: "2", key: "other")
        let both = trust + ["--trust", dir.appending("other.pub").path]
        #expect(try run(["install", v1, "--into", home] + both).status == 0)
        let newer = try run(["install", v2, "--into", home] + both)
        #expect(newer.status == 0, "\(newer.stderr)")
        let older = try run(["install", v1, "--into", home] + both)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains(
                "rollback: release game version 1 is older than the installed version 2 (signed by another trusted key)"
            ),
            "\(older.stderr)")
        #expect(try current()?.manifest.version == 2, "the newer release stays")
    }

    /// A directory holds one release line: a release of another name (a demo, an old line
    /// renamed) cannot replace the installed one, whose version record it never meets, unless
    /// the caller says it replaces the line (--replace-release). During a rotation the demo of
    /// the old key must not open a way for the old key's older "game" either.
    @Test func aReleaseOfAnotherNameIsRefusedUnlessItReplacesTheLine() throws {
        try pack("base", version: 5, seed: 1, key: "other", under: "5")
        let game5 = try release(5, ["base"], under: "5", key: "other")
        try pack("base", version: 1, seed: 4, under: "demo")
        let demo1 = try release(1, ["base"], file: "demo.json", under: "demo", name: "game-demo")
        try pack("base", version: 3, seed: 6, under: "3")
        let game3 = try release(3, ["base"], under: "3")
        let both = trust + ["--trust", dir.appending("other.pub").path]
        #expect(try run(["install", game5, "--into", home] + both).status == 0)
        let demo = try run(["install", demo1, "--into", home] + both)
        #expect(demo.status == 5, "\(demo.status) \(demo.stderr)")
        #expect(
            demo.stderr.contains(
                "holds the release game; release game-demo is another release line, which cannot replace it"),
            "\(demo.stderr)")
        #expect(demo.stderr.contains("--replace-release"), "\(demo.stderr)")
        #expect(try current()?.manifest.name == "game" && current()?.manifest.version == 5, "game 5 stays")
        // --allow-rollback does not lift it: it is not an older version of this line.
        #expect(try run(["install", demo1, "--into", home, "--allow-rollback"] + both).status == 5)
        #expect(try current()?.manifest.version == 5)
        // Said explicitly, the line is replaced; the old key's game 3 is still older than game 5.
        let replaced = try run(["install", demo1, "--into", home, "--replace-release"] + both)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try current()?.manifest.name == "game-demo")
        let older = try run(["install", game3, "--into", home, "--replace-release"] + both)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains("rollback: release game version 3 is older than the installed version 5"),
            "\(older.stderr)")
        #expect(try current()?.manifest.name == "game-demo")
    }

    /// A kill right after a release switch, before the previous release's packs were removed,
    /// left them for good (only what `.pending` names was cleaned up): the next release install
    /// removes stored packs no manifest names, and leaves a pack installed by itself.
    @Test func packsAKilledSwitchLeftAreRemovedByTheNextInstall() throws {
        try pack("base", version: 1, seed: 1, under: "1")
        let v1 = try release(1, ["base"], under: "1")
        try pack("base", version: 2, seed: 4, under: "2")
        let v2 = try release(2, ["base"], under: "2")
        let first = try run(["install", v1, "--into", home] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        let old = first.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let oldName = URL(fileURLWithPath: old).lastPathComponent
        let record = home + "/.\(oldName).install"
        let (bytes, recorded) = (
            try Data(contentsOf: URL(fileURLWithPath: old)), try Data(contentsOf: URL(fileURLWithPath: record))
        )
        #expect(try run(["install", v2, "--into", home] + trust).status == 0)
        #expect(!FileManager.default.fileExists(atPath: old))
        // As a kill at the first unlink would have left it: the old pack and its record.
        try bytes.write(to: URL(fileURLWithPath: old))
        try recorded.write(to: URL(fileURLWithPath: record))
        // And a pack installed by itself, beside the release.
        let single = try run(
            [
                "install", v1.replacingOccurrences(of: "game.json", with: "base.pack"), "--into", home, "--name",
                "mine.pack",
            ] + trust)
        #expect(single.status == 0, "\(single.stderr)")
        let again = try run(["install", v2, "--into", home] + trust)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!FileManager.default.fileExists(atPath: old), "the orphaned pack of release 1 stays")
        #expect(!FileManager.default.fileExists(atPath: record))
        #expect(FileManager.default.fileExists(atPath: home + "/mine.pack"))
        #expect(try current()?.manifest.version == 2)
    }

    @Test func aPackThatIsNotTheOneNamedIsRefusedAndNothingIsInstalled() throws {
        try pack("base", version: 1, seed: 1)
        try pack("patch", version: 1, seed: 2)
        let v1 = try release(1, ["base", "patch"])
        // Mix-and-match: another signed pack of the publisher's where the release names patch.
        try pack("patch", version: 1, seed: 5)
        let mixed = try run(["install", v1, "--into", home] + trust)
        #expect(mixed.status == 5, "\(mixed.status) \(mixed.stderr)")
        #expect(
            mixed.stderr.contains("pack patch") && mixed.stderr.contains("is not the pack the release names"),
            "\(mixed.stderr)")
        #expect(try current() == nil)
        let left = try FileManager.default.contentsOfDirectory(atPath: home).filter { $0.hasSuffix(".pack") }
        #expect(left.isEmpty, "nothing installed: \(left)")

        // Missing: a clear error naming the pack, exit 1.
        try FileManager.default.removeItem(at: pub.appendingPathComponent("patch.pack"))
        let missing = try run(["install", v1, "--into", home] + trust)
        #expect(missing.status == 1 && missing.stderr.contains("pack patch: cannot read"), "\(missing.stderr)")

        // A pack signed by another key: `release` refuses it (exit 5), and so does install.
        let foreign = try pack("dlc", version: 1, seed: 6, key: "other")
        let refused = try run([
            "release", foreign, "--release-version", "3", "--sign-key", dir.appending("k.key").path, "-o",
            pub.appendingPathComponent("bad.json").path,
        ])
        #expect(refused.status == 5 && refused.stderr.contains("pack \(foreign)"), "\(refused.stderr)")
        let otherKey = try PublisherKey.load(from: dir.appending("other.pub"))
        let entry = try ReleaseManifest.Pack.describing(foreign, file: "dlc.pack", signedBy: otherKey)
        let manifest = try ReleaseManifest(name: "game", version: 3, packs: [entry])
        try manifest.document(signedWith: PublisherSigningKey.load(from: dir.appending("k.key")))
            .write(to: pub.appendingPathComponent("foreign.json"))
        let installForeign = try run(
            ["install", pub.appendingPathComponent("foreign.json").path, "--into", home] + trust)
        #expect(installForeign.status == 5 && installForeign.stderr.contains("pack dlc"), "\(installForeign.stderr)")

        // The same pack twice: refused when writing the manifest.
        let twice = try run([
            "release", foreign, foreign, "--release-version", "3", "--sign-key", dir.appending("other.key").path,
            "-o", pub.appendingPathComponent("twice.json").path,
        ])
        #expect(twice.status == 1 && twice.stderr.contains("names pack dlc twice"), "\(twice.stderr)")
        #expect(try current() == nil)
    }
}
#endif
