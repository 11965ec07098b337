import AssetPackCore
import AssetPackTestSupport
import AssetPackCrypto
import Foundation
import Testing

@testable import AssetPackContainer

/// A raw 32-byte key 00 01 … 1f: no KDF, so tests stay fast.
let testKey = PackCredential.key(Array(0..<32))

/// Deterministic pseudo-random bytes (SplitMix64).
func noise(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    var out = [UInt8]()
    out.reserveCapacity(count + 8)
    while out.count < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        withUnsafeBytes(of: z) { out.append(contentsOf: $0) }
    }
    return Array(out.prefix(count))
}

/// Recomputes the check of each version-6/7 header slot that starts with the magic, as
/// anyone who edits a slot can (the check finds torn writes, not attackers: the commitment and
/// the index's tag do that).
func resealSlots(_ b: inout [UInt8]) {
    let size = ContainerFormat.slotSize
    for at in [0, ContainerFormat.slotStride]
    where b.count >= at + size && b[at..<at + 8].elementsEqual(ContainerFormat.magic) {
        let body = Array(b[at..<at + size - 8])
        b.replaceSubrange(at + size - 8..<at + size, with: SHA256Hasher.digest(body).prefix(8))
    }
}

/// Compressible text of `count` bytes.
func text(_ count: Int) -> [UInt8] {
    let line = Array("The quick brown fox jumps over the lazy dog. 0123456789\n".utf8)
    return (0..<count).map { line[$0 % line.count] }
}

/// A temporary directory, removed when released.
final class Scratch {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("apc-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `files` as sources and packs them; returns the pack path.
    func pack(
        _ files: [(String, [UInt8])], name: String = "test.apack", credential: PackCredential? = testKey,
        chunkSize: Int = 4096, compression: CompressionPolicy = .auto,
        kdf: ContainerKDF = .forTests, writer: ContainerPackWriter = ContainerPackWriter(),
        signingKey: PublisherSigningKey? = nil, codec: ContainerCodec = BuildConfiguration.codecs[0]
    ) throws -> String {
        let src = url.appendingPathComponent("src-\(name)")
        var sources: [SourceFile] = []
        for (i, (path, bytes)) in files.enumerated() {
            let file = src.appendingPathComponent("\(i)")
            try FileManager.default.createDirectory(at: src, withIntermediateDirectories: true)
            try Data(bytes).write(to: file)
            sources.append(SourceFile(path: path, url: file, size: UInt64(bytes.count)))
        }
        var options = PackOptions.forTests
        options.format = .container
        options.credential = credential
        options.container.chunkSize = chunkSize
        options.container.kdf = kdf
        options.compression = compression
        options.container.codec = codec
        options.signingKey = signingKey
        let out = url.appendingPathComponent(name).path
        try writer.write(sources, to: out, options: options)
        return out
    }

    /// Writes `bytes` to a file named `name`; returns its path.
    func write(_ bytes: [UInt8], name: String) -> String {
        let path = url.appendingPathComponent(name).path
        try! Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}

func bytes(of path: String) -> [UInt8] {
    Array(try! Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Expects `body` to throw an `AssetPackError` with `code`.
func expectError(
    _ code: AssetPackError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected \(code), got success \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    } catch let error as AssetPackError {
        #expect(error.code == code, "\(error) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
