import AssetPack
import Foundation

/// What `PerfRunner` measures and how.
public struct PerfConfiguration: Sendable {
    /// Where the packs come from.
    public enum Input: Sendable {
        /// Pack this directory with every format into a private temporary directory, install the
        /// packs with `PrivateInstaller`, and read the installed copies.
        case source(URL)
        /// Generate this corpus into a temporary directory, then proceed as for `.source`.
        case corpus(PerfCorpus)
        /// Read these existing packs (format sniffed from the magic bytes).
        case packs([URL])
    }

    /// Where the packs come from.
    public var input: Input
    /// Measured reads per entry and backend (at least 1).
    public var iterations = 5
    /// Unmeasured warm-up reads per entry and backend before the measured ones.
    public var warmupReads = 1
    /// The password or key. `nil` with `.source`/`.corpus`: a random throwaway password is
    /// generated (the packs are temporary). `nil` with `.packs`: only unencrypted zips read.
    public var credential: PackCredential?
    /// Publisher keys: `--pack` inputs that are signed are opened with them (every read checks
    /// the signature, label `<format>-signed`); unsigned ones are read as before. So a signed and
    /// an unsigned pack of the same tree compare signed against unsigned reads.
    public var trustedKeys: [PublisherKey] = []
    /// Settings for the packs written by `.source`/`.corpus` (format is set per backend).
    public var packOptions = PackOptions()
    /// Parent of the private temporary work directory (default: the system temporary directory).
    public var workParent: URL?
    /// Keep the work directory (generated corpus, installed packs) instead of removing it;
    /// the report's `packs[…].path` then names files that still exist.
    public var keepWorkDirectory = false
    /// Also run `swift --version` to record the runtime toolchain.
    public var probeToolchain = false
    /// Also measure every zip pack through libzip's own decoder (label `zip-libzip`), next to the
    /// default bulk-AES path, on the same installed file: the AES speed-up over libzip, entry by entry.
    public var compareLibzipDecoder = false
    /// The command line, recorded in the report's settings.
    public var command: String?
    /// Called on the running thread as the run progresses.
    public var progress: (@Sendable (PerfProgress) -> Void)?

    /// Creates a configuration with default settings (5 iterations, 1 warm-up read).
    public init(input: Input) { self.input = input }
}

/// Progress of a perf run.
public struct PerfProgress: Sendable {
    /// The phase: `corpus`, `pack <label>`, `install <label>`, `open <label>`, `warm-up`, `measure`, `memory <label>`.
    public var phase: String
    /// Steps done in this phase.
    public var done: Int
    /// Steps in this phase.
    public var total: Int
}
