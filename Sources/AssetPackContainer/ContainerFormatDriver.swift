import AssetPackCore
import AssetPackCrypto
import AssetPackFormat

/// The container format, registered in `AssetPacks.formats` (docs/ARCHITECTURE.md, "The seam").
package struct ContainerFormatDriver: PackFormatDriver {
    package init() {}

    package var format: PackFormat { .container }

    package var noun: String { "an AssetPack container" }

    package func recognizes(_ source: any ByteSource) throws -> Bool {
        try source.prefix(at: 0, count: ContainerFormat.magic.count) == ContainerFormat.magic
    }

    package func open(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trustedKeys: [PublisherKey]
    ) throws -> any PackReader {
        try ContainerPackReader(source: source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    package func makeWriter() -> any PackWriter { ContainerPackWriter() }

    package func isSigned(_ source: any ByteSource) throws -> Bool { try ContainerPackReader.isSigned(source) }

    package func signatureBlock(_ source: any ByteSource, limits: ReadLimits) throws -> PackSignature? {
        try ContainerPackReader.signatureBlock(source, limits: limits)
    }

    package func verifiedBlock(_ source: any ByteSource, trusted: [PublisherKey]) throws -> PackSignature {
        try ContainerPackReader.verifiedBlock(source, trusted: trusted)
    }

    /// Every sealed chunk's span, from the index: `nil` without the credential that opens it.
    package func signedSpans(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> [Range<UInt64>]?
    {
        guard let credential else { return nil }
        return try ContainerPackReader(source: source, credential: credential, limits: limits).chunkSpans
    }

    package func storedIdentities(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> StoredIdentities?
    {
        guard let credential else { return nil }
        return try ContainerPackReader(source: source, credential: credential, limits: limits).storedIdentities
    }
}
