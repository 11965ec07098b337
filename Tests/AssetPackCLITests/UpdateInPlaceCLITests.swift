#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `install URL` of a container that the publisher re-packed (version 6: a generation appended)
/// over an installed earlier generation, through the built binary against nginx: only the new
/// header and tail are downloaded and written, the installed file ends byte for byte the remote
/// one, and whatever is not an append of it (a compacted pack, a tampered tail) is installed
/// whole or refused, never half applied.
@Suite(.serialized, .slow) struct UpdateInPlaceCLITests {
    let dir = TemporaryDirectory("update-in-place-cli")
    static let password = "in place"

    /// Fields of install's summary: "downloaded D bytes …, reused R bytes … ; W bytes written".
    static func numbers(_ stderr: String) -> (downloaded: UInt64, reused: UInt64, written: UInt64)? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.contains("downloaded") }),
            let m = line.firstMatch(of: /downloaded ([0-9]+) bytes.* reused ([0-9]+) bytes.*; ([0-9]+) bytes written/)
        else { return nil }
        return (UInt64(m.1)!, UInt64(m.2)!, UInt64(m.3)!)
    }

    struct Setup {
        var src: URL
        var out: URL
        var url: String
        var home: String
        var nginx: NginxServer
        var pack: ([String]) throws -> CLI.Run
    }

    func setUp(signed: Bool) throws -> Setup {
        let src = try dir.write(
            ["big.bin": testBytes(3_000_000, seed: 1), "small.txt": Array("version 1\n".utf8)], under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        if signed { #expect(try CLI.run(["keygen", "--out", dir.appending("k").path, "--quiet"]).status == 0) }
        let out = dir.appending("www/p.apack")
        let sign = signed ? ["--sign-key", dir.appending("k.key").path] : []
        let pack = { (extra: [String]) in
            let run = try CLI.run(
                ["pack", src.path, "--format", "container", "-o", out.path, "--scrypt-cost", "10"] + sign + extra,
                password: Self.password)
            // nginx's ETag is the mtime in seconds and the size: a version of its own either way.
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(Double.random(in: 10...1000))], ofItemAtPath: out.path)
            return run
        }
        #expect(try pack([]).status == 0)
        let nginx = try NginxServer(root: dir.appending("www"))
        return Setup(
            src: src, out: out, url: nginx.url("p.apack").absoluteString, home: dir.appending("home").path,
            nginx: nginx, pack: pack)
    }

    /// Adds a 60 KB file (seeded by `seed`) to the source: the publisher's re-pack appends it
    /// and zeroes the earlier index.
    func edit(_ s: Setup, at seed: Int = 1) throws {
        try Data(testBytes(60_000, seed: UInt64(1000 + seed))).write(
            to: s.src.appendingPathComponent("added-\(seed).bin"))
    }

    /// A signed pack needs no password: the headers say it is an append, the signature checks the
    /// result. A few KiB of chunk and index are downloaded, twice that written; the rest stays.
    @Test func aSignedUpdateIsAppendedInPlaceWithoutThePassword() throws {
        let s = try setUp(signed: true)
        let trust = ["--trust", dir.appending("k.pub").path]
        #expect(try CLI.run(["install", s.url, "--into", s.home] + trust).status == 0)
        let inode = try FileSystem.stat(s.home + "/p.apack").inode
        try edit(s)
        #expect(try s.pack([]).status == 0)
        let size = try FileSystem.stat(s.out.path).size

        let update = try CLI.run(["install", s.url, "--into", s.home] + trust)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stderr.contains("in place"), "\(update.stderr)")
        let (downloaded, reused, written) = try #require(Self.numbers(update.stderr), "\(update.stderr)")
        #expect(downloaded < 400_000 && written < 2 * downloaded + 1024, "\(update.stderr)")
        #expect(reused > size * 8 / 10, "\(update.stderr)")
        #expect(try FileSystem.stat(s.home + "/p.apack").inode == inode, "the installed file was replaced")
        #expect(
            FileManager.default.contents(atPath: s.home + "/p.apack")
                == FileManager.default.contents(atPath: s.out.path))
        #expect(try CLI.run(["verify", s.home + "/p.apack", "--quiet"] + trust, password: Self.password).status == 0)
        let cat = try CLI.run(["cat", s.home + "/p.apack", "big.bin"], password: Self.password)
        let big = [UInt8](try Data(contentsOf: s.src.appendingPathComponent("big.bin")))
        let same = cat.stdout == big  // a Bool: a failure does not print every byte
        #expect(cat.status == 0 && same)
        let names = try FileManager.default.contentsOfDirectory(atPath: s.home)
        #expect(!names.contains { $0.contains("download") }, "\(names)")
        // Installing again: current, one request.
        let again = try CLI.run(["install", s.url, "--into", s.home] + trust)
        #expect(again.stderr.contains("already installed and current"), "\(again.stderr)")
        // The installed copy's current slot damaged (one byte of its check): no longer current,
        // installed again from the server, never read as the earlier generation.
        var damaged = [UInt8](try Data(contentsOf: URL(fileURLWithPath: s.home + "/p.apack")))
        let current = damaged[0..<8].elementsEqual(Array("APACK\0\r\n".utf8)) ? 0 : 4096
        damaged[current + 125] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: s.home + "/p.apack"))
        #expect(try CLI.run(["list", s.home + "/p.apack"] + trust, password: Self.password).status != 0)
        let repaired = try CLI.run(["install", s.url, "--into", s.home] + trust)
        #expect(repaired.status == 0 && !repaired.stderr.contains("current"), "\(repaired.stderr)")
        #expect(
            FileManager.default.contents(atPath: s.home + "/p.apack")
                == FileManager.default.contents(atPath: s.out.path))
    }

    /// A re-pack that replaced a chunk (a one-byte edit) and removed a file appends, and zeroes
    /// what it replaced and removed: the installed copy updates in place with the password,
    /// downloads only the tail, and ends byte for byte the server's, zeros included, so it keeps
    /// nothing the new version removed. Signed and without the password (the installer cannot
    /// tell which chunks died), the same update is installed whole, and ends the same.
    @Test(arguments: [false, true]) func anUpdateThatReplacedContentZeroesItInTheInstalledCopy(signed: Bool) throws {
        let s = try setUp(signed: signed)
        let trust = signed ? ["--trust", dir.appending("k.pub").path] : []
        let password = signed ? nil : Self.password
        #expect(try CLI.run(["install", s.url, "--into", s.home] + trust, password: password).status == 0)
        let inode = try FileSystem.stat(s.home + "/p.apack").inode
        let installedBefore = [UInt8](try Data(contentsOf: URL(fileURLWithPath: s.home + "/p.apack")))
        var big = [UInt8](try Data(contentsOf: s.src.appendingPathComponent("big.bin")))
        big[1_500_000] ^= 0xFF
        try Data(big).write(to: s.src.appendingPathComponent("big.bin"))
        try FileManager.default.removeItem(at: s.src.appendingPathComponent("small.txt"))
        let repack = try s.pack([])
        #expect(repack.status == 0 && repack.stderr.contains("appended: "), "\(repack.stderr)")
        let served = [UInt8](try Data(contentsOf: s.out))
        // Zeroed in place on the server: bytes below the earlier end changed only to zero.
        let zeroed = (8192..<installedBefore.count).filter { served[$0] != installedBefore[$0] }
        #expect(zeroed.count > 1024 && zeroed.allSatisfy { served[$0] == 0 }, "\(zeroed.count) bytes changed")

        let update = try CLI.run(["install", s.url, "--into", s.home] + trust, password: password)
        #expect(update.status == 0, "\(update.stderr)")
        let installed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: s.home + "/p.apack")))
        #expect(installed.count == served.count && installed[8192...] == served[8192...], "\(update.stderr)")
        if signed {
            #expect(!update.stderr.contains("in place"), "\(update.stderr)")
        } else {
            #expect(update.stderr.contains("in place"), "\(update.stderr)")
            #expect(try FileSystem.stat(s.home + "/p.apack").inode == inode, "the installed file was replaced")
            let (downloaded, _, _) = try #require(Self.numbers(update.stderr), "\(update.stderr)")
            #expect(downloaded < 200_000, "\(update.stderr)")
        }
        let verify = try CLI.run(["verify", s.home + "/p.apack", "--quiet"] + trust, password: Self.password)
        #expect(verify.status == 0, "\(verify.stderr)")
        let cat = try CLI.run(["cat", s.home + "/p.apack", "big.bin"], password: Self.password)
        let same = cat.stdout == big
        #expect(cat.status == 0 && same)
    }

    /// An unsigned container is updated in place only when its password checks every entry of
    /// the result; two generations at once (the device skipped one) append the same way.
    @Test func anUnsignedUpdateWithItsPasswordSkippingAGeneration() throws {
        let s = try setUp(signed: false)
        #expect(try CLI.run(["install", s.url, "--into", s.home], password: Self.password).status == 0)
        let firstSlot = try #require(FileManager.default.contents(atPath: s.home + "/p.apack")).prefix(128)
        try edit(s)
        #expect(try s.pack([]).status == 0)
        try edit(s, at: 2)
        #expect(try s.pack([]).status == 0)
        let update = try CLI.run(["install", s.url, "--into", s.home], password: Self.password)
        #expect(update.status == 0 && update.stderr.contains("in place"), "\(update.stderr)")
        // The data is the server's byte for byte; the header slots are the server's current one
        // (where the installed pack's other slot was) and the installed pack's own, wiped once
        // the new one was synced: the server's older slot, which nothing verifies, is not written.
        let installed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: s.home + "/p.apack")))
        let served = [UInt8](try Data(contentsOf: s.out))
        #expect(installed.count == served.count && installed[8192...] == served[8192...])
        #expect(installed[4096..<4224] == served[0..<128], "the server's current slot, generation 3, in slot 1")
        #expect(
            firstSlot.contains { $0 != 0 } && installed[0..<128].allSatisfy { $0 == 0 },
            "the installed generation's slot is wiped")
        #expect(try CLI.run(["verify", s.home + "/p.apack", "--quiet"], password: Self.password).status == 0)
        let (downloaded, _, _) = try #require(Self.numbers(update.stderr), "\(update.stderr)")
        #expect(downloaded < 600_000, "\(update.stderr)")
    }

    /// A pack the publisher compacted (written afresh, same keys, later generation) shares no
    /// layout with the installed one: the spliced result fails its check, and the install goes
    /// on whole, reusing what it can, to the remote's exact bytes.
    @Test func aCompactedPackIsInstalledWhole() throws {
        let s = try setUp(signed: true)
        let trust = ["--trust", dir.appending("k.pub").path]
        #expect(try CLI.run(["install", s.url, "--into", s.home] + trust).status == 0)
        for seed in [5, 6] as [UInt64] {  // every chunk changes twice: the second re-pack compacts
            try Data(testBytes(3_000_000, seed: seed)).write(to: s.src.appendingPathComponent("big.bin"))
            #expect(try s.pack([]).status == 0)
        }
        let update = try CLI.run(["install", s.url, "--into", s.home] + trust)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(!update.stderr.contains("in place"), "\(update.stderr)")
        #expect(
            FileManager.default.contents(atPath: s.home + "/p.apack")
                == FileManager.default.contents(atPath: s.out.path))
    }

    /// A tail changed on the server (one byte of the new chunk): the signature refuses the spliced
    /// pack and then the whole download; the installed pack stays the earlier one, byte for byte.
    @Test func aTamperedTailIsRefusedAndTheInstalledPackStays() throws {
        let s = try setUp(signed: true)
        let trust = ["--trust", dir.appending("k.pub").path]
        #expect(try CLI.run(["install", s.url, "--into", s.home] + trust).status == 0)
        let installed = try #require(FileManager.default.contents(atPath: s.home + "/p.apack"))
        try edit(s)
        #expect(try s.pack([]).status == 0)
        var served = [UInt8](try Data(contentsOf: s.out))
        served[installed.count + 100] ^= 1  // in the appended chunk
        try Data(served).write(to: s.out)

        let update = try CLI.run(["install", s.url, "--into", s.home] + trust)
        #expect(update.status == 5, "\(update.status): \(update.stderr)")
        #expect(FileManager.default.contents(atPath: s.home + "/p.apack") == installed)
        // Without --trust the signature is checked against its own key: not what it describes
        // is damage (exit 4), not distrust (exit 5 is --trust's).
        let untrusting = try CLI.run(["install", s.url, "--into", s.home])
        #expect(untrusting.status == 4, "\(untrusting.status): \(untrusting.stderr)")
        #expect(untrusting.stderr.contains("is not what its signature describes"), "\(untrusting.stderr)")
        #expect(FileManager.default.contents(atPath: s.home + "/p.apack") == installed)
        let names = try FileManager.default.contentsOfDirectory(atPath: s.home)
        #expect(!names.contains { $0.contains("download") }, "\(names)")
    }
}
#endif
