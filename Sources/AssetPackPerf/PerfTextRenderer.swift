import AssetPack
import Foundation

extension PerfReport {
    /// Entries at or below this count in a size class are listed one per row; larger
    /// classes show an aggregate row plus `sampleRows` examples.
    public static let fullClassLimit = 12
    /// Example rows shown for a large class.
    public static let sampleRows = 3

    /// Entries grouped by size class, classes in order, entries by size then path.
    public var entriesByClass: [(PerfSizeClass, [PerfEntry])] {
        let grouped = Dictionary(grouping: entries) { PerfSizeClass(size: $0.size) }
        return grouped.keys.sorted().map { ($0, grouped[$0]!) }
    }

    /// The terminal report: per size class, both backends side by side with the ratio, then
    /// per-pack costs and the summary line.
    public func renderText() -> String {
        let labels = backends
        let base = settings.baseline
        let cand = settings.candidate
        var columns: [Column] = [
            Column("ENTRY", left: true), Column("SIZE"),
        ]
        for l in labels {
            columns.append(Column("\(l) med"))
            columns.append(Column("p90"))
            columns.append(Column("MiB/s"))
        }
        let hasRatio = base != nil && cand != nil
        if hasRatio { columns.append(Column("\(base!)/\(cand!)")) }
        columns.append(Column("CHECK", left: true))

        var rows: [[String]] = []
        var separators: Set<Int> = []
        for (sizeClass, group) in entriesByClass {
            separators.insert(rows.count)
            rows.append(
                ["[\(sizeClass.label)] \(PerfFormat.count(group.count, "entry", "entries"))"]
                    + Array(repeating: "", count: columns.count - 1))
            if group.count > Self.fullClassLimit {
                rows.append(aggregateRow(group, labels: labels, hasRatio: hasRatio))
                let picks = Self.samples(group, count: Self.sampleRows)
                for e in picks { rows.append(entryRow(e, labels: labels, hasRatio: hasRatio)) }
                rows.append(
                    ["  … \(group.count - picks.count) more in --json/--csv"]
                        + Array(repeating: "", count: columns.count - 1))
            } else {
                for e in group { rows.append(entryRow(e, labels: labels, hasRatio: hasRatio)) }
            }
        }

        var out =
            "assetpack perf — \(settings.iterations) measured reads per entry and backend (\(settings.warmupReads) warm-up), interleaved; release build: \(machine.buildConfiguration == "release" ? "yes" : "NO (numbers are meaningless)")\n"
        out +=
            "\(machine.cpuModel), \(machine.cores) cores, \(machine.os); times are wall seconds per readTimed call, MiB/s = 2^20 B/s on the median\n\n"
        out += Column.layout(columns, rows, separators: separators)
        out += "\n"
        out += packsText(labels)
        if let s = summary {
            out += "\n" + summaryLine(s) + "\n"
            out +=
                "by class (\(s.baseline)/\(s.candidate), sums of medians): "
                + s.classes.map { "\($0.sizeClass) \(PerfFormat.ratio($0.baselineSeconds / $0.candidateSeconds))" }
                .joined(separator: ", ") + "\n"
        }
        for line in guidance { out += "guidance: " + line + "\n" }
        if let load = settings.loadAverage.max(), load > Double(machine.cores) {
            out +=
                "note: load average reached \(String(format: "%.1f", load)) on \(machine.cores) cores during the run; other processes competed for the CPU, expect noise (compare min and p90)\n"
        }
        let failed = entries.flatMap { e in e.backends.filter { !$0.value.crcOk }.map { "\($0.key):\(e.path)" } }
        if !failed.isEmpty {
            out += "CHECK FAILED for \(failed.count) reads: \(failed.prefix(5).joined(separator: ", "))\n"
        }
        return out
    }

