import AssetPackCore
import AssetPackCrypto
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackZip

/// Publisher-signed zips: what trusted readers accept, and the attacks of someone who knows the
/// password (docs/SECURITY.md). Each is refused with `.untrusted` or `.integrityFailure`, and no
/// wrong byte is returned.
@Suite struct ZipSigningTests {
    static let publisher = PublisherSigningKey.generate()
    static let other = PublisherSigningKey.generate()
    static var trusted: [PublisherKey] { [publisher.publicKey] }
    static let tree: [String: [UInt8]] = [
        "short.txt": Array("ten bytes!".utf8),  // AE-2: CRC 0, the MAC is its check
        "long.bin": testBytes(5000, seed: 3),  // AE-1, stored
        "text.txt": textBytes(9000, seed: 4),  // AE-1, deflated
    ]

    /// Opens with trust and reads every entry both ways; the code of the first refusal, or nil
    /// when everything read (and then every byte must be right).
    static func outcome(
        _ path: String, trusting keys: [PublisherKey] = trusted, tree: [String: [UInt8]] = tree,
        password: String? = "s3cret", decoder: ZipPackReader.Decoder = .automatic
    ) -> AssetPackError.Code? {
        refusal {
            let reader = try ZipPackReader(
                path: path, credential: password.map { .password($0) }, decoder: decoder, trustedKeys: keys)
            #expect(Set(reader.entries.map(\.path)) == Set(tree.keys), "the signed names, no more")
            for (name, data) in tree.sorted(by: { $0.key < $1.key }) {
                #expect(try reader.read(name) == data, "wrong bytes for \(name)")
                var streamed: [UInt8] = []
                try reader.stream(name) { streamed.append(contentsOf: $0) }
                #expect(streamed == data, "wrong streamed bytes for \(name)")
            }
            // And every stored byte, the hidden .assetpack/ entries too (what install and verify check).
            _ = try ZipSignature.trustedSignature(FileByteSource(path: path), trusting: keys).publisher
        }
    }

    static func read(_ path: String) -> [UInt8] { [UInt8](try! Data(contentsOf: URL(fileURLWithPath: path))) }

    static func write(_ bytes: [UInt8], _ dir: TemporaryDirectory, _ name: String) -> String {
        let path = dir.appending(name).path
        try! Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(arguments: BuildConfiguration.zipEncryptions)
    func everyEncryptionReadsSignedThroughEveryDecoder(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let path = try writeZip(Self.tree, in: dir, encryption: encryption, signingKey: Self.publisher).path
        #expect(try ZipSignature.isPresent(FileByteSource(path: path)))
        let password: String? = encryption == .none ? nil : "s3cret"
        #expect(Self.outcome(path, password: password) == nil)
        #if SystemLibraries
        if encryption != .aes256 { #expect(Self.outcome(path, password: password, decoder: .libzip) == nil) }
        #endif
        #expect(
            Self.outcome(path, trusting: [Self.other.publicKey, Self.publisher.publicKey], password: password)
                == nil)
        let reader = try ZipPackReader(path: path, credential: password.map { .password($0) })
        #expect(reader.publisher == nil && reader.entries.count == Self.tree.count, "reads as unsigned")
        #expect(
            try ZipSignature.trustedSignature(FileByteSource(path: path), trusting: Self.trusted).publisher
                == Self.publisher.publicKey)
    }

