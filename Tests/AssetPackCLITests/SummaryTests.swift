#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The summaries a person reads on stderr: counts in the right number (`1 entry`), a re-pack
/// that drops a file says so, the first install says what it installed.
@Suite struct SummaryTests {
    static let password = "summary-pass"

    @Test(arguments: PackFormat.allCases)
    func oneEntryIsOneEntry(format: PackFormat) throws {
        let dir = TemporaryDirectory("summary")
        let source = try dir.write(["only.txt": Array("one".utf8)], under: "src")
        let pack = dir.appending("p.\(format.rawValue)").path
        var said: [String: String] = [:]
        said["pack"] = try CLI.run(
            ["pack", source.path, "--output", pack, "--format", format.rawValue], password: Self.password
        ).stderr
        said["list"] = try CLI.run(["list", pack], password: Self.password).stderr
        said["verify"] = try CLI.run(["verify", pack], password: Self.password).stderr
        said["extract"] = try CLI.run(["extract", pack, "--into", dir.appending("x").path], password: Self.password)
            .stderr
        #expect(said["pack"]?.contains("packed 1 entry (3 bytes)") == true, "\(said)")
        #expect(said["pack"]?.contains(": 0 reused, 1 packed, 0 removed") == true, "\(said)")
        #expect(said["list"]?.hasPrefix("1 entry, 3 bytes") == true, "\(said)")
        #expect(said["verify"]?.hasPrefix("1 of 1 entry verified") == true, "\(said)")
        #expect(said["extract"]?.contains("extracted 1 entry into") == true, "\(said)")
        for (command, text) in said {
            #expect(!text.contains("1 entries"), "\(command): \(text)")
        }
    }

    /// A re-pack that drops files names how many the pack lost, next to reused and packed.
    @Test(.slow, arguments: PackFormat.allCases)
    func aRepackThatDropsFilesSaysHowMany(format: PackFormat) throws {
        let dir = TemporaryDirectory("summary")
        var files: [String: [UInt8]] = [:]
        for i in 0..<10 { files["f\(i).txt"] = textBytes(1000, seed: UInt64(i)) }
        let source = try dir.write(files, under: "src")
        let pack = dir.appending("p.pack").path
        func repack() throws -> String {
            let run = try CLI.run(
                ["pack", source.path, "--output", pack, "--format", format.rawValue], password: Self.password)
            #expect(run.status == 0, "\(run.stderr)")
            return run.stderr.split(separator: "\n").last.map(String.init) ?? ""
        }
        #expect(try repack().hasSuffix(": 0 reused, 10 packed, 0 removed"))
        try FileManager.default.removeItem(at: source.appendingPathComponent("f3.txt"))
        let one = try repack()
        #expect(one.hasPrefix("packed 9 entries"), "\(one)")
        #expect(one.hasSuffix(": 9 reused, 0 packed, 1 removed"), "\(one)")
        for i in [5, 7] { try FileManager.default.removeItem(at: source.appendingPathComponent("f\(i).txt")) }
        try Data(textBytes(10, seed: 99)).write(to: source.appendingPathComponent("new.txt"))
        #expect(try repack().hasSuffix(": 7 reused, 1 packed, 2 removed"))
        // Another password (with --fresh, which replaces the pack): the old pack cannot be read,
        // and its entries are not counted.
        let other = try CLI.run(
            ["pack", source.path, "--output", pack, "--format", format.rawValue, "--fresh"], password: "another")
        #expect(other.status == 0, "\(other.stderr)")
        if format == .zip {
            // The zip's names are readable without the password: nothing removed since.
            #expect(other.stderr.hasSuffix(": 0 reused, 8 packed, 0 removed\n"), "\(other.stderr)")
        } else {
            #expect(other.stderr.hasSuffix(": 0 reused, 8 packed\n"), "\(other.stderr)")
        }
    }

    /// The first install of a local pack says what it installed; a repeated one that nothing
    /// changed; --quiet neither. The path stays alone on stdout.
    @Test(arguments: PackFormat.allCases)
    func theFirstInstallSaysWhatItInstalled(format: PackFormat) throws {
        let dir = TemporaryDirectory("summary")
        let source = try dir.write(["a.txt": textBytes(5000)], under: "src")
        let pack = dir.appending("p.\(format.rawValue)").path
        #expect(
            try CLI.run(["pack", source.path, "--output", pack, "--format", format.rawValue], password: Self.password)
                .status == 0)
        let size = try FileManager.default.attributesOfItem(atPath: pack)[.size] as? Int ?? -1
        let priv = dir.appending("priv").path
        let first = try CLI.run(["install", pack, "--into", priv])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.text == "\(priv)/p.\(format.rawValue)\n")
        #expect(first.stderr == "assetpack: installed p.\(format.rawValue) (\(size) bytes)\n", "\(first.stderr)")
        let again = try CLI.run(["install", pack, "--into", priv])
        #expect(again.stderr == "assetpack: already installed and current\n", "\(again.stderr)")
        let quiet = try CLI.run(["install", pack, "--into", dir.appending("q").path, "--quiet"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }
}
#endif
