import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack --scrypt-cost LOG2N` through the built binary: without it a new container's
/// header records scrypt N = 2^15, r = 8, p = 1 (the documented default); with it, the given N;
/// a re-pack without it keeps the old pack's cost and reuses its entries, one with another cost
/// re-packs everything; every pack reads back with its password; the option is refused for zip,
/// with a key file and outside 10…18.
@Suite struct ScryptCostCLITests {
    static let password = "scrypt cost"

    /// Packs `a.txt` into the container `name` with `extra` (at the default cost unless `extra`
    /// says otherwise) and returns the run and the pack's header KDF fields (id, param 1, 2, 3:
    /// FORMAT.md "Header").
    static func pack(_ dir: TemporaryDirectory, _ name: String, _ extra: [String]) throws -> (CLI.Run, [UInt32]) {
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src")
        let output = dir.appending(name)
        let run = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", "container"] + extra,
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

    @Test func aRepackKeepsTheCostUnlessAnotherIsGiven() throws {
        let dir = TemporaryDirectory()
        _ = try Self.pack(dir, "p.apack", ["--scrypt-cost", "11"])
        let (kept, keptFields) = try Self.pack(dir, "p.apack", [])
        #expect(keptFields == [1, 11, 8, 1])
        #expect(kept.stderr.contains("1 reused, 0 packed"), "\(kept.stderr)")
        let (changed, changedFields) = try Self.pack(dir, "p.apack", ["--scrypt-cost", "12"])
        #expect(changedFields == [1, 12, 8, 1])
        #expect(changed.stderr.contains("0 reused, 1 packed"), "\(changed.stderr)")
    }

    @Test func whereItDoesNotApplyItIsAUsageError() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["a.txt": Array("hello".utf8)], under: "src").path
        try Data(String(repeating: "ab", count: 32).utf8).write(to: dir.appending("key"))
        let key = ["--key-file", dir.appending("key").path]
        let cases: [([String], String)] = [
            (["--format", "zip", "--scrypt-cost", "12"], "zip packs do not use scrypt"),
            (["--format", "container", "--scrypt-cost", "12"] + key, "a --key-file pack runs no KDF"),
            (["--format", "container", "--scrypt-cost", "9"] + key, "a --key-file pack runs no KDF"),
            (["--format", "container", "--scrypt-cost", "9"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "19"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "300"], "from 10 to 18"),
            (["--format", "container", "--scrypt-cost", "abc"], "'abc' is invalid for '--scrypt-cost"),
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
