import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Damaged and hostile packs: never a crash, never wrong bytes, never a write outside the target.
@Suite(.slow) struct HardeningTests {
    static let tree: [String: [UInt8]] = [
        "a.txt": textBytes(300, seed: 1), "b.bin": testBytes(100, seed: 2), "tiny": Array("tiny!".utf8),
    ]

    /// A small pack with cheap key derivation, so sweeps over every byte stay fast.
    static func smallPack(_ format: PackFormat, in dir: TemporaryDirectory, encryption: PackEncryption = .aes256)
        throws -> (path: String, credential: PackCredential)
    {
        let source = try dir.write(tree, under: "src")
        let files = try SourceTree.scan(root: source, includeHidden: false)
        var options = PackOptions.forTests
        options.zip.encryption = encryption
        options.compression = .auto
        let path = dir.appending("small.\(format.rawValue)").path
        switch format {
        case .zip:
            options.credential = .password("pw")
            try ZipPackWriter().write(files, to: path, options: options)
        default:
            options.credential = .key(Array(repeating: 7, count: 32))
            try ContainerPackWriter().write(files, to: path, options: options)
        }
        return (path, options.credential!)
    }

    /// Opens `path` and reads every entry; every read either fails with an AssetPackError or returns
    /// exactly the original bytes. Returns how many operations failed.
    static func readEverything(_ path: String, _ credential: PackCredential) -> Int {
        var failures = 0
        do {
            let reader = try AssetPacks.open(path, credential: credential)
            for (name, expected) in tree {
                do {
                    let got = try reader.read(name)
                    #expect(got == expected, "wrong bytes returned for \(name)")
                } catch is AssetPackError {
                    failures += 1
                } catch {
                    Issue.record("unexpected error type \(error)")
                }
            }
        } catch is AssetPackError {
            failures += 1
        } catch {
            Issue.record("unexpected error type \(error)")
        }
        return failures
    }

