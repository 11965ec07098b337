#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The smaller defects of issue 37, each through the built binary: what was silent says so,
/// what was left behind is not, and damage is told from a wrong password.
@Suite struct SmallDefectsCLITests {
    let dir = TemporaryDirectory("small-defects")
    static let password = "small"

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: Self.password) }

    func source() throws -> URL {
        try dir.write(["a.txt": Array("a\n".utf8), "b/c.bin": testBytes(20_000, seed: 2)], under: "src")
    }

    /// `pack -o LINK`: the rename replaced the link with a file and left its target as it was,
    /// without a word. Refused now, naming the target; nothing is written.
    @Test(arguments: ["zip", "container"]) func aSymbolicLinkAtTheOutputIsRefused(format: String) throws {
        let src = try source()
        let target = dir.appending("real.pack")
        try Data("previous".utf8).write(to: target)
        let link = dir.appending("link.pack")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
        let made = try run(["pack", src.path, "-o", link.path, "--format", format])
        #expect(made.status == 1, "\(made.stderr)")
        #expect(made.stderr.contains("is a symbolic link (to \(target.path))"), "\(made.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        #expect(try Data(contentsOf: target) == Data("previous".utf8))
    }

    /// `extract` replaced files already in `--into` silently; now it refuses before writing
    /// anything (as `tar -k` and `unzip -n` users expect), and `--force` replaces them.
    @Test func extractKeepsExistingFilesUnlessForced() throws {
        let src = try source()
        let pack = dir.appending("p.zip").path
        #expect(try run(["pack", src.path, "-o", pack]).status == 0)
        let into = dir.appending("out")
        try FileManager.default.createDirectory(at: into.appendingPathComponent("b"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: into.appendingPathComponent("b/c.bin"))
        let refused = try run(["extract", pack, "--into", into.path])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("b/c.bin exists: extract does not replace files (--force"), "\(refused.stderr)")
        #expect(try Data(contentsOf: into.appendingPathComponent("b/c.bin")) == Data("mine".utf8))
        #expect(!FileManager.default.fileExists(atPath: into.appendingPathComponent("a.txt").path), "nothing written")
        let forced = try run(["extract", pack, "--into", into.path, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Data(contentsOf: into.appendingPathComponent("b/c.bin")) == Data(testBytes(20_000, seed: 2)))
    }

    /// A first install that fails leaves no folder (it left the folder it created, holding its
    /// lock file); a folder that was there stays.
    @Test func aFailedFirstInstallLeavesNoFolder() throws {
        let src = try source()
        let pack = dir.appending("p.apack").path
        #expect(try run(["pack", src.path, "-o", pack, "--format", "container"]).status == 0)
        try CLI.keygen(["k"], in: dir)
        let home = dir.appending("new/home")
        let refused = try run(["install", pack, "--into", home.path, "--trust", dir.appending("k.pub").path])
        #expect(refused.status == 5, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home.path), "the folder it created stays")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        #expect(try run(["install", pack, "--into", home.path, "--trust", dir.appending("k.pub").path]).status == 5)
        #expect(FileManager.default.fileExists(atPath: home.path), "a folder that was there is kept")
    }

    /// A signed container with bytes after its signed end (an interrupted re-pack leaves them):
    /// `install --trust` from a file copied them into the private folder; it refuses now, as
    /// an install from a URL does, saying where they come from.
    @Test func aTrustedInstallRefusesBytesAfterTheSignedEnd() throws {
        let src = try source()
        try CLI.keygen(["k"], in: dir)
        let pack = dir.appending("p.apack")
        #expect(
            try run([
                "pack", src.path, "-o", pack.path, "--format", "container", "--sign-key", dir.appending("k.key").path,
            ])
            .status == 0)
        let handle = try FileHandle(forWritingTo: pack)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(testBytes(5000, seed: 8)))
        try handle.close()
        let home = dir.appending("home").path
        let install = try run(["install", pack.path, "--into", home, "--trust", dir.appending("k.pub").path])
        #expect(install.status == 4, "\(install.stderr)")
        #expect(install.stderr.contains("5000 bytes after the signed end"), "\(install.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/p.apack"))
    }

    /// A slot sealed with the key but of a higher generation than the pack's (crafted, as only a
    /// holder of the key can) whose commitment fails: damage (exit 4), not "wrong password" (2).
    @Test func aCraftedSlotIsDamageNotAWrongPassword() throws {
        let src = try source()
        let key = dir.appending("k.bin")
        try Data(testBytes(32, seed: 4)).write(to: key)
        let pack = dir.appending("p.apack").path
        #expect(try run(["pack", src.path, "-o", pack, "--format", "container", "--key-file", key.path]).status == 0)
        try Data("more\n".utf8).write(to: src.appendingPathComponent("more.txt"))
        #expect(try run(["pack", src.path, "-o", pack, "--key-file", key.path]).status == 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pack)))
        // The current slot (generation 2, in slot 1) copied to slot 0 as generation 3: its
        // commitment no longer holds (it covers the generation); its check is made right again.
        var slot = Array(bytes[4096..<4224])
        slot[72] = 3
        slot.replaceSubrange(120..<128, with: sha256Prefix(Array(slot[0..<120])))
        bytes.replaceSubrange(0..<128, with: slot)
        try Data(bytes).write(to: URL(fileURLWithPath: pack))
        let list = try run(["list", pack, "--key-file", key.path])
        #expect(list.status == 4, "\(list.stderr)")
        #expect(list.stderr.contains("fails its commitment, while the other slot's holds"), "\(list.stderr)")
        let other = dir.appending("other.bin")
        try Data(testBytes(32, seed: 5)).write(to: other)
        #expect(try run(["list", pack, "--key-file", other.path]).status == 2, "another key is still a wrong key")
    }

    /// The first 8 bytes of SHA-256, by the system's `sha256sum` (the tests compute no digest of their own).
    func sha256Prefix(_ bytes: [UInt8]) -> [UInt8] {
        let file = dir.appending("slot.bin")
        try? Data(bytes).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [file.path]
        let out = Pipe()
        process.standardOutput = out
        try? process.run()
        process.waitUntilExit()
        let hex = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(16)
        return stride(from: 0, to: 16, by: 2).map {
            UInt8(
                hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)!
        }
    }

    /// A SIGKILL while a pack is written (a compaction's 25 MB temporary) left the temporary for
    /// good: the next pack did not remove it. Now the next pack removes temporaries whose writer
    /// is gone, and leaves those of a live one.
    @Test(.slow) func theNextPackRemovesWhatAKilledPackLeft() throws {
        let src = try dir.write(["a.txt": textBytes(100)], under: "big")
        for i in 0..<8 {
            try Data(testBytes(8 << 20, seed: UInt64(300 + i))).write(to: src.appendingPathComponent("r\(i).bin"))
        }
        let folder = dir.appending("out")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let output = folder.appendingPathComponent("p.apack")
        let killed = try CLI.interruptWhileWriting(
            ["pack", src.path, "-o", output.path, "--format", "container", "--scrypt-cost", "10"],
            password: Self.password, in: folder, signal: SIGKILL)
        #expect(killed.sawTemporary)
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(left.contains { $0.hasPrefix(".assetpack-tmp-") }, "SIGKILL leaves its temporary: \(left)")
        // Left alone: a live writer's temporary (this test process's id), one of another host
        // (a shared folder: its processes are not visible here), and one named before names
        // carried host and process (its UUID's first group all digits, as some are).
        let kept = [
            ".assetpack-tmp-\(AtomicFile.hostTag)-\(getpid())-\(UUID().uuidString)",
            ".assetpack-tmp-\(AtomicFile.hostTag == "00000000" ? "00000001" : "00000000")-999999-\(UUID().uuidString)",
            ".assetpack-tmp-12345678-1234-1234-1234-123456789012",
        ]
        for name in kept { try Data("in use".utf8).write(to: folder.appendingPathComponent(name)) }
        try FileManager.default.removeItem(at: src.appendingPathComponent("r7.bin"))
        let again = try run(["pack", src.path, "-o", output.path, "--format", "container", "--scrypt-cost", "10"])
        #expect(again.status == 0, "\(again.stderr)")
        let now = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(now == (kept + ["p.apack"]).sorted(), "\(now)")
    }

    /// A signed pack needs no `.sha256`: a server that fails that request (401, 410, 500) no
    /// longer aborts the install, which the signature checks.
    @Test(.slow, arguments: [401, 410, 500]) func aFailingSidecarDoesNotStopASignedInstall(status: Int) throws {
        let src = try source()
        try CLI.keygen(["k"], in: dir)
        let www = dir.appending("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let pack = www.appendingPathComponent("p.zip")
        #expect(try run(["pack", src.path, "-o", pack.path, "--sign-key", dir.appending("k.key").path]).status == 0)
        try Data(repeating: 0x61, count: 64).write(to: www.appendingPathComponent("p.zip.sha256"))
        let server = try FaultyHTTPServer(root: www, fault: .statusFor(suffix: ".sha256", status: status))
        defer { server.stop() }
        let install = try run([
            "install", server.url("p.zip").absoluteString, "--into", dir.appending("home").path,
            "--trust", dir.appending("k.pub").path,
        ])
        #expect(install.status == 0, "\(status): \(install.stderr)")
        #expect(try Data(contentsOf: dir.appending("home/p.zip")) == Data(contentsOf: pack))
        // Unsigned, the sidecar is what checks it: the failure still stops the install.
        let unsigned = www.appendingPathComponent("u.zip")
        #expect(try run(["pack", src.path, "-o", unsigned.path, "--encryption", "none"]).status == 0)
        let refused = try run(["install", server.url("u.zip").absoluteString, "--into", dir.appending("home").path])
        #expect(refused.status != 0, "\(refused.stderr)")
    }
}
#endif
