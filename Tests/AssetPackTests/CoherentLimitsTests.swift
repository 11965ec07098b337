import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// pack must never write what the reader refuses.
@Suite struct CoherentLimitsTests {
    @Test(
        "pack refuses a file over the readers' entry-size limit, naming the limit, and writes nothing",
        arguments: [PackFormat.zip, .container])
    func packRefusesWhatReadersRefuse(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        try dir.write(["small.txt": Array("ok".utf8)], under: "src")
        let huge = dir.appending("src/huge.bin")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: ReadLimits.default.maxEntrySize + 1)  // sparse: no disk used
        try handle.close()
        var options = PackOptions.forTests
        options.format = format
        options.credential = .password("pw")
        let output = dir.appending("out.pack")
        let error = #expect(throws: AssetPackError.self) {
            try AssetPacks.pack(source: dir.appending("src"), to: output, options: options)
        }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("ReadLimits.maxEntrySize") == true, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: output.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["src"])
    }

    @Test("a zip entry over a reader's limit is refused when read; the others still read")
    func zipPerEntryLimit() throws {
        let dir = TemporaryDirectory()
        try dir.write(["big.txt": textBytes(50_000), "small.bin": [1, 2, 3]], under: "src")
        var options = PackOptions.forTests
        options.credential = .password("pw")
        let pack = dir.appending("p.zip")
        try AssetPacks.pack(source: dir.appending("src"), to: pack, options: options)
        var limits = ReadLimits()
        limits.maxEntrySize = 4999
        let reader = try AssetPacks.open(pack.path, credential: .password("pw"), limits: limits)
        #expect(reader.entries.count == 2)
        #expect(throws: AssetPackError.self) { try reader.read("big.txt") }
        #expect(try reader.read("small.bin") == [1, 2, 3])
    }
}
