import AssetPack
import Foundation

// MARK: - CSV

extension PerfReport {
    /// The CSV header: one row per entry and backend follows.
    public static let csvColumns = [
        "path", "size", "size_class", "backend", "format", "decoder", "compression", "stored_size", "reads",
        "min_seconds", "median_seconds", "p90_seconds", "max_seconds", "mb_per_s", "total_seconds", "lookup_seconds",
        "key_derivation_seconds", "decrypt_seconds", "crc_seconds", "crc_ok",
    ]

    /// RFC 4180 CSV: a header, then one row per entry and backend (entries by size, backends in order).
    public func renderCSV() -> String {
        var out = Self.csvColumns.joined(separator: ",") + "\r\n"
        for e in entries {
            for l in backends {
                guard let b = e.backends[l] else { continue }
                let fields: [String] = [
                    e.path, String(e.size), e.sizeClass, l, packs[l]?.format.rawValue ?? "", b.decoder, b.compression,
                    String(b.storedSize), String(b.reads), num(b.minSeconds), num(b.medianSeconds), num(b.p90Seconds),
                    num(b.maxSeconds), num(b.mbPerS), num(b.parts.totalSeconds), num(b.parts.lookupSeconds),
                    num(b.parts.keyDerivationSeconds), num(b.parts.decryptSeconds), num(b.parts.crcSeconds),
                    b.crcOk ? "true" : "false",
                ]
                out += fields.map(Self.csvField).joined(separator: ",") + "\r\n"
            }
        }
        return out
    }

    private func num(_ v: Double) -> String { v.isFinite ? String(format: "%.9g", v) : "" }

    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

// MARK: - HTML

extension PerfReport {
    /// Series colours, by backend position (zip red, container blue, then others).
    static let palette = ["#d1495b", "#2e6fbf", "#2a9d55", "#8e5ac8", "#e08a1e"]