    /// The attack the issue names: one entry re-made with the same password, every other byte,
    /// the signature entry and the directory copied. short.txt is AE-2 (CRC 0), so the directory
    /// does not change at all; only the entry's bytes do.
    @Test func entryRemadeWithThePasswordIsRefused() throws {
        let dir = TemporaryDirectory()
        let signed = try writeZip(Self.tree, in: dir, name: "s.zip", signingKey: Self.publisher).path
        var forgedTree = Self.tree
        forgedTree["short.txt"] = Array("TEN BYTES?".utf8)
        let forged = try writeZip(forgedTree, in: dir, name: "f.zip").path
        let (a, b) = (try rawEntries(signed)["short.txt"]!, try rawEntries(forged)["short.txt"]!)
        #expect(a.count == b.count)
        var bytes = Self.read(signed)
        let at = try #require(bytes.firstRange(of: a)).lowerBound
        bytes.replaceSubrange(at..<at + a.count, with: b)
        let attacked = Self.write(bytes, dir, "attacked.zip")
        // Unsigned, the forgery passes every check (the MAC is valid under the known password).
        #expect(
            try ZipPackReader(path: attacked, credential: .password("s3cret")).read("short.txt")
                == forgedTree["short.txt"])
        let reader = try ZipPackReader(path: attacked, credential: .password("s3cret"), trustedKeys: Self.trusted)
        expectUntrusted { _ = try reader.read("short.txt") }
        expectUntrusted { try reader.stream("short.txt") { _ in } }
        #if SystemLibraries
        let viaLibzip = try ZipPackReader(
            path: attacked, credential: .password("s3cret"), decoder: .libzip, trustedKeys: Self.trusted)
        expectUntrusted { _ = try viaLibzip.read("short.txt") }
        #endif
        #expect(try reader.read("long.bin") == Self.tree["long.bin"], "other entries still read")
        expectUntrusted {
            _ = try ZipSignature.trustedSignature(FileByteSource(path: attacked), trusting: Self.trusted).publisher
        }
        // An AE-1 entry re-made changes its CRC in the directory: refused at open.
        var forged1 = Self.tree
        forged1["long.bin"] = testBytes(5000, seed: 99)
        let f1 = try writeZip(forged1, in: dir, name: "f1.zip").path
        let (c, d) = (try rawEntries(signed)["long.bin"]!, try rawEntries(f1)["long.bin"]!)
        var bytes1 = Self.read(signed)
        let at1 = try #require(bytes1.firstRange(of: c)).lowerBound
        bytes1.replaceSubrange(at1..<at1 + c.count, with: d)
        #expect(Self.outcome(Self.write(bytes1, dir, "a1.zip")) == .untrusted)
    }

    /// Entry bytes and the signature entry of another pack the same publisher signed.
    @Test(
        .enabled(
            if: !BuildConfiguration.isPortable,
            "the splice needs both packs' signature entries at one offset: libdeflate's manifests are one size, zlib's vary"
        ))
    func partsOfAnotherSignedPackAreRefused() throws {
        let dir = TemporaryDirectory()
        let a = try writeZip(Self.tree, in: dir, name: "a.zip", signingKey: Self.publisher).path
        var treeB = Self.tree
        treeB["short.txt"] = Array("other ten!".utf8)
        let b = try writeZip(treeB, in: dir, name: "b.zip", signingKey: Self.publisher).path
        let (rawA, rawB) = (try rawEntries(a), try rawEntries(b))
        // B's short.txt in A's place.
        var spliced = Self.read(a)
        let at = try #require(spliced.firstRange(of: rawA["short.txt"]!)).lowerBound
        spliced.replaceSubrange(at..<at + rawA["short.txt"]!.count, with: rawB["short.txt"]!)
        #expect(Self.outcome(Self.write(spliced, dir, "entry.zip")) == .untrusted)
        // B's signature entry (its block, with its CRC) in A's, the directory's tail rebuilt to
        // match: the signature verifies, the directory digest does not.
        let structure = { (bytes: [UInt8]) in
            try ZipStructure(fileSize: UInt64(bytes.count), limits: .default) { Array(bytes[Int($0)..<Int($0) + $1]) }
        }
        let (bytesA, bytesB) = (Self.read(a), Self.read(b))
        let (sa, sb) = (try structure(bytesA), try structure(bytesB))
        let (sigA, sigB) = (sa.records.last!, sb.records.last!)
        #expect(sigA.localHeaderOffset == sigB.localHeaderOffset && sigA.compressedSize == sigB.compressedSize)
        let blockB = Array(bytesB[Int(sigB.localHeaderOffset) + 50..<Int(sb.directoryOffset)])
        let recordB = ZipSignature.record(
            length: blockB.count, crc: CRC32.checksum(blockB), offset: sigA.localHeaderOffset)
        let othersLength = Int(sa.directorySize) - 66
        let swapped =
            Array(bytesA[..<Int(sigA.localHeaderOffset)]) + recordB.localHeader() + blockB
            + Array(bytesA[Int(sa.directoryOffset)..<Int(sa.directoryOffset) + othersLength])
            + ZipSignature.directoryTail(
                recordB, directoryOffset: sa.directoryOffset, otherRecords: UInt64(othersLength),
                count: sa.records.count)
        #expect(swapped.count == bytesA.count && swapped != bytesA)
        #expect(Self.outcome(Self.write(swapped, dir, "block.zip")) == .untrusted)
    }

    @Test func strippedMovedOrTruncatedSignaturesAreRefused() throws {
        let dir = TemporaryDirectory()
        let signed = try writeZip(Self.tree, in: dir, name: "s.zip", signingKey: Self.publisher).path
        let original = Self.read(signed)
        let structure = try ZipStructure(fileSize: UInt64(original.count), limits: .default) {
            Array(original[Int($0)..<Int($0) + $1])
        }
        let sig = structure.records.last!
        let directory = Array(
            original[Int(structure.directoryOffset)..<Int(structure.directoryOffset + structure.directorySize)])
        // The directory's records before the signature's, and the signature's record.
        let sigRecordLength = 46 + sig.name.count
        let others = Array(directory.dropLast(sigRecordLength)), sigRecord = Array(directory.suffix(sigRecordLength))
        func zip(data: [UInt8], records: [UInt8], count: Int) -> [UInt8] {
            data + records
                + ZipEntryRecord.endOfDirectory(
                    count: count, directoryOffset: UInt64(data.count), directorySize: UInt64(records.count))
        }
        let entries = Array(original[..<Int(sig.localHeaderOffset)])
        let sigEntry = Array(original[Int(sig.localHeaderOffset)..<Int(structure.directoryOffset)])
        let count = structure.records.count
        // Stripped: the signature entry and its record removed, a valid zip otherwise.
        let stripped = zip(data: entries, records: others, count: count - 1)
        #expect(Self.outcome(Self.write(stripped, dir, "stripped.zip")) == .untrusted)
        #expect(
            try ZipPackReader(path: Self.write(stripped, dir, "x.zip"), credential: .password("s3cret")).entries.count
                == 3)
        // Its record moved to the front of the directory.
        let reordered = zip(data: entries + sigEntry, records: sigRecord + others, count: count)
        #expect(Self.outcome(Self.write(reordered, dir, "moved.zip")) == .untrusted)
        // A comment after the end record, bytes between the entries and the directory.
        var commented = original
        commented[commented.count - 2] = 3
        commented += Array("abc".utf8)
        for (name, bytes) in [
            ("commented", commented), ("cut by one", Array(original.dropLast())),
            ("cut in the signature", Array(original[..<(Int(structure.directoryOffset) - 40)])),
        ] {
            let code = Self.outcome(Self.write(bytes, dir, "case.zip"))
            #expect(code == .untrusted || code == .integrityFailure, "\(name): \(String(describing: code))")
        }
    }

    /// Every single-byte flip of a small signed pack is refused by a trusting reader.
    @Test(.slow, arguments: [PackEncryption.aes256, .none])
    func everySingleByteFlipIsRefused(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let tree: [String: [UInt8]] = ["a.txt": Array("ten bytes!".utf8), "b": textBytes(300, seed: 5)]
        let password: String? = encryption == .none ? nil : "s3cret"
        let path = try writeZip(tree, in: dir, encryption: encryption, signingKey: Self.publisher).path
        let original = Self.read(path)
        #expect(Self.outcome(path, tree: tree, password: password) == nil)
        let (accepted, codes) = flipEveryByte(of: original) {
            Self.outcome(Self.write($0, dir, "flip.zip"), tree: tree, password: password)
        }
        #expect(accepted.isEmpty, "flips accepted at \(accepted)")
        #expect(Set(codes.keys).isSubset(of: [.untrusted, .integrityFailure]), "\(codes)")
        #expect(codes[.untrusted, default: 0] > original.count / 2, "\(codes)")
    }

    /// A signed re-pack under a new key still reuses the unchanged entries (it signs them again).
    @Test func aSignedRepackReusesTheUnchangedEntries() throws {
        let dir = TemporaryDirectory()
        let path = try writeZip(Self.tree, in: dir, signingKey: Self.publisher).path
        var changed = Self.tree
        changed["text.txt"] = textBytes(9001, seed: 4)
        let report = try writeZip(changed, in: dir, signingKey: Self.other).report
        #expect(report.reused == 2 && report.packed == 1)
        #expect(Self.outcome(path, trusting: [Self.other.publicKey], tree: changed) == nil)
        #expect(Self.outcome(path, tree: changed) == .untrusted)
        _ = try writeZip(changed, in: dir)
        #expect(try !ZipSignature.isPresent(FileByteSource(path: path)))
    }
}

func expectUntrusted(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected .untrusted, got success", sourceLocation: sourceLocation)
    } catch let error as AssetPackError {
        #expect(error.code == .untrusted, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
}
