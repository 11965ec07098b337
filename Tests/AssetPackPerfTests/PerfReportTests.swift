#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackPerf
import AssetPackTestSupport
import Foundation
import Testing

/// The perf runner and its report model and renderers. No speed assertions: only that every
/// entry is measured for both backends, verified, with consistent statistics and well-formed output.
@Suite struct PerfReportTests {
    static let tree: [String: [UInt8]] = [
        "tiny/one.bin": [0x42],
        "small/a.bin": testBytes(4096, seed: 21),
        "small/b.bin": testBytes(4096, seed: 22),
        "text/doc.json": textBytes(70_000, seed: 23),
        "media/pic.png": testBytes(300_000, seed: 24),
        "naïve/日本.txt": Array("non-ASCII\n".utf8),
    ]

    /// Runs the benchmark once on the test tree (shared by the tests below).
    static func runOnce(iterations: Int = 3) throws -> (PerfReport, TemporaryDirectory) {
        let dir = TemporaryDirectory("perf-test")
        let source = try dir.write(tree, under: "src")
        var configuration = PerfConfiguration(input: .source(source))
        configuration.iterations = iterations
        configuration.credential = .password("perf-test-pass")
        configuration.workParent = dir.url
        return (try PerfRunner.run(configuration), dir)
    }

