import AssetPackCore
import AssetPackCrypto
import AssetPackFormat

/// The zip format, registered in `AssetPacks.formats` (docs/ARCHITECTURE.md, "The seam").
package struct ZipFormatDriver: PackFormatDriver {
    package init() {}

    package var format: PackFormat { .zip }

    package var noun: String { "a zip archive" }

    package var fileExtension: String { "zip" }

    package func refusal(of setting: PackSetting) -> String? {
        switch setting {
        case .encryption: nil
        case .codec: "zip entries are deflated"
        case .compact: "a zip re-pack writes a new file"
        case .passwordKDF: "zip packs do not use scrypt"
        }
    }

    /// A zip's password is checked per entry, on its data: opening checks nothing.
    package var checksCredentialAtOpen: Bool { false }

    package var countsRemovedEntries: Bool { false }

    package func deflateLevel(_ level: CompressionLevel) -> Int32 { level.zipDeflateLevel }

    package func crossCheckReader(_ source: any ByteSource, credential: PackCredential?) throws
        -> (name: String, reader: any PackReader)?
    {
        #if SystemLibraries
        return ("libzip", try ZipPackReader(source: source, credential: credential, decoder: .libzip))
        #else
        return nil
        #endif
    }

    package func recognizes(_ source: any ByteSource) throws -> Bool { try ZipStructure.recognizes(source) }

    package func open(
        _ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trustedKeys: [PublisherKey]
    ) throws -> any PackReader {
        try ZipPackReader(source: source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    package func makeWriter() -> any PackWriter { ZipPackWriter() }

    package func signature(_ source: any ByteSource, limits: ReadLimits) throws -> PackSignature? {
        try ZipSignature.signature(source, limits: limits)
    }

    package func trustedSignature(_ source: any ByteSource, trusting trusted: [PublisherKey]) throws -> PackSignature {
        try ZipSignature.trustedSignature(source, trusting: trusted)
    }

    /// Every entry's span: the directory says where they are, no password needed.
    package func signedSpans(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> [Range<UInt64>]?
    {
        try ZipSignature.spans(source)
    }

    /// The central directory: every entry's name, sizes and CRC-32.
    package func identifyingSpans(_ source: any ByteSource) -> [Range<UInt64>] {
        guard
            let directory = try? ZipStructure.directoryRange(fileSize: source.size, read: ZipStructure.reader(source)),
            directory.offset < source.size, directory.size <= source.size - directory.offset
        else { return [] }
        return [directory.offset..<directory.offset + directory.size]
    }
}