    /// One line: geometric-mean speedup per read, beside it the comparison with each pack's
    /// open counted (the container's key derivation is paid there, once per open, and no read
    /// includes it), and where each backend wins.
    public func summaryLine(_ s: PerfSummary) -> String {
        func faster(_ speedup: Double) -> String {
            let who = speedup >= 1 ? "faster" : "slower"
            return "\(PerfFormat.ratio(speedup >= 1 ? speedup : 1 / speedup)) \(who)"
        }
        let candClasses = s.classes.filter { $0.candidateWins > $0.baselineWins }.map(\.sizeClass)
        let baseClasses = s.classes.filter { $0.baselineWins > $0.candidateWins }.map(\.sizeClass)
        func list(_ c: [String]) -> String { c.isEmpty ? "none" : c.joined(separator: " ") }
        var line =
            "summary: \(s.candidate) is \(faster(s.geomeanSpeedup)) than \(s.baseline) per read (geometric mean of per-entry median ratios over \(PerfFormat.count(s.comparedEntries, "entry", "entries")); opening excluded)"
        if let withOpen = s.openAndReadOnceSpeedup, let bo = s.baselineOpenSeconds, let co = s.candidateOpenSeconds {
            line +=
                "; with each pack opened once (\(s.baseline) \(PerfFormat.seconds(bo)), \(s.candidate) \(PerfFormat.seconds(co)), key derivation included) and every entry read once, \(s.candidate) is \(faster(withOpen)) than \(s.baseline)"
        }
        return line
            + "; \(s.candidate) wins \(PerfFormat.count(s.candidateWins, "entry", "entries")) (classes: \(list(candClasses))), \(s.baseline) wins \(s.baselineWins) (classes: \(list(baseClasses)))"
    }

    private func packsText(_ labels: [String]) -> String {
        let columns = [
            Column("PACK", left: true), Column("SIZE"), Column("ENTRIES"), Column("PACK s"), Column("INSTALL s"),
            Column("OPEN (incl. KDF)"), Column("READ PEAK RSS"), Column("Δ RSS"), Column("LARGEST"),
        ]
        var rows: [[String]] = []
        for l in labels {
            guard let p = packs[l] else { continue }
            rows.append([
                l, PerfFormat.bytes(p.sizeBytes), String(p.entryCount),
                p.packSeconds.map { String(format: "%.2f", $0) } ?? "-",
                p.installSeconds.map { String(format: "%.3f", $0) } ?? "-",
                PerfFormat.seconds(p.openSeconds),
                p.readPeakRSSBytes.map { PerfFormat.bytes($0) } ?? "-",
                p.readPeakRSSDeltaBytes.map {
                    $0 < 0 ? "-" + PerfFormat.bytes(UInt64(-$0)) : PerfFormat.bytes(UInt64($0))
                } ?? "-",
                PerfFormat.bytes(p.largestEntryBytes),
            ])
        }
        return Column.layout(columns, rows, separators: [])
    }

    private func entryRow(_ e: PerfEntry, labels: [String], hasRatio: Bool) -> [String] {
        var row = ["  " + EntryPath.printable(e.path), PerfFormat.bytes(e.size)]
        var checks: [String] = []
        for l in labels {
            if let b = e.backends[l] {
                row += [
                    PerfFormat.seconds(b.medianSeconds), PerfFormat.seconds(b.p90Seconds),
                    PerfFormat.mibps(mbPerS: b.mbPerS),
                ]
                checks.append(b.crcOk ? "ok" : "FAIL")
            } else {
                row += ["-", "-", "-"]
                checks.append("absent")
            }
        }
        if hasRatio { row.append(ratioText(e.backends[settings.baseline!], e.backends[settings.candidate!])) }
        row.append(Set(checks).count == 1 ? checks[0] : checks.joined(separator: "/"))
        return row
    }

    /// The class as a whole: per backend, the mean of the medians and throughput over all of it.
    private func aggregateRow(_ group: [PerfEntry], labels: [String], hasRatio: Bool) -> [String] {
        let bytes = group.reduce(UInt64(0)) { $0 + $1.size }
        var row = ["  (all \(group.count), mean of medians)", PerfFormat.bytes(bytes / UInt64(max(group.count, 1)))]
        var sums: [String: Double] = [:]
        var ok = true
        for l in labels {
            let stats = group.compactMap { $0.backends[l] }
            let medianSum = stats.reduce(0) { $0 + $1.medianSeconds }
            let p90Sum = stats.reduce(0) { $0 + $1.p90Seconds }
            sums[l] = medianSum
            ok = ok && stats.allSatisfy(\.crcOk)
            let n = Double(max(stats.count, 1))
            row += [
                PerfFormat.seconds(medianSum / n), PerfFormat.seconds(p90Sum / n),
                PerfFormat.mibps(
                    bytes: Double(group.compactMap { $0.backends[l] != nil ? $0.size : nil }.reduce(0, +)),
                    seconds: medianSum),
            ]
        }
        if hasRatio, let b = sums[settings.baseline!], let c = sums[settings.candidate!] {
            row.append(PerfFormat.ratio(b / c))
        }
        row.append(ok ? "ok" : "FAIL")
        return row
    }