    @Test func everyEntryIsMeasuredForBothBackendsAndVerified() throws {
        let (report, _) = try Self.runOnce()
        #expect(report.backends == ["zip", "container"])
        #expect(Set(report.entries.map(\.path)) == Set(Self.tree.keys.map { EntryPath.normalize($0) }))
        for entry in report.entries {
            #expect(
                entry.size
                    == UInt64(
                        Self.tree[entry.path]?.count
                            ?? Self.tree.first { EntryPath.normalize($0.key) == entry.path }!.value.count))
            #expect(Set(entry.backends.keys) == ["zip", "container"], "\(entry.path)")
            for (label, stats) in entry.backends {
                #expect(stats.crcOk, "\(label) \(entry.path)")
                #expect(stats.reads == 3)
                #expect(stats.minSeconds > 0)
                #expect(stats.minSeconds <= stats.medianSeconds, "\(label) \(entry.path)")
                #expect(stats.medianSeconds <= stats.p90Seconds, "\(label) \(entry.path)")
                #expect(stats.p90Seconds <= stats.maxSeconds, "\(label) \(entry.path)")
                #expect(!stats.decoder.isEmpty)
                #expect(stats.parts.totalSeconds > 0)
                #expect(entry.sizeClass == PerfSizeClass(size: entry.size).label)
            }
        }
        for label in ["zip", "container"] {
            let pack = try #require(report.packs[label])
            #expect(pack.format.rawValue == label)
            #expect(pack.entryCount == Self.tree.count)
            #expect(pack.sizeBytes > 0)
            #expect(pack.packSeconds != nil && pack.installSeconds != nil)
            #expect(pack.openSeconds > 0)
            #expect(pack.readPeakRSSBytes != nil)
        }
        let summary = try #require(report.summary)
        #expect(summary.baseline == "zip" && summary.candidate == "container")
        #expect(summary.comparedEntries == Self.tree.count)
        #expect(summary.geomeanSpeedup > 0)
        #expect(summary.classes.reduce(0) { $0 + $1.entries } == Self.tree.count)
        #expect(report.settings.order == "interleaved")
        #expect(report.settings.iterations == 3)
    }

    @Test func jsonDecodesWithTheDocumentedKeys() throws {
        let (report, _) = try Self.runOnce(iterations: 2)
        let data = try report.jsonData()
        #expect(try PerfReport.decode(data) == report)

        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(doc.keys).isSuperset(of: ["entries", "packs", "machine", "settings", "summary", "schema_version"]))
        let entries = try #require(doc["entries"] as? [[String: Any]])
        #expect(entries.count == Self.tree.count)
        for entry in entries {
            #expect(entry["path"] is String)
            #expect(entry["size"] is NSNumber)
            let backends = try #require(entry["backends"] as? [String: [String: Any]])
            #expect(Set(backends.keys) == ["zip", "container"])
            for (_, b) in backends {
                for key in ["median_seconds", "p90_seconds", "min_seconds", "max_seconds", "mb_per_s"] {
                    #expect(b[key] is NSNumber, "\(key)")
                }
                #expect(b["crc_ok"] as? Bool == true)
                #expect(b["decoder"] is String)
                let parts = try #require(b["parts"] as? [String: Any])
                for key in [
                    "lookup_seconds", "key_derivation_seconds", "decrypt_seconds", "crc_seconds", "total_seconds",
                ] {
                    #expect(parts[key] is NSNumber, "\(key)")
                }
            }
        }
        let machine = try #require(doc["machine"] as? [String: Any])
        for key in ["cpu_model", "cores", "os", "swift_compiler", "build_configuration"] {
            #expect(machine[key] != nil, "\(key)")
        }
        let packs = try #require(doc["packs"] as? [String: [String: Any]])
        for (_, p) in packs {
            for key in ["open_seconds", "pack_seconds", "size_bytes", "read_peak_rss_bytes", "format"] {
                #expect(p[key] != nil, "\(key)")
            }
        }
        let settings = try #require(doc["settings"] as? [String: Any])
        #expect(settings["iterations"] as? Int == 2)
        #expect(settings["backends"] as? [String] == ["zip", "container"])
    }

    @Test func csvHasOneRowPerEntryAndBackend() throws {
        let (report, _) = try Self.runOnce(iterations: 2)
        let csv = report.renderCSV()
        let lines = csv.split(separator: "\r\n", omittingEmptySubsequences: true)
        #expect(lines.first.map(String.init) == PerfReport.csvColumns.joined(separator: ","))
        #expect(lines.count - 1 == report.entries.count * 2)
        for line in lines.dropFirst() {
            #expect(
                line.split(separator: ",", omittingEmptySubsequences: false).count == PerfReport.csvColumns.count,
                "\(line)")
            #expect(line.hasSuffix(",true"))
        }
    }

    @Test func htmlIsSelfContainedWithAnSVGChartOfBothSeries() throws {
        let (report, _) = try Self.runOnce(iterations: 2)
        let html = report.renderHTML()
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<svg"))
        #expect(html.contains("data-backend=\"zip\""))
        #expect(html.contains("data-backend=\"container\""))
        #expect(html.components(separatedBy: "class=\"series\"").count - 1 == 4)  // two charts × two series
        #expect(!html.contains("<script"))
        #expect(
            !html.contains("http://")
                || !html.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").contains("http://"))
        #expect(!html.contains("https://"))
        #expect(html.contains("naïve/日本.txt"))
        // The text report names every size class present and carries the summary line.
        let text = report.renderText()
        for c in Set(report.entries.map(\.sizeClass)) { #expect(text.contains("[\(c)]")) }
        #expect(text.contains("summary: container is"))
    }

    @Test func existingPacksAreMatchedByPath() throws {
        let dir = TemporaryDirectory("perf-packs")
        let source = try dir.write(
            ["a.txt": textBytes(10_000, seed: 5), "b.bin": testBytes(5_000, seed: 6)], under: "src")
        var options = PackOptions.forTests
        options.credential = .password("pw")
        try AssetPacks.pack(source: source, to: dir.appending("p.zip"), options: options)
        options.format = .container
        try AssetPacks.pack(source: source, to: dir.appending("p.apack"), options: options)
        var configuration = PerfConfiguration(input: .packs([dir.appending("p.apack"), dir.appending("p.zip")]))
        configuration.iterations = 2
        configuration.credential = .password("pw")
        let report = try PerfRunner.run(configuration)
        #expect(report.backends == ["container", "zip"])
        #expect(report.settings.baseline == "zip")
        #expect(report.settings.candidate == "container")
        #expect(report.entries.map(\.path).sorted() == ["a.txt", "b.bin"])
        #expect(report.entries.allSatisfy { $0.backends.count == 2 && $0.backends.values.allSatisfy(\.crcOk) })
        #expect(report.packs["zip"]?.packSeconds == nil)
    }

    @Test func quantilesAreOrderedAndInterpolated() {
        #expect(PerfStatistics.quantile([3, 1, 2], 0.5) == 2)
        #expect(PerfStatistics.quantile([1, 2], 0.5) == 1.5)
        #expect(PerfStatistics.quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 0.9) == 10)
        #expect(PerfStatistics.quantile([5], 0.9) == 5)
        #expect(PerfStatistics.quantile([], 0.5).isNaN)
        let samples = testBytes(37, seed: 3).map(Double.init)
        let q = [0.0, 0.5, 0.9, 1.0].map { PerfStatistics.quantile(samples, $0) }
        #expect(q == q.sorted())
        #expect(abs(PerfStatistics.geometricMean([2, 8]) - 4) < 1e-12)
    }

    @Test func standardCorpusLayoutIsDeterministic() {
        let layout = PerfCorpus.standard.layout
        #expect(layout.filter { $0.path.hasPrefix("small/") && $0.size == 4096 }.count == 1000)
        #expect(layout.contains { $0.path == "big/random.bin" && $0.size == 64 << 20 })
        #expect(layout.contains { $0.path == "big/text.json" && $0.size == 64 << 20 })
        #expect(layout.contains { $0.path.hasSuffix(".png") && $0.size == 1 << 20 })
        #expect(Set(layout.map { PerfSizeClass(size: UInt64($0.size)) }) == Set(PerfSizeClass.allCases))
        #expect(PerfCorpus.randomBytes(100, seed: 9) == PerfCorpus.randomBytes(100, seed: 9))
        #expect(PerfCorpus.jsonLikeBytes(1000, seed: 9) == PerfCorpus.jsonLikeBytes(1000, seed: 9))
        #expect(PerfCorpus.jsonLikeBytes(1000, seed: 9).count == 1000)
    }
}
#endif
