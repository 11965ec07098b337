import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// Publisher-signed containers (version 3): what trusted readers accept, and the attacks of
/// someone who knows the key (docs/SECURITY.md). Every attack is refused with `.untrusted`
/// or `.integrityFailure`, and no wrong byte is returned.
@Suite struct SigningTests {
    static let publisher = PublisherSigningKey.generate()
    static let other = PublisherSigningKey.generate()
    static var trusted: [PublisherKey] { [publisher.publicKey] }
    static let files: [(String, [UInt8])] = [
        ("a.txt", Array("nineteen bytes here".utf8)),
        ("b.bin", noise(10_000, seed: 7)),  // three stored chunks of 4 KiB
        ("c/z.txt", text(6000)),  // two deflated chunks
        ("e", []),
    ]

    /// Opens with trust and reads every entry every way; the error code of the first refusal, or
    /// nil when everything read (and then every byte must be right).
    static func outcome(_ path: String, trusting keys: [PublisherKey] = trusted, files: [(String, [UInt8])] = files)
        -> AssetPackError.Code?
    {
        refusal {
            let reader = try ContainerPackReader(path: path, credential: testKey, trustedKeys: keys)
            for (name, data) in files {
                #expect(try reader.read(name) == data, "wrong bytes for \(name)")
                var streamed: [UInt8] = []
                try reader.stream(name) { streamed.append(contentsOf: $0) }
                #expect(streamed == data, "wrong streamed bytes for \(name)")
                #expect(try reader.readRange(name, offset: 0, count: data.count) == data)
            }
            // And the whole file as one stream (what install and verify check).
            _ = try ContainerPackReader.trustedSignature(FileByteSource(path: path), trusting: keys).publisher
        }
    }

