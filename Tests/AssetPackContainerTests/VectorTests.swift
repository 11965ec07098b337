import AssetPackCore
import AssetPackCrypto
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

/// The committed test vectors (`Vectors/vectors.json` and the `.apack` files beside it).
///
/// Regenerate with `APACK_WRITE_VECTORS=1 swift test --filter VectorTests` after a
/// deliberate format change (and update docs/FORMAT.md).
@Suite struct VectorTests {
    struct Entry: Codable { var path: String; var hex: String }
    struct Vector: Codable {
        var file: String
        var key: String?
        var password: String?
        var kdf: String
        var chunkSize: Int
        var compression: String
        var salt: String
        var entries: [Entry]
        var intermediate: [String: String]?
        /// Format version; absent means 1. Version 1–7 files are frozen (this build writes
        /// versions 8 and 9): they are decoded, not regenerated.
        var version: Int?
        /// Versions 4 to 7: the codec compressed chunks use (`zstd` or `deflate`).
        var codec: String?
        /// Versions 6 and 7: the entries of a first generation, which a re-pack of `entries`
        /// then appended to (absent: one generation).
        var previousEntries: [Entry]?
        /// Version 3: the publisher's Ed25519 seed (hex) the file is signed with, and the
        /// public key a trusting reader pins (hex, RFC 8032).
        var signingSeed: String?
        var publicKey: String?
        /// Version 3: the signature block's version (absent means 1, the block of builds before
        /// block version 2, frozen in its own files) and, for block version 2, the signed release.
        var signatureBlock: Int?
        var releaseName: String?
        var releaseVersion: UInt64?
        /// Unix seconds.
        var releaseExpires: UInt64?
    }
    struct Document: Codable { var format: String; var note: String; var vectors: [Vector] }

    static let password = "correct horse battery staple"
    static let salt = (0..<32).map { UInt8(0xA0 + $0) }
    /// The version-3 vectors' publisher seed: 40 41 … 5f.
    static let signingSeed = (0..<32).map { UInt8(0x40 + $0) }
    static let signingKey = try! signingSeed.withUnsafeBytes { try PublisherSigningKey(seed: $0) }

    static func signed(_ file: String) -> Bool { ["v3", "v5", "v7", "v9"].contains(file.prefix(2)) }

