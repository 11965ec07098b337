#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack install` killed at any moment, or out of disk, never loses the installed pack.
@Suite(.serialized, .slow) struct InstallCrashTests {
    /// An unencrypted stored zip pack of `size` random bytes (a real pack: install sniffs its input).
    static func makePack(_ name: String, size: Int, seed: UInt64, in dir: TemporaryDirectory) throws -> URL {
        let src = try dir.write(["blob.bin": testBytes(size, seed: seed)], under: "src-\(name)")
        let out = dir.appending("\(name)/assets.pack")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        let run = try CLI.run(["pack", src.path, "-o", out.path, "--encryption", "none", "--compression", "store"])
        #expect(run.status == 0, "\(run.stderr)")
        return out
    }

    static func temporaries(in dir: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter {
            $0.hasPrefix(".assetpack-tmp-")
        }
    }

    @Test func sigkillAtManyPointsLeavesTheOldOrTheNewPack() throws {
        let dir = TemporaryDirectory()
        let old = try Self.makePack("old", size: 1 << 20, seed: 1, in: dir)
        let new = try Self.makePack("new", size: 48 << 20, seed: 2, in: dir)
        let oldBytes = try Data(contentsOf: old)
        let newBytes = try Data(contentsOf: new)
        let priv = dir.appending("private")
        #expect(try CLI.run(["install", old.path, "--into", priv.path]).status == 0)
        let installed = priv.appendingPathComponent("assets.pack")

        for delayMs in [0, 2, 5, 10, 20, 35, 50, 80, 120, 200, 300] {
            try CLI.killed(["install", new.path, "--into", priv.path], afterMilliseconds: delayMs)

            let now = try Data(contentsOf: installed)
            #expect(now == oldBytes || now == newBytes, "torn pack after a kill at \(delayMs) ms")
            #expect(try CLI.run(["verify", installed.path]).status == 0)
            if now == newBytes {
                // Put the old one back so later kills interrupt a real replacement.
                #expect(try CLI.run(["install", old.path, "--into", priv.path]).status == 0)
            }
        }
        // The next install cleans whatever the kills left behind and completes.
        let finish = try CLI.run(["install", new.path, "--into", priv.path])
        #expect(finish.status == 0)
        #expect(try Data(contentsOf: installed) == newBytes)
        #expect(Self.temporaries(in: priv).isEmpty)
    }

    @Test func fileSizeLimitFailsCleanlyAndKeepsTheOldPack() throws {
        let dir = TemporaryDirectory()
        let old = try Self.makePack("old", size: 100_000, seed: 3, in: dir)
        let new = try Self.makePack("new", size: 8 << 20, seed: 4, in: dir)
        let priv = dir.appending("private")
        #expect(try CLI.run(["install", old.path, "--into", priv.path]).status == 0)
        // Writes past 1 MiB fail with EFBIG (SIGXFSZ ignored), as on a full disk.
        let run = try CLI.run(
            [
                "-c", "ulimit -f 2048; trap '' XFSZ; exec \"$0\" install \"$1\" --into \"$2\"", CLI.binary.path,
                new.path, priv.path,
            ], executable: "/bin/sh")
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("assetpack: error:"))
        #expect(try Data(contentsOf: priv.appendingPathComponent("assets.pack")) == Data(contentsOf: old))
        #expect(Self.temporaries(in: priv).isEmpty)
    }

    static let canMount: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func fullDiskFailsCleanlyAndKeepsTheOldPack() throws {
        let dir = TemporaryDirectory()
        let old = try Self.makePack("old", size: 1 << 20, seed: 5, in: dir)
        let new = try Self.makePack("new", size: 6 << 20, seed: 6, in: dir)
        let priv = dir.appending("tmpfs")
        try FileManager.default.createDirectory(at: priv, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=4m", "tmpfs", priv.path]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "mount refused here")
        defer {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            umount.arguments = [priv.path]
            try? umount.run()
            umount.waitUntilExit()
        }
        #expect(try CLI.run(["install", old.path, "--into", priv.path]).status == 0)
        let run = try CLI.run(["install", new.path, "--into", priv.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("No space left"))
        #expect(try Data(contentsOf: priv.appendingPathComponent("assets.pack")) == Data(contentsOf: old))
        #expect(Self.temporaries(in: priv).isEmpty)
        #expect(try CLI.run(["verify", priv.appendingPathComponent("assets.pack").path]).status == 0)
    }
}
#endif
