import AssetPackCore
import Foundation

// Differential testing: seeded trees with entry sizes around every boundary, and the pack
// combinations (format × encryption × compression) they are written with.

/// Seeds for the differential suites.
///
/// - default: ``fixed`` (what `make test-full` runs; `make test` leaves these suites out);
/// - `ASSETPACK_SEED=N[,M…]`: exactly those seeds (to reproduce a failure);
/// - `ASSETPACK_SOAK_SEEDS=K`: K seeds derived from `ASSETPACK_SOAK_BASE` (default: the clock,
///   printed once), for `make soak`. Every failure message names its own seed.
public enum DifferentialSeeds {
    /// The seeds `make test-full` runs. Seeds 1 and 2 together put every stream-buffer boundary
    /// size in both text and random content (see ``TreeGenerator``).
    public static let fixed: [UInt64] = [1, 2]

    /// The seeds for this run (computed once per process).
    public static let current: [UInt64] = {
        let env = ProcessInfo.processInfo.environment
        if let list = env["ASSETPACK_SEED"], !list.isEmpty {
            let seeds = list.split(separator: ",").map { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            precondition(seeds.allSatisfy { $0 != nil }, "ASSETPACK_SEED must be a comma-separated list of integers")
            return seeds.map { $0! }
        }
        if let soak = env["ASSETPACK_SOAK_SEEDS"], let count = Int(soak), count > 0 {
            let base = env["ASSETPACK_SOAK_BASE"].flatMap { UInt64($0) } ?? UInt64(Date().timeIntervalSince1970 * 1000)
            FileHandle.standardError.write(
                Data("differential: \(count) soak seeds from ASSETPACK_SOAK_BASE=\(base)\n".utf8))
            var rng = SplitMix64(seed: base)
            // Small numbers are easier to type back in; keep them below 2^32.
            return (0..<count).map { _ in rng.next() >> 32 }
        }
        return fixed
    }()

    /// How to re-run one seed.
    public static func reproduce(_ seed: UInt64, filter: String) -> String {
        "reproduce: ASSETPACK_SEED=\(seed) swift test --filter \(filter)"
    }
}

/// One generated entry.
public struct GeneratedEntry: Sendable {
    /// What the bytes look like.
    public enum Kind: String, Sendable { case text, random }
    /// The entry path (NFC, `/`-separated).
    public var path: String
    /// The bytes.
    public var bytes: [UInt8]
    /// Text (compressible) or random (incompressible).
    public var kind: Kind
    /// CRC-32 of `bytes`.
    public var crc32: UInt32
}

/// A generated asset tree: deterministic per seed.
public struct GeneratedTree: Sendable {
    /// The seed it was generated from.
    public var seed: UInt64
    /// The entries, in generation order.
    public var entries: [GeneratedEntry]
    /// Path → bytes, for `TemporaryDirectory.write`.
    public var files: [String: [UInt8]] { Dictionary(uniqueKeysWithValues: entries.map { ($0.path, $0.bytes) }) }
    /// The entry at `path`.
    public func entry(_ path: String) -> GeneratedEntry? { entries.first { $0.path == path } }

    /// The tree a combination is tested with: the several-MiB entry only where a size that large
    /// changes the code path (WinZip AES: 8 MiB switches whole reads of stored entries to the
    /// two-thread pipeline). Elsewhere it repeats what the 1 MiB entries already cover and was
    /// ~40 % of the suite's time.
    public func tested(with combination: PackCombination) -> GeneratedTree {
        guard combination.format != .zip || combination.encryption != .aes256 else { return self }
        var copy = self
        copy.entries.removeAll { TreeGenerator.largeSizes.contains($0.bytes.count) }
        return copy
    }
}

/// Builds seeded trees whose entry sizes sit on and around every size a reader or writer cares about.
public enum TreeGenerator {
    /// Sizes around small boundaries: empty, one byte, the AES block, a page, the 64 KiB chunk.
    public static let smallBoundaries = [0, 1, 15, 16, 17, 4095, 4096, 4097, 65535, 65536, 65537]
    /// Sizes around the 256 KiB stream buffer and its multiples, and 1 MiB.
    public static let streamBoundaries = [
        262_143, 262_144, 262_145, 524_287, 524_288, 524_289, 786_431, 786_432, 786_433, 1_048_575, 1_048_576,
        1_048_577,
    ]
    /// Several-MiB sizes; 8 MiB is where stored WinZip-AES whole reads switch to the two-thread pipeline.
    public static let largeSizes = [(3 << 20) + 12_345, (8 << 20) - 1, 8 << 20, (8 << 20) + 1]