    @Test(arguments: [PackFormat.zip, .container])
    func everySingleByteFlipIsCaughtOrHarmless(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let (path, credential) = try Self.smallPack(format, in: dir)
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let damaged = dir.appending("damaged").path
        var undetected: [Int] = []
        for i in flipOffsets(original) {
            var bytes = original
            bytes[i] ^= 0x55
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))
            if Self.readEverything(damaged, credential) == 0 { undetected.append(i) }
        }
        // The container authenticates every byte of its generation; the second header slot of a
        // pack of one generation is empty (no magic: no header), so damage there is harmless. Zip
        // leaves some metadata unauthenticated (times, versions, comments) whose damage is
        // harmless to the bytes returned. Either way every read above returned the right bytes.
        // A version-8 container's digest section is decrypted by no read (a re-pack and `verify`
        // refuse it damaged: IndexV8Tests).
        if format == .container {
            let padding = try #require(appendablePadding(original))
            let digests = try #require(digestSection(original))
            #expect(
                undetected == flipOffsets(original).filter { padding.contains($0) || digests.contains($0) },
                "flips not detected at \(undetected)")
        }
    }

    @Test(arguments: [PackFormat.zip, .container])
    func truncationAtEveryPointFailsCleanly(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let (path, credential) = try Self.smallPack(format, in: dir)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let damaged = dir.appending("cut").path
        for cut in 0..<original.count {
            try original.prefix(cut).write(to: URL(fileURLWithPath: damaged))
            #expect(
                Self.readEverything(damaged, credential) > 0, "truncated at \(cut) of \(original.count) went unnoticed")
        }
    }

    @Test func zipBombDeclaringTinySizeIsRefusedWithBoundedMemory() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(["bomb.bin": [UInt8](repeating: 0, count: 50_000_000)], under: "src")
        var options = PackOptions.forTests
        options.zip.encryption = .none
        options.compression = .deflate
        let path = dir.appending("bomb.zip").path
        try ZipPackWriter().write(SourceTree.scan(root: source, includeHidden: false), to: path, options: options)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        ZipSurgery.setUncompressedSize("bomb.bin", 10, in: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try ZipPackReader(path: path, credential: nil)
        #expect(reader.entry("bomb.bin")?.size == 10)
        let error = #expect(throws: AssetPackError.self) { try reader.read("bomb.bin") }
        #expect(error?.code == .integrityFailure)
        #expect(throws: AssetPackError.self) { try reader.stream("bomb.bin") { _ in } }
    }

    @Test func limitsAreEnforcedBeforeAllocation() throws {
        let dir = TemporaryDirectory()
        let (path, credential) = try Self.smallPack(.zip, in: dir)
        var few = ReadLimits()
        few.maxEntries = 2
        // What the directory declares is checked before anything is allocated (the limit and the
        // pack's own records); what it holds, its own records aside, once it is open.
        let tooMany = #expect(throws: AssetPackError.self) {
            try ZipPackReader(path: path, credential: credential, limits: few)
        }
        #expect(tooMany?.code == .limitExceeded)
        var many: [String: [UInt8]] = [:]
        for i in 0..<20 { many["f\(i)"] = [UInt8(i)] }
        var options = PackOptions.forTests
        options.credential = credential
        let twenty = dir.appending("twenty.zip")
        try AssetPacks.pack(source: try dir.write(many, under: "many"), to: twenty, options: options)
        var one = ReadLimits()
        one.maxEntries = 1
        let declared = #expect(throws: AssetPackError.self) {
            try ZipPackReader(path: twenty.path, credential: credential, limits: one)
        }
        // 20 files and the zip's manifest.
        #expect(
            declared?.message
                == "pack declares 21 entries, more than the limit 1 (ReadLimits.maxEntries) and its own 8 records")
        var small = ReadLimits()
        small.maxEntrySize = 200
        let reader = try ZipPackReader(path: path, credential: credential, limits: small)
        let tooBig = #expect(throws: AssetPackError.self) { try reader.read("a.txt") }
        #expect(tooBig?.code == .limitExceeded)
        #expect(try reader.read("b.bin") == Self.tree["b.bin"])

        // A declared size of 4 GiB from a tiny stored entry is refused by the ratio limit, not allocated.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        ZipSurgery.setUncompressedSize("a.txt", 0xFFFF_FFF0, in: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let huge = try ZipPackReader(path: path, credential: credential)
        let hugeError = #expect(throws: AssetPackError.self) { try huge.read("a.txt") }
        #expect(hugeError?.code == .limitExceeded)
    }

    /// Hostile names, made by renaming entries of a real zip in place.
    @Test(arguments: [
        Array("../evil.txt".utf8), Array("/tmp/ev.txt".utf8), Array("a\\..\\b.txt".utf8), Array("x/../../y.t".utf8),
    ])
    func extractionNeverWritesOutsideTheDirectory(hostile: [UInt8]) throws {
        let dir = TemporaryDirectory()
        let placeholder = String(repeating: "p", count: hostile.count)
        let source = try dir.write([placeholder: Array("payload".utf8), "ok.txt": [1]], under: "src")
        var options = PackOptions.forTests
        options.zip.encryption = .none
        let path = dir.appending("hostile.zip").path
        try ZipPackWriter().write(SourceTree.scan(root: source, includeHidden: false), to: path, options: options)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        ZipSurgery.rename(placeholder, to: hostile, in: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let out = dir.appending("deep/out")
        let reader = try ZipPackReader(path: path, credential: nil)
        let error = #expect(throws: AssetPackError.self) { try Extractor(directory: out).extract(from: reader) }
        #expect(error?.code == .invalidArgument)
        // Nothing at all was written: names are checked before the first write.
        #expect(!FileManager.default.fileExists(atPath: dir.appending("deep/evil.txt").path))
        #expect(!FileManager.default.fileExists(atPath: dir.appending("evil.txt").path))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/ev.txt"))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("ok.txt").path))
    }

    @Test func namesThatNormaliseAlikeAreRefused() throws {
        let dir = TemporaryDirectory()
        // "cafXY" → NFC "café" (c a f C3 A9); "cafeXY" → NFD "café" (c a f e CC 81).
        let source = try dir.write(["cafXY.txt": [1], "cafeXY.txt": [2]], under: "src")
        var options = PackOptions.forTests
        options.zip.encryption = .none
        let path = dir.appending("twins.zip").path
        try ZipPackWriter().write(SourceTree.scan(root: source, includeHidden: false), to: path, options: options)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        ZipSurgery.rename("cafXY.txt", to: [0x63, 0x61, 0x66, 0xC3, 0xA9] + Array(".txt".utf8), in: &bytes)
        ZipSurgery.rename("cafeXY.txt", to: [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81] + Array(".txt".utf8), in: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try ZipPackReader(path: path, credential: nil)
        #expect(reader.entries.count == 2)
        let error = #expect(throws: AssetPackError.self) {
            try Extractor(directory: dir.appending("out")).extract(from: reader)
        }
        // Two records at one (normalised) path are ambiguous, as reading that path is: exit 4.
        #expect(error?.code == .integrityFailure)
        #expect(!FileManager.default.fileExists(atPath: dir.appending("out").path), "refused before writing")
    }
}
