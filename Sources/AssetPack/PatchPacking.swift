import AssetPackCore
import Foundation

extension AssetPacks {
    /// What ``packPatch(source:over:to:options:)`` wrote.
    public struct PatchSummary: Sendable {
        /// Paths the base does not have, packed.
        public var added: [String]
        /// Paths whose bytes differ from the base's, packed.
        public var changed: [String]
        /// Paths of the base the source no longer has: the patch's deletion record.
        public var deleted: [String]
        /// The pack written (its `files` are the added and changed ones).
        public var pack: PackSummary
    }

    /// Packs a patch of `base`: only the files of `source` that `base` lacks or holds with other
    /// bytes, and a deletion record (docs/FORMAT.md, "Deletion record") for the paths of `base`
    /// that `source` no longer has. Read over `base` in a ``PackSet``, the patch gives `source`'s tree.
    ///
    /// "Changed" is decided by bytes, never guessed: a file whose size differs from the base's
    /// entry, or whose CRC-32 differs where the base stores one, is changed; any other is read
    /// from the base (verified, with the base's credential) and compared byte for byte, so an
    /// equal size and CRC-32 never hides a change. Unchanged files cost one read of the base's
    /// entry and of the file.
    /// - Parameters:
    ///   - source: The new tree.
    ///   - base: The pack (or ``PackSet``) the patch applies to, open with its credential.
    ///   - output: The patch pack to write.
    ///   - options: As for ``pack(source:to:options:)``; `deletions` is set from the comparison.
    ///     A container patch with a password and no `container.kdf` takes the scrypt cost of the
    ///     pack it patches (of a set, its top pack) when that is a container's, with r = 8, p = 1
    ///     and a cost in ``ContainerKDF/scryptCosts``: the patch is opened with it, so a cost
    ///     lowered for slow devices stays lowered. (A patch over an existing output with another
    ///     cost is then packed afresh, as any change of KDF is.)
    /// - Returns: What was added, changed and deleted, and the pack written.
    /// - Throws: `AssetPackError` from scanning, reading the base, or writing; `.integrityFailure`
    ///   for a base whose index is damaged or, a set, breaks a set's rules
    ///   (``PackReader/checkIndex()``): a patch compared against it would be wrong.
    @discardableResult
    public static func packPatch(source: URL, over base: any PackReader, to output: URL, options: PackOptions) throws
        -> PatchSummary
    {
        let watch = Stopwatch()
        try AtomicFile.checkTarget(output.path)
        try base.checkIndex()
        let (files, skipped) = try SourceTree.scanReporting(
            root: source, includeHidden: options.includeHidden, excluding: output, maxFiles: options.limits.maxEntries)
        var added: [String] = []
        var changed: [String] = []
        var packed: [SourceFile] = []
        for file in files {
            guard let entry = try base.lookup(file.path) else {
                added.append(file.path)
                packed.append(file)
                continue
            }
            if try differs(file, from: entry, in: base) {
                changed.append(file.path)
                packed.append(file)
            }
        }
        let kept = Set(files.map { Array($0.path.utf8) })
        let deleted = base.entries.map(\.path).filter { !kept.contains(Array($0.utf8)) }
        var options = options
        options.deletions = deleted
        // A format without a password KDF reports none (`passwordKDF` nil), so this is a no-op for it.
        if options.container.kdf == nil, case .password = options.credential {
            // Only a cost `pack --scrypt-cost` could have chosen: a KDF a reader was allowed past
            // the default limits would make the writer refuse the patch.
            let top = (base as? PackSet)?.members.last?.reader ?? base
            if case .scrypt(let logN, 8, 1) = top.passwordKDF, ContainerKDF.scryptCosts.contains(Int(logN)) {
                options.container.kdf = top.passwordKDF
            }
        }
        let summary = try pack(packed, skipped: skipped, to: output, options: options, watch: watch)
        return PatchSummary(added: added, changed: changed, deleted: deleted, pack: summary)
    }

    /// Whether `file` holds other bytes than `entry` of `base`.
    private static func differs(_ file: SourceFile, from entry: EntryInfo, in base: any PackReader) throws -> Bool {
        guard file.size == entry.size else { return true }
        // Opened as the packers open sources (no link or FIFO swapped in after the scan).
        let handle = FileHandle(fileDescriptor: try file.openForPacking().rawValue, closeOnDealloc: true)
        if let crc = entry.crc32 {
            var computed = CRC32()
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                chunk.withUnsafeBytes { computed.update($0) }
            }
            if computed.value != crc { return true }
            try handle.seek(toOffset: 0)
        }
        var same = true
        try base.stream(entry.path) { piece in
            guard same else { return }
            let mine = (try? handle.read(upToCount: piece.count)) ?? Data()
            same = mine.count == piece.count && mine.withUnsafeBytes { $0.elementsEqual(piece) }
        }
        return !same
    }
}
