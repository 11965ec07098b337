import AssetPackCore

/// The reserved entry `.assetpack/manifest` that lets a re-pack reuse unchanged entries.
///
/// It records, per entry, the path, the size and the SHA-256 of the plaintext, plus the CRC-32
/// field and the SHA-256 of the entry's stored data (which tie the record to those exact stored
/// bytes, so a damaged or replaced entry is never copied). It is encrypted like the other
/// entries, so reading it costs one PBKDF2 and proves the password.
/// Format (little-endian), specified with a test vector in docs/FORMAT.md, "Zip manifest entry":
///
/// ```
/// magic "APZM" | version u8 = 1 | count u32
/// count × ( path length u16 | path (UTF-8) | size u64 | SHA-256 (32) | CRC-32 u32 | stored SHA-256 (32) )
/// ```
package struct ZipManifest: Sendable, Equatable {
    /// The reserved folder: our readers hide entries below it, the packer refuses sources in it.
    package static let folder = ".assetpack/"
    /// The manifest's entry name.
    package static let entryName = ".assetpack/manifest"
    static let magic: [UInt8] = Array("APZM".utf8)
    static let version: UInt8 = 1

    /// One entry's record.
    package struct Record: Sendable, Equatable {
        /// The entry path (NFC, `/`-separated), as stored in the zip.
        package var path: String
        /// Uncompressed size.
        package var size: UInt64
        /// SHA-256 of the uncompressed bytes (inline, as the other: as arrays they were two small
        /// blocks per entry that live to the end of a pack, made on the worker threads).
        @Inline package var sha256: [UInt8]
        /// The CRC-32 field of the entry's central record as written (0 for AE-2 entries).
        package var crc32: UInt32
        /// SHA-256 of the entry's stored data (for AES: salt, verifier, ciphertext and MAC), the
        /// bytes after its local header.
        @Inline package var storedSHA256: [UInt8]

        package init(path: String, size: UInt64, sha256: [UInt8], crc32: UInt32, storedSHA256: [UInt8]) {
            self.path = path
            self.size = size
            self.sha256 = sha256
            self.crc32 = crc32
            self.storedSHA256 = storedSHA256
        }
    }

    /// The records, in entry order.
    package var records: [Record]

    package init(records: [Record]) { self.records = records }

    /// Whether `path` lies in the reserved folder.
    package static func isReserved(_ path: String) -> Bool { path.utf8.starts(with: folder.utf8) }

    /// The encoded manifest.
    package func encoded() -> [UInt8] {
        var out = ZipBytes()
        out.bytes(Self.magic)
        out.u8(Self.version)
        out.u32(UInt32(records.count))
        for r in records {
            let path = Array(r.path.utf8)
            out.u16(UInt16(path.count))
            out.bytes(path)
            out.u64(r.size)
            out.bytes(r.sha256)
            out.u32(r.crc32)
            out.bytes(r.storedSHA256)
        }
        return out.data
    }

    /// Decodes a manifest.
    /// - Throws: `.unsupportedFormat` for another magic or version, `.integrityFailure` when damaged.
    package init(decoding bytes: [UInt8]) throws {
        records = try bytes.withUnsafeBytes { buffer in
            var r = ByteReader(buffer, structure: "zip manifest")
            guard try r.bytes(4) == Self.magic, try r.u8() == Self.version else {
                throw AssetPackError(.unsupportedFormat, "not a version-1 AssetPack zip manifest")
            }
            let count = Int(try r.u32())
            // Each record takes at least 78 bytes: refuse a count the data cannot hold before reserving.
            guard count <= r.remaining / 78 else {
                throw AssetPackError(.integrityFailure, "zip manifest declares more records than it holds")
            }
            var records: [Record] = []
            records.reserveCapacity(count)
            for _ in 0..<count {
                let length = Int(try r.u16())
                let path = String(decoding: try r.bytes(length), as: UTF8.self)
                records.append(
                    Record(
                        path: path, size: try r.u64(), sha256: try r.bytes(32), crc32: try r.u32(),
                        storedSHA256: try r.bytes(32)))
            }
            guard r.atEnd else { throw AssetPackError(.integrityFailure, "data after the zip manifest's records") }
            return records
        }
    }
}
