import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack --scrypt-cost LOG2N` through the built binary: without it a container's header
/// records scrypt N = 2^15, r = 8, p = 1 (the documented default); with it, the given N; either pack
/// reads back with its password; the option is refused for zip, outside 10…18 and with a key file.
@Suite struct ScryptCostCLITests {
    static let password = "scrypt cost"

    /// Packs `a.txt` into a container with `extra` (at the default cost unless `extra` says otherwise)
    /// and returns the run and the pack's header KDF fields (id, param 1, 2, 3: FORMAT.md "Header").
    static func pack(_ dir: TemporaryDirectory, _ name: String, _ extra: [String]) throws -> (CLI.Run, [UInt32]) {
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src-\(name)")
        let output = dir.appending(name)
        let run = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", "container", "--quiet"] + extra,
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

    @Test func whereItDoesNotApplyItIsAUsageError() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src").path
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        let cases: [([String], String)] = [
            (["--format", "zip", "--scrypt-cost", "12"], "container packs only"),
            (["--format", "container", "--scrypt-cost", "9"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "19"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "12", "--key-file", dir.appending("key").path], "--key-file"),
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
