import AssetPackCore
import Foundation

/// A version-4 pack's zstd dictionary (codec 3, ``ChunkCodec/zstdDictionary``; docs/FORMAT.md,
/// "The pack's dictionary").
///
/// Most of a game's text is small files (Wesnoth's 1,181 cfg/lua files average 5 KiB): each is
/// one chunk, one zstd frame with no context but its own bytes, and no level closes the gap to
/// 7-Zip's optimal deflate on such files. A dictionary trained on the pack's own small files
/// gives every frame that context: in `make bench-pack BENCH_TREE=game`, Wesnoth's text entries
/// went from 1,561,329 B to 1,239,268 B, plus 65,552 for the dictionary (docs/PERFORMANCE.md).
///
/// The dictionary is the reserved entry `.assetpack/zstd-dictionary`, stored (not compressed)
/// and sealed like any entry, so it is authenticated, signed and delta-downloaded as entries
/// are; a reader loads it at open, when the pack has it, before any entry is read. An
/// incremental re-pack keeps the previous pack's dictionary as it is, so every compressed chunk
/// it copies still decodes.
enum PackDictionary {
    /// The reserved entry holding the dictionary.
    static let entryName = DeletionRecord.reservedFolder + "zstd-dictionary"
    /// The largest dictionary the writer trains.
    static let capacity = 64 << 10
    /// The largest dictionary a reader loads (a larger one is `.integrityFailure`): a bound on
    /// what every zstd decoder of the pack copies.
    static let readLimit = 1 << 20
    /// Files from 32 bytes up to this size are the training samples: the files too small to give
    /// their own frames context.
    static let sampleLimit = 128 << 10
    /// Fewer samples than this: no dictionary (too little to learn from, too few files to repay it).
    static let minimumSamples = 16
    /// The training reads at most this many bytes of samples (in path order).
    static let maximumSampleBytes = 32 << 20
    /// The level of the check that a dictionary pays (fast; the pack's level saves more).
    static let checkLevel: Int32 = 3

    /// A dictionary for `files` (sorted by path), or `nil` when there are too few samples, when
    /// libzstd cannot train on them, or when it would not save more bytes than it takes.
    /// Deterministic: the same files give the same dictionary. Samples are the files `policy`
    /// compresses by name or, under `.auto`, whose whole bytes pass its deflate test (the writer
    /// tests only the first 64 KiB; with that rule here, Wesnoth's pack came out 35,762,305 B
    /// instead of 35,743,793); one that cannot be read is left out (packing it reports the error).
    /// A small source's bytes, opened as the packers open it (no link or FIFO given its name
    /// after the scan is read or waited on: such a file is left out here and refused when packed).
    private static func sample(of file: SourceFile) throws -> [UInt8] {
        let fd = try file.openForPacking()
        defer { try? fd.close() }
        var bytes = [UInt8](repeating: 0, count: Int(file.size))
        let n = try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) }
        return Array(bytes.prefix(n))
    }

    static func train(_ files: [SourceFile], policy: CompressionPolicy) -> [UInt8]? {
        let sampler = RawDeflate.FastCompressor(level: CompressionPolicy.packLevel)
        var samples: [[UInt8]] = []
        var total = 0
        for file in files where (32...UInt64(sampleLimit)).contains(file.size) && !DeletionRecord.isReserved(file.path)
        {
            let byName = policy.decisionByName(file)
            guard byName != false, let bytes = try? sample(of: file) else { continue }
            let pays = bytes.withUnsafeBytes { sample in
                let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: sample.count, alignment: 16)
                defer { scratch.deallocate() }
                return byName == true || policy.samplePays(sample, compressor: sampler, scratch: scratch)
            }
            guard pays else { continue }
            samples.append(bytes)
            total += bytes.count
            if total >= maximumSampleBytes { break }
        }
        guard samples.count >= minimumSamples else { return nil }
        let size = min(capacity, max(4 << 10, total / 32))
        guard let dictionary = Zstd.trainDictionary(samples, capacity: size) else { return nil }
        return saving(dictionary, on: samples) > dictionary.count ? dictionary : nil
    }

    /// Bytes `dictionary` saves on `samples` at ``checkLevel`` (each sample stored when it does not shrink).
    static func saving(_ dictionary: [UInt8], on samples: [[UInt8]]) -> Int {
        let plain = Zstd.Compressor(level: checkLevel)
        let primed = Zstd.Compressor(level: checkLevel, dictionary: dictionary)
        var without = 0, with = 0
        for sample in samples {
            var out = [UInt8](repeating: 0, count: plain.bound(sample.count))
            sample.withUnsafeBytes { input in
                out.withUnsafeMutableBytes { output in
                    without += min(sample.count, plain.compress(input, into: output) ?? sample.count)
                    with += min(sample.count, primed.compress(input, into: output) ?? sample.count)
                }
            }
        }
        return without - with
    }
}
