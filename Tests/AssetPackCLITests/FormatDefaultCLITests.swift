#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackTestSupport
import Foundation
import Testing

/// `pack` without `--format`: a new pack is a zip; a re-pack keeps the format of the pack at
/// `--output`, and a patch the format of the pack it patches, so a container never quietly becomes
/// a zip (whose entry names anyone can list). A conflicting option says where the format came from.
@Suite struct FormatDefaultCLITests {
    static let password = "format default"

    static func magic(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url).prefix(4)) }
    static let containerMagic: [UInt8] = [0x41, 0x50, 0x41, 0x43]  // "APAC"
    static let zipMagic: [UInt8] = [0x50, 0x4B, 3, 4]

    @Test func aRepackAndAPatchKeepTheFormatTheyReplaceOrPatch() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("one".utf8), "b.txt": Array("two".utf8)], under: "src")
        let fresh = dir.appending("fresh.pack")
        #expect(try CLI.run(["pack", source.path, "-o", fresh.path, "--quiet"], password: Self.password).status == 0)
        #expect(try Self.magic(fresh) == Self.zipMagic, "a new pack without --format is a zip")

        let base = dir.appending("base.apack")
        let first = try CLI.run(
            ["pack", source.path, "-o", base.path, "--format", "container"], password: Self.password)
        #expect(first.status == 0, "\(first.stderr)")
        let again = try CLI.run(["pack", source.path, "-o", base.path], password: Self.password)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Self.magic(base) == Self.containerMagic)
        #expect(again.stderr.contains("container") && again.stderr.contains("2 reused, 0 packed"), "\(again.stderr)")

        let patchSource = try dir.write(["a.txt": Array("one, changed".utf8), "b.txt": Array("two".utf8)], under: "v2")
        let patch = dir.appending("patch.apack")
        let made = try CLI.run(
            ["pack", patchSource.path, "-o", patch.path, "--patch-of", base.path], password: Self.password)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try Self.magic(patch) == Self.containerMagic, "\(made.stderr)")
        let read = try CLI.run(["cat", base.path, "a.txt", "--over", patch.path], password: Self.password)
        #expect(read.status == 0 && read.text == "one, changed", "\(read.stderr)")

        let conflict = try CLI.run(
            ["pack", source.path, "-o", base.path, "--encryption", "none"], password: Self.password)
        #expect(conflict.status == 64)
        #expect(
            conflict.stderr.contains("no --format: container, the format of the pack at --output"), "\(conflict.stderr)"
        )
    }

    /// Looking at what is at `--output` must not open a FIFO there (that blocks until a writer
    /// comes): the pack refuses it as before, at once.
    @Test func aFIFOAtTheOutputIsRefusedNotWaitedOn() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("one".utf8)], under: "src")
        let fifo = dir.appending("out.pack")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let run = try CLI.run(["pack", source.path, "-o", fifo.path], password: Self.password, timeout: 20)
        #expect(!run.timedOut, "pack waited on the FIFO")
        #expect(run.status == 1 && run.stderr.contains("is not a regular file"), "\(run.stderr)")
    }
}
#endif
