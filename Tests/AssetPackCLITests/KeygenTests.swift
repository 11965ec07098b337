#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack keygen`: the files it writes, their modes, and when it refuses.
@Suite struct KeygenTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        #expect(stat(path, &st) == 0, "\(path)")
        return st.st_mode & 0o7777
    }

    /// Runs `assetpack keygen ARGS` under a shell that sets `umask` first.
    func keygen(_ arguments: [String], umask: String) throws -> CLI.Run {
        try CLI.run(
            ["-c", "umask \(umask) && exec \"$0\" keygen \"$@\"", CLI.binary.path] + arguments, executable: "/bin/sh")
    }

    @Test(arguments: ["022", "000", "077"])
    func writesThePairWithItsModes(umask: String) throws {
        let dir = TemporaryDirectory("keygen")
        let name = dir.appending("publisher").path
        let run = try keygen(["--out", name], umask: umask)
        #expect(run.status == 0, "\(run.stderr)")
        // The private key is 0600 whatever the umask; the public key is 0644 less the umask.
        #expect(mode(name + ".key") == 0o600)
        #expect(mode(name + ".pub") == 0o644 & ~mode_t(umask, radix: 8)!)

        let pubText = try String(contentsOfFile: name + ".pub", encoding: .utf8)
        #expect(pubText.hasSuffix("\n") && pubText.filter { $0 == "\n" }.count == 1, "one line: \(pubText)")
        #expect(run.text == pubText, "stdout is exactly the public key line")
        let publicKey = try PublisherKey(text: pubText)
        #expect(try PublisherKey.load(from: URL(fileURLWithPath: name + ".pub")) == publicKey)
        #expect(try PublisherSigningKey.load(from: URL(fileURLWithPath: name + ".key")).publicKey == publicKey)
        #expect(run.stderr.contains(name + ".key") && run.stderr.contains(name + ".pub"), "\(run.stderr)")
        #expect(run.stderr.contains(publicKey.fingerprint))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix(".assetpack-tmp-")
        }
        #expect(leftovers.isEmpty)
    }

    @Test func refusesToReplaceWithoutForce() throws {
        let dir = TemporaryDirectory("keygen")
        let name = dir.appending("k").path
        let first = try CLI.run(["keygen", "--out", name])
        #expect(first.status == 0, "\(first.stderr)")
        var key = try Data(contentsOf: URL(fileURLWithPath: name + ".key"))

        // Either file existing is enough to refuse, and what exists is left as it was.
        for remove in ["", ".pub", ".key"] {
            if !remove.isEmpty { try FileManager.default.removeItem(atPath: name + remove) }
            let again = try CLI.run(["keygen", "--out", name])
            #expect(again.status == 1)
            #expect(again.stdout.isEmpty)
            #expect(again.stderr.contains("already exist") && again.stderr.contains("--force"), "\(again.stderr)")
            if remove == ".key" {
                #expect(!FileManager.default.fileExists(atPath: name + ".key"))
            } else {
                #expect(try Data(contentsOf: URL(fileURLWithPath: name + ".key")) == key)
            }
            if !remove.isEmpty {
                #expect(!FileManager.default.fileExists(atPath: name + remove))
                #expect(try CLI.run(["keygen", "--out", name, "--force"]).status == 0)
                key = try Data(contentsOf: URL(fileURLWithPath: name + ".key"))
            }
        }

        // A dangling symbolic link counts as existing.
        let link = dir.appending("link").path
        try FileManager.default.createSymbolicLink(
            atPath: link + ".pub", withDestinationPath: dir.appending("gone").path)
        #expect(try CLI.run(["keygen", "--out", link]).status == 1)

        let forced = try CLI.run(["keygen", "--out", name, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: name + ".key")) != key, "--force made a new key")
        #expect(mode(name + ".key") == 0o600)
        let publicKey = try PublisherKey.load(from: URL(fileURLWithPath: name + ".pub"))
        #expect(try PublisherSigningKey.load(from: URL(fileURLWithPath: name + ".key")).publicKey == publicKey)
        #expect(forced.text == publicKey.text + "\n")
    }

    /// The README's `keygen --out keys/publisher` in a fresh checkout, where `keys/` does not
    /// exist: the missing folders are made, private (0700, whatever the umask), and said so;
    /// folders that existed keep their mode.
    @Test(arguments: ["022", "077"])
    func createsMissingFoldersPrivately(umask: String) throws {
        let dir = TemporaryDirectory("keygen")
        let run = try CLI.run(
            [
                "-c", "umask \(umask) && cd \"$1\" && exec \"$0\" keygen --out keys/publisher", CLI.binary.path,
                dir.path,
            ], executable: "/bin/sh")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(mode(dir.appending("keys").path) == 0o700)
        #expect(mode(dir.appending("keys/publisher.key").path) == 0o600)
        #expect(FileManager.default.fileExists(atPath: dir.appending("keys/publisher.pub").path))
        #expect(run.stderr.contains("created keys (mode 0700)"), "\(run.stderr)")

        // Several levels below a folder that exists (0755, left so).
        try FileManager.default.createDirectory(
            at: dir.appending("shared"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let deep = try keygen(["--out", dir.appending("shared/a/b/k").path], umask: umask)
        #expect(deep.status == 0, "\(deep.stderr)")
        #expect(mode(dir.appending("shared").path) == 0o755)
        #expect(mode(dir.appending("shared/a").path) == 0o700)
        #expect(mode(dir.appending("shared/a/b").path) == 0o700)
        #expect(mode(dir.appending("shared/a/b/k.key").path) == 0o600)
    }

    /// A bare name (no folder) writes into the working directory. A one-letter name crashed
    /// (Foundation's `deletingLastPathComponent` traps on it) while looking for folders to create.
    @Test func aBareNameWritesIntoTheWorkingDirectory() throws {
        let dir = TemporaryDirectory("keygen-bare")
        let run = try CLI.run(
            ["-c", "cd \"$1\" && exec \"$0\" keygen --out k", CLI.binary.path, dir.path],
            executable: "/bin/sh")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appending("k.key").path))
        #expect(FileManager.default.fileExists(atPath: dir.appending("k.pub").path))
        #expect(!run.stderr.contains("created"), "\(run.stderr)")
    }

    @Test func quietPrintsOnlyThePublicKey() throws {
        let dir = TemporaryDirectory("keygen")
        for flag in ["--quiet", "-q"] {
            let name = dir.appending("q\(flag)").path
            let run = try CLI.run(["keygen", "--out", name, flag])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty, "\(run.stderr)")
            #expect(run.text == (try String(contentsOfFile: name + ".pub", encoding: .utf8)))
        }
    }

    @Test func badNamesGetClearErrors() throws {
        let dir = TemporaryDirectory("keygen")
        // A file where a folder must go: nothing can be created below it.
        try Data([1]).write(to: dir.appending("file"))
        let missing = try CLI.run(["keygen", "--out", dir.appending("file/sub/k").path])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot create folder"), "\(missing.stderr)")
        #expect(missing.stderr.contains("Not a directory"), "\(missing.stderr)")

        try FileManager.default.createDirectory(at: dir.appending("folder"), withIntermediateDirectories: false)
        let folder = try CLI.run(["keygen", "--out", dir.appending("folder").path])
        #expect(folder.status == 1)
        #expect(folder.stderr.contains("is a directory"), "\(folder.stderr)")

        try FileManager.default.createDirectory(at: dir.appending("d.pub"), withIntermediateDirectories: false)
        let pubIsFolder = try CLI.run(["keygen", "--out", dir.appending("d").path, "--force"])
        #expect(pubIsFolder.status == 1)
        #expect(pubIsFolder.stderr.contains("d.pub is a directory"), "\(pubIsFolder.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("d.key").path), "nothing written")

        for bad in [["keygen"], ["keygen", "--out", ""], ["keygen", "--out", dir.path + "/"]] {
            let run = try CLI.run(bad)
            #expect(run.status == 64, "\(bad): \(run.stderr)")
        }
        for run in [missing, folder, pubIsFolder] {
            #expect(run.stdout.isEmpty)
            #expect(!run.signaled)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["d.pub", "file", "folder"])
    }
}
#endif