    static func specs() -> [(Vector, ContainerKDF?)] {
        func v(
            _ file: String, key: Bool, kdf: ContainerKDF?, kdfName: String, compression: String,
            _ files: [(String, [UInt8])], previous: [(String, [UInt8])]? = nil
        ) -> (Vector, ContainerKDF?) {
            (
                Vector(
                    file: file, key: key ? hex(Array(0..<32)) : nil, password: key ? nil : password, kdf: kdfName,
                    chunkSize: 4096,
                    compression: compression, salt: hex(salt), entries: files.map { Entry(path: $0.0, hex: hex($0.1)) },
                    version: Int(file.dropFirst().prefix(1)).flatMap { $0 == 1 ? nil : $0 },
                    codec: ["v4", "v5", "v6", "v7", "v8", "v9"].contains(file.prefix(2))
                        ? (file.contains("deflate") ? "deflate" : "zstd") : nil,
                    previousEntries: previous?.map { Entry(path: $0.0, hex: hex($0.1)) },
                    signingSeed: signed(file) ? hex(signingSeed) : nil,
                    publicKey: signed(file) ? hex(Self.signingKey.publicKey.rawRepresentation) : nil,
                    signatureBlock: file.hasSuffix("-block2.apack") ? 2 : nil,
                    releaseName: file.hasSuffix("-block2.apack") ? "tiny" : nil,
                    releaseVersion: file.hasSuffix("-block2.apack") ? 7 : nil,
                    releaseExpires: file.hasSuffix("-block2.apack") ? 4_102_444_800 : nil),
                kdf
            )
        }
        let hello = Array("Hello, AssetPack!\n\n".utf8)
        /// The seven inputs versions 4 to 9 share, as the pair (`unsigned`, `signed`) names them.
        func chunked(_ unsigned: String, _ signed: String) -> [(Vector, ContainerKDF?)] {
            [
                v(
                    "\(unsigned)-tiny-key.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                    [("a.txt", Array("abc".utf8))]),
                v(
                    "\(unsigned)-key-store.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                    [("hello.txt", hello), ("empty", []), ("dir/\u{FC}.bin", noise(5000, seed: 7))]),
                v(
                    "\(unsigned)-key-zstd.apack", key: true, kdf: nil, kdfName: "none", compression: "deflate",
                    [
                        ("text.txt", text(10000)), ("mixed.bin", text(4096) + noise(4096, seed: 42)),
                        ("noise.bin", noise(300, seed: 43)),
                    ]),
                v(
                    "\(unsigned)-key-deflate.apack", key: true, kdf: nil, kdfName: "none", compression: "deflate",
                    [
                        ("text.txt", text(10000)), ("mixed.bin", text(4096) + noise(4096, seed: 42)),
                        ("noise.bin", noise(300, seed: 43)),
                    ]),
                v(
                    "\(unsigned)-scrypt.apack", key: false, kdf: .scrypt(logN: 10, r: 8, p: 1),
                    kdfName: "scrypt N=2^10 r=8 p=1",
                    compression: "store", [("hello.txt", hello)]),
                v(
                    "\(signed)-tiny-key-signed-block2.apack", key: true, kdf: nil, kdfName: "none",
                    compression: "store",
                    [("a.txt", Array("abc".utf8))]),
                // Enough small files that share a vocabulary for the writer to train the pack's
                // dictionary (codec 3, the hidden entry .assetpack/zstd-dictionary).
                v(
                    "\(unsigned)-key-zstd-dictionary.apack", key: true, kdf: nil, kdfName: "none", compression: "auto",
                    (0..<24).map { (String(format: "cfg/unit%02d.cfg", $0), configFile($0, lines: 60)) }),
            ]
        }
        return [
            v(
                "v1-tiny-key.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("a.txt", Array("abc".utf8))]),
            v(
                "v1-key-store.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("hello.txt", hello), ("empty", []), ("dir/ü.bin", (0..<5000).map { UInt8(($0 * 7 + 3) & 0xFF) })]),
            v(
                "v1-key-deflate.apack", key: true, kdf: nil, kdfName: "none", compression: "deflate",
                [
                    ("text.txt", text(10000)), ("mixed.bin", text(4096) + noise(4096, seed: 42)),
                    ("noise.bin", noise(300, seed: 43)),
                ]),
            v(
                "v1-scrypt.apack", key: false, kdf: .scrypt(logN: 10, r: 8, p: 1), kdfName: "scrypt N=2^10 r=8 p=1",
                compression: "store", [("hello.txt", hello)]),
            v(
                "v1-pbkdf2.apack", key: false, kdf: .pbkdf2SHA256(iterations: 1000), kdfName: "pbkdf2-sha256 1000",
                compression: "store", [("hello.txt", hello)]),
            v(
                "v2-tiny-key.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("a.txt", Array("abc".utf8))]),
            v(
                "v2-key-store.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("hello.txt", hello), ("empty", []), ("dir/\u{FC}.bin", noise(5000, seed: 7))]),
            v(
                "v2-key-deflate.apack", key: true, kdf: nil, kdfName: "none", compression: "deflate",
                [
                    ("text.txt", text(10000)), ("mixed.bin", text(4096) + noise(4096, seed: 42)),
                    ("noise.bin", noise(300, seed: 43)),
                ]),
            v(
                "v2-scrypt.apack", key: false, kdf: .scrypt(logN: 10, r: 8, p: 1), kdfName: "scrypt N=2^10 r=8 p=1",
                compression: "store", [("hello.txt", hello)]),
            v(
                "v3-tiny-key-signed.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("a.txt", Array("abc".utf8))]),
            v(
                "v3-key-store-signed.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("hello.txt", hello), ("empty", []), ("dir/\u{FC}.bin", noise(5000, seed: 7))]),
            v(
                "v3-tiny-key-signed-block2.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                [("a.txt", Array("abc".utf8))]),
        ]
            + chunked("v4", "v5") + chunked("v6", "v7")
            + [
                // Generation 1 holds a.txt and big.bin; generation 2 changes one byte in big.bin's
                // middle, keeps its other chunks where they are, and drops a.txt.
                v(
                    "v6-key-store-appended.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                    [("big.bin", edited(noise(40000, seed: 11)))],
                    previous: [("a.txt", Array("abc".utf8)), ("big.bin", noise(40000, seed: 11))]),
                v(
                    "v7-key-store-appended-signed-block2.apack", key: true, kdf: nil, kdfName: "none",
                    compression: "store", [("big.bin", edited(noise(40000, seed: 11)))],
                    previous: [("a.txt", Array("abc".utf8)), ("big.bin", noise(40000, seed: 11))]),
            ]
            + chunked("v8", "v9")
            + [
                // Generation 1 holds a.txt; generation 2 adds big.bin after it (an append keeps every
                // byte of the previous generation, so only a re-pack that removes nothing appends).
                v(
                    "v8-key-store-appended.apack", key: true, kdf: nil, kdfName: "none", compression: "store",
                    [("a.txt", Array("abc".utf8)), ("big.bin", noise(40000, seed: 11))],
                    previous: [("a.txt", Array("abc".utf8))]),
                v(
                    "v9-key-store-appended-signed-block2.apack", key: true, kdf: nil, kdfName: "none",
                    compression: "store", [("a.txt", Array("abc".utf8)), ("big.bin", noise(40000, seed: 11))],
                    previous: [("a.txt", Array("abc".utf8))]),
            ]
    }

    /// The version-2 writer's randomness for vectors: key ids and the index nonce are the
    /// bytes 0xC0, 0xC1, … in the order the writer asks for them (salt: `salt`).
    static func pinnedRandom() -> (Int) -> [UInt8] {
        final class Counter { var next: UInt8 = 0xC0 }
        let counter = Counter()
        return { n in
            (0..<n).map { _ in
                defer { counter.next &+= 1 }
                return counter.next
            }
        }
    }

    static func credential(_ v: Vector) -> PackCredential {
        v.key.map { .key(unhex($0)) } ?? .password(v.password!)
    }

    /// `bytes` with its middle byte flipped.
    static func edited(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        b[b.count / 2] ^= 0xFF
        return b
    }

    /// Writes the vector `v` to `path` deterministically (fixed salt): its previous generation,
    /// if it has one, then its entries (appended to it).
    static func make(_ v: Vector, kdf: ContainerKDF?, at path: String, scratch: Scratch) throws {
        let random = pinnedRandom()
        if let previous = v.previousEntries {
            var first = v
            first.entries = previous
            first.previousEntries = nil
            try make(first, kdf: kdf, at: path, scratch: scratch, random: random, fresh: true)
        }
        try make(v, kdf: kdf, at: path, scratch: scratch, random: random, fresh: v.previousEntries == nil)
    }

    private static func make(
        _ v: Vector, kdf: ContainerKDF?, at path: String, scratch: Scratch, random: @escaping (Int) -> [UInt8],
        fresh: Bool
    ) throws {
        let src = scratch.url.appendingPathComponent("src-\(v.file)-\(fresh)")
        try FileManager.default.createDirectory(at: src, withIntermediateDirectories: true)
        let files = try v.entries.enumerated().map { i, e in
            let url = src.appendingPathComponent("\(i)")
            try Data(unhex(e.hex)).write(to: url)
            return SourceFile(path: e.path, url: url, size: UInt64(e.hex.count / 2))
        }
        var writer = ContainerPackWriter()
        // The version-6 vector's second generation was appended so (version 8 appends as 0.4 does).
        writer.legacyAppends = (v.version ?? 1) < 8
        writer.fixedSalt = unhex(v.salt)
        writer.random = random
        var options = PackOptions()
        options.credential = credential(v)
        options.container.chunkSize = v.chunkSize
        options.container.kdf = kdf ?? .default
        options.compression = CompressionPolicy(rawValue: v.compression)!
        options.container.codec = v.codec.flatMap(ContainerCodec.init(rawValue:)) ?? .zstd
        options.fresh = fresh  // the committed file at `path` must not be reused
        if v.signingSeed != nil {
            options.signingKey = signingKey
            options.legacySignature = (v.signatureBlock ?? 1) == 1
            options.releaseName = v.releaseName
            options.releaseVersion = v.releaseVersion ?? 0
            options.releaseExpires = v.releaseExpires.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        }
        try writer.write(files, to: path, options: options)
    }

    static func intermediates(_ v: Vector) throws -> [String: String] {
        let path = Bundle.module.url(forResource: "Vectors", withExtension: nil)!.appendingPathComponent(v.file).path
        let b = bytes(of: path)
        let header = try ContainerHeader.read(from: FileByteSource(path: path)).header
        let keys = ContainerKeys(master: try ContainerKeys.master(credential(v), header: header), salt: header.salt)
        let random = pinnedRandom()
        let keyID = random(16)
        if header.hasChunkTable {
            // Key id, then chunk 0's nonce, then the index nonce, from the pinned bytes in that order.
            let nonce = random(12)
            let abc = Array("abc".utf8)
            let record = IndexRecordV4(
                path: "a.txt", size: 3, crc: CRC32.checksum(abc), codec: .none, keyID: keyID,
                sha256: SHA256Hasher.digest(abc),
                chunks: [
                    ChunkRecord(
                        offset: header.dataStart, plainLength: 3, payload: 3, nonce: nonce,
                        digest: SHA256Hasher.digest(abc))
                ])
            if header.hasIndexInPlace {
                let index = ContainerIndex.encodeV8([record], chunking: ChunkingParameters(average: v.chunkSize))
                return [
                    "prk": hex(keys.prk.withUnsafeBytes { Array($0) }),
                    "commitmentKey": hex(keys.commitmentKey.withUnsafeBytes { Array($0) }),
                    "indexKey": hex(keys.indexKey(version: header.version)),
                    "entryKey": hex(keys.entryKeyV4(keyID: keyID)),
                    "nonceChunk0": hex(nonce),
                    "indexNonce": hex(random(12)),
                    "indexTable": hex(index.table),
                    "indexDigests": hex(index.digests),
                    "pathHash": String(
                        format: "%016llx", Array("a.txt".utf8).withUnsafeBytes { IndexTable.hash($0) }),
                    "pack": hex(b),
                ]
            }
            return [
                "prk": hex(keys.prk.withUnsafeBytes { Array($0) }),
                "commitmentKey": hex(keys.commitmentKey.withUnsafeBytes { Array($0) }),
                "indexKey": hex(keys.indexKey(version: header.version)),
                "entryKey": hex(keys.entryKeyV4(keyID: keyID)),
                "nonceChunk0": hex(nonce),
                "indexNonce": hex(random(12)),
                "indexPlaintext": hex(
                    ContainerIndex.encode(
                        [
                            IndexRecordV4(
                                path: "a.txt", size: 3, crc: CRC32.checksum(abc), codec: .none, keyID: keyID,
                                sha256: SHA256Hasher.digest(abc),
                                chunks: [
                                    ChunkRecord(
                                        offset: header.dataStart, plainLength: 3, payload: 3, nonce: nonce,
                                        digest: SHA256Hasher.digest(abc))
                                ])
                        ], chunking: ChunkingParameters(average: v.chunkSize), offsets: header.isAppendable)),
                "pack": hex(b),
            ]
        }
        let nonce = chunkNonce(entry: 0, chunk: 0, final: true, deflated: false)
        return [
            "prk": hex(keys.prk.withUnsafeBytes { Array($0) }),
            "commitmentKey": hex(keys.commitmentKey.withUnsafeBytes { Array($0) }),
            "indexKey": hex(keys.indexKey(version: header.version)),
            "entryKey": hex(header.version == 1 ? keys.entryKey(0) : keys.entryKey(keyID: keyID)),
            "nonceChunk0Final": hex(nonce.withUnsafeBytes { Array($0) }),
            "indexPlaintext": hex(
                ContainerIndex.encode([
                    IndexRecord(
                        path: "a.txt", size: 3, crc: CRC32.checksum(Array("abc".utf8)), keyID: keyID,
                        sha256: SHA256Hasher.digest(Array("abc".utf8)), chunkLengths: nil)
                ])),
            "pack": hex(b),
        ]
    }

    @Test func vectorsDecodeAndRegenerate() throws {
        let sourceDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")
        let scratch = Scratch()
        let specs = Self.specs()  // once: building the entries' bytes is most of a debug build's test time
        if ProcessInfo.processInfo.environment["APACK_WRITE_VECTORS"] == "1" {
            var vectors: [Vector] = []
            for (v, kdf) in specs {
                if (v.version ?? 1) >= 8 {
                    try Self.make(v, kdf: kdf, at: sourceDir.appendingPathComponent(v.file).path, scratch: scratch)
                }
                vectors.append(v)
            }
            let doc = Document(
                format: "AssetPack container v1 to v9 (docs/FORMAT.md)",
                note:
                    "Each .apack opens with the given key (hex) or password and holds exactly these entries. Version 8 and 9 files: writing the entries with the given salt, KDF, average chunk size, compression policy and codec, and key ids, chunk nonces and the index nonce taken from the bytes C0 C1 C2 … in the order the writer draws them (per entry its key id, then per batch of chunks their nonces; the index nonce last), and, for version 9, signing with signingSeed (signature block 2, the release releaseName, releaseVersion and releaseExpires in unix seconds), reproduces the file byte for byte; with previousEntries, a pack of those is written first and a re-pack of entries appends to it and then zeroes the bytes of the first pack's data region that the second's index names no chunk in (the first index, and chunks it replaced; since 0.4), the bytes C0 C1 … running on across both writes. A reader trusting publicKey accepts version 3, 5, 7 and 9 files. Version 1 to 7 files are frozen (written by earlier builds; version 3 files have a signature block of version signatureBlock, absent meaning 1; version 4 and 5 files regenerated by the writer of rounds 4 and 5 as the note above says for versions 8 and 9, less the chunk offsets and header slots; version 6 and 7 files by the writer of 0.3, with the index of version 4 and chunk offsets).",
                vectors: vectors)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try encoder.encode(doc).write(to: sourceDir.appendingPathComponent("vectors.json"))
            return
        }
        let dir = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
        let doc = try JSONDecoder().decode(
            Document.self, from: Data(contentsOf: dir.appendingPathComponent("vectors.json")))
        #expect(doc.vectors.count == specs.count)
        for v in doc.vectors {
            let path = dir.appendingPathComponent(v.file).path
            let trusted = try v.publicKey.map { [try PublisherKey(rawRepresentation: unhex($0))] } ?? []
            let reader = try ContainerPackReader(path: path, credential: Self.credential(v), trustedKeys: trusted)
            #expect(reader.publisher == trusted.first, "\(v.file)")
            if [3, 5, 7, 9].contains(v.version) {
                // A block-1 file states no release; a block-2 file the one it was signed with.
                let expected =
                    v.signatureBlock == 2
                    ? PackRelease(
                        name: v.releaseName, version: v.releaseVersion!,
                        expires: Date(timeIntervalSince1970: TimeInterval(v.releaseExpires!)),
                        size: UInt64(bytes(of: path).count)) : PackRelease.legacy
                #expect(reader.release == expected, "\(v.file)")
            }
            #expect(
                reader.entries.map(\.path)
                    == v.entries.map(\.path).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            for e in v.entries {
                let codec = try reader.records.position(of: e.path).map { try reader.records.record($0) }?.codec
                if !Zstd.isAvailable, codec == .zstd || codec == .zstdDictionary {
                    // The portable configuration: a zstd entry is refused by name, with the way out.
                    let error = #expect(throws: AssetPackError.self) { try reader.read(e.path) }
                    #expect(error?.code == .unsupportedFormat, "\(v.file) \(e.path)")
                    #expect(error?.message.contains("--codec deflate") == true, "\(v.file) \(e.path)")
                    continue
                }
                #expect(try reader.read(e.path) == unhex(e.hex), "\(v.file) \(e.path)")
            }
            #expect(reader.header.version == UInt8(v.version ?? 1))
            // Only the dictionary vector has the pack's dictionary, and all its entries use it.
            #expect((reader.zstdDictionary != nil) == v.file.contains("dictionary"), "\(v.file)")
            if v.file.contains("dictionary") {
                let codecs = try (0..<reader.records.count).map { try reader.records.record($0).codec }
                #expect(codecs.filter { $0 == .zstdDictionary }.count == v.entries.count)
            }
            // Regenerating pins the compressors' output too (libdeflate's, libzstd's): the
            // portable configuration's zlib writes other (valid) deflate streams.
            guard (v.version ?? 1) >= 8, !BuildConfiguration.isPortable else { continue }
            let again = scratch.url.appendingPathComponent(v.file).path
            try Self.make(v, kdf: specs.first { $0.0.file == v.file }!.1, at: again, scratch: scratch)
            let regenerated = bytes(of: again), committed = bytes(of: path)
            let firstDifference = zip(regenerated, committed).enumerated().first { $0.element.0 != $0.element.1 }?
                .offset
            #expect(
                regenerated == committed,
                "\(v.file) does not regenerate byte for byte (\(regenerated.count) vs \(committed.count) bytes, first difference at \(firstDifference.map(String.init) ?? "the end"))"
            )
        }
        #expect(Set(doc.vectors.map { $0.version ?? 1 }) == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(Set(doc.vectors.filter { $0.version == 3 }.map { $0.signatureBlock ?? 1 }) == [1, 2])
        for v in doc.vectors where [3, 5, 7, 9].contains(v.version) {
            // Another publisher's key is refused.
            let other = try PublisherKey(rawRepresentation: Array(unhex(v.publicKey!).reversed()))
            let error = #expect(throws: AssetPackError.self) {
                _ = try ContainerPackReader(
                    path: dir.appendingPathComponent(v.file).path, credential: Self.credential(v), trustedKeys: [other])
            }
            #expect(error?.code == .untrusted, "\(v.file)")
        }
        for tiny in doc.vectors where tiny.file.contains("tiny") {
            if ProcessInfo.processInfo.environment["APACK_PRINT_INTERMEDIATES"] == "1" {
                print("== \(tiny.file)")
                for (k, value) in try Self.intermediates(tiny).sorted(by: { $0.key < $1.key }) {
                    print("\(k): \(value)")
                }
            }
            #expect(try Self.intermediates(tiny)["prk"]?.count == 64)
        }
    }

    /// docs/FORMAT.md, "Entry digests": `v8-tiny-key.apack`'s digest section holds, for `a.txt` =
    /// `abc`, SHA-256("AssetPack entry digest v1" 00 ‖ u64le 3 ‖ SHA-256(`abc`)) (worked out by
    /// Python's hashlib), then its one chunk's SHA-256(`abc`).
    @Test func anEntryDigestIsMadeOfItsChunksDigests() throws {
        let path = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
            .appendingPathComponent("v8-tiny-key.apack").path
        let reader = try ContainerPackReader(path: path, credential: .key(Array(0..<32)))
        let digests = try reader.digests()
        let e = try reader.records.record(0)
        #expect(
            hex(try #require(digests.entry(e))) == "9a017c968ce1c395c0aa50c04da9ecfc4015b0b4a57d512c0d387ff989acb9ab")
        #expect(hex(digests.chunk(0)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
func unhex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.utf8.makeIterator()
    while let h = it.next(), let l = it.next() {
        out.append(UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16)!)
    }
    return out
}
