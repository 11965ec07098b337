#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// SIGINT or SIGTERM while a zip pack is being written (our writer for AES, libzip inside a
/// temporary directory for ZipCrypto): the previous pack stays byte for byte, nothing is left
/// behind, and the process dies of the signal.
@Suite(.slow) struct ZipInterruptTests {
    static let password = "interrupt-me"

    @Test(arguments: [("aes256", SIGINT), ("aes256", SIGTERM), ("zipcrypto", SIGTERM)])
    func interruptedZipPackLeavesThePreviousPack(encryption: String, signal: Int32) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["small.txt": textBytes(100)], under: "src")
        let output = dir.appending("out.zip")
        let first = try CLI.run(
            ["pack", source.path, "--output", output.path, "--encryption", encryption], password: Self.password)
        #expect(first.status == 0, "\(first.stderr)")
        let before = try Data(contentsOf: output)
        // Large enough that the write takes a while: compressible text in 8 MiB files.
        for i in 0..<16 {
            try Data(textBytes(8 << 20, seed: UInt64(100 + i))).write(to: source.appendingPathComponent("t\(i).json"))
        }
        let run = try CLI.interruptWhileWriting(
            ["pack", source.path, "--output", output.path, "--encryption", encryption, "--fresh"],
            password: Self.password, in: dir.url, signal: signal)
        #expect(run.sawTemporary, "the pack finished before it could be interrupted")
        #expect(run.diedOfSignal)
        #expect(run.left == ["out.zip", "src"], "left behind: \(run.left)")
        #expect(try Data(contentsOf: output) == before)
    }
}
#endif
