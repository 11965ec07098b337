#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Pack sets through the built binary: `--over`, `list --folder`, `pack --patch-of`.
@Suite struct PackSetCLITests {
    static let password = "set-cli"

    /// Writes `files` under `dir/name` and packs them into `dir/name.pack` (extra arguments appended).
    @discardableResult
    static func pack(
        _ files: [String: String], _ name: String, in dir: TemporaryDirectory, format: String = "zip",
        _ extra: [String] = []
    ) throws -> (path: String, run: CLI.Run) {
        let source = dir.appending(name)
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try dir.write(files.mapValues { Array($0.utf8) }, under: name)
        let out = dir.appending("\(name).pack").path
        let run = try CLI.run(
            ["pack", source.path, "-o", out, "--format", format] + extra, password: password)
        #expect(run.status == 0, "\(run.stderr)")
        return (out, run)
    }

    static let baseTree = ["a.txt": "base a", "b.txt": "base b", "img/c.png": "base c", "img2/d.png": "d"]

    @Test(arguments: ["zip", "container"])
    func aPatchFromTheCLIOverridesDeletesAndLists(format: String) throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(Self.baseTree, "base", in: dir, format: format).path
        // New tree: a.txt changed (same size, other bytes), b.txt removed, img/e.png added.
        let (patch, run) = try Self.pack(
            ["a.txt": "BASE A", "img/c.png": "base c", "img2/d.png": "d", "img/e.png": "new e"], "next", in: dir,
            format: format, ["--patch-of", base])
        #expect(run.stderr.contains("1 added, 1 changed, 1 deleted"), "\(run.stderr)")

        let patchOnly = try CLI.run(["list", patch, "--json"], password: Self.password)
        #expect(patchOnly.status == 0)
        #expect(patchOnly.text.contains("\"img/e.png\"") && patchOnly.text.contains("\"a.txt\""))
        #expect(!patchOnly.text.contains("img/c.png") && !patchOnly.text.contains(".assetpack"))
        #expect(!patchOnly.text.contains("\"pack\""))

        // list: which pack serves each entry.
        let list = try CLI.run(["list", base, "--over", patch], password: Self.password)
        #expect(list.status == 0, "\(list.stderr)")
        let rows = list.text.split(separator: "\n").map(String.init)
        #expect(rows.first?.contains("PACK") == true)
        #expect(rows.contains { $0.hasSuffix("a.txt") && $0.contains(patch) })
        #expect(rows.contains { $0.hasSuffix("img/c.png") && $0.contains(base) && !$0.contains(patch) })
        #expect(!rows.contains { $0.hasSuffix("b.txt") })
        #expect(list.stderr.contains("4 entries") && list.stderr.contains("2 packs"))

        let json = try CLI.run(["list", base, "--over", patch, "--json"], password: Self.password)
        let document = try JSONSerialization.jsonObject(with: Data(json.stdout)) as! [String: Any]
        let entries = document["entries"] as! [[String: Any]]
        #expect(entries.map { $0["path"] as! String } == ["a.txt", "img/c.png", "img/e.png", "img2/d.png"])
        #expect(entries.map { $0["pack"] as! String } == [patch, base, patch, base])

        // cat: the override, and the deleted path is not found (exit 3).
        let cat = try CLI.run(["cat", base, "a.txt", "--over", patch], password: Self.password)
        #expect(cat.status == 0 && cat.text == "BASE A")
        let timed = try CLI.run(["cat", base, "a.txt", "--over", patch, "--timing"], password: Self.password)
        #expect(timed.stderr.contains("); the open of 2 packs before it: "), "\(timed.stderr)")
        let deleted = try CLI.run(["cat", base, "b.txt", "--over", patch], password: Self.password)
        #expect(deleted.status == 3)
        #expect(deleted.stderr.contains("b.txt: no such entry: deleted by \(patch)"), "\(deleted.stderr)")
        #expect(try CLI.run(["cat", base, "b.txt"], password: Self.password).text == "base b")

