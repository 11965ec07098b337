import Foundation

/// How both writers decide, per entry, whether to deflate: the one rule behind `--compression`.
///
/// - `.store` stores; `.deflate` deflates every non-empty entry (a piece that does not get
///   smaller is still stored: a chunk for the container, the entry for zip).
/// - `.auto` stores known media extensions and entries under 32 bytes by name; for the rest it
///   deflates a sample (the first ``sampleSize`` bytes, which the writer reads anyway) and
///   stores the whole entry unless the sample shrinks by ``CompressionPolicy/minimumSaving``.
///   Random data is never deflated in full only for the result to be thrown away.
extension CompressionPolicy {
    /// Bytes deflated to decide for an entry under `.auto`.
    package static let sampleSize = 64 << 10

    /// libdeflate's level for the `.auto` sample (both writers) and for the container's chunks
    /// (until the container reads ``CompressionLevel/containerDeflateLevel``): the fastest level
    /// that decides as well as the others, since a sample's only question is whether it shrinks.
    package static let packLevel: Int32 = 2

    /// The decision by name and size alone: `false` store, `true` deflate, `nil` sample first.
    package func decisionByName(_ file: SourceFile) -> Bool? {
        switch self {
        case .store: return false
        case .deflate: return file.size > 0
        case .auto:
            let ext = (file.path as NSString).pathExtension.lowercased()
            if Self.compressedExtensions.contains(ext) || file.size < 32 { return false }
            return nil
        }
    }

    /// The most deflated bytes worth keeping for `size` input bytes: under `.auto` a saving of
    /// at least ``minimumSaving``, otherwise anything smaller.
    package func deflateLimit(_ size: Int) -> Int {
        self == .auto ? Int(Double(size) * (1 - Self.minimumSaving)) : size - 1
    }

    /// Whether `sample` deflates within ``deflateLimit(_:)`` (`scratch` holds at least the sample's size).
    package func samplePays(
        _ sample: UnsafeRawBufferPointer, compressor: RawDeflate.FastCompressor, scratch: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let limit = min(deflateLimit(sample.count), scratch.count)
        guard limit > 0 else { return false }
        return compressor.compress(sample, into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<limit])) != nil
    }

    /// The whole decision for a file whose bytes the writer does not read itself (libzip's
    /// ZipCrypto path): by name, else from a sample read from the file.
    /// - Throws: `.io` if the file cannot be read.
    package func decide(_ file: SourceFile) throws -> Bool {
        if let byName = decisionByName(file) { return byName }
        let fd = try file.openForPacking()
        defer { try? fd.close() }
        let sample = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.sampleSize, alignment: 16)
        defer { sample.deallocate() }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.sampleSize, alignment: 16)
        defer { scratch.deallocate() }
        let n: Int
        do { n = try fd.readFully(into: sample) } catch { throw error.io("cannot read \(file.diskPath)") }
        return samplePays(
            UnsafeRawBufferPointer(rebasing: sample[0..<n]),
            compressor: RawDeflate.FastCompressor(level: Self.packLevel),
            scratch: scratch)
    }
}

extension CompressionLevel {
    /// libdeflate's level for a zip pack's entries (docs/PERFORMANCE.md, "Compression levels",
    /// has the table behind both).
    package var zipDeflateLevel: Int32 {
        switch self {
        case .default: return 10
        case .fast: return 2
        }
    }

    /// The container's deflate level (`--codec deflate`): the zip's, chunk by chunk.
    package var containerDeflateLevel: Int32 { zipDeflateLevel }

    /// The container's zstd level (the default codec): docs/PERFORMANCE.md, "zstd levels".
    package var zstdLevel: Int32 {
        switch self {
        case .default: return Zstd.defaultLevel
        case .fast: return Zstd.fastLevel
        }
    }
}
