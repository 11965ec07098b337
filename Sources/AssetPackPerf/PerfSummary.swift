import AssetPack
import Foundation

/// The headline: how the candidate (container) compares with the baseline (zip).
public struct PerfSummary: Codable, Sendable, Equatable {
    /// The baseline backend label.
    public var baseline: String
    /// The candidate backend label.
    public var candidate: String
    /// Entries measured by both.
    public var comparedEntries: Int
    /// Geometric mean over entries of baseline median / candidate median (> 1: candidate faster).
    public var geomeanSpeedup: Double
    /// Entries where the candidate's median is lower.
    public var candidateWins: Int
    /// Entries where the baseline's median is lower (ties count for neither).
    public var baselineWins: Int
    /// The same, per size class, in class order.
    public var classes: [PerfClassSummary]
    /// The baseline pack's open, seconds (``PerfPack/openSeconds``), which no read above includes;
    /// `nil` in reports from before it was recorded here.
    public var baselineOpenSeconds: Double?
    /// The candidate pack's open, seconds: for a container given a password, the scrypt key
    /// derivation, paid once per open.
    public var candidateOpenSeconds: Double?
    /// Opening each pack once and reading every compared entry once (the sum of its medians):
    /// baseline seconds / candidate seconds (> 1: candidate faster). Unlike ``geomeanSpeedup``
    /// it counts the open; `nil` without both open times.
    public var openAndReadOnceSpeedup: Double?

    /// Creates a summary.
    public init(
        baseline: String, candidate: String, comparedEntries: Int, geomeanSpeedup: Double, candidateWins: Int,
        baselineWins: Int, classes: [PerfClassSummary], baselineOpenSeconds: Double? = nil,
        candidateOpenSeconds: Double? = nil
    ) {
        self.baseline = baseline
        self.candidate = candidate
        self.comparedEntries = comparedEntries
        self.geomeanSpeedup = geomeanSpeedup
        self.candidateWins = candidateWins
        self.baselineWins = baselineWins
        self.classes = classes
        self.baselineOpenSeconds = baselineOpenSeconds
        self.candidateOpenSeconds = candidateOpenSeconds
        if let baselineOpenSeconds, let candidateOpenSeconds {
            let b = baselineOpenSeconds + classes.reduce(0) { $0 + $1.baselineSeconds }
            let c = candidateOpenSeconds + classes.reduce(0) { $0 + $1.candidateSeconds }
            openAndReadOnceSpeedup = c > 0 ? b / c : nil
        }
    }

    enum CodingKeys: String, CodingKey {
        case baseline, candidate, classes
        case comparedEntries = "compared_entries"
        case geomeanSpeedup = "geomean_speedup"
        case candidateWins = "candidate_wins"
        case baselineWins = "baseline_wins"
        case baselineOpenSeconds = "baseline_open_seconds"
        case candidateOpenSeconds = "candidate_open_seconds"
        case openAndReadOnceSpeedup = "open_and_read_once_speedup"
    }
}

/// The comparison within one size class.
public struct PerfClassSummary: Codable, Sendable, Equatable {
    /// The class label.
    public var sizeClass: String
    /// Entries in the class measured by both backends.
    public var entries: Int
    /// Total uncompressed bytes of those entries.
    public var bytes: UInt64
    /// Sum of the baseline's medians: reading every entry of the class once, seconds.
    public var baselineSeconds: Double
    /// Sum of the candidate's medians, seconds.
    public var candidateSeconds: Double
    /// Geometric mean of per-entry speedups (baseline / candidate).
    public var geomeanSpeedup: Double
    /// Entries where the candidate is faster.
    public var candidateWins: Int
    /// Entries where the baseline is faster.
    public var baselineWins: Int

