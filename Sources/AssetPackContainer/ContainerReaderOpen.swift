import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation
import Synchronization

/// Opening a container: reading and checking the header, the key, the index and the hidden
/// entries (ContainerPackReader.swift has the reader and its reads).
extension ContainerPackReader {

    static func load(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trusted: [PublisherKey]
    ) throws -> (
        ContainerHeader, ContainerKeys, RecordList, (chunks: ChunkTable, chunking: ChunkingParameters?),
        PackSignature?
    ) {
        let fileSize = source.size
        guard try ContainerHeader.recognizes(source) else {
            throw AssetPackError(.unsupportedFormat, "not an AssetPack container")
        }
        let (headerBytes, header) = try ContainerHeader.read(from: source)
        let tag = UInt64(ContainerFormat.tagSize)
        let (end, overflow) = header.indexOffset.addingReportingOverflow(header.indexLength)
        let nonceSize = UInt64(header.version == 1 ? 0 : ContainerFormat.indexNonceSize)
        let isSigned = header.isSigned
        // Where this pack ends: the file's end, or (versions 6, 7) its generation's.
        let packEnd = try header.packEnd(fileSize: fileSize)
        guard header.indexOffset >= header.dataStart, header.indexLength >= nonceSize + 4 + tag,
            !overflow, end <= packEnd, isSigned || end == packEnd
        else {
            throw AssetPackError(.integrityFailure, "container is truncated or has trailing data")
        }
        guard header.indexLength <= limits.maxIndexSize else {
            throw AssetPackError(
                .limitExceeded, "index of \(header.indexLength) bytes exceeds the limit \(limits.maxIndexSize)")
        }
        let trailer = try trailerLength(header, fileSize: packEnd)
        // The signature block after the index is bounded too (before a server is asked for it).
        guard UInt64(trailer) <= limits.maxIndexSize else {
            throw AssetPackError(
                .limitExceeded,
                "the container's index and signature (from offset \(header.indexOffset)) exceed the index limit")
        }
        // The index and signature block, kept for the reader's life (fetched at once from a server).
        try source.retain(header.indexOffset..<packEnd)
        let block =
            trusted.isEmpty
            ? nil
            : try checkSignature(source, header: header, headerBytes: headerBytes, trusted: trusted)
        try block?.release.checkNotExpired(now: Date())
        if isSigned && trusted.isEmpty {
            // Read as an unsigned pack; the block's structure must still fill the rest of the file.
            let trailer = try preadArray(source, count: trailer, at: end)
            _ = try trailer.withUnsafeBytes { try PackSignature.parse($0, kind: .container, trusted: []) }
        }
        guard let credential else {
            throw AssetPackError(.missingPassword, "this pack is encrypted; a password or key is needed")
        }
        try header.checkKDF(limits)

        let keys = ContainerKeys(master: try ContainerKeys.master(credential, header: header), salt: header.salt)
        guard
            HMACSHA256.isValid(header.commitment, for: header.committedBytes(), key: keys.commitmentKey)
        else {
            // The other slot committed under this key: the key is right and this slot is damaged
            // (a crafted higher generation, say), which is damage (exit 4), not a wrong password.
            if header.isAppendable,
                let otherBytes = try? preadArray(
                    source, count: ContainerFormat.slotSize, at: UInt64((1 - header.slot) * ContainerFormat.slotStride)),
                let other = try? otherBytes.withUnsafeBytes({ try ContainerHeader.parse($0) }),
                other.salt == header.salt, other.kdf == header.kdf, other.params == header.params,
                HMACSHA256.isValid(other.commitment, for: other.committedBytes(), key: keys.commitmentKey)
            {
                throw AssetPackError(
                    .integrityFailure,
                    "container header is corrupt (header slot \(header.slot) fails its commitment, while the other slot's holds under this key)"
                )
            }
            throw AssetPackError(.wrongPassword, "wrong password or key (or a damaged header)")
        }

        if header.hasIndexInPlace {
            let table = try ContainerIndex.openV8(
                source, region: header.indexOffset..<end, header: header, headerBytes: headerBytes,
                key: keys.indexKey(version: header.version), limits: limits)
            // With trusted keys, the index is the one the signature covers only as it was read for
            // that check: every segment is opened now, as before version 8's lazy segments, not
            // read again from the file later (where anyone with the password could have sealed
            // another one since).
            if block != nil { try table.loadAll() }
            return (
                header, keys, try RecordList(inPlace: table), (ChunkTable(inPlace: table), table.chunking), block
            )
        }
        var sealed = try preadArray(source, count: Int(header.indexLength), at: header.indexOffset)
        let nonce = header.version == 1 ? indexNonceV1 : Array(sealed.prefix(Int(nonceSize)))
        sealed.removeFirst(Int(nonceSize))
        guard
            let plain = AESGCM().open(
                sealed, nonce: nonce, key: keys.indexKey(version: header.version), authenticating: headerBytes)
        else {
            throw AssetPackError(.integrityFailure, "container index failed authentication")
        }
        if header.hasChunkTable {
            let v4 = try plain.withUnsafeBytes {
                try ContainerIndex.decodeV4(
                    $0, chunkShift: header.chunkShift, data: header.dataStart..<header.indexOffset,
                    offsets: header.isAppendable, limits: limits)
            }
            return (header, keys, try RecordList(decoded: v4.entries), (v4.chunks, v4.chunking), block)
        }
        let records = try plain.withUnsafeBytes {
            try ContainerIndex.decode(
                $0, version: header.version, chunkShift: header.chunkShift, dataEnd: header.indexOffset,
                limits: limits)
        }
        return (header, keys, try RecordList(decoded: records), (ChunkTable(), nil), block)
    }
}