        // extract: the set's tree.
        let into = dir.appending("out").path
        let extract = try CLI.run(["extract", base, "--over", patch, "--into", into], password: Self.password)
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(try String(contentsOfFile: into + "/a.txt", encoding: .utf8) == "BASE A")
        #expect(try String(contentsOfFile: into + "/img/c.png", encoding: .utf8) == "base c")
        #expect(!FileManager.default.fileExists(atPath: into + "/b.txt"))
        let named = try CLI.run(
            ["extract", base, "b.txt", "--over", patch, "--into", dir.appending("named").path], password: Self.password)
        #expect(
            named.status == 3 && named.stderr.contains("b.txt: no such entry: deleted by \(patch)"), "\(named.stderr)")

        // verify: every entry of the set, naming its pack in JSON.
        let verify = try CLI.run(["verify", base, "--over", patch, "--json"], password: Self.password)
        #expect(verify.status == 0, "\(verify.stderr)")
        let verified = try JSONSerialization.jsonObject(with: Data(verify.stdout)) as! [String: Any]
        let results = verified["entries"] as! [[String: Any]]
        #expect(results.allSatisfy { $0["status"] as? String == "ok" })
        // The 4 entries served, then the base's a.txt (replaced) and b.txt (deleted), read all the same.
        #expect(results.filter { $0["served"] == nil }.count == 4)
        #expect(
            Set(results.filter { $0["served"] as? Bool == false }.map { $0["path"] as! String }) == ["a.txt", "b.txt"])
        #expect(results.first { $0["path"] as? String == "a.txt" }?["pack"] as? String == patch)
        // verify's table: a PACK column as list has, naming the pack each entry was read from.
        let table = try CLI.run(["verify", base, "--over", patch], password: Self.password)
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.text.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains(" PACK ") == true, "\(table.text)")
        #expect(lines.contains { $0.hasSuffix(" a.txt") && $0.contains(patch) }, "\(table.text)")
        #expect(lines.contains { $0.hasSuffix(" img/c.png") && $0.contains(base) && !$0.contains(patch) })
        let single = try CLI.run(["verify", base], password: Self.password)
        #expect(single.status == 0 && single.text.split(separator: "\n").first?.contains("PACK") == false)
    }

    /// `pack --patch-of BASE -o BASE` (or another name of it): refused (exit 1) with the base left
    /// as it was, where the patch replaced the pack it patches.
    @Test(arguments: ["zip", "container"])
    func aPatchIsNotWrittenOverItsOwnBase(format: String) throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["a.txt": "a", "b.txt": "b"], "base", in: dir, format: format).path
        let before = try Data(contentsOf: URL(fileURLWithPath: base))
        try dir.write(["a.txt": Array("changed".utf8)], under: "next")
        let alias = dir.appending("alias.pack").path
        try FileManager.default.linkItem(atPath: base, toPath: alias)
        for output in [base, alias] {
            let run = try CLI.run(
                ["pack", dir.appending("next").path, "--patch-of", base, "-o", output], password: Self.password)
            #expect(run.status == 1, "\(run.status) \(run.stderr)")
            #expect(run.stderr.contains("the patch would replace the pack it patches"), "\(run.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: base)) == before)
    }

    /// `verify` over a set reads every record of every pack, not only those the set serves: a
    /// damaged base entry that a patch replaces (or deletes) fails the check, naming the base, as
    /// `verify` of the base alone does. (It passed before: only served entries were read.)
    @Test(arguments: ["zip", "container"])
    func verifyOverASetChecksTheRecordsAPatchReplaces(format: String) throws {
        let dir = TemporaryDirectory()
        // a.txt fills most of the base, so its middle byte is a.txt's stored bytes.
        let big = (0..<6000).map { String(format: "%05d", ($0 * 7919) % 99991) }.joined()
        let base = try Self.pack(["a.txt": big, "keep.txt": "k", "gone.txt": "g"], "base", in: dir, format: format).path
        let patch = try Self.pack(
            ["a.txt": "patched", "keep.txt": "k"], "patch", in: dir, format: format, ["--patch-of", base]
        ).path
        let sound = try CLI.run(["verify", base, "--over", patch, "--json"], password: Self.password)
        #expect(sound.status == 0, "\(sound.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(sound.stdout)) as! [String: Any]
        let rows = document["entries"] as! [[String: Any]]
        // Served: a.txt (patch), keep.txt (base; the patch's equal file is not packed). Not served:
        // the base's a.txt (replaced) and gone.txt (deleted).
        let notServed = rows.filter { $0["served"] as? Bool == false }.map { "\($0["pack"] ?? "")|\($0["path"] ?? "")" }
        #expect(Set(notServed) == ["\(base)|a.txt", "\(base)|gone.txt"], "\(rows)")
        #expect(rows.allSatisfy { $0["status"] as? String == "ok" })

        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: base)))
        bytes[bytes.count / 2] ^= 0x55
        try Data(bytes).write(to: URL(fileURLWithPath: base))
        #expect(try CLI.run(["verify", base], password: Self.password).status == 4)
        let damaged = try CLI.run(["verify", base, "--over", patch], password: Self.password)
        #expect(damaged.status == 4, "\(damaged.text) \(damaged.stderr)")
        let failing = damaged.text.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(failing.count == 1 && failing[0].contains(base) && failing[0].hasSuffix(" a.txt"), "\(damaged.text)")
    }

    @Test(.slow) func aLaterPackAddsADeletedPathBack() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(Self.baseTree, "base", in: dir).path
        let patch = try Self.pack(
            ["a.txt": "base a", "img/c.png": "base c", "img2/d.png": "d"], "patch", in: dir, ["--patch-of", base]
        ).path
        let dlc = try Self.pack(["b.txt": "dlc b"], "dlc", in: dir, format: "container").path
        #expect(try CLI.run(["cat", base, "b.txt", "--over", patch], password: Self.password).status == 3)
        let back = try CLI.run(["cat", base, "b.txt", "--over", patch, "--over", dlc], password: Self.password)
        #expect(back.status == 0 && back.text == "dlc b")
        let list = try CLI.run(["list", base, "--over", patch, "--over", dlc, "--json"], password: Self.password)
        #expect(list.text.contains(#""pack" : "\#(dlc)""#) || list.text.contains(#""pack":"\#(dlc)""#))
    }

    @Test func aDeletionOfAPathNoPackBelowHasFailsNamingThePack() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(Self.baseTree, "base", in: dir).path
        let patch = try Self.pack(["a.txt": "x"], "patch", in: dir, ["--patch-of", base]).path
        let other = try Self.pack(["z.txt": "z"], "other", in: dir).path
        let run = try CLI.run(["list", other, "--over", patch], password: Self.password)
        #expect(run.status == 4)
        #expect(run.stderr.contains("\(patch) deletes"), "\(run.stderr)")
        #expect(run.stderr.contains("which no pack below it has"))
        // A read needs no such check (the deletion hides nothing); a patch packed over that set,
        // compared against a list that breaks the rules, is refused as the listing is.
        let read = try CLI.run(["cat", other, "z.txt", "--over", patch], password: Self.password)
        #expect(read.status == 0 && read.text == "z", "\(read.stderr)")
        let src = try dir.write(["n.txt": Array("n".utf8)], under: "patch-src")
        let patched = try CLI.run(
            ["pack", src.path, "-o", dir.appending("p2.zip").path, "--patch-of", other, "--patch-of", patch],
            password: Self.password)
        #expect(patched.status == 4, "\(patched.stderr)")
        #expect(patched.stderr.contains("which no pack below it has"), "\(patched.stderr)")
    }

    @Test func listFolder() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(Self.baseTree, "base", in: dir).path
        let patch = try Self.pack(["img/new.png": "n", "imgx.png": "x"], "patch", in: dir).path
        let one = try CLI.run(["list", base, "--folder", "img", "--json"], password: Self.password)
        #expect(one.status == 0)
        let paths = { (run: CLI.Run) in
            ((try? JSONSerialization.jsonObject(with: Data(run.stdout))) as? [String: Any])
                .map { ($0["entries"] as! [[String: Any]]).map { $0["path"] as! String } } ?? []
        }
        #expect(paths(one) == ["img/c.png"])
        let set = try CLI.run(
            ["list", base, "--over", patch, "--folder", "img/", "--json"], password: Self.password)
        #expect(paths(set) == ["img/c.png", "img/new.png"])
        let table = try CLI.run(["list", base, "--over", patch, "--folder", "img"], password: Self.password)
        #expect(table.stderr.contains("2 entries"))
        let none = try CLI.run(["list", base, "--folder", "nothing", "--json"], password: Self.password)
        #expect(none.status == 0 && paths(none) == [])
    }

    @Test(.slow, arguments: ["zip", "container"])
    func aSignedPatchVerifiesWithTrust(format: String) throws {
        let dir = TemporaryDirectory()
        let keygen = try CLI.run(["keygen", "--out", dir.appending("pub").path])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let key = dir.appending("pub.key").path
        let trust = dir.appending("pub.pub").path
        let base = try Self.pack(Self.baseTree, "base", in: dir, format: format, ["--sign-key", key]).path
        let (patch, run) = try Self.pack(
            ["a.txt": "new a"], "patch", in: dir, format: format, ["--patch-of", base, "--sign-key", key])
        #expect(run.stderr.contains("1 added") == false)
        #expect(run.stderr.contains("0 added, 1 changed, 3 deleted"), "\(run.stderr)")
        #expect(run.stderr.contains("signed by key"))
        let verify = try CLI.run(["verify", base, "--over", patch, "--trust", trust], password: Self.password)
        #expect(verify.status == 0, "\(verify.stderr)")
        // The patched a.txt, then the base's 4 records the patch replaces or deletes, read all the same.
        #expect(
            verify.stderr.contains("5 of 5 entries verified (4 of them replaced or deleted by a pack above"),
            "\(verify.stderr)")
        #expect(!run.stderr.contains("warning"), "\(run.stderr)")
        // Without --sign-key the patch is unsigned, which --trust refuses over the signed base: warned.
        let (unsigned, plain) = try Self.pack(
            ["a.txt": "newer a"], "patch2", in: dir, format: format, ["--patch-of", base])
        #expect(
            plain.stderr.contains("which this patches, is signed by key")
                && plain.stderr.contains("this patch is not signed"), "\(plain.stderr)")
        let refused = try CLI.run(["verify", base, "--over", unsigned, "--trust", trust], password: Self.password)
        #expect(refused.status == 5, "\(refused.stderr)")
    }

    @Test func aUnicodeConflictBetweenPacksIsRefused() throws {
        let dir = TemporaryDirectory()
        let base = try Self.pack(["caf\u{E9}.txt": "nfc"], "base", in: dir, format: "container").path
        // A container whose path is stored NFD (the writer keeps the bytes it is given).
        let file = dir.appending("nfd")
        try Data("nfd".utf8).write(to: file)
        var options = PackOptions.forTests
        options.format = .container
        options.credential = .password(Self.password)
        let other = dir.appending("nfd.pack").path
        try AssetPacks.driver(for: .container).makeWriter().write(
            [SourceFile(path: "cafe\u{301}.txt", url: file, size: 3)], to: other, options: options)
        let run = try CLI.run(["list", base, "--over", other], password: Self.password)
        #expect(run.status == 4)
        #expect(run.stderr.contains("\(base) and \(other) hold"), "\(run.stderr)")
    }
}

