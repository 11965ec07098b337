import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

@Suite struct SecurityTests {
    static let small: [(String, [UInt8])] = [
        ("a.txt", Array("nineteen bytes here".utf8)),
        ("b.bin", noise(5000, seed: 7)),  // two stored chunks
        ("c/z.txt", text(6000)),  // two deflated chunks
        ("e", []),
    ]

    /// Outcome of opening a (possibly damaged) pack and reading every entry.
    enum Outcome {
        case openFailed(AssetPackError.Code), read(failed: [String])
        /// Opened, and every entry read back right.
        var failedNothing: Bool {
            if case .read(let failed) = self { return failed.isEmpty }
            return false
        }
    }

    static func check(_ path: String, _ credential: PackCredential, _ originals: [(String, [UInt8])]) -> Outcome {
        let reader: ContainerPackReader
        do { reader = try ContainerPackReader(path: path, credential: credential) } catch {
            return .openFailed((error as? AssetPackError)?.code ?? .io)
        }
        var failed: [String] = []
        for (name, data) in originals {
            do {
                let got = try reader.read(name)
                #expect(got == data, "wrong bytes returned for \(name)")
                var streamed: [UInt8] = []
                try reader.stream(name) { streamed.append(contentsOf: $0) }
                #expect(streamed == data, "wrong bytes streamed for \(name)")
                let range = try reader.readRange(name, offset: 0, count: data.count)
                #expect(range == data, "wrong range bytes for \(name)")
            } catch {
                #expect((error as? AssetPackError)?.code == .integrityFailure, "\(error)")
                failed.append(name)
            }
        }
        return .read(failed: failed)
    }

