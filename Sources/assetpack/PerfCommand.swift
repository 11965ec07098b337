import ArgumentParser
import AssetPack
import AssetPackPerf
import Foundation

extension AssetPackCommand {
    struct Perf: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time every entry's read through the zip and container backends, side by side.",
            discussion: """
                Give a SOURCE_DIR (packed both ways into a private temporary directory, installed, then read), \
                --corpus standard (a generated deterministic corpus, ~151 MiB), or one or more --pack FILE \
                (existing packs, entries matched by path). Each entry is read --iterations times per backend \
                after a warm-up read, backends interleaved. Without a password, SOURCE_DIR and --corpus use a \
                generated one (the packs are throwaway). Build with -c release for meaningful numbers. \
                See docs/PERFORMANCE.md for the method and the JSON schema.
                """)

        @Argument(help: ArgumentHelp("The asset directory to pack and measure.", valueName: "SOURCE_DIR"))
        var source: String?
        @Option(help: "Measured reads per entry and backend.") var iterations: Int = 5
        @Option(help: ArgumentHelp("Write the full report as JSON.", valueName: "FILE")) var json: String?
        @Option(help: ArgumentHelp("Write one row per entry and backend as CSV.", valueName: "FILE")) var csv: String?
        @Option(help: ArgumentHelp("Write a self-contained HTML report with charts.", valueName: "FILE")) var html:
            String?
        @Option(
            name: .customLong("pack"),
            help: ArgumentHelp(
                "Measure an existing pack, a path or an http(s):// URL (repeatable).", valueName: "FILE"))
        var packs: [String] = []
        @Option(help: ArgumentHelp("Generate and measure a synthetic corpus.", valueName: "standard")) var corpus:
            PerfCorpus?
        @Flag(help: "Do not print the table (the files are still written).") var quiet = false
        @Flag(
            help:
                "Also read every zip pack through libzip's own decoder (backend zip-libzip), to show the bulk-AES speed-up."
        )
        var withLibzip = false
        @Option(
            name: .customLong("keep-work"),
            help: ArgumentHelp(
                "Create the work directory (corpus, installed packs) inside DIR and keep it, to re-measure the same packs.",
                valueName: "DIR"))
        var keepWork: String?
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions

        func validate() throws {
            let inputs = (source != nil ? 1 : 0) + (packs.isEmpty ? 0 : 1) + (corpus != nil ? 1 : 0)
            guard inputs == 1 else {
                throw ValidationError("give exactly one of SOURCE_DIR, --pack FILE (repeatable) or --corpus standard")
            }
            guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
        }

        func run() throws {
            try reporting {
                let input: PerfConfiguration.Input
                let credential: PackCredential?
                if let source {
                    input = .source(URL(fileURLWithPath: source))
                    credential = try credentials.given()
                } else if let corpus {
                    input = .corpus(corpus)
                    credential = try credentials.given()
                } else {
                    input = .packs(
                        try packs.map {
                            guard AssetPacks.isRemote($0) else { return URL(fileURLWithPath: $0) }
                            guard let url = URL(string: $0) else {
                                throw AssetPackError(.invalidArgument, "\($0) is not a valid URL")
                            }
                            return url
                        })
                    credential =
                        try packs.contains(where: AssetPacks.isRemote)
                        ? credentials.given() : credentials.resolve(needed: try packs.contains(where: needsCredential))
                }
                var configuration = PerfConfiguration(input: input)
                configuration.iterations = iterations
                configuration.credential = credential
                configuration.trustedKeys = try trust.keys()
                if !configuration.trustedKeys.isEmpty && packs.isEmpty {
                    throw AssetPackError(
                        .invalidArgument, "--trust applies to --pack inputs (give a signed and an unsigned pack)")
                }
                configuration.probeToolchain = true
                configuration.compareLibzipDecoder = withLibzip
                if let keepWork {
                    do {
                        try FileManager.default.createDirectory(atPath: keepWork, withIntermediateDirectories: true)
                    } catch {
                        throw AssetPackError(.io, "cannot create \(keepWork): \(error.localizedDescription)")
                    }
                    configuration.workParent = URL(fileURLWithPath: keepWork)
                    configuration.keepWorkDirectory = true
                }
                configuration.command = (["assetpack"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
                let progress = ProgressLine(enabled: isatty(STDERR_FILENO) == 1, unit: "steps")
                configuration.progress = { progress.update(done: $0.done, total: $0.total, label: $0.phase) }
                let report: PerfReport
                do {
                    report = try PerfRunner.run(configuration)
                } catch {
                    progress.finish()
                    throw error
                }
                progress.finish()
                if let json { try write(try report.jsonData(), to: json) }
                if let csv { try write(Data(report.renderCSV().utf8), to: csv) }
                if let html { try write(Data(report.renderHTML().utf8), to: html) }
                if !quiet { print(report.renderText(), terminator: "") }
                if keepWork != nil {
                    for label in report.backends {
                        if let pack = report.packs[label] { printNote("kept \(label) pack: \(pack.path)") }
                    }
                }
                let failed = report.entries.contains { $0.backends.values.contains { !$0.crcOk } }
                if failed { throw AssetPackError(.integrityFailure, "some reads did not verify (see CHECK)") }
            }
        }

        /// Whether reading `path` needs a password: containers always, zips with encrypted entries.
        private func needsCredential(_ path: String) throws -> Bool {
            if try AssetPacks.driver(for: AssetPacks.sniff(path)).checksCredentialAtOpen { return true }
            return try AssetPacks.open(path, credential: nil).entries.contains { $0.encryption != .none }
        }

        private func write(_ data: Data, to path: String) throws {
            let url = URL(fileURLWithPath: path)
            do {
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try data.write(to: url, options: .atomic)
            } catch {
                throw AssetPackError(.io, "cannot write \(path): \(error.localizedDescription)")
            }
        }
    }
}

private func printNote(_ message: String) {
    FileHandle.standardError.write(Data("assetpack: \(message)\n".utf8))
}

extension PerfCorpus: ExpressibleByArgument {}