    /// What to generate.
    public enum Profile: Sendable {
        /// Every boundary, jittered extras, random sizes and one several-MiB entry (library read paths).
        case full
        /// Fewer entries (each one costs a process per read path): the CLI suites.
        case cli
    }

    private static let folders = [
        "", "naïve/", "naïve/日本語/", "a/b/c/d/", "données/niveaux/", "Ünïcödé dir/", "levels/",
    ]
    private static let names = ["naïve", "日本語", "entry", "café", "Ωmega", "file with spaces", "data"]
    private static let extensions = [".txt", ".json", ".bin", ".png"]

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: GeneratedTree] = [:]

    /// The tree for `seed` (generated once per process and profile).
    public static func tree(seed: UInt64, profile: Profile = .full) -> GeneratedTree {
        let key = "\(seed)-\(profile)"
        lock.lock()
        defer { lock.unlock() }
        if let cached = cache[key] { return cached }
        let made = generate(seed: seed, profile: profile)
        cache[key] = made
        return made
    }

    /// The sizes and kinds the tree for `seed` holds, without generating bytes.
    public static func plan(seed: UInt64, profile: Profile = .full) -> [(size: Int, kind: GeneratedEntry.Kind)] {
        var rng = SplitMix64(seed: seed ^ 0xD1FF_E7E4_7141_5EED)
        // Alternate the content kind by seed parity so two consecutive seeds cover both kinds at every
        // boundary; the generator's stream decides everything else.
        func alternating(_ i: Int) -> GeneratedEntry.Kind { (UInt64(i) &+ seed) % 2 == 0 ? .text : .random }
        func anyKind() -> GeneratedEntry.Kind { rng.next() % 2 == 0 ? .text : .random }
        var plan: [(size: Int, kind: GeneratedEntry.Kind)] = []
        switch profile {
        case .full:
            for (i, size) in smallBoundaries.enumerated() { plan.append((size, alternating(i))) }
            for (i, size) in streamBoundaries.enumerated() { plan.append((size, alternating(i))) }
            // Jittered neighbours of random boundaries, and plain random sizes.
            let all = smallBoundaries + streamBoundaries
            for _ in 0..<4 {
                let base = all[Int(rng.next() % UInt64(all.count))]
                let size = max(0, base + Int(rng.next() % 7) - 3)
                plan.append((size, anyKind()))
            }
            for _ in 0..<3 { plan.append((Int(rng.next() % UInt64(2 << 20)), anyKind())) }
            plan.append((largeSizes[Int(seed % UInt64(largeSizes.count))], anyKind()))
        case .cli:
            for size in [0, 1, 16, 17, 4097, 65536] { plan.append((size, anyKind())) }
            let picks = [262_143, 262_144, 262_145, 524_288, 786_432, 1_048_577]
            for (i, size) in picks.enumerated() { plan.append((size, alternating(i))) }
            // The exact stream-buffer multiple in the other kind too.
            plan.append((262_144, alternating(1) == .text ? .random : .text))
            plan.append((Int(rng.next() % UInt64(1 << 20)), anyKind()))
        }
        return plan
    }

