/// A patch pack's deletion record: the reserved entry `.assetpack/deleted`, which names the paths
/// of the packs below it in a ``PackSet`` that the patch deletes.
///
/// Both formats carry it the same way, as an ordinary entry of the pack (encrypted, compressed
/// and signed like every other entry), so any zip tool still opens our zips and lists it as a
/// file. AssetPack's readers hide it (as every entry below `.assetpack/`) and expose its paths as
/// ``PackReader/deletedPaths``. Format (docs/FORMAT.md, "Deletion record"), integers little-endian:
///
/// ```
/// magic "APDL" | version u8 = 1 | count u32
/// count × ( path length u16 | path (UTF-8, NFC, '/'-separated, normalised) )
/// ```
///
/// Paths are in strictly increasing UTF-8 byte order (so no two are equal); nothing follows the last.
package enum DeletionRecord {
    /// The folder whose entries are the pack's own bookkeeping: readers hide them.
    package static let reservedFolder = ".assetpack/"
    /// The deletion record's entry name.
    package static let entryName = ".assetpack/deleted"
    static let magic: [UInt8] = Array("APDL".utf8)
    static let version: UInt8 = 1

    /// Whether `path` lies in the reserved folder `.assetpack/`.
    package static func isReserved(_ path: String) -> Bool { path.utf8.starts(with: reservedFolder.utf8) }

    /// Whether `path` is stored as it must be: non-empty, normalised (NFC, `/`, no `.` or empty
    /// components) byte for byte, at most 65535 bytes, and not reserved.
    package static func isStorable(_ path: String) -> Bool {
        !path.isEmpty && path.utf8.count <= Int(UInt16.max) && !isReserved(path)
            && EntryPath.normalize(path).utf8.elementsEqual(path.utf8)
    }

    /// The encoded record of `paths` (sorted and checked here).
    /// - Throws: `.invalidArgument` for a path that is not storable, or one named twice.
    package static func encode(_ paths: [String]) throws -> [UInt8] {
        let limits = ReadLimits.default  // what the default reader refuses, the writer refuses
        guard paths.count <= limits.maxDeletedPaths else {
            throw AssetPackError(
                .limitExceeded,
                "\(paths.count) deleted paths; readers refuse a deletion record of more than \(limits.maxDeletedPaths) (ReadLimits.maxDeletedPaths)"
            )
        }
        let sorted = paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var out = magic + [version]
        appendLE(&out, UInt32(sorted.count), bytes: 4)
        for (i, path) in sorted.enumerated() {
            guard isStorable(path) else {
                throw AssetPackError(
                    .invalidArgument, "a deleted path must be a normalised NFC path outside \(reservedFolder)",
                    path: path)
            }
            if i > 0, sorted[i - 1].utf8.elementsEqual(path.utf8) {
                throw AssetPackError(.invalidArgument, "path deleted twice", path: path)
            }
            appendLE(&out, UInt64(path.utf8.count), bytes: 2)
            out += Array(path.utf8)
        }
        guard out.count <= limits.maxDeletionRecordSize else {
            throw AssetPackError(
                .limitExceeded,
                "the deletion record would be \(out.count) bytes; readers refuse one over \(limits.maxDeletionRecordSize) (ReadLimits.maxDeletionRecordSize)"
            )
        }
        return out
    }

    /// Decodes and checks a record read from a pack whose entries are `entries`.
    /// - Throws: `.unsupportedFormat` for another magic or version; `.integrityFailure` when it is
    ///   truncated, has trailing bytes, a path that is not valid UTF-8, not NFC or not normalised,
    ///   paths out of order or repeated, or a path the same pack also holds.
    package static func decode(_ bytes: [UInt8], limits: ReadLimits, packHas contains: (String) -> Bool) throws
        -> [String]
    {
        try bytes.withUnsafeBytes { buffer in
            var r = ByteReader(buffer, structure: "deletion record")
            guard buffer.count >= 5, try r.bytes(4) == magic, try r.u8() == version else {
                throw AssetPackError(.unsupportedFormat, "not a version-1 deletion record", path: entryName)
            }
            let count = Int(try r.u32())
            guard count <= r.remaining / 3 else {  // each path takes at least 3 bytes
                throw AssetPackError(
                    .integrityFailure, "deletion record declares more paths than it holds", path: entryName)
            }
            guard count <= limits.maxDeletedPaths else {
                throw AssetPackError(
                    .limitExceeded,
                    "the deletion record names \(count) paths; the limit is \(limits.maxDeletedPaths) (ReadLimits.maxDeletedPaths)",
                    path: entryName)
            }
            var paths: [String] = []
            paths.reserveCapacity(count)
            for _ in 0..<count {
                let raw = try r.bytes(Int(try r.u16()))
                guard let path = String(validating: raw, as: UTF8.self), isStorable(path) else {
                    throw AssetPackError(
                        .integrityFailure,
                        "deletion record names a path that is not normalised NFC UTF-8 (\(EntryPath.printable(String(decoding: raw, as: UTF8.self))))",
                        path: entryName)
                }
                if let last = paths.last, !last.utf8.lexicographicallyPrecedes(path.utf8) {
                    throw AssetPackError(
                        .integrityFailure, "deletion record's paths are not in strictly increasing order",
                        path: entryName)
                }
                guard !contains(path) else {
                    throw AssetPackError(
                        .integrityFailure, "the pack both holds and deletes \(EntryPath.printable(path))",
                        path: path)
                }
                paths.append(path)
            }
            guard r.atEnd else {
                throw AssetPackError(.integrityFailure, "data after the deletion record's paths", path: entryName)
            }
            return paths
        }
    }

    private static func appendLE(_ out: inout [UInt8], _ value: some FixedWidthInteger, bytes: Int) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: UInt64(value) >> (8 * i))) }
    }
}
