#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The rollback holes and leftover content of issue 37, through the built binary: a damaged
/// newer header slot is refused (never read as the older generation), an install that calls a
/// pack current looks at the installed bytes, and what a re-pack removed or replaced is not left
/// in the container (docs/SECURITY.md, "Update attacks").
@Suite struct RollbackHolesCLITests {
    let dir = TemporaryDirectory("rollback-holes")
    static let password = "holes"

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: Self.password) }

    /// A container of `src/` at `out.apack` (signed by `k` when `signed`): version 1 holds a.txt,
    /// version 2 adds b.txt (an append: nothing removed). Returns the pack's path and the trust options.
    func twoGenerations(signed: Bool) throws -> (pack: String, trust: [String]) {
        let src = try dir.write(
            ["a.txt": Array("version 1\n".utf8), "big.bin": testBytes(300_000, seed: 9)], under: "src")
        if signed { try CLI.keygen(["k"], in: dir) }
        let out = dir.appending("out.apack").path
        let sign = signed ? ["--sign-key", dir.appending("k.key").path] : []
        let first = try run(
            ["pack", src.path, "-o", out, "--format", "container"] + sign
                + ["--pack-version", "1"].filter { _ in signed })
        #expect(first.status == 0, "\(first.stderr)")
        try Data("added in version 2\n".utf8).write(to: src.appendingPathComponent("b.txt"))
        let second = try run(["pack", src.path, "-o", out] + sign + ["--pack-version", "2"].filter { _ in signed })
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("appended"), "an add-only re-pack appends: \(second.stderr)")
        return (out, signed ? ["--trust", dir.appending("k.pub").path] : [])
    }

    /// The slot a pack's current generation is in: the one whose 8-byte generation field is higher.
    static func newerSlot(_ bytes: [UInt8]) -> Int {
        func generation(_ slot: Int) -> UInt64 {
            bytes[slot * 4096 + 72..<slot * 4096 + 80].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        return generation(1) > generation(0) ? 1 : 0
    }

    /// One byte of the newer slot's check flipped (no key needed): before, every reader served
    /// the previous generation (without b.txt; for a signed pack, the previous signed version).
    @Test(arguments: [false, true])
    func aDamagedNewerSlotIsRefusedNotReadAsTheOlderGeneration(signed: Bool) throws {
        let (pack, trust) = try twoGenerations(signed: signed)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pack)))
        let newer = Self.newerSlot(bytes)
        #expect(newer == 1)
        // The older slot was wiped once the newer one was synced: nothing leads back to it.
        #expect(bytes[0..<128].allSatisfy { $0 == 0 }, "the superseded slot is zeros")
        bytes[newer * 4096 + 125] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: pack))
        for arguments in [["list", pack], ["cat", pack, "a.txt"], ["verify", pack]] {
            let read = try run(arguments + trust)
            #expect([4, 5].contains(read.status), "\(arguments): \(read.status) \(read.stderr)")
            #expect(read.stdout.isEmpty, "\(arguments): served \(read.stdout.count) bytes")
        }
        let list = try run(["list", pack])
        #expect(list.status == 4, "\(list.stderr)")
        #expect(list.stderr.contains("container header is corrupt"), "\(list.stderr)")
    }

    /// An installed copy whose newer slot was damaged after the install: `install` no longer
    /// says "already installed and current" (it never looked at the installed bytes); it installs
    /// the pack again, and the copy reads as the current version.
    @Test(arguments: [false, true])
    func installLooksAtTheInstalledBytesItCallsCurrent(signed: Bool) throws {
        let (pack, trust) = try twoGenerations(signed: signed)
        let home = dir.appending("home").path
        let first = try run(["install", pack, "--into", home] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        let installed = first.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let again = try run(["install", pack, "--into", home] + trust)
        #expect(again.stderr.contains("already installed and current"), "\(again.stderr)")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: installed)))
        bytes[Self.newerSlot(bytes) * 4096 + 125] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: installed))
        let repaired = try run(["install", pack, "--into", home] + trust)
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(!repaired.stderr.contains("already installed and current"), "\(repaired.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: installed)) == Data(contentsOf: URL(fileURLWithPath: pack)))
        let cat = try run(["cat", installed, "b.txt"] + trust)
        #expect(cat.status == 0 && cat.text == "added in version 2\n", "\(cat.stderr)")
    }

    /// A file removed from the tree, then a file edited in place (same size): the re-pack rewrites
    /// the container (a removal that would leave half the file dead) or appends and zeroes what
    /// it replaced, so neither the removed file's chunks nor the edited chunk's earlier bytes
    /// stay in the published pack (the password ships inside the app), and the summary says
    /// what was dropped or zeroed. Before 0.3, the file kept both ("readable with the password").
    @Test func whatARepackRemovedOrReplacedIsNotLeftInThePack() throws {
        let boss = testBytes(2_000_000, seed: 77)  // random: stored as it is, never shrinks
        let src = try dir.write(
            ["level.bin": testBytes(400_000, seed: 3), "unreleased_boss.bin": boss, "a.txt": textBytes(3_000)],
            under: "src")
        let out = dir.appending("assets.apack").path
        func pack(_ extra: [String] = []) throws -> CLI.Run {
            let made = try run(["pack", src.path, "-o", out, "--format", "container"] + extra)
            #expect(made.status == 0, "\(made.stderr)")
            return made
        }
        _ = try pack()
        let withBoss = Int(try FileSystem.stat(out).size)
        try FileManager.default.removeItem(at: src.appendingPathComponent("unreleased_boss.bin"))
        let removed = try pack()
        let fresh = dir.appending("fresh.apack").path
        #expect(try run(["pack", src.path, "-o", fresh, "--format", "container"]).status == 0)
        let size = Int(try FileSystem.stat(out).size)
        #expect(withBoss - size >= boss.count, "the boss's bytes are gone: \(withBoss) → \(size)")
        #expect(size <= Int(try FileSystem.stat(fresh).size) + 4096, "no bigger than a fresh pack of the tree")
        #expect(removed.stderr.contains("1 removed"), "\(removed.stderr)")
        #expect(removed.stderr.contains("rewritten whole"), "\(removed.stderr)")
        #expect(
            removed.stderr.contains("removed or replaced content and earlier versions dropped"), "\(removed.stderr)")
        #expect(removed.stderr.contains("(they were half of the file)"), "\(removed.stderr)")
        // The first header slot only: no older slot leads anywhere.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(bytes[4096..<4224].allSatisfy { $0 == 0 })

        // An edit of the same size: appended, and the edited chunk's earlier bytes (and the
        // earlier index) zeroed in place once the new version is committed: below the earlier
        // end no byte changed but to zero (the header slots aside), in a run of a chunk at least.
        var level = [UInt8](try Data(contentsOf: src.appendingPathComponent("level.bin")))
        level[200_000] ^= 0xFF
        try Data(level).write(to: src.appendingPathComponent("level.bin"))
        let edited = try pack()
        #expect(edited.stderr.contains("appended: "), "\(edited.stderr)")
        #expect(
            edited.stderr.contains("bytes of removed or replaced content and earlier indexes zeroed"),
            "\(edited.stderr)")
        let after = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(after.count > size)
        let changed = (8192..<size).filter { after[$0] != bytes[$0] }
        #expect(changed.allSatisfy { after[$0] == 0 }, "only zeros written below the earlier end")
        var zeros = 0
        var longest = 0
        for p in 8192..<size {
            zeros = after[p] == 0 ? zeros + 1 : 0
            longest = max(longest, zeros)
        }
        #expect(longest >= 1024, "the replaced chunk's bytes zeroed: the longest run of zeros is \(longest)")
        let cat = try run(["cat", out, "level.bin"])
        #expect(cat.status == 0 && cat.stdout == level)
    }

    /// A deletion record is decoded whole at every open: one that declares 20 MiB (a 20 KB
    /// unencrypted zip: it deflates to almost nothing) is refused by its own limit before a byte
    /// of it is allocated, with a message naming the limit. Before, `list` inflated it whole
    /// (300 MB in the report: 600 MB of memory and 5 s) and only then found it malformed.
    @Test func aDeletionRecordOverItsLimitIsRefusedBeforeItIsRead() throws {
        var record = Array("APDL".utf8) + [1, 0, 0, 0, 0]
        record += [UInt8](repeating: 0, count: 20 << 20)
        let zip = dir.appending("hostile.zip")
        try ZipBuilder([
            .init("a.txt", Array("a".utf8)), .init(".assetpack/deleted", record, deflate: true),
        ]).write(to: zip)
        #expect(try FileSystem.stat(zip.path).size < 100_000)
        let list = try CLI.run(["list", zip.path])
        #expect(list.status == 1, "\(list.status) \(list.stderr)")
        #expect(
            list.stderr.contains(
                "the deletion record declares 20971529 bytes; the limit is 16777216 (ReadLimits.maxDeletionRecordSize)"),
            "\(list.stderr)")
    }

    /// The plugin's tool follows the same rule: a removed asset is not left in its output.
    @Test func thePluginsToolDropsWhatWasRemovedToo() throws {
        let src = try dir.write(
            ["a.txt": textBytes(2_000, seed: 1), "unreleased_boss.bin": testBytes(1_000_000, seed: 5)], under: "tool")
        let out = dir.appending("tool.pack").path
        let arguments = [
            src.path, out, "--format", "container", "--compression", "auto", "--password-env", "ASSETPACK_PASSWORD",
            "--scrypt-cost", "10",
        ]
        let tool = CLI.binary.deletingLastPathComponent().appendingPathComponent("assetpack-pack").path
        #expect(try CLI.run(arguments, password: Self.password, executable: tool).status == 0)
        let before = Int(try FileSystem.stat(out).size)
        try FileManager.default.removeItem(at: src.appendingPathComponent("unreleased_boss.bin"))
        let again = try CLI.run(arguments, password: Self.password, executable: tool)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(before - Int(try FileSystem.stat(out).size) >= 1_000_000, "the removed asset's bytes are gone")
    }
}
#endif
