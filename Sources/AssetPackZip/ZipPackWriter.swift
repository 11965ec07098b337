import AssetPackCore
import AssetPackCrypto
import Foundation

/// Writes zip packs: WinZip AES-256 by default, no encryption, or ZipCrypto on request.
///
/// AES-256 and unencrypted packs are written by our own code (see docs/ZIP-WRITER.md for why
/// libzip cannot take finished entries): entries are compressed with libdeflate and encrypted
/// with OpenSSL on every core, and written in path order through `AtomicFile` (a temporary file
/// beside the output, synced, renamed). Names are UTF-8 with the UTF-8 flag set. A reserved
/// entry, `.assetpack/manifest`, records each entry's size and SHA-256 so that the next pack to
/// the same output copies unchanged entries as they are (see ``write(_:to:options:)``).
///
/// ZipCrypto packs are written by libzip (we do not implement that cipher), into a temporary
/// file whose name starts with `AtomicFile.temporaryPrefix`.
package struct ZipPackWriter: PackWriter {
    /// libdeflate's level for every entry, overriding `PackOptions.level` (for benchmarks and
    /// tests); `nil`: `options.level.zipDeflateLevel` (docs/PERFORMANCE.md, "Compression levels").
    package var level: Int32?
    /// Test hook: derive every AES salt from this seed, so the output is byte-for-byte
    /// reproducible. Never for real packs: a salt must not repeat under one password.
    package var fixedSaltSeed: UInt64?
    /// Entries up to this size that are deflated are read and compressed whole (libdeflate has
    /// no streaming interface); larger ones are deflated in ``pieceSize`` pieces with zlib.
    package var wholeEntryLimit = 64 << 20
    /// Entries above this size that are stored are read, encrypted and written in pieces of
    /// this size (a multiple of 16, so each piece starts on an AES block).
    package var pieceSize = 4 << 20
    /// Most bytes of work started and not yet written (tasks beyond it wait).
    package var memoryBudget = 96 << 20
    /// Threads that compress and encrypt.
    package var workers = ZipPackWriter.cores

    /// The processor count, read once (not on every writer's creation).
    private static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Creates a writer.
    package init() {}

    /// Writes `files` as a zip pack at `output`, atomically.
    ///
    /// - Throws: `.missingPassword` when encryption is requested without a password,
    ///   `.invalidArgument` for a raw key, an empty password, an entry path that is not
    ///   normalised, repeated, too long or inside `.assetpack/`; `.io` when reading or writing fails.
    @discardableResult
    package func write(_ files: [SourceFile], to output: String, options: PackOptions) throws -> PackWriteReport {
        let password: String?
        switch (options.zip.encryption, options.credential) {
        case (.none, _): password = nil
        case (_, .password(let p)?): password = p
        case (_, .key?): throw AssetPackError(.invalidArgument, "zip packs take a password, not a raw key")
        case (_, nil): throw AssetPackError(.missingPassword, "a password is needed to encrypt the pack")
        }
        try ReadLimits.default.checkPackable(files)
        if let password, password.isEmpty {
            throw AssetPackError(.invalidArgument, "the password is empty")
        }
        let sorted = files.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        for (i, f) in sorted.enumerated() {
            guard !f.path.isEmpty, f.path.utf8.count <= Int(UInt16.max), EntryPath.normalize(f.path) == f.path else {
                throw AssetPackError(.invalidArgument, "entry path is empty, too long or not normalised", path: f.path)
            }
            guard !ZipManifest.isReserved(f.path) || f.path == DeletionRecord.entryName else {
                throw AssetPackError(
                    .invalidArgument, "paths below \(ZipManifest.folder) are reserved for the pack's manifest",
                    path: f.path)
            }
            if i > 0, sorted[i - 1].path.utf8.elementsEqual(f.path.utf8) {
                throw AssetPackError(.invalidArgument, "duplicate entry path", path: f.path)
            }
        }
        let encoder = ZipEntryEncoder(
            encrypted: password != nil, password: Array((password ?? "").utf8), policy: options.compression,
            level: level ?? options.level.zipDeflateLevel, saltSeed: fixedSaltSeed)
        // The pack already at the output, if it opens with this password: its unchanged entries are
        // copied as they are. Read before the new pack replaces it (the descriptor stays valid).
        // Opened for ZipCrypto too, which reuses nothing, so that it refuses what any re-pack refuses.
        let previous = options.fresh ? nil : try PreviousPack.open(output, encoder: encoder)
        if options.zip.encryption == .zipCrypto {
            #if SystemLibraries
            return try LibzipZipCryptoWriter.write(sorted, to: output, password: password!, options: options)
            #else
            throw AssetPackError(
                .invalidArgument,
                "ZipCrypto packs are written by libzip, which this build of AssetPack lacks (the portable "
                    + "configuration): pack with --encryption aes256")
            #endif
        }
        let pack = ZipPackJob(
            writer: self, files: sorted, encoder: encoder, previous: previous, progress: options.progress)
        do {
            return try AtomicFile.write(output) { fd in
                let report = try pack.run(to: fd, path: output)
                if let previous, try Self.holdsTheSame(previous, report, files: sorted.count, output, options) {
                    throw Unchanged(report: report)
                }
                if let key = options.signingKey {
                    try ZipSignature.sign(
                        fd, path: output, key: key, release: try options.release(for: output))
                }
                return report
            }
        } catch let unchanged as Unchanged {
            return unchanged.report
        }
    }

    /// A re-pack that would write what the pack at the output already holds leaves that file as it
    /// is (the temporary copy is dropped), as a container re-pack does: its modification time, and
    /// so a server's validators, stay, and a signed zip stays the very bytes installers have (a
    /// new copy would re-encrypt the manifest under a fresh salt: other bytes of the same version).
    private struct Unchanged: Error { var report: PackWriteReport }

    /// Whether the pack just assembled holds what `previous` holds: every entry reused and no other
    /// in it, and the same signature: none, or this key's for the same release.
    private static func holdsTheSame(
        _ previous: PreviousPack, _ report: PackWriteReport, files: Int, _ output: String, _ options: PackOptions
    ) throws -> Bool {
        guard report.packed == 0, report.reused == files, previous.entryCount == files else { return false }
        guard let key = options.signingKey else { return !previous.hasSignatureEntry }
        guard let block = (try? ZipSignature.signature(FileByteSource(path: output))) ?? nil,
            block.publisher == key.publicKey
        else { return false }
        let release = try options.release(for: output)
        return block.release.name == release.name && block.release.version == release.version
            && block.release.expires == release.expires
    }
}
