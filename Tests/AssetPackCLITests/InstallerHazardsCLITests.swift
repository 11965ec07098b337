#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an installer hunt found `install` taking for granted, through the built binary: an
/// installed pack's mode and links, names whose kept files cannot exist or look like temporaries,
/// an empty `--into`, and a FIFO given as the pack.
@Suite struct InstallerHazardsCLITests {
    let dir = TemporaryDirectory("installer-hazards")

    func status(_ path: String) -> stat {
        var st = stat()
        stat(path, &st)
        return st
    }

    /// An installed pack made 0644, or given a second name (a hard link, as another user could make
    /// to a pack they can write), is not "already installed and current": it is installed again,
    /// 0600 with one name.
    @Test(arguments: PackFormat.allCases)
    func aPackMadeReadableOrLinkedIsInstalledAgain(format: PackFormat) throws {
        let pack = try CLITests.pack(["a.txt": Array("a".utf8)], in: dir, format: format)
        let priv = dir.appending("priv-\(format.rawValue)").path
        #expect(try CLI.run(["install", pack, "--into", priv]).status == 0)
        let installed = priv + "/out.\(format.rawValue)"
        #expect(try CLI.run(["install", pack, "--into", priv]).stderr.contains("already installed and current"))

        #expect(chmod(installed, 0o644) == 0)
        let readable = try CLI.run(["install", pack, "--into", priv])
        #expect(readable.status == 0 && !readable.stderr.contains("current"), "\(readable.stderr)")
        #expect(status(installed).st_mode & 0o777 == 0o600)

        #expect(link(installed, dir.appending("other-\(format.rawValue)").path) == 0)
        let linked = try CLI.run(["install", pack, "--into", priv])
        #expect(linked.status == 0 && !linked.stderr.contains("current"), "\(linked.stderr)")
        #expect(status(installed).st_nlink == 1)
        #expect(try CLI.run(["install", pack, "--into", priv]).stderr.contains("already installed and current"))
    }

    /// A name whose kept files (`.NAME.download.json` the longest) would be over 255 bytes is
    /// refused before anything is written, where the pack was renamed into place and the record's
    /// write then failed (exit 1, the old pack replaced, every later install copying again); and a
    /// name starting `assetpack-tmp-`, whose record every install swept away as a temporary.
    @Test func namesWhoseKeptFilesCannotBeKeptAreRefusedFirst() throws {
        let pack = try CLITests.pack(["a.txt": Array("a".utf8)], in: dir, format: .container)
        let priv = dir.appending("names").path
        for name in [String(repeating: "n", count: 245), "assetpack-tmp-levels.apack"] {
            let run = try CLI.run(["install", pack, "--into", priv, "--name", name])
            #expect(run.status == 1, "\(name.prefix(20)): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("installed name"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: priv + "/" + name))
        }
        let fits = String(repeating: "n", count: 240)
        #expect(try CLI.run(["install", pack, "--into", priv, "--name", fits]).status == 0)
        #expect(try CLI.run(["install", pack, "--into", priv, "--name", fits]).stderr.contains("current"))
    }

    /// `--into ""` is a usage error (exit 64), where it installed into the working directory and
    /// made it 0700 (run in a folder of the test's own, which stays as it was).
    @Test func anEmptyIntoIsAUsageError() throws {
        let pack = try CLITests.pack(["a.txt": Array("a".utf8)], in: dir, format: .zip)
        let cwd = dir.appending("cwd")
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        #expect(chmod(cwd.path, 0o755) == 0)
        let run = try CLI.run(["install", pack, "--into", ""], workingDirectory: cwd)
        #expect(run.status == 64, "\(run.status) \(run.stderr)")
        #expect(status(cwd.path).st_mode & 0o777 == 0o755)
        #expect((try FileManager.default.contentsOfDirectory(atPath: cwd.path)).isEmpty)
    }

    /// A FIFO given as the pack: refused at once (exit 1), where opening it waited for a writer
    /// forever (`install`, and every reader: `list`).
    @Test func aFIFOIsNotAPack() throws {
        let fifo = dir.appending("f.apack").path
        #expect(mkfifo(fifo, 0o644) == 0)
        for arguments in [["install", fifo, "--into", dir.appending("x").path], ["list", fifo]] {
            let run = try CLI.run(arguments, timeout: 20)
            #expect(!run.signaled && run.status == 1, "\(arguments[0]): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("not a regular file"), "\(run.stderr)")
        }
    }
}
#endif
