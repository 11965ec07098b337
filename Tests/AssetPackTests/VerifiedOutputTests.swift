import AssetPack
import AssetPackFixtures
import AssetPackTestSupport
import Foundation
import Testing

@Suite struct VerifiedOutputTests {
    static func pack(_ tree: [String: [UInt8]], format: PackFormat, in dir: TemporaryDirectory) throws -> URL {
        try dir.pack(tree, format, as: "p.\(format)")
    }

    /// Runs `body` with a fresh file's descriptor; returns what was written to it.
    static func captured(in dir: TemporaryDirectory, _ body: (Int32) throws -> Void) rethrows -> [UInt8] {
        let url = dir.appending("out-\(UUID().uuidString)")
        let fd = open(url.path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        precondition(fd >= 0)
        defer { close(fd) }
        try body(fd)
        return [UInt8]((try? Data(contentsOf: url)) ?? Data())
    }

    @Test(
        "writeVerified writes exactly the entry, in memory or spooled, for both formats", .slow,
        arguments: [PackFormat.zip, .container], [UInt64(64) << 20, 1_000])
    func writesTheEntry(format: PackFormat, memoryLimit: UInt64) throws {
        let dir = TemporaryDirectory()
        let tree = ["big.bin": testBytes(700_000, seed: 4), "text.txt": textBytes(300_000), "empty": []]
        let reader = try AssetPacks.open(try Self.pack(tree, format: format, in: dir).path, credential: .password("pw"))
        for (path, bytes) in tree {
            let written = try Self.captured(in: dir) { fd in
                try reader.writeVerified(path, to: fd, spoolDirectory: dir.path, memoryLimit: memoryLimit)
            }
            #expect(written == bytes, "\(format) \(path) limit \(memoryLimit)")
            #expect(try reader.verify(path).bytesOut == UInt64(bytes.count))
        }
        // The spool file is unlinked at once: nothing is left beside the outputs.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir.path).allSatisfy {
                !$0.hasPrefix(".assetpack-spool")
            })
    }

    @Test("a corrupt zip entry writes nothing, in memory or spooled", arguments: [UInt64(64) << 20, 1_000])
    func corruptZipEntryWritesNothing(memoryLimit: UInt64) throws {
        let dir = TemporaryDirectory()
        let url = try Self.pack(["big.bin": testBytes(200_000, seed: 8)], format: .zip, in: dir)
        var bytes = [UInt8](try Data(contentsOf: url))
        bytes[150_000] ^= 0x40  // inside the entry's ciphertext
        try Data(bytes).write(to: url)
        let reader = try AssetPacks.open(url.path, credential: .password("pw"))
        var thrown: AssetPackError?
        let written = Self.captured(in: dir) { fd in
            do { try reader.writeVerified("big.bin", to: fd, spoolDirectory: dir.path, memoryLimit: memoryLimit) } catch
            {
                thrown = error as? AssetPackError
            }
        }
        #expect(thrown?.code == .integrityFailure)
        #expect(written.isEmpty)
        #expect(throws: AssetPackError.self) { try reader.verify("big.bin") }
    }

    /// In a set, what is verified before a byte is written is the serving pack's business: a
    /// zip entry below a container on top must be spooled or held, not streamed (the check used
    /// to ask the set's format, which is the top pack's).
    @Test func aCorruptZipEntryBelowAContainerWritesNothing() throws {
        let dir = TemporaryDirectory()
        let zip = try Self.pack(["big.bin": testBytes(200_000, seed: 8)], format: .zip, in: dir)
        var bytes = [UInt8](try Data(contentsOf: zip))
        bytes[150_000] ^= 0x40  // inside the entry's ciphertext
        try Data(bytes).write(to: zip)
        let container = try Self.pack(["other.txt": Array("top".utf8)], format: .container, in: dir)
        let set = try PackSet([
            .init(name: "base", reader: AssetPacks.open(zip.path, credential: .password("pw"))),
            .init(name: "top", reader: AssetPacks.open(container.path, credential: .password("pw"))),
        ])
        #expect(set.format == .container)
        var thrown: AssetPackError?
        let written = Self.captured(in: dir) { fd in
            do { try set.writeVerified("big.bin", to: fd, spoolDirectory: dir.path, memoryLimit: 1_000) } catch {
                thrown = error as? AssetPackError
            }
        }
        #expect(thrown?.code == .integrityFailure)
        #expect(written.isEmpty, "\(written.count) bytes written")
    }
}
