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

    /// The entry count, at the limit and one past it: a pack of exactly `maxEntries` files packs
    /// and opens under those limits, its own records aside (a signed zip's manifest and signature
    /// entry, a patch's deletion record); one file more is refused by the packer, writing nothing,
    /// with the message a reader gives for such a pack packed under a higher limit.
    @Test(arguments: PackFormat.allCases)
    func theEntryCountLimitIsThePackersAndTheReadersAtTheLimitAndOnePast(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        var limits = ReadLimits()
        limits.maxEntries = 5
        let key = PublisherSigningKey.generate()
        func pack(_ count: Int, limits: ReadLimits, as name: String) throws -> URL {
            let source = dir.appending("src-\(name)")
            for i in 0..<count { try dir.write(["f\(i).txt": Array("file \(i)".utf8)], under: "src-\(name)") }
            var options = PackOptions.forTests
            options.format = format
            options.credential = .password("pw")
            options.signingKey = key
            options.deletions = ["gone.txt"]
            options.limits = limits
            let output = dir.appending("\(name).pack")
            try AssetPacks.pack(source: source, to: output, options: options)
            return output
        }
        let atLimit = try pack(5, limits: limits, as: "five")
        let reader = try AssetPacks.open(
            atLimit.path, credential: .password("pw"), limits: limits, trustedKeys: [key.publicKey])
        #expect(reader.entries.count == 5)
        #expect(try reader.read("f4.txt") == Array("file 4".utf8))

        let packing = #expect(throws: AssetPackError.self) { _ = try pack(6, limits: limits, as: "six") }
        #expect(packing?.code == .limitExceeded)
        #expect(packing?.message == "a pack of 6 entries is over the limit of 5 (ReadLimits.maxEntries)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("six.pack").path))

        let past = try pack(6, limits: .default, as: "six")
        let reading = #expect(throws: AssetPackError.self) {
            _ = try AssetPacks.open(past.path, credential: .password("pw"), limits: limits)
        }
        #expect(reading?.code == .limitExceeded)
        #expect(reading?.message == packing?.message)
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
