#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack --scrypt-cost LOG2N` through the built binary: without it a new container's
/// header records scrypt N = 2^15, r = 8, p = 1 (the documented default); with it, the given N;
/// a re-pack without it keeps the old pack's cost and reuses its entries, one with another cost
/// re-packs everything; every pack reads back with its password; the option is refused for zip,
/// with a key file and outside 10…18.
@Suite struct ScryptCostCLITests {
    static let password = "scrypt cost"

    /// Packs `a.txt` into the container `name` with `extra` (at the default cost unless `extra`
    /// says otherwise) and returns the run and the pack's header KDF fields (id, param 1, 2, 3:
    /// FORMAT.md "Header").
    static func pack(_ dir: TemporaryDirectory, _ name: String, _ extra: [String]) throws -> (CLI.Run, [UInt32]) {
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src")
        let output = dir.appending(name)
        let run = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", "container"] + extra,
            password: password, cheapKDF: false)
        guard run.status == 0 else { return (run, []) }
        let header = [UInt8](try Data(contentsOf: output).prefix(24))
        let u32 = { (at: Int) in header[at..<at + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let read = try CLI.run(["cat", output.path, "a.txt"], password: password)
        #expect(read.status == 0 && read.text == "hello", "\(read.stderr)")
        return (run, [UInt32(header[10]), u32(12), u32(16), u32(20)])
    }

    @Test func theDefaultIsRecordedAndTheOptionChangesIt() throws {
        let dir = TemporaryDirectory()
        let (plain, defaultFields) = try Self.pack(dir, "default.apack", [])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(defaultFields == [1, 15, 8, 1])
        for cost in [10, 12] {
            let (run, fields) = try Self.pack(dir, "cost-\(cost).apack", ["--scrypt-cost", "\(cost)"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fields == [1, UInt32(cost), 8, 1])
        }
    }

    @Test func aRepackKeepsTheCostUnlessAnotherIsGiven() throws {
        let dir = TemporaryDirectory()
        _ = try Self.pack(dir, "p.apack", ["--scrypt-cost", "11"])
        let (kept, keptFields) = try Self.pack(dir, "p.apack", [])
        #expect(keptFields == [1, 11, 8, 1])
        #expect(kept.stderr.contains("1 reused, 0 packed"), "\(kept.stderr)")
        let (changed, changedFields) = try Self.pack(dir, "p.apack", ["--scrypt-cost", "12"])
        #expect(changedFields == [1, 12, 8, 1])
        #expect(changed.stderr.contains("0 reused, 1 packed"), "\(changed.stderr)")
    }

    @Test func whereItDoesNotApplyItIsAUsageError() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src").path
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        let key = ["--key-file", dir.appending("key").path]
        let cases: [([String], String)] = [
            (["--format", "zip", "--scrypt-cost", "12"], "zip packs do not use scrypt"),
            (["--format", "container", "--scrypt-cost", "12"] + key, "a --key-file pack runs no KDF"),
            (["--format", "container", "--scrypt-cost", "9"] + key, "a --key-file pack runs no KDF"),
            (["--format", "container", "--scrypt-cost", "9"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "19"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "300"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "abc"], "'abc' is invalid for '--scrypt-cost"),
        ]
        for (extra, message) in cases {
            let output = dir.appending("out.pack")
            let run = try CLI.run(["pack", source, "--output", output.path] + extra, password: Self.password)
            #expect(run.status == 64, "\(extra): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(message), "\(extra): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output.path), "\(extra) wrote a pack")
        }
    }
}

extension ScryptCostCLITests {
    /// The header KDF fields of the container at `url` (id, param 1, 2, 3).
    static func kdfFields(_ url: URL) throws -> [UInt32] {
        let header = [UInt8](try Data(contentsOf: url).prefix(24))
        let u32 = { (at: Int) in header[at..<at + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        return [UInt32(header[10]), u32(12), u32(16), u32(20)]
    }

    /// A patch is opened with its base, so a team that lowered the base's cost for slow devices
    /// gets it for the patch too: `--patch-of` without `--scrypt-cost` takes the cost of the pack
    /// it patches (the last one named), as it takes its format.
    @Test func aPatchTakesTheCostOfThePackItPatchesUnlessGiven() throws {
        let dir = TemporaryDirectory()
        _ = try Self.pack(dir, "base.apack", ["--scrypt-cost", "11"])
        let source = try dir.write(["a.txt": Array("hello".utf8), "b.txt": Array("new".utf8)], under: "src2")
        let base = dir.appending("base.apack").path
        for (name, extra, cost) in [
            ("patch.apack", [String](), UInt32(11)), ("chosen.apack", ["--scrypt-cost", "12"], 12),
        ] {
            let run = try CLI.run(
                ["pack", source.path, "--patch-of", base, "--output", dir.appending(name).path] + extra,
                password: Self.password, cheapKDF: false)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Self.kdfFields(dir.appending(name)) == [1, cost, 8, 1], "\(name)")
            let read = try CLI.run(["cat", base, "b.txt", "--over", dir.appending(name).path], password: Self.password)
            #expect(read.status == 0 && read.text == "new", "\(read.stderr)")
        }
        // A patch of a patch: the cost of the last pack named.
        let run = try CLI.run(
            [
                "pack", source.path, "--patch-of", base, "--patch-of", dir.appending("chosen.apack").path, "--output",
                dir.appending("second.apack").path,
            ],
            password: Self.password, cheapKDF: false)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Self.kdfFields(dir.appending("second.apack")) == [1, 12, 8, 1])
    }

    /// `list --json` says what each guess at a container's password costs; a zip and a
    /// key-file container have no such KDF and no `kdf` key.
    @Test func listJSONNamesTheKDF() throws {
        let dir = TemporaryDirectory()
        _ = try Self.pack(dir, "c.apack", ["--scrypt-cost", "12"])
        let listed = try CLI.run(["list", dir.appending("c.apack").path, "--json"], password: Self.password)
        #expect(listed.status == 0, "\(listed.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(listed.text.utf8)) as? [String: Any]
        let kdf = doc?["kdf"] as? [String: Any]
        #expect(kdf?["name"] as? String == "scrypt", "\(listed.text)")
        #expect(kdf?["log2_n"] as? Int == 12 && kdf?["r"] as? Int == 8 && kdf?["p"] as? Int == 1, "\(listed.text)")
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "zsrc")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        for (name, extra) in [
            ("z.zip", ["--format", "zip"]),
            ("k.apack", ["--format", "container", "--key-file", dir.appending("key").path]),
        ] {
            let out = dir.appending(name).path
            let packed = try CLI.run(["pack", source.path, "--output", out] + extra, password: Self.password)
            #expect(packed.status == 0, "\(packed.stderr)")
            let keyArgs = name == "k.apack" ? ["--key-file", dir.appending("key").path] : []
            let list = try CLI.run(["list", out, "--json"] + keyArgs, password: Self.password)
            #expect(list.status == 0, "\(list.stderr)")
            let d = try JSONSerialization.jsonObject(with: Data(list.text.utf8)) as? [String: Any]
            #expect(d != nil && d?["kdf"] == nil, "\(name): \(list.text)")
        }
    }
}
#endif
