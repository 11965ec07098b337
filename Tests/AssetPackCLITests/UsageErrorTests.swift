#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackTestSupport
import Foundation
import Testing

@testable import assetpack

/// What a newcomer's first mistakes print: a misspelt command, a password on the command line,
/// a missing or bad option. Every usage error is `assetpack: error: …` on stderr (the style of
/// every other error), exit 64, nothing on stdout. Parsed in-process, as swift-argument-parser
/// tests itself; one test runs the binary to show it prints the same.
@Suite struct UsageErrorTests {
    /// What the CLI prints and exits with for `arguments` that do not parse, found in-process
    /// (no binary started): `AssetPackCommand.parseAsRoot` and the report `main` prints.
    struct Parsed {
        var status: Int32
        var stderr: String
    }

    static func parse(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> Parsed {
        do {
            _ = try AssetPackCommand.parseAsRoot(arguments)
            Issue.record("\(arguments) parsed", sourceLocation: sourceLocation)
            return Parsed(status: 0, stderr: "")
        } catch {
            guard let (text, status) = AssetPackCommand.report(for: error, arguments: arguments) else {
                return Parsed(status: 0, stderr: "")
            }
            return Parsed(status: status, stderr: text + "\n")
        }
    }

    static func expectUsageError(_ run: Parsed, _ arguments: [String]) {
        let shown = arguments.joined(separator: " ")
        #expect(run.status == 64, "\(shown): \(run.status) \(run.stderr)")
        #expect(run.stderr.hasPrefix("assetpack: error: "), "\(shown): \(run.stderr)")
        #expect(!run.stderr.contains("Error:"), "\(shown): two error styles: \(run.stderr)")
    }

    /// The binary prints what the in-process report says, on stderr only, and exits with its status.
    @Test func theBinaryPrintsTheReportAndExits64() throws {
        for arguments in [
            ["instal", "assets.pack"], ["list", "p.pack", "--jsn"], ["cat", "p.pack", "--password", "x"],
        ] {
            let run = try CLI.run(arguments)
            let parsed = Self.parse(arguments)
            #expect(run.status == parsed.status && run.status == 64, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments): \(run.text)")
            #expect(run.stderr == parsed.stderr, "\(arguments)")
        }
    }

    @Test func aMisspeltCommandIsNamedWithTheClosestOne() throws {
        for (typed, meant) in [
            ("instal", "install"), ("lst", "list"), ("verfy", "verify"), ("pakc", "pack"), ("extrakt", "extract"),
        ] {
            let arguments = [typed, "assets.pack", "--into", "/tmp/nowhere"]
            let run = Self.parse(arguments)
            Self.expectUsageError(run, arguments)
            #expect(
                run.stderr.hasPrefix("assetpack: error: unknown command '\(typed)'; did you mean '\(meant)'?"),
                "\(run.stderr)")
            #expect(!run.stderr.contains("Unknown option"), "\(run.stderr)")
        }
        let far = Self.parse(["frobnicate"])
        Self.expectUsageError(far, ["frobnicate"])
        #expect(
            far.stderr.hasPrefix(
                "assetpack: error: unknown command 'frobnicate'; the commands are pack, list, cat, extract, verify, install, release, keygen, perf"
            ), "\(far.stderr)")
        // `help COMMAND` is still a command.
        let help = try CLI.run(["help", "pack"])
        #expect(help.status == 0 && help.text.contains("--output"), "\(help.stderr)")
    }

    @Test func aPasswordOnTheCommandLineSaysWhereItGoes() throws {
        for arguments in [
            ["cat", "assets.pack", "a.txt", "--password", "s3cret-value"],
            ["pack", "Assets", "--output", "a.pack", "--password=s3cret-value"],
            ["--password", "s3cret-value", "list", "assets.pack"],
        ] {
            let run = Self.parse(arguments)
            Self.expectUsageError(run, arguments)
            #expect(run.stderr.contains("passwords never go on the command line"), "\(run.stderr)")
            for way in ["$ASSETPACK_PASSWORD", "--password-env", "--password-file", "prompt"] {
                #expect(run.stderr.contains(way), "\(way): \(run.stderr)")
            }
            #expect(!run.stderr.contains("s3cret-value"), "the password is echoed: \(run.stderr)")
            #expect(!run.stderr.contains("Unknown option"), "\(run.stderr)")
        }
        // After `--` it is an entry's name, not an option.
        let dir = TemporaryDirectory("usage")
        let source = try dir.write(["--password": [1]], under: "src")
        let pack = dir.appending("p.pack").path
        #expect(try CLI.run(["pack", source.path, "--output", pack], password: "pw").status == 0)
        let cat = try CLI.run(["cat", pack, "--", "--password"], password: "pw")
        #expect(cat.status == 0 && cat.stdout == [1], "\(cat.stderr)")
    }

    @Test func everyUsageErrorHasOneStyle() throws {
        let dir = TemporaryDirectory("usage")
        let source = try dir.write(["a.txt": [1]], under: "src")
        for arguments in [
            ["pack", source.path],  // missing --output
            ["pack", source.path, "--output", dir.appending("c").path, "--chunk-kib", "3"],  // validate()
            ["pack", source.path, "--output", dir.appending("c").path, "--format", "rar"],  // bad value
            ["cat", "p.pack"],  // missing argument
            ["install", "p.pack"],  // neither --into nor --app-id
            ["list", "p.pack", "--jsn"],  // unknown option
            ["keygen"],
            ["keygen", "--out", ""],  // empty arguments, here and as the command
            [""],
            ["perf"],
        ] {
            Self.expectUsageError(Self.parse(arguments), arguments)
        }
        // Help and the version still go to stdout with status 0.
        let help = try CLI.run(["--help"])
        #expect(help.status == 0 && help.text.contains("USAGE:") && help.stderr.isEmpty, "\(help.stderr)")
        let version = try CLI.run(["--version"])
        #expect(version.status == 0 && !version.text.isEmpty && version.stderr.isEmpty)
    }
}
#endif