    /// (What every format's signed pack does is SigningConformanceTests'; this is the container's own.)
    @Test func aSignedContainerIsTheSignedVersionAndAnUnsignedOneIsNot() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.files, signingKey: Self.publisher)
        #expect(try ContainerPackReader.isSigned(FileByteSource(path: path)))
        let reader = try ContainerPackReader(path: path, credential: testKey, trustedKeys: Self.trusted)
        #expect(reader.header.version == ContainerFormat.signedVersion && reader.publisher == Self.publisher.publicKey)
        #expect(Self.outcome(path) == nil)
        _ = try scratch.pack(Self.files)
        #expect(try !ContainerPackReader.isSigned(FileByteSource(path: path)))
        #expect(
            try ContainerPackReader(path: path, credential: testKey).header.version != ContainerFormat.signedVersion)
    }

    /// The attacker holds the real entry key: chunk 1 of b.bin re-sealed with other bytes. The
    /// GCM tag is valid, so an untrusting reader's range read returns the forged bytes; a trusting
    /// reader refuses it by the chunk's signed SHA-256.
    @Test func chunkResealedUnderTheRealKeyIsRefused() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.files, compression: .store, signingKey: Self.publisher)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        let e = try #require(reader.records.all().first { $0.info.path == "b.bin" })
        try #require(e.chunkCount >= 2)
        let (offset, length) = reader.storedChunk(e, 1)
        let start = reader.plainStart(e, 1)
        let forged = [UInt8](repeating: 0x41, count: length - 16)
        var sealed = forged
        var tag = [UInt8](repeating: 0, count: 16)
        let nonce = reader.nonce(e, 1)
        sealed.withUnsafeMutableBytes { s in
            tag.withUnsafeMutableBytes { t in AESGCM().seal(s, tag: t, nonce: nonce, key: reader.keys.entryKey(e)) }
        }
        var bytes = bytes(of: path)
        bytes.replaceSubrange(Int(offset)..<Int(offset) + length, with: sealed + tag)
        let attacked = scratch.write(bytes, name: "attacked")
        let fooled = try ContainerPackReader(path: attacked, credential: testKey)
        #expect(
            try fooled.readRange("b.bin", offset: start, count: forged.count) == forged, "the attack works unsigned")
        let careful = try ContainerPackReader(path: attacked, credential: testKey, trustedKeys: Self.trusted)
        for read in [
            { _ = try careful.readRange("b.bin", offset: start, count: 10) }, { _ = try careful.read("b.bin") },
            { try careful.stream("b.bin") { _ in } },
        ] {
            expectError(.untrusted) { try read() }
        }
        #expect(try careful.read("a.txt") == Self.files[0].1, "other entries still read")
        expectError(.untrusted) {
            _ = try ContainerPackReader.trustedSignature(FileByteSource(path: attacked), trusting: Self.trusted)
                .publisher
        }
    }

    /// Pack B of the same publisher and key holds the same names with other bytes: its chunks,
    /// its signature block, or both spliced into pack A are refused.
    @Test func partsOfAnotherSignedPackAreRefused() throws {
        let scratch = Scratch()
        let a = try scratch.pack(Self.files, name: "a.apack", compression: .store, signingKey: Self.publisher)
        let changed = Self.files.map { ($0.0, $0.0 == "b.bin" ? noise(10_000, seed: 8) : $0.1) }
        let b = try scratch.pack(changed, name: "b.apack", compression: .store, signingKey: Self.publisher)
        let (ra, rb) = (
            try ContainerPackReader(path: a, credential: testKey), try ContainerPackReader(path: b, credential: testKey)
        )
        let ea = try #require(ra.records.all().first { $0.info.path == "b.bin" })
        let eb = try #require(rb.records.all().first { $0.info.path == "b.bin" })
        let (bytesA, bytesB) = (bytes(of: a), bytes(of: b))
        let length = Int(ea.info.storedSize)
        #expect(length == Int(eb.info.storedSize))
        // B's entry in A's place.
        var spliced = bytesA
        spliced.replaceSubrange(
            Int(ea.offset)..<Int(ea.offset) + length, with: bytesB[Int(eb.offset)..<Int(eb.offset) + length])
        #expect(Self.outcome(scratch.write(spliced, name: "entry")) == .untrusted)
        // B's signature block (same length: same chunk count) on A.
        let endA = Int(ra.header.indexOffset + ra.header.indexLength),
            endB = Int(rb.header.indexOffset + rb.header.indexLength)
        #expect(bytesA.count - endA == bytesB.count - endB)
        let swapped = Array(bytesA[..<endA]) + Array(bytesB[endB...])
        #expect(Self.outcome(scratch.write(swapped, name: "block")) == .untrusted)
    }

    @Test func strippedMovedOrTruncatedSignaturesAreRefused() throws {
        let scratch = Scratch()
        let path = try scratch.pack(Self.files, signingKey: Self.publisher)
        let reader = try ContainerPackReader(path: path, credential: testKey)
        let original = bytes(of: path)
        let end = Int(reader.header.indexOffset + reader.header.indexLength)
        let block = Array(original[end...])
        var cases: [(String, [UInt8])] = [
            ("stripped", Array(original[..<end])),
            ("moved after a byte", Array(original[..<end]) + [0] + block),
            ("cut by one byte", Array(original.dropLast())),
            ("cut by one digest", Array(original.dropLast(32))),
            ("cut to the fixed part", Array(original[..<(end + PackSignature.fixedSize)])),
        ]
        // Moved in front of the index: the header's index offset no longer points at it.
        cases.append(
            (
                "moved before the index",
                Array(original[..<Int(reader.header.indexOffset)]) + block
                    + Array(original[Int(reader.header.indexOffset)..<end])
            ))
        for (name, bytes) in cases {
            let code = Self.outcome(scratch.write(bytes, name: "case"))
            #expect(code == .untrusted || code == .integrityFailure, "\(name): \(String(describing: code))")
        }
        // Bytes after the pack's end (here a second copy of the block) are an append that did
        // not finish: the signed pack, which ends where its header slot says, reads as it is.
        #expect(Self.outcome(scratch.write(original + block, name: "doubled")) == nil)
    }

    /// Every single-byte flip of a small signed pack is refused by a trusting reader, and the
    /// refusal is `.untrusted` unless the byte is one the signature framing itself describes.
    @Test func everySingleByteFlipIsRefused() throws {
        let scratch = Scratch()
        let files: [(String, [UInt8])] = [("a.txt", Array("nineteen bytes here".utf8)), ("b", text(300))]
        let path = try scratch.pack(files, signingKey: Self.publisher)
        let original = bytes(of: path)
        #expect(Self.outcome(path, files: files) == nil)
        let (accepted, codes) = flipEveryByte(of: original) {
            Self.outcome(scratch.write($0, name: "flip"), files: files)
        }
        // Between slot 0 and the data lie zeros no reader reads, the empty second slot among them:
        // a flip there is harmless (the pack reads its files, as `outcome` checks).
        #expect(
            accepted == flipOffsets(original).filter { appendablePadding(original)!.contains($0) },
            "flips accepted at \(accepted)")
        #expect(Set(codes.keys).isSubset(of: [.untrusted, .integrityFailure]), "\(codes)")
        #expect(codes[.untrusted, default: 0] > flipOffsets(original).count / 2, "\(codes)")
    }

}