    /// One self-contained HTML page: summary, charts (inline SVG, log-log), pack costs,
    /// per-class tables, machine and settings. No scripts, no external resources.
    public func renderHTML() -> String {
        var h = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>AssetPack perf report</title>
            <style>
            body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1120px;padding:0 16px;color:#1d2330;background:#fff}
            h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
            .meta{color:#5b6476;margin:0 0 12px} .summary{background:#f3f6fb;border-left:4px solid #2e6fbf;padding:10px 14px;margin:12px 0}
            table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
            .scroll{overflow-x:auto;max-width:100%} table.kv td{white-space:normal;word-break:break-all}
            th,td{padding:3px 7px;font-size:13px;border-bottom:1px solid #e6e9ef;text-align:right;white-space:nowrap}
            th{background:#f6f7f9;font-weight:600} td.l,th.l{text-align:left}
            td.l:first-child{white-space:normal;word-break:break-all;max-width:28em}
            tr.agg td{font-weight:600;background:#fafbfd}
            .win{color:#1a7f3c;font-weight:600} .lose{color:#b3261e} .fail{color:#b3261e;font-weight:700}
            svg{display:block;margin:8px 0 4px;max-width:100%;height:auto}
            svg text{font:12px system-ui,sans-serif;fill:#333} svg .title{font-size:14px;font-weight:600}
            details{margin:4px 0 14px} summary{cursor:pointer;color:#2e6fbf}
            code{background:#f3f4f6;padding:1px 4px;border-radius:3px}
            </style></head><body>

            """
        h += "<h1>AssetPack read performance</h1>\n"
        h +=
            "<p class=\"meta\">\(esc(machine.cpuModel)) · \(machine.cores) cores · \(esc(machine.os)) · \(esc(machine.swiftVersion ?? "Swift " + machine.swiftCompiler)) · \(esc(machine.buildConfiguration)) build · \(esc(settings.startedAt))</p>\n"
        if machine.buildConfiguration != "release" {
            h += "<p class=\"fail\">Debug build: these numbers say nothing about release performance.</p>\n"
        }
        if let s = summary { h += "<p class=\"summary\">\(esc(summaryLine(s)))</p>\n" }
        // The terminal's guidance lines: which format, codec and level, with this run's numbers.
        let advice = guidance
        if !advice.isEmpty {
            h += "<h2>Guidance</h2>\n<ul class=\"guidance\">\n"
            for line in advice { h += "<li>\(esc(line))</li>\n" }
            h += "</ul>\n"
        }
        h +=
            "<p>Each figure is the wall time of one <code>readTimed</code> call on an open pack: \(settings.iterations) measured reads per entry and backend after \(settings.warmupReads) warm-up read, backends interleaved (alternating order). MiB/s = 2<sup>20</sup> bytes per second, on the median.</p>\n"

        h += "<h2>Time per read vs entry size</h2>\n"
        h += chartSVG(
            title: "Median time per read (log-log)", yTitle: "median seconds per read", value: { $0.medianSeconds },
            yLabel: Self.secondsTick)
        h += "<h2>Throughput vs entry size</h2>\n"
        h += chartSVG(
            title: "Throughput on the median (log-log)", yTitle: "MiB/s (2^20 B/s)",
            value: { $0.mbPerS * 1e6 / 1_048_576 },
            yLabel: Self.mibpsTick)

        h +=
            "<h2>Packs</h2>\n<div class=\"scroll\"><table><tr><th class=\"l\">backend</th><th>pack size</th><th>entries</th><th>pack time</th><th>install time</th><th>open (incl. KDF)</th><th>read peak RSS</th><th>Δ RSS in read pass</th><th>largest entry</th></tr>\n"
        for l in backends {
            guard let p = packs[l] else { continue }
            h += "<tr><td class=\"l\">\(esc(l))</td><td>\(PerfFormat.bytes(p.sizeBytes))</td><td>\(p.entryCount)</td>"
            h +=
                "<td>\(p.packSeconds.map { PerfFormat.seconds($0) } ?? "–")</td><td>\(p.installSeconds.map { PerfFormat.seconds($0) } ?? "–")</td>"
            h +=
                "<td>\(PerfFormat.seconds(p.openSeconds))</td><td>\(p.readPeakRSSBytes.map { PerfFormat.bytes($0) } ?? "–")</td>"
            h +=
                "<td>\(p.readPeakRSSDeltaBytes.map { $0 < 0 ? "−" + PerfFormat.bytes(UInt64(-$0)) : PerfFormat.bytes(UInt64($0)) } ?? "–")</td>"
            h += "<td>\(PerfFormat.bytes(p.largestEntryBytes))</td></tr>\n"
        }
        h += "</table></div>\n"

        if let s = summary {
            h +=
                "<h2>By size class</h2>\n<div class=\"scroll\"><table><tr><th class=\"l\">class</th><th>entries</th><th>bytes</th><th>\(esc(s.baseline)) (sum of medians)</th><th>\(esc(s.candidate)) (sum of medians)</th><th>\(esc(s.baseline))/\(esc(s.candidate)) (sums)</th><th>geomean speedup</th><th>\(esc(s.candidate)) wins</th><th>\(esc(s.baseline)) wins</th></tr>\n"
            for c in s.classes {
                let r = c.baselineSeconds / c.candidateSeconds
                h +=
                    "<tr><td class=\"l\">\(esc(c.sizeClass))</td><td>\(c.entries)</td><td>\(PerfFormat.bytes(c.bytes))</td><td>\(PerfFormat.seconds(c.baselineSeconds))</td><td>\(PerfFormat.seconds(c.candidateSeconds))</td><td class=\"\(r >= 1 ? "win" : "lose")\">\(PerfFormat.ratio(r))</td><td>\(PerfFormat.ratio(c.geomeanSpeedup))</td><td>\(c.candidateWins)</td><td>\(c.baselineWins)</td></tr>\n"
            }
            h += "</table></div>\n"
        }

        h += "<h2>Entries</h2>\n"
        for (sizeClass, group) in entriesByClass {
            h += "<h3>\(esc(sizeClass.label)) — \(PerfFormat.count(group.count, "entry", "entries"))</h3>\n"
            if group.count > Self.fullClassLimit {
                h += entryTable(Self.samples(group, count: Self.sampleRows), aggregate: group)
                h +=
                    "<details><summary>all \(group.count) entries</summary>\n\(entryTable(group, aggregate: nil))</details>\n"
            } else {
                h += entryTable(group, aggregate: nil)
            }
        }

        h += "<h2>Where the time goes (medians of the reader's timing record)</h2>\n"
        h +=
            "<div class=\"scroll\"><table><tr><th class=\"l\">entry</th><th>size</th><th class=\"l\">backend</th><th class=\"l\">decoder</th><th>total</th><th>lookup</th><th>key derivation</th><th>decrypt+inflate</th><th>crc</th><th>other</th></tr>\n"
        for (_, group) in entriesByClass {
            for e in Self.samples(group, count: 2) {
                for l in backends {
                    guard let b = e.backends[l] else { continue }
                    let p = b.parts
                    let other = max(
                        0, p.totalSeconds - p.lookupSeconds - p.keyDerivationSeconds - p.decryptSeconds - p.crcSeconds)
                    h +=
                        "<tr><td class=\"l\">\(esc(e.path))</td><td>\(PerfFormat.bytes(e.size))</td><td class=\"l\">\(esc(l))</td><td class=\"l\">\(esc(b.decoder))</td><td>\(PerfFormat.seconds(p.totalSeconds))</td><td>\(PerfFormat.seconds(p.lookupSeconds))</td><td>\(PerfFormat.seconds(p.keyDerivationSeconds))</td><td>\(PerfFormat.seconds(p.decryptSeconds))</td><td>\(PerfFormat.seconds(p.crcSeconds))</td><td>\(PerfFormat.seconds(other))</td></tr>\n"
                }
            }
        }
        h += "</table></div>\n"

        h += "<h2>Machine and settings</h2>\n<table class=\"kv\">\n"
        let rows: [(String, String)] = [
            ("CPU", machine.cpuModel), ("cores", String(machine.cores)),
            ("memory", PerfFormat.bytes(machine.memoryBytes)),
            ("OS", machine.os), ("kernel", machine.kernel), ("Swift (compile time)", machine.swiftCompiler),
            ("Swift (swift --version)", machine.swiftVersion ?? "–"), ("build", machine.buildConfiguration),
            ("input", "\(settings.input): \(settings.inputDescription)"), ("iterations", String(settings.iterations)),
            ("warm-up reads", String(settings.warmupReads)), ("order", settings.order),
            ("backends", backends.joined(separator: ", ")), ("credential", settings.credential),
            (
                "pack options",
                settings.packOptions.map {
                    $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
                } ?? "–"
            ),
            ("memory method", settings.memoryMethod),
            (
                "load average (start, end)",
                settings.loadAverage.map { String(format: "%.2f", $0) }.joined(separator: ", ")
            ), ("run wall time", PerfFormat.seconds(settings.wallSeconds)),
            ("command", settings.command ?? "–"),
        ]
        for (k, v) in rows { h += "<tr><th class=\"l\">\(esc(k))</th><td class=\"l\">\(esc(v))</td></tr>\n" }
        h += "</table>\n</body></html>\n"
        return h
    }

    private func entryTable(_ list: [PerfEntry], aggregate: [PerfEntry]?) -> String {
        var h = "<div class=\"scroll\"><table><tr><th class=\"l\">entry</th><th>size</th>"
        for l in backends {
            h +=
                "<th>\(esc(l)) min</th><th>\(esc(l)) median</th><th>\(esc(l)) p90</th><th>\(esc(l)) max</th><th>\(esc(l)) MiB/s</th>"
        }
        let ratio = settings.baseline != nil && settings.candidate != nil
        if ratio { h += "<th>\(esc(settings.baseline!))/\(esc(settings.candidate!))</th>" }
        h += "<th class=\"l\">check</th></tr>\n"
        if let aggregate {
            let bytes = aggregate.reduce(UInt64(0)) { $0 + $1.size }
            h +=
                "<tr class=\"agg\"><td class=\"l\">all \(aggregate.count) (mean of medians)</td><td>\(PerfFormat.bytes(bytes / UInt64(max(aggregate.count, 1))))</td>"
            var sums: [String: Double] = [:]
            for l in backends {
                let stats = aggregate.compactMap { $0.backends[l] }
                let n = Double(max(stats.count, 1))
                let med = stats.reduce(0) { $0 + $1.medianSeconds }
                sums[l] = med
                let bytes = Double(aggregate.filter { $0.backends[l] != nil }.reduce(UInt64(0)) { $0 + $1.size })
                h +=
                    "<td>\(PerfFormat.seconds(stats.map(\.minSeconds).reduce(0, +) / n))</td><td>\(PerfFormat.seconds(med / n))</td><td>\(PerfFormat.seconds(stats.map(\.p90Seconds).reduce(0, +) / n))</td><td>\(PerfFormat.seconds(stats.map(\.maxSeconds).reduce(0, +) / n))</td><td>\(PerfFormat.mibps(bytes: bytes, seconds: med))</td>"
            }
            if ratio, let b = sums[settings.baseline!], let c = sums[settings.candidate!] {
                h += "<td class=\"\(b >= c ? "win" : "lose")\">\(PerfFormat.ratio(b / c))</td>"
            }
            let ok = aggregate.allSatisfy { $0.backends.values.allSatisfy(\.crcOk) }
            h += "<td class=\"l\(ok ? "" : " fail")\">\(ok ? "ok" : "FAIL")</td></tr>\n"
        }
        for e in list {
            h += "<tr><td class=\"l\">\(esc(e.path))</td><td>\(PerfFormat.bytes(e.size))</td>"
            for l in backends {
                if let b = e.backends[l] {
                    h +=
                        "<td>\(PerfFormat.seconds(b.minSeconds))</td><td>\(PerfFormat.seconds(b.medianSeconds))</td><td>\(PerfFormat.seconds(b.p90Seconds))</td><td>\(PerfFormat.seconds(b.maxSeconds))</td><td>\(PerfFormat.mibps(mbPerS: b.mbPerS))</td>"
                } else {
                    h += "<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>"
                }
            }
            if ratio {
                if let b = e.backends[settings.baseline!], let c = e.backends[settings.candidate!] {
                    let r = b.medianSeconds / c.medianSeconds
                    h += "<td class=\"\(r >= 1 ? "win" : "lose")\">\(PerfFormat.ratio(r))</td>"
                } else {
                    h += "<td>–</td>"
                }
            }
            let ok = e.backends.values.allSatisfy(\.crcOk)
            h += "<td class=\"l\(ok ? "" : " fail")\">\(ok ? "ok" : "FAIL")</td></tr>\n"
        }
        return h + "</table></div>\n"
    }

    // MARK: Chart

    /// An inline SVG scatter-and-line chart of `value` against entry size, log-log, one
    /// series per backend. Points are entries; the line joins the median value per distinct size.
    func chartSVG(
        title: String, yTitle: String, value: (PerfBackendStats) -> Double, yLabel: (Double) -> String
    ) -> String {
        let width = 1000.0
        let height = 520.0
        let (left, right, top, bottom) = (86.0, 24.0, 40.0, 62.0)
        let plotW = width - left - right
        let plotH = height - top - bottom

        var series: [(label: String, color: String, points: [(x: Double, y: Double)])] = []
        for (i, l) in backends.enumerated() {
            let pts = entries.compactMap { e -> (Double, Double)? in
                guard let b = e.backends[l] else { return nil }
                let v = value(b)
                guard v.isFinite, v > 0 else { return nil }
                return (Double(max(e.size, 1)), v)
            }
            series.append((l, Self.palette[i % Self.palette.count], pts))
        }
        let all = series.flatMap(\.points)
        guard !all.isEmpty else {
            return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>\n"
        }

        // X: powers of two, ticks every 4× (every 16× when the range is wide).
        var x0 = floor(log2(all.map(\.x).min()!))
        var x1 = ceil(log2(all.map(\.x).max()!))
        if x1 - x0 < 2 { x0 -= 1; x1 += 1 }
        let xStep = (x1 - x0) > 24 ? 4.0 : 2.0
        x0 = floor(x0 / xStep) * xStep
        x1 = ceil(x1 / xStep) * xStep
        // Y: decades.
        var y0 = floor(log10(all.map(\.y).min()!))
        var y1 = ceil(log10(all.map(\.y).max()!))
        if y1 - y0 < 1 { y0 -= 0.5; y1 += 0.5 }
        y0 = floor(y0)
        y1 = ceil(y1)
        func px(_ x: Double) -> Double { left + (log2(x) - x0) / (x1 - x0) * plotW }
        func py(_ y: Double) -> Double { top + plotH - (log10(y) - y0) / (y1 - y0) * plotH }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }

        var s =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"\(esc(title))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"\(Int(width))\" height=\"\(Int(height))\">\n"
        s += "<rect x=\"0\" y=\"0\" width=\"\(Int(width))\" height=\"\(Int(height))\" fill=\"#fff\"/>\n"
        s += "<text class=\"title\" x=\"\(f(left))\" y=\"24\">\(esc(title))</text>\n"
        s += "<g class=\"grid\" stroke=\"#e3e6ec\" stroke-width=\"1\">\n"
        var ticks = "<g class=\"ticks\">\n"
        var e = x0
        while e <= x1 + 1e-9 {
            let x = px(pow(2, e))
            s += "<line x1=\"\(f(x))\" y1=\"\(f(top))\" x2=\"\(f(x))\" y2=\"\(f(top + plotH))\"/>\n"
            ticks +=
                "<line x1=\"\(f(x))\" y1=\"\(f(top + plotH))\" x2=\"\(f(x))\" y2=\"\(f(top + plotH + 5))\" stroke=\"#555\"/>"
            ticks +=
                "<text x=\"\(f(x))\" y=\"\(f(top + plotH + 19))\" text-anchor=\"middle\">\(esc(PerfFormat.bytes(UInt64(pow(2, e)))))</text>\n"
            e += xStep
        }
        var d = y0
        while d <= y1 + 1e-9 {
            let y = py(pow(10, d))
            s += "<line x1=\"\(f(left))\" y1=\"\(f(y))\" x2=\"\(f(left + plotW))\" y2=\"\(f(y))\"/>\n"
            ticks += "<line x1=\"\(f(left - 5))\" y1=\"\(f(y))\" x2=\"\(f(left))\" y2=\"\(f(y))\" stroke=\"#555\"/>"
            ticks +=
                "<text x=\"\(f(left - 8))\" y=\"\(f(y + 4))\" text-anchor=\"end\">\(esc(yLabel(pow(10, d))))</text>\n"
            // Minor ticks at 2× and 5× inside the decade.
            if d < y1 {
                for m in [2.0, 5.0] {
                    let ym = py(m * pow(10, d))
                    s +=
                        "<line x1=\"\(f(left))\" y1=\"\(f(ym))\" x2=\"\(f(left + plotW))\" y2=\"\(f(ym))\" stroke=\"#f1f3f6\"/>\n"
                }
            }
            d += 1
        }
        s += "</g>\n" + ticks + "</g>\n"
        s +=
            "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotW))\" height=\"\(f(plotH))\" fill=\"none\" stroke=\"#555\"/>\n"
        s +=
            "<text x=\"\(f(left + plotW / 2))\" y=\"\(f(height - 14))\" text-anchor=\"middle\">entry size (log scale)</text>\n"
        s +=
            "<text transform=\"translate(18 \(f(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">\(esc(yTitle)) (log scale)</text>\n"

        for (label, color, points) in series {
            s += "<g class=\"series\" data-backend=\"\(esc(label))\" fill=\"\(color)\" stroke=\"\(color)\">\n"
            // Line through the median per distinct size.
            let bySize = Dictionary(grouping: points, by: \.x).mapValues { PerfStatistics.quantile($0.map(\.y), 0.5) }
            let line = bySize.keys.sorted().map { "\(f(px($0))),\(f(py(bySize[$0]!)))" }.joined(separator: " ")
            s += "<polyline points=\"\(line)\" fill=\"none\" stroke-width=\"2\" stroke-opacity=\"0.85\"/>\n"
            // One point per distinct (rounded) position keeps large groups from writing 1000 circles.
            var seen: Set<String> = []
            for p in points {
                let key = "\(Int(px(p.x)))/\(Int(py(p.y)))"
                guard seen.insert(key).inserted else { continue }
                s +=
                    "<circle cx=\"\(f(px(p.x)))\" cy=\"\(f(py(p.y)))\" r=\"3.2\" fill-opacity=\"0.55\" stroke=\"none\"/>\n"
            }
            s += "</g>\n"
        }
        // Legend.
        let lx = left + 14
        var ly = top + 14
        s +=
            "<g class=\"legend\">\n<rect x=\"\(f(lx - 8))\" y=\"\(f(ly - 10))\" width=\"150\" height=\"\(f(Double(series.count) * 20 + 8))\" fill=\"#fff\" fill-opacity=\"0.9\" stroke=\"#ccd\"/>\n"
        for (label, color, _) in series {
            s +=
                "<line x1=\"\(f(lx))\" y1=\"\(f(ly + 4))\" x2=\"\(f(lx + 22))\" y2=\"\(f(ly + 4))\" stroke=\"\(color)\" stroke-width=\"2\"/>"
            s += "<circle cx=\"\(f(lx + 11))\" cy=\"\(f(ly + 4))\" r=\"3.5\" fill=\"\(color)\"/>"
            s += "<text x=\"\(f(lx + 30))\" y=\"\(f(ly + 8))\">\(esc(label))</text>\n"
            ly += 20
        }
        s += "</g>\n</svg>\n"
        return s
    }

    static func secondsTick(_ s: Double) -> String {
        let (v, unit) = s < 1e-6 ? (s * 1e9, "ns") : s < 1e-3 ? (s * 1e6, "µs") : s < 1 ? (s * 1e3, "ms") : (s, "s")
        return String(format: "%.0f %@", v.rounded(), unit)
    }

    static func mibpsTick(_ v: Double) -> String {
        v >= 1 ? String(format: "%.0f MiB/s", v) : String(format: "%g MiB/s", v)
    }
}

/// Escapes text for HTML and SVG.
func esc(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.count)
    for c in s {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.append(c)
        }
    }
    return out
}
