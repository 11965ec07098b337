import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Publisher signatures, once per registered format, through the seam every caller uses
/// (`AssetPacks.pack`, `open`, `signature(at:)`, `trustedSignature`): what a trusted reader
/// accepts and refuses, and what a re-pack signs. The attacks that depend on a format's layout
/// (a chunk re-sealed, an entry re-made, parts of two packs spliced, every byte flipped) stay in
/// the format's own suite (SigningTests, ZipSigningTests).
@Suite struct SigningConformanceTests {
    static let publisher = PublisherSigningKey.generate()
    static let other = PublisherSigningKey.generate()
    static let password = "signed"
    static let tree: [String: [UInt8]] = [
        "a.txt": Array("nineteen bytes here".utf8), "b.bin": testBytes(10_000, seed: 7),
        "c/z.txt": textBytes(6_000, seed: 8), "e": [],
    ]

    /// Packs `tree` as `format` into `dir/pack`, signed by `key` (unsigned without), re-packing
    /// what is there.
    @discardableResult
    static func pack(
        _ format: PackFormat, _ tree: [String: [UInt8]] = tree, in dir: TemporaryDirectory,
        signedBy key: PublisherSigningKey?
    ) throws -> (path: String, summary: AssetPacks.PackSummary) {
        let source = dir.appending("src")
        try? FileManager.default.removeItem(at: source)
        _ = try dir.write(tree, under: "src")
        var options = PackOptions.forTests
        options.format = format
        options.credential = .password(password)
        options.signingKey = key
        let output = dir.appending("pack")
        let summary = try AssetPacks.pack(source: source, to: output, options: options)
        return (output.path, summary)
    }

    /// Opens `path` trusting `keys` and reads every entry of `tree` both ways; the code of the
    /// first refusal, or `nil` when everything read (and then every byte must be right).
    static func outcome(_ path: String, trusting keys: [PublisherKey], tree: [String: [UInt8]] = tree)
        -> AssetPackError.Code?
    {
        refusal {
            let reader = try AssetPacks.open(path, credential: .password(password), trustedKeys: keys)
            #expect(Set(reader.entries.map(\.path)) == Set(tree.keys), "the signed names, no more")
            for (name, data) in tree {
                #expect(try reader.read(name) == data, "wrong bytes for \(name)")
                var streamed: [UInt8] = []
                try reader.stream(name) { streamed.append(contentsOf: $0) }
                #expect(streamed == data, "wrong streamed bytes for \(name)")
            }
            // And every stored byte, without the password (what install and verify check).
            _ = try AssetPacks.trustedSignature(at: path, trusting: keys)
        }
    }

    @Test(arguments: PackFormat.allCases)
    func aSignedPackReadsWithTrustAndWithout(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let path = try Self.pack(format, in: dir, signedBy: Self.publisher).path
        #expect(try AssetPacks.signature(at: path)?.publisher == Self.publisher.publicKey)
        #expect(Self.outcome(path, trusting: [Self.publisher.publicKey]) == nil)
        // Rotation: any one of several trusted keys is enough.
        #expect(Self.outcome(path, trusting: [Self.other.publicKey, Self.publisher.publicKey]) == nil)
        let reader = try AssetPacks.open(
            path, credential: .password(Self.password), trustedKeys: [Self.publisher.publicKey])
        #expect(reader.publisher == Self.publisher.publicKey)
        // Without trusted keys a signed pack reads as an unsigned one.
        let plain = try AssetPacks.open(path, credential: .password(Self.password))
        #expect(plain.publisher == nil)
        for (name, data) in Self.tree { #expect(try plain.read(name) == data) }
        // The installer's check, without the password.
        #expect(
            try AssetPacks.trustedSignature(at: path, trusting: [Self.publisher.publicKey]).publisher
                == Self.publisher.publicKey)
    }

    @Test(arguments: PackFormat.allCases)
    func unsignedPacksAndOtherKeysAreRefused(format: PackFormat) throws {
        let (dir, unsignedDir) = (TemporaryDirectory(), TemporaryDirectory())
        let unsigned = try Self.pack(format, in: unsignedDir, signedBy: nil).path
        #expect(try AssetPacks.signature(at: unsigned) == nil)
        #expect(Self.outcome(unsigned, trusting: [Self.publisher.publicKey]) == .untrusted)
        let signed = try Self.pack(format, in: dir, signedBy: Self.other).path
        #expect(Self.outcome(signed, trusting: [Self.publisher.publicKey]) == .untrusted)
        // Refused before the password is even asked for.
        do {
            _ = try AssetPacks.open(signed, credential: nil, trustedKeys: [Self.publisher.publicKey])
            Issue.record("a pack signed by another key opened")
        } catch let error as AssetPackError {
            #expect(error.code == .untrusted, "\(error)")
        }
    }

    /// A re-pack signs what it writes, reused entries included, under the key it is given now;
    /// without a key it is unsigned.
    @Test(arguments: PackFormat.allCases)
    func aRepackSignsAgain(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        let path = try Self.pack(format, in: dir, signedBy: Self.publisher).path
        var changed = Self.tree
        changed["a.txt"] = Array("twenty bytes here!!!".utf8)
        try Self.pack(format, changed, in: dir, signedBy: Self.other)
        #expect(Self.outcome(path, trusting: [Self.other.publicKey], tree: changed) == nil)
        #expect(Self.outcome(path, trusting: [Self.publisher.publicKey], tree: changed) == .untrusted)
        let unsigned = try Self.pack(format, changed, in: dir, signedBy: nil)
        #expect(unsigned.summary.warnings.contains { $0.contains("this pack is not signed") }, "\(unsigned.summary)")
        #expect(try AssetPacks.signature(at: path) == nil)
        #expect(Self.outcome(path, trusting: [Self.other.publicKey], tree: changed) == .untrusted)
    }
}
