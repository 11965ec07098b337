import AssetPackCore
import AssetPackCrypto
import AssetPackFormat

// A signed container's checks that need no password: the signature block after the index, the
// signed header and index, and the data region as one stream (docs/FORMAT.md, "Signed containers").

extension ContainerPackReader {
    /// The length of a signed pack's signature block: everything after the index to `packEnd`
    /// (``ContainerHeader/packEnd(fileSize:)``), at most what a block for as many chunks as the
    /// data region can hold (each is at least its tag).
    static func trailerLength(_ header: ContainerHeader, fileSize packEnd: UInt64) throws -> Int {
        let fileSize = packEnd
        let end = header.indexOffset + header.indexLength
        guard end <= fileSize, header.indexOffset >= header.dataStart else {
            throw AssetPackError(.integrityFailure, "container is truncated")
        }
        let maxChunks = (header.indexOffset - header.dataStart) / UInt64(ContainerFormat.tagSize)
        guard fileSize - end <= UInt64(PackSignature.maximumSize(items: Int(min(maxChunks, UInt64(Int32.max))))) else {
            throw AssetPackError(.integrityFailure, "container's signature block is longer than its chunks allow")
        }
        return Int(fileSize - end)
    }

    /// Checks a container's signature against `trusted`, before any key derivation: the pack
    /// must be signed (version 3, 5 or 7) by one of them, and its header and sealed index must be the
    /// signed ones. The chunks are checked as they are read (their count, once the index is open).
    /// - Throws: `.untrusted`; `.integrityFailure` for a malformed block.
    static func checkSignature(
        _ source: any ByteSource, header: ContainerHeader, headerBytes: [UInt8], trusted: [PublisherKey]
    ) throws -> PackSignature {
        guard header.isSigned else {
            throw AssetPackError(.untrusted, "the pack is not signed, and trusted keys were given")
        }
        let end = header.indexOffset + header.indexLength
        let packEnd = try header.packEnd(fileSize: source.size)
        let trailer = try preadArray(source, count: try trailerLength(header, fileSize: packEnd), at: end)
        let block = try trailer.withUnsafeBytes { try PackSignature.parse($0, kind: .container, trusted: trusted) }
        try block.checkSize(packEnd)
        // The sealed index as it is in the file, read in pieces (never whole in memory).
        let head = try SHA256Hasher.digest(of: source, header.indexOffset..<end, after: headerBytes)
        guard head == block.headDigest else {
            throw AssetPackError(.untrusted, "the pack's header or index is not the one its publisher signed")
        }
        return block
    }

    /// The header of the container in `source` (of versions 6 and 7, the current slot).
    static func header(of source: any ByteSource) throws -> (bytes: [UInt8], header: ContainerHeader) {
        try ContainerHeader.read(from: source)
    }

    /// Whether the container in `source` is a signed one (version 3 or 5; the signature is not checked).
    package static func isSigned(_ source: any ByteSource) throws -> Bool {
        try header(of: source).header.isSigned
    }

    /// Checks the signature of the container in `source` without a password: the block, the
    /// header and index, and the data region as one stream (what an installer can check; a
    /// reader checks each chunk as it reads it).
    /// - Returns: The verified block (its key and release).
    /// - Throws: `.untrusted`, `.integrityFailure`, `.unsupportedFormat`, `.io`.
    package static func trustedSignature(_ source: any ByteSource, trusting trusted: [PublisherKey]) throws
        -> PackSignature
    {
        let (headerBytes, header) = try header(of: source)
        let (end, overflow) = header.indexOffset.addingReportingOverflow(header.indexLength)
        guard header.indexOffset >= header.dataStart, !overflow, end <= (try header.packEnd(fileSize: source.size)),
            header.indexLength <= ReadLimits.default.maxIndexSize
        else {
            throw AssetPackError(.integrityFailure, "container is truncated or damaged")
        }
        let block = try checkSignature(source, header: header, headerBytes: headerBytes, trusted: trusted)
        let data = header.dataStart..<header.indexOffset
        guard try SHA256Hasher.digest(of: source, data) == block.dataDigest else {
            throw AssetPackError(.untrusted, "the pack's chunks are not the ones its publisher signed")
        }
        return block
    }
}
