#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackPerf
import AssetPackTestSupport
import Foundation
import Testing

/// End-to-end: `assetpack perf` on a tiny tree writes well-formed JSON, CSV and HTML.
@Suite struct PerfCLITests {
    static let tree: [String: [UInt8]] = [
        "a.txt": textBytes(20_000, seed: 31),
        "img/b.png": testBytes(9_000, seed: 32),
        "c.bin": testBytes(100, seed: 33),
    ]

    @Test func perfWritesAllThreeReports() throws {
        let dir = TemporaryDirectory("perf-cli")
        let source = try dir.write(Self.tree, under: "src")
        let json = dir.appending("out/report.json").path
        let csv = dir.appending("out/report.csv").path
        let html = dir.appending("out/report.html").path
        let run = try CLI.run(
            ["perf", source.path, "--iterations", "2", "--json", json, "--csv", csv, "--html", html],
            password: "perf-cli-pass", environment: ["TMPDIR": dir.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.text.contains("summary: container is"))
        #expect(!run.stderr.contains("\r"), "no progress bar without a terminal")
        // One unit family (binary) for what a person reads; counts in the right number.
        #expect(run.text.contains("MiB/s") && !run.text.contains("MB/s"), "\(run.text)")
        #expect(run.text.contains("[<=4KiB] 1 entry\n") && !run.text.contains("1 entries"), "\(run.text)")

        let report = try PerfReport.decode(Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(report.entries.count == Self.tree.count)
        // Codec and level per entry, and guidance that says what they cost and which format to ship.
        let text = try #require(report.entries.first { $0.path == "a.txt" })
        #expect(text.backends["container"]?.compression == "zstd 12")
        #expect(text.backends["zip"]?.compression == "deflate 10")
        #expect(report.entries.first { $0.path == "img/b.png" }?.backends["container"]?.compression == "store")
        #expect(report.settings.packOptions?["level"] == "default")
        #expect(run.text.contains("guidance: compressed entries (1 entry): container (zstd 12) stores"), "\(run.text)")
        #expect(run.text.contains("guidance: large files patched often"), "\(run.text)")
        // The headline shows, beside the per-read ratio, what opening each pack once (the
        // container's scrypt included) and reading every entry once cost.
        let summary = try #require(report.summary)
        let zipOpen = try #require(report.packs["zip"]?.openSeconds)
        let containerOpen = try #require(report.packs["container"]?.openSeconds)
        #expect(summary.baselineOpenSeconds == zipOpen && summary.candidateOpenSeconds == containerOpen)
        let readOnce = (
            summary.classes.reduce(0) { $0 + $1.baselineSeconds },
            summary.classes.reduce(0) { $0 + $1.candidateSeconds }
        )
        let withOpen = try #require(summary.openAndReadOnceSpeedup)
        #expect(abs(withOpen - (zipOpen + readOnce.0) / (containerOpen + readOnce.1)) < 1e-9 * withOpen)
        let headline = try #require(run.text.split(separator: "\n").first { $0.hasPrefix("summary: ") })
        #expect(headline.contains("with each pack opened once"), "\(headline)")
        #expect(headline.contains("key derivation"), "\(headline)")
        #expect(report.settings.iterations == 2)
        #expect(report.settings.credential == "given-password")
        #expect(
            report.entries.allSatisfy {
                Set($0.backends.keys) == ["zip", "container"] && $0.backends.values.allSatisfy(\.crcOk)
            })

        let csvText = try String(contentsOfFile: csv, encoding: .utf8)
        let rows = csvText.split(separator: "\r\n")
        #expect(rows.count == 1 + Self.tree.count * 2)
        #expect(rows.first.map(String.init) == PerfReport.csvColumns.joined(separator: ","))

        let htmlText = try String(contentsOfFile: html, encoding: .utf8)
        #expect(htmlText.hasPrefix("<!DOCTYPE html>"))
        #expect(htmlText.hasSuffix("</html>\n"))
        #expect(htmlText.contains("<svg"))
        #expect(htmlText.contains("data-backend=\"zip\"") && htmlText.contains("data-backend=\"container\""))
        #expect(!htmlText.contains("<script"))
        #expect(htmlText.contains("MiB/s") && !htmlText.contains("MB/s"))
        // The terminal's guidance lines are in the HTML report too (they were dropped).
        #expect(htmlText.contains("<h2>Guidance</h2>"))
        #expect(htmlText.contains("<li>large files patched often"), "\(htmlText)")

        // The throwaway packs went into a temporary directory that is gone again.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasPrefix("assetpack-perf-")
        }
        #expect(leftovers.isEmpty)
    }

    @Test func withLibzipAddsTheLibzipDecoderAsABackend() throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(
            ["big.bin": testBytes(300_000, seed: 3), "small.txt": Array("hi".utf8)], under: "src")
        let json = dir.appending("r.json").path
        let run = try CLI.run(
            ["perf", source.path, "--iterations", "1", "--quiet", "--with-libzip", "--json", json], password: "pw")
        #expect(run.status == 0, "\(run.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        let entries = try #require(doc?["entries"] as? [[String: Any]])
        #expect(entries.count == 2)
        for entry in entries {
            let backends = try #require(entry["backends"] as? [String: [String: Any]])
            #expect(Set(backends.keys) == ["zip", "zip-libzip", "container"])
            #expect(backends["zip-libzip"]?["decoder"] as? String == "libzip")
            #expect(backends["zip"]?["decoder"] as? String == "bulk-aes")
            for (_, stats) in backends { #expect(stats["crc_ok"] as? Bool == true) }
        }
    }

    @Test(.slow) func perfMeasuresExistingPacksAndWorksWithoutAPassword() throws {
        let dir = TemporaryDirectory("perf-cli-packs")
        let source = try dir.write(Self.tree, under: "src")
        // No password given: a generated one is used for the throwaway packs.
        let generated = try CLI.run([
            "perf", source.path, "--iterations", "1", "--quiet", "--json", dir.appending("g.json").path,
        ])
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(
            try PerfReport.decode(Data(contentsOf: dir.appending("g.json"))).settings.credential == "generated-password"
        )

        for format in ["zip", "container"] {
            let pack = try CLI.run(
                ["pack", source.path, "--output", dir.appending("p.\(format)").path, "--format", format], password: "pw"
            )
            #expect(pack.status == 0, "\(pack.stderr)")
        }
        let json = dir.appending("packs.json").path
        let run = try CLI.run(
            [
                "perf", "--pack", dir.appending("p.zip").path, "--pack", dir.appending("p.container").path,
                "--iterations", "2", "--json", json,
            ], password: "pw")
        #expect(run.status == 0, "\(run.stderr)")
        let report = try PerfReport.decode(Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(report.backends == ["zip", "container"])
        #expect(report.entries.count == Self.tree.count)

        #expect(try CLI.run(["perf", "--pack", dir.appending("p.zip").path], password: "wrong").status == 2)
        #expect(try CLI.run(["perf"]).status == 64)
        #expect(try CLI.run(["perf", source.path, "--corpus", "standard"]).status == 64)
        #expect(try CLI.run(["perf", source.path, "--iterations", "0"]).status == 64)
    }
}
#endif