/// `--over PACK,password-env=NAME` (or `,password-file=PATH`, `,key-file=PATH`): a pack of a set
/// with a credential of its own, through the built binary.
@Suite struct PackSetCredentialCLITests {
    let dir = TemporaryDirectory()

    /// Packs `files` into `dir/name.pack` with `arguments` (format and credential) and `environment`.
    func pack(_ files: [String: String], _ name: String, _ arguments: [String], password: String? = nil) throws
        -> String
    {
        try dir.write(files.mapValues { Array($0.utf8) }, under: name)
        let out = dir.appending("\(name).pack").path
        let run = try CLI.run(["pack", dir.appending(name).path, "-o", out, "--quiet"] + arguments, password: password)
        #expect(run.status == 0, "\(run.stderr)")
        return out
    }

    @Test(.slow) func eachOverPackCanHaveItsOwnCredential() throws {
        let base = try pack(
            ["a.txt": "base a", "b.txt": "base b", "c.txt": "base c"], "base", ["--format", "zip"],
            password: "base-pw")
        let dlc = try pack(["b.txt": "dlc b"], "dlc", ["--format", "zip"], password: "dlc-pw")
        let key = dir.appending("patch.key")
        try Data(String(repeating: "5a", count: 32).utf8).write(to: key)
        let patch = try pack(["c.txt": "patch c"], "patch", ["--format", "container", "--key-file", key.path])
        let passwordFile = dir.appending("lang.password")
        try Data("lang-pw\n".utf8).write(to: passwordFile)
        let lang = try pack(
            ["d.txt": "lang d"], "lang", ["--format", "container", "--password-file", passwordFile.path])
        let over = [
            "--over", "\(dlc),password-env=DLC_PW", "--over", "\(patch),key-file=\(key.path)",
            "--over", "\(lang),password-file=\(passwordFile.path)",
        ]
        func run(_ arguments: [String], _ environment: [String: String] = ["DLC_PW": "dlc-pw"]) throws -> CLI.Run {
            try CLI.run(arguments, password: "base-pw", environment: environment)
        }
        for (path, bytes) in [("a.txt", "base a"), ("b.txt", "dlc b"), ("c.txt", "patch c"), ("d.txt", "lang d")] {
            let cat = try run(["cat", base, path] + over)
            #expect(cat.status == 0 && cat.text == bytes, "\(path): \(cat.stderr)")
        }
        // The packs are named by their locations, without the credential.
        let list = try run(["list", base, "--json"] + over)
        #expect(list.status == 0, "\(list.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        let entries = document?["entries"] as? [[String: Any]] ?? []
        #expect(entries.map { $0["pack"] as? String } == [base, dlc, patch, lang])
        let verify = try run(["verify", base, "--quiet"] + over)
        #expect(verify.status == 0, "\(verify.stderr)")
        let into = dir.appending("out").path
        let extract = try run(["extract", base, "--into", into, "--quiet"] + over)
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(try String(contentsOfFile: into + "/b.txt", encoding: .utf8) == "dlc b")

        // Without its own credential, the DLC is read with the base's password: refused (exit 2),
        // naming the pack; so is an unset variable.
        let shared = try run(["cat", base, "b.txt", "--over", dlc])
        #expect(shared.status == 2 && shared.stderr.contains(dlc), "\(shared.status) \(shared.stderr)")
        let unset = try run(["cat", base, "b.txt"] + over, [:])
        #expect(unset.status == 2, "\(unset.stderr)")
        #expect(unset.stderr.contains(dlc) && unset.stderr.contains("DLC_PW"), "\(unset.stderr)")
        // The wrong key for the container: exit 2 naming it.
        let wrongKey = dir.appending("wrong.key")
        try Data(String(repeating: "00", count: 32).utf8).write(to: wrongKey)
        let wrong = try run(["cat", base, "c.txt", "--over", "\(patch),key-file=\(wrongKey.path)"])
        #expect(wrong.status == 2 && wrong.stderr.contains(patch), "\(wrong.stderr)")
    }

    @Test(arguments: [
        "p.pack,password-env=", ",password-env=X", "p.pack,password-env=A,key-file=k", "p.pack,key-file=",
    ])
    func aMalformedOverCredentialIsAUsageError(value: String) throws {
        let base = try pack(["a.txt": "a"], "base", ["--format", "zip"], password: "pw")
        let run = try CLI.run(["list", base, "--over", value], password: "pw")
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("--over"), "\(run.stderr)")
    }
}
#endif