    private func ratioText(_ b: PerfBackendStats?, _ c: PerfBackendStats?) -> String {
        guard let b, let c, c.medianSeconds > 0 else { return "-" }
        return PerfFormat.ratio(b.medianSeconds / c.medianSeconds)
    }

    /// A few representative entries of a large group: first, middle, last.
    static func samples(_ group: [PerfEntry], count: Int) -> [PerfEntry] {
        guard group.count > count else { return group }
        return (0..<count).map { group[$0 * (group.count - 1) / max(count - 1, 1)] }
    }
}

/// A text table column.
struct Column {
    var title: String
    var left: Bool
    init(_ title: String, left: Bool = false) {
        self.title = title
        self.left = left
    }

    /// Lays out rows under the titles; a row index in `separators` is a group title line
    /// written as is (not padded into columns).
    static func layout(_ columns: [Column], _ rows: [[String]], separators: Set<Int>) -> String {
        // Widths in terminal columns (CJK names take two per character, combining marks none).
        var widths = columns.map { TerminalText.width($0.title) }
        for (i, row) in rows.enumerated() where !separators.contains(i) && !row.dropFirst().allSatisfy(\.isEmpty) {
            for (c, cell) in row.enumerated() where c < widths.count {
                widths[c] = max(widths[c], TerminalText.width(cell))
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, cell in TerminalText.pad(cell, widths[c], right: !columns[c].left) }.joined(
                separator: "  "
            ).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var out = line(columns.map(\.title)) + "\n"
        for (i, row) in rows.enumerated() {
            if separators.contains(i) || row.dropFirst().allSatisfy(\.isEmpty) {
                out += row[0] + "\n"
            } else {
                out += line(row) + "\n"
            }
        }
        return out
    }
}

extension PerfReport {
    /// When each format, codec and level is worth it, with this run's numbers where it has them:
    /// the compressed entries' bytes and read times by backend, the level choice, and which format
    /// to ship for large files that are patched often.
    public var guidance: [String] {
        var lines: [String] = []
        if let base = settings.baseline, let cand = settings.candidate {
            // Entries both backends compressed: their stored bytes and summed median reads.
            let both = entries.compactMap { e -> (PerfBackendStats, PerfBackendStats)? in
                guard let b = e.backends[base], let c = e.backends[cand], b.compression != "store",
                    c.compression != "store"
                else { return nil }
                return (b, c)
            }
            if !both.isEmpty {
                let codecs = { (k: KeyPath<(PerfBackendStats, PerfBackendStats), PerfBackendStats>) in
                    Set(both.map { $0[keyPath: k].compression }).sorted().joined(separator: ", ")
                }
                let bytes = { (k: KeyPath<(PerfBackendStats, PerfBackendStats), PerfBackendStats>) in
                    both.reduce(UInt64(0)) { $0 + $1[keyPath: k].storedSize }
                }
                let time = { (k: KeyPath<(PerfBackendStats, PerfBackendStats), PerfBackendStats>) in
                    both.reduce(0.0) { $0 + $1[keyPath: k].medianSeconds }
                }
                let (bb, cb, bt, ct) = (bytes(\.0), bytes(\.1), time(\.0), time(\.1))
                lines.append(
                    "compressed entries (\(PerfFormat.count(both.count, "entry", "entries"))): \(cand) (\(codecs(\.1))) stores \(PerfFormat.bytes(cb)), \(base) (\(codecs(\.0))) \(PerfFormat.bytes(bb)) (\(PerfFormat.ratio(Double(cb) / Double(max(bb, 1))))); reading them all takes \(PerfFormat.seconds(ct)) against \(PerfFormat.seconds(bt)) (sums of medians).\(cb <= bb ? "" : " The zip stores them smaller here: each container chunk is compressed on its own (at most 256 KiB), a zip entry as one stream; try the container with --codec deflate, and weigh the size against the read times.")"
                )
            }
        }
        lines.append(
            "levels: pack release builds at the default level (what every device downloads and decodes); --fast (or --level fast) packs several times faster with larger packs, for iteration builds. The level never changes how a pack is read."
        )
        lines.append(
            "large files patched often (levels, atlases, audio banks): ship the container. A re-pack and an update by URL re-seal and download only the content-defined chunks (~64 KiB) around a change; a zip entry is one AES stream, re-encrypted and downloaded whole after any change."
        )
        return lines
    }
}