    @Test(.slow) func flippingAnyByteIsDetected() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.small, compression: .auto)
        let original = bytes(of: path)
        guard case .read(let none) = Self.check(path, testKey, Self.small), none.isEmpty else {
            Issue.record("pristine pack does not read")
            return
        }
        let damaged = scratch.write(original, name: "damaged")
        let fd = open(damaged, O_WRONLY)
        defer { close(fd) }
        var undetected: [Int] = []
        var atOpen = 0, atRead = 0
        let offsets = flipOffsets(original)
        for i in offsets {
            var flipped = original[i] ^ 0xFF
            pwrite(fd, &flipped, 1, off_t(i))
            switch Self.check(damaged, testKey, Self.small) {
            case .openFailed: atOpen += 1
            case .read(let failed): if failed.isEmpty { undetected.append(i) } else { atRead += 1 }
            }
            var restored = original[i]
            pwrite(fd, &restored, 1, off_t(i))
        }
        // Between slot 0 and the data lie zeros no reader reads, the empty second slot among them
        // (no magic, so no header): a flip there is harmless, and every read above returned the
        // right bytes. Every other byte is authenticated.
        // So is the digest section, which no read decrypts (a re-pack and `verify` refuse it damaged).
        let padding = try #require(appendablePadding(original))
        let digests = try #require(digestSection(original))
        let sampled = offsets.filter { padding.contains($0) || digests.contains($0) }
        #expect(undetected == sampled, "flips not detected at offsets \(undetected)")
        #expect(atOpen + atRead + sampled.count == offsets.count && atRead > 5000 && atOpen > 100)
    }

    @Test func truncationAndTrailingBytes() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.small)
        let original = bytes(of: path)
        let cut = scratch.url.appendingPathComponent("cut").path
        for n in Array(0..<200) + Array(stride(from: 200, to: original.count, by: 37)) + [original.count - 1] {
            try Data(original[0..<n]).write(to: URL(fileURLWithPath: cut))
            let expected: AssetPackError.Code = n < 8 ? .unsupportedFormat : .integrityFailure
            expectError(expected, "length \(n)") { _ = try ContainerPackReader(path: cut, credential: testKey) }
        }
        // Bytes after the pack's end are an append that did not finish: never read.
        try Data(original + [0]).write(to: URL(fileURLWithPath: cut))
        #expect(Self.check(cut, testKey, Self.small).failedNothing)
        // Before version 6 a pack ends where the file ends.
        let v4 = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
            .appendingPathComponent("v4-key-store.apack")
        try Data(bytes(of: v4.path) + [0]).write(to: URL(fileURLWithPath: cut))
        expectError(.integrityFailure) { _ = try ContainerPackReader(path: cut, credential: testKey) }
    }

    @Test func chunksCannotMoveBetweenEntriesOrPacks() throws {
        let scratch = Scratch()
        // Two entries of identical layout: one stored chunk of 4096 bytes each, then two of 8192.
        let files = [("a", noise(4096, seed: 1)), ("b", noise(4096, seed: 2)), ("c", noise(8192, seed: 3))]
        let p1 = try scratch.pack(files, name: "one.apack", credential: .password("pw"))
        let p2 = try scratch.pack(
            [("a", noise(4096, seed: 4)), ("b", noise(4096, seed: 5)), ("c", noise(8192, seed: 6))],
            name: "two.apack", credential: .password("pw"))
        let one = bytes(of: p1), two = bytes(of: p2)
        let h = ContainerFormat.appendableDataStart, slot = 4096 + 16
        #expect(one.count == two.count)

        // Swap the chunks of a and b.
        var swapped = one
        swapped.replaceSubrange(h..<h + slot, with: one[h + slot..<h + 2 * slot])
        swapped.replaceSubrange(h + slot..<h + 2 * slot, with: one[h..<h + slot])
        let s = scratch.write(swapped, name: "swapped")
        let reader = try ContainerPackReader(path: s, credential: .password("pw"))
        expectError(.integrityFailure) { _ = try reader.read("a") }
        expectError(.integrityFailure) { _ = try reader.read("b") }
        #expect(try reader.read("c") == files[2].1)

        // Reorder the two chunks of c.
        var reordered = one
        let c0 = h + 2 * slot
        reordered.replaceSubrange(c0..<c0 + slot, with: one[c0 + slot..<c0 + 2 * slot])
        reordered.replaceSubrange(c0 + slot..<c0 + 2 * slot, with: one[c0..<c0 + slot])
        let r = try ContainerPackReader(path: scratch.write(reordered, name: "reordered"), credential: .password("pw"))
        expectError(.integrityFailure) { _ = try r.read("c") }
        expectError(.integrityFailure) { _ = try r.readRange("c", offset: 0, count: 10) }

        // Move a's chunk from pack two into pack one (same password, different salt).
        var mixed = one
        mixed.replaceSubrange(h..<h + slot, with: two[h..<h + slot])
        let m = try ContainerPackReader(path: scratch.write(mixed, name: "mixed"), credential: .password("pw"))
        expectError(.integrityFailure) { _ = try m.read("a") }
        #expect(try m.read("b") == files[1].1)

        // Graft pack two's index onto pack one: rejected.
        var grafted = one
        let indexStart = h + 4 * slot
        grafted.replaceSubrange(indexStart..<one.count, with: two[indexStart...])
        expectError(.integrityFailure) {
            _ = try ContainerPackReader(path: scratch.write(grafted, name: "graft"), credential: .password("pw"))
        }
    }

    @Test func wrongAndMissingCredentials() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.small)
        expectError(.wrongPassword) {
            _ = try ContainerPackReader(path: path, credential: .key(Array(repeating: 7, count: 32)))
        }
        expectError(.wrongPassword) { _ = try ContainerPackReader(path: path, credential: .password("secret")) }
        expectError(.invalidArgument) { _ = try ContainerPackReader(path: path, credential: .key([1])) }
        expectError(.missingPassword) { _ = try ContainerPackReader(path: path, credential: nil) }
        expectError(.io) { _ = try ContainerPackReader(path: path + ".missing", credential: testKey) }
        expectError(.unsupportedFormat) {
            _ = try ContainerPackReader(
                path: scratch.write(Array("PK\u{3}\u{4} not a container".utf8), name: "zip"), credential: testKey)
        }
        var newer = bytes(of: path)
        newer[8] = ContainerFormat.signedVersion + 1
        expectError(.unsupportedFormat) {
            _ = try ContainerPackReader(path: scratch.write(newer, name: "v3"), credential: testKey)
        }
        // The version byte is committed: a version-2 pack relabelled 1 does not open as one.
        var older = bytes(of: path)
        older[8] = 1
        expectError(.wrongPassword) {
            _ = try ContainerPackReader(path: scratch.write(older, name: "v1"), credential: testKey)
        }
    }

    /// Rewrites the KDF id and parameters of a pack's header.
    static func hostile(_ pack: [UInt8], kdf: UInt8, params: [UInt32]) -> [UInt8] {
        var b = pack
        b[10] = kdf
        for (i, p) in params.enumerated() {
            withUnsafeBytes(of: p.littleEndian) { b.replaceSubrange(12 + 4 * i..<16 + 4 * i, with: $0) }
        }
        resealSlots(&b)
        return b
    }

    @Test func hostileKDFParametersAreRefusedFast() throws {
        let scratch = Scratch()
        let pack = bytes(of: try scratch.pack([("a", [1])], credential: .password("pw")))
        let cases: [(UInt8, [UInt32])] = [
            (1, [40, 8, 1]),  // scrypt N = 2^40
            (1, [20, 8, 2]),  // 1 GiB + p term
            (1, [21, 8, 1]),  // 2 GiB
            (1, [10, 8, 1 << 20]),  // huge p
            (1, [62, 0x3FFF_FFFF, 1]),  // overflow
            (2, [UInt32.max, 0, 0]),  // PBKDF2 4 billion iterations
        ]
        for (kdf, params) in cases {
            let path = scratch.write(Self.hostile(pack, kdf: kdf, params: params), name: "hostile")
            let watch = Stopwatch()
            expectError(.limitExceeded, "\(params)") {
                _ = try ContainerPackReader(path: path, credential: .password("pw"))
            }
            #expect(watch.elapsed < 0.05)
        }
        // Malformed parameters are corruption, not a KDF run.
        for (kdf, params) in [
            (UInt8(1), [UInt32(0), 8, 1]), (1, [10, 0, 1]), (2, [0, 0, 0]), (2, [1000, 1, 0]), (0, [1, 0, 0]),
        ] {
            let path = scratch.write(Self.hostile(pack, kdf: kdf, params: params), name: "malformed")
            expectError(.integrityFailure, "\(params)") {
                _ = try ContainerPackReader(path: path, credential: .password("pw"))
            }
        }
        // Tighter limits refuse even the writer's default.
        var limits = ReadLimits()
        limits.maxKDFMemory = 1 << 20
        let normal = try scratch.pack(
            [("a", [1])], name: "default.apack", credential: .password("pw"), kdf: .default)
        expectError(.limitExceeded) {
            _ = try ContainerPackReader(path: normal, credential: .password("pw"), limits: limits)
        }
        #expect(try ContainerPackReader(path: normal, credential: .password("pw")).read("a") == [1])
    }

    @Test func indexLimits() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.small)
        var limits = ReadLimits()
        limits.maxEntries = 3
        expectError(.limitExceeded) { _ = try ContainerPackReader(path: path, credential: testKey, limits: limits) }
        limits = ReadLimits()
        limits.maxIndexSize = 32
        expectError(.limitExceeded) { _ = try ContainerPackReader(path: path, credential: testKey, limits: limits) }
    }

    /// A per-entry limit refuses that entry when it is read; the pack still opens, lists, and
    /// reads every other entry (it used to refuse the whole pack at open).
    @Test func perEntryLimitsApplyToThatEntryOnly() throws {
        let scratch = Scratch()
        // Deflate: the compression-ratio limit is deflate's (a zstd chunk decodes into at most its
        // declared length, whatever its ratio; see ReadLimits.check).
        let path = try scratch.pack(
            [("big.txt", text(50_000)), ("small.bin", [1, 2, 3])], compression: .deflate, codec: .deflate)
        var limits = ReadLimits()
        limits.maxEntrySize = 4999
        let reader = try ContainerPackReader(path: path, credential: testKey, limits: limits)
        #expect(reader.entries.map(\.path) == ["big.txt", "small.bin"])
        expectError(.limitExceeded) { _ = try reader.read("big.txt") }
        expectError(.limitExceeded) { _ = try reader.stream("big.txt") { _ in } }
        #expect(try reader.read("small.bin") == [1, 2, 3])
        limits = ReadLimits()
        limits.maxCompressionRatio = 1
        let strict = try ContainerPackReader(path: path, credential: testKey, limits: limits)
        expectError(.limitExceeded) { _ = try strict.read("big.txt") }
        #expect(try strict.read("small.bin") == [1, 2, 3])
    }

    @Test func namesSizesAndContentAreNotVisible() throws {
        let scratch = Scratch()
        let secret = Array("TOP-SECRET-CONTENT-".utf8)
        let files = [
            ("private-folder/confidential-name.txt", Array((0..<50).flatMap { _ in secret })),
            ("another_hidden_file.bin", secret),
        ]
        for compression in [CompressionPolicy.store, .deflate] {
            let pack = bytes(of: try scratch.pack(files, name: "\(compression).apack", compression: compression))
            for needle in ["private-folder", "confidential", "another_hidden", ".txt", ".bin", "TOP-SECRET"] {
                let n = Array(needle.utf8)
                let found = (0...(pack.count - n.count)).contains { pack[$0..<$0 + n.count].elementsEqual(n) }
                #expect(!found, "\(needle) visible in the pack")
            }
            // Neither entry size (950, 19) appears as a little-endian integer either.
            for size in [UInt64(950), 19] {
                let le = withUnsafeBytes(of: size.littleEndian) { Array($0) }
                let found = (0...(pack.count - 8)).contains { pack[$0..<$0 + 8].elementsEqual(le) }
                #expect(!found)
            }
        }
    }
}
