import AssetPackCore
import AssetPackCrypto
import AssetPackFormat

/// The container format, registered in `AssetPacks.formats` (docs/ARCHITECTURE.md, "The seam").
package struct ContainerFormatDriver: PackFormatDriver {
    package init() {}

    package var format: PackFormat { .container }

    package var noun: String { "an AssetPack container" }

    package var fileExtension: String { "apack" }

    package func refusal(of setting: PackSetting) -> String? {
        setting == .encryption ? "the container is always AES-256-GCM" : nil
    }

    /// Opening checks the key against the header's commitment before the index is read.
    package var checksCredentialAtOpen: Bool { true }

    package var countsRemovedEntries: Bool { true }

    package func prefetchKey(of output: String, credential: PackCredential, limits: ReadLimits)
        -> (any PackKeyPrefetch)?
    {
        ContainerKeyPrefetch.start(output: output, credential: credential, limits: limits)
    }

    package func deflateLevel(_ level: CompressionLevel) -> Int32 { level.containerDeflateLevel }

    package func crossCheckReader(_ source: any ByteSource, credential: PackCredential?) throws
        -> (name: String, reader: any PackReader)?
    { nil }

    package func recognizes(_ source: any ByteSource) throws -> Bool {
        try ContainerHeader.recognizes(source)
    }

    package func open(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trustedKeys: [PublisherKey]
    ) throws -> any PackReader {
        try ContainerPackReader(source: source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    package func makeWriter() -> any PackWriter { ContainerPackWriter() }

    package func signature(_ source: any ByteSource, limits: ReadLimits) throws -> PackSignature? {
        try ContainerPackReader.signature(source, limits: limits)
    }

    package func trustedSignature(_ source: any ByteSource, trusting trusted: [PublisherKey]) throws -> PackSignature {
        try ContainerPackReader.trustedSignature(source, trusting: trusted)
    }

    /// Every sealed chunk's span, from the index: `nil` without the credential that opens it.
    package func signedSpans(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> [Range<UInt64>]?
    {
        guard let credential else { return nil }
        return try ContainerPackReader(source: source, credential: credential, limits: limits).chunkSpans()
    }

    package func storedIdentities(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> StoredIdentities?
    {
        guard let credential else { return nil }
        return try ContainerPackReader(source: source, credential: credential, limits: limits).storedIdentities()
    }

    package func deadRanges(_ source: any ByteSource, credential: PackCredential, limits: ReadLimits) throws
        -> [Range<UInt64>]
    {
        try ContainerPackWriter.deadRanges(
            try ContainerPackReader(source: source, credential: credential, limits: limits))
    }

    /// A version-6 or -7 `remote` of a later generation than `installed`, with the same keys
    /// (suite, KDF, chunk size, salt), whose data region extends past the installed pack's end:
    /// if it is the installed pack with generations appended, its bytes from the data's start to
    /// that end are the installed ones. Its current header slot goes into the installed pack's
    /// other slot (a slot's position is not part of the pack: the reader takes the higher
    /// generation), so only a slot the result's verification covers is written, and a crash
    /// before it is whole leaves the installed generation. Both headers' bounds are checked here,
    /// as a reader checks them: nothing is trusted.
    package func appendPlan(installed: any ByteSource, remote: any ByteSource) throws -> AppendPlan? {
        guard try recognizes(installed), try recognizes(remote) else { return nil }
        let old = try ContainerHeader.read(from: installed).header
        let new = try ContainerHeader.read(from: remote).header
        let (newIndexEnd, overflow) = new.indexOffset.addingReportingOverflow(new.indexLength)
        guard old.isAppendable, new.isAppendable, new.generation > old.generation,
            new.kdf == old.kdf, new.params == old.params, new.salt == old.salt, new.chunkShift == old.chunkShift,
            old.dataStart <= old.indexOffset, old.indexOffset <= old.end, old.end <= installed.size,
            new.indexOffset >= old.end, !overflow,
            newIndexEnd <= new.end, new.end == remote.size, remote.size > old.end
        else { return nil }
        return AppendPlan(
            kept: old.dataStart..<old.end, tail: old.end..<remote.size,
            head: new.slotOffset..<new.slotOffset + UInt64(ContainerFormat.slotSize),
            headAt: UInt64((1 - old.slot) * ContainerFormat.slotStride),
            supersedes: old.slotOffset..<old.slotOffset + UInt64(ContainerFormat.slotSize),
            // The installed version's own index and signature block, which no later version
            // names: the remote's publisher zeroed them (read from its header, no key needed).
            zeroed: old.indexOffset < old.end ? [old.indexOffset..<old.end] : [])
    }
}