    private static func generate(seed: UInt64, profile: Profile) -> GeneratedTree {
        var rng = SplitMix64(seed: seed ^ 0x7EE5_0F_A55E7)
        var entries: [GeneratedEntry] = []
        for (i, (size, kind)) in plan(seed: seed, profile: profile).enumerated() {
            let folder = folders[Int(rng.next() % UInt64(folders.count))]
            let name = names[Int(rng.next() % UInt64(names.count))]
            let ext = extensions[Int(rng.next() % UInt64(extensions.count))]
            let path = "\(folder)\(name)-\(i)\(ext)".precomposedStringWithCanonicalMapping
            let contentSeed = rng.next()
            let bytes = kind == .text ? textBytes(size, seed: contentSeed) : testBytes(size, seed: contentSeed)
            entries.append(GeneratedEntry(path: path, bytes: bytes, kind: kind, crc32: CRC32.checksum(bytes)))
        }
        return GeneratedTree(seed: seed, entries: entries)
    }
}

/// One way to write a pack: format (with encryption or chunk size) × compression.
public struct PackCombination: Sendable, CustomStringConvertible {
    /// The format.
    public var format: PackFormat
    /// Zip encryption (the container is always AES-256-GCM).
    public var encryption: PackEncryption
    /// Container chunk size.
    public var chunkSize: Int
    /// Compression policy.
    public var compression: CompressionPolicy
    /// The container's codec (zip entries are deflated).
    public var codec: ContainerCodec = BuildConfiguration.codecs[0]
    /// The level: the default, or fast.
    public var level: CompressionLevel = .default

    /// Every combination: zip × {aes256, zipcrypto, none}, container × {4 KiB, 64 KiB, 1 MiB} with
    /// zstd, container × {4 KiB, 64 KiB} with deflate, and zip/aes256 and container/64 KiB/zstd at
    /// the fast level; each × {auto, deflate, store}.
    public static let all: [PackCombination] = {
        var out: [PackCombination] = []
        for compression in CompressionPolicy.allCases {
            for encryption in BuildConfiguration.zipEncryptions {
                out.append(
                    PackCombination(format: .zip, encryption: encryption, chunkSize: 64 << 10, compression: compression)
                )
            }
            for chunk in [4 << 10, 64 << 10, 1 << 20] {
                out.append(
                    PackCombination(format: .container, encryption: .aes256, chunkSize: chunk, compression: compression)
                )
            }
            for chunk in [4 << 10, 64 << 10] where BuildConfiguration.codecs.count > 1 {
                out.append(
                    PackCombination(
                        format: .container, encryption: .aes256, chunkSize: chunk, compression: compression,
                        codec: .deflate))
            }
            out.append(
                PackCombination(
                    format: .zip, encryption: .aes256, chunkSize: 64 << 10, compression: compression, level: .fast))
            out.append(
                PackCombination(
                    format: .container, encryption: .aes256, chunkSize: 64 << 10, compression: compression,
                    level: .fast))
        }
        return out
    }()

    /// Whether the pack needs a password.
    public var encrypted: Bool { format == .container || encryption != .none }

    /// Pack options for this combination.
    public func options(password: String) -> PackOptions {
        var options = PackOptions.forTests
        options.format = format
        options.zip.encryption = encryption
        options.compression = compression
        options.container.chunkSize = chunkSize
        options.container.codec = codec
        options.level = level
        options.credential = encrypted ? .password(password) : nil
        return options
    }

    /// For example `zip/aes256/deflate` or `container/64KiB/auto`.
    public var description: String {
        switch format {
        case .zip: "zip/\(encryption.rawValue)/\(compression.rawValue)" + (level == .fast ? "/fast" : "")
        // The container's, and any other format's.
        default:
            "\(format.rawValue)/\(chunkSize >> 10)KiB/\(compression.rawValue)/\(codec.rawValue)"
                + (level == .fast ? "/fast" : "")
        }
    }
}