    /// Creates a class summary.
    public init(
        sizeClass: String, entries: Int, bytes: UInt64, baselineSeconds: Double, candidateSeconds: Double,
        geomeanSpeedup: Double, candidateWins: Int, baselineWins: Int
    ) {
        self.sizeClass = sizeClass
        self.entries = entries
        self.bytes = bytes
        self.baselineSeconds = baselineSeconds
        self.candidateSeconds = candidateSeconds
        self.geomeanSpeedup = geomeanSpeedup
        self.candidateWins = candidateWins
        self.baselineWins = baselineWins
    }

    enum CodingKeys: String, CodingKey {
        case entries, bytes
        case sizeClass = "size_class"
        case baselineSeconds = "baseline_seconds"
        case candidateSeconds = "candidate_seconds"
        case geomeanSpeedup = "geomean_speedup"
        case candidateWins = "candidate_wins"
        case baselineWins = "baseline_wins"
    }
}

/// The size classes the report groups entries by.
public enum PerfSizeClass: Int, CaseIterable, Sendable, Comparable {
    /// Up to 4 KiB.
    case tiny
    /// Over 4 KiB, up to 64 KiB.
    case small
    /// Over 64 KiB, up to 1 MiB.
    case medium
    /// Over 1 MiB, up to 16 MiB.
    case large
    /// Over 16 MiB.
    case huge

    /// The class of an entry of `size` bytes.
    public init(size: UInt64) {
        switch size {
        case ...(4 << 10): self = .tiny
        case ...(64 << 10): self = .small
        case ...(1 << 20): self = .medium
        case ...(16 << 20): self = .large
        default: self = .huge
        }
    }

    /// The stable label used in JSON and CSV.
    public var label: String {
        switch self {
        case .tiny: "<=4KiB"
        case .small: "<=64KiB"
        case .medium: "<=1MiB"
        case .large: "<=16MiB"
        case .huge: ">16MiB"
        }
    }

    /// Orders classes from small to large.
    public static func < (a: PerfSizeClass, b: PerfSizeClass) -> Bool { a.rawValue < b.rawValue }

    /// The class with this label, if any.
    public init?(label: String) {
        guard let c = Self.allCases.first(where: { $0.label == label }) else { return nil }
        self = c
    }
}

extension PerfRunner {
    /// The headline comparison of `candidate` against `baseline` over the entries both measured;
    /// with `opens` (each pack's open, seconds), also with the open counted.
    public static func summarize(
        _ entries: [PerfEntry], baseline: String, candidate: String,
        opens: (baseline: Double?, candidate: Double?) = (nil, nil)
    ) -> PerfSummary {
        var speedups: [Double] = []
        var wins = (candidate: 0, baseline: 0)
        var classes: [PerfSizeClass: (n: Int, bytes: UInt64, b: Double, c: Double, s: [Double], cw: Int, bw: Int)] = [:]
        for e in entries {
            guard let b = e.backends[baseline]?.medianSeconds, let c = e.backends[candidate]?.medianSeconds else {
                continue
            }
            let speedup = b / c
            speedups.append(speedup)
            let sizeClass = PerfSizeClass(size: e.size)
            var k = classes[sizeClass] ?? (0, 0, 0, 0, [], 0, 0)
            k.n += 1
            k.bytes += e.size
            k.b += b
            k.c += c
            k.s.append(speedup)
            if c < b {
                wins.candidate += 1
                k.cw += 1
            } else if b < c {
                wins.baseline += 1
                k.bw += 1
            }
            classes[sizeClass] = k
        }
        return PerfSummary(
            baseline: baseline, candidate: candidate, comparedEntries: speedups.count,
            geomeanSpeedup: PerfStatistics.geometricMean(speedups), candidateWins: wins.candidate,
            baselineWins: wins.baseline,
            classes: classes.keys.sorted().map { c in
                let k = classes[c]!
                return PerfClassSummary(
                    sizeClass: c.label, entries: k.n, bytes: k.bytes, baselineSeconds: k.b, candidateSeconds: k.c,
                    geomeanSpeedup: PerfStatistics.geometricMean(k.s), candidateWins: k.cw, baselineWins: k.bw)
            }, baselineOpenSeconds: opens.baseline, candidateOpenSeconds: opens.candidate)
    }
}
