#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The documentation is a contract: every `--flag` that README.md, the DocC articles or any
/// `--help` shows must parse, spelled exactly as shown, on the built binary.
@Suite struct ContractTests {
    static let password = "contract-pass"
    static let subcommands = ["pack", "list", "cat", "extract", "verify", "install", "release", "keygen", "perf"]

    /// The repository root, found from this file's path.
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// Every `--flag` token in `text` (a leading `--` not preceded by a letter, digit or dash).
    static func flags(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "(?<![A-Za-z0-9-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            regex.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    /// The options a subcommand's `--help` declares in its OPTIONS section, and whether each takes a value.
    static func declaredOptions(help: String) -> [String: Bool] {
        var declared: [String: Bool] = [:]
        var inOptions = false
        let regex = try! NSRegularExpression(pattern: "(--[a-z0-9-]+)( <[^>]+>)?")
        for line in help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("OPTIONS:") {
                inOptions = true
                continue
            }
            if !line.hasPrefix(" ") && !line.isEmpty { inOptions = false }
            // Option lines are indented two spaces; wrapped help text is indented further.
            guard inOptions, line.hasPrefix("  -") else { continue }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // The option column ends at the first run of two spaces (the help text follows).
            let column = trimmed.components(separatedBy: "  ").first ?? trimmed
            let range = NSRange(column.startIndex..., in: column)
            for match in regex.matches(in: column, range: range) {
                let name = String(column[Range(match.range(at: 1), in: column)!])
                declared[name] = match.range(at: 2).location != NSNotFound
            }
        }
        return declared
    }

    static func help(_ arguments: [String]) throws -> String {
        let run = try CLI.run(arguments + ["--help"])
        #expect(run.status == 0, "\(arguments) --help: \(run.stderr)")
        return run.text
    }

    /// Where each documented flag comes from.
    static func documentedFlags() throws -> [String: [String]] {
        var sources: [String: [String]] = [:]
        var files = [root.appendingPathComponent("README.md")]
        let docc = root.appendingPathComponent("Sources/AssetPack/AssetPack.docc")
        files += try FileManager.default.contentsOfDirectory(atPath: docc.path).filter { $0.hasSuffix(".md") }.sorted()
            .map { docc.appendingPathComponent($0) }
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for flag in flags(in: text) { sources[flag, default: []].append(file.lastPathComponent) }
        }
        #expect(sources["--output"] != nil, "README.md should document pack --output")
        for command in [[]] + subcommands.map({ [$0] }) {
            for flag in flags(in: try help(command)) {
                sources[flag, default: []].append((["assetpack"] + command + ["--help"]).joined(separator: " "))
            }
        }
        return sources
    }

    /// A fixture: a source tree, one pack of each format, credential files.
    final class Fixture: Sendable {
        let dir = TemporaryDirectory("contract")
        let source: String
        let zipPack: String
        let containerPack: String
        let passwordFile: String
        let keyFile: String
        let keyPack: String
        /// A publisher key pair; the fixture's packs are signed with it.
        let signKey: String
        let trustKey: String

        init() throws {
            source = try dir.write(["a.txt": Array("hello".utf8), "b/c.json": Array("{}".utf8)], under: "src").path
            zipPack = dir.appending("p.zip").path
            containerPack = dir.appending("p.apack").path
            passwordFile = dir.appending("pw").path
            keyFile = dir.appending("key").path
            keyPack = dir.appending("k.apack").path
            signKey = dir.appending("publisher.key").path
            trustKey = dir.appending("publisher.pub").path
            let keygen = try CLI.run(["keygen", "--out", dir.appending("publisher").path])
            #expect(keygen.status == 0, "\(keygen.stderr)")
            try Data("\(ContractTests.password)\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
            try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: keyFile))
            for (pack, extra) in [(zipPack, ["--format", "zip"]), (containerPack, ["--format", "container"])] {
                let run = try CLI.run(
                    ["pack", source, "--output", pack, "--sign-key", signKey] + extra, password: ContractTests.password)
                #expect(run.status == 0, "\(run.stderr)")
            }
            let run = try CLI.run(
                [
                    "pack", source, "--output", keyPack, "--format", "container", "--key-file", keyFile, "--sign-key",
                    signKey,
                ])
            #expect(run.status == 0, "\(run.stderr)")
        }

        private let counter = Counter()
        func fresh(_ name: String) -> String {
            counter.increment()
            return dir.appending("\(name)-\(counter.value)").path
        }
    }

    /// A valid invocation of `command` that uses `flag` (spelled as documented), or `nil` when the
    /// test does not know a valid value for it.
    static func invocation(_ command: String, _ flag: String, takesValue: Bool, _ f: Fixture) -> [String]? {
        let usesKey = flag == "--key-file"
        let pack = usesKey ? f.keyPack : f.zipPack
        var base: [String]
        var required: [String: String] = [:]  // options the base already needs
        switch command {
        case "pack":
            base = ["pack", f.source]
            required["--output"] = f.fresh("out") + ".pack"
            if usesKey || ["--scrypt-cost", "--compact"].contains(flag) { required["--format"] = "container" }
            // The release a signature binds: only with a signing key.
            if ["--pack-version", "--expires", "--pack-name", "--allow-rollback"].contains(flag) {
                required["--sign-key"] = f.signKey
            }
        case "list": base = ["list", pack]
        case "cat": base = ["cat", pack, "a.txt"]
        case "extract":
            base = ["extract", pack]
            required["--into"] = f.fresh("x")
        case "verify": base = ["verify", pack]
        case "install":
            base = ["install", pack]
            if flag != "--app-id" { required["--into"] = f.fresh("priv") }
        case "release":
            base = ["release", f.zipPack]
            required = ["--sign-key": f.signKey, "--release-version": "1", "--output": f.fresh("release") + ".json"]
        case "keygen":
            base = ["keygen"]
            if flag != "--out" { required["--out"] = f.fresh("publisher") }
        case "perf":
            if flag == "--corpus" {
                // The standard corpus is ~151 MiB; a --keep-work that cannot be created makes the
                // run stop (exit 1) right after parsing, which is all this test needs.
                base = ["perf", "--keep-work", f.passwordFile + "/not-a-dir"]
            } else {
                base = ["perf", "--iterations", "1"]
                if flag != "--pack" { required["--pack"] = pack }
            }
        default: base = [command]
        }
        let values: [String: String] = [
            "--output": f.fresh("out") + ".pack", "--format": "zip", "--encryption": "aes256", "--compression": "auto",
            "--chunk-kib": "64", "--codec": "zstd", "--scrypt-cost": "12", "--level": "fast", "--into": f.fresh("into"),
            "--app-id": "com.example.contract",
            "--name": "renamed.pack",
            "--password-env": "CONTRACT_PASSWORD", "--password-file": f.passwordFile, "--key-file": f.keyFile,
            "--iterations": "1", "--json": f.fresh("r") + ".json", "--csv": f.fresh("r") + ".csv",
            "--html": f.fresh("r") + ".html", "--pack": pack, "--corpus": "standard", "--keep-work": f.fresh("work"),
            "--out": f.fresh("publisher"), "--sign-key": f.signKey, "--trust": f.trustKey,
            "--pack-version": "3", "--expires": "+30d", "--pack-name": "assets", "--release-name": "game",
            "--release-version": "2",
            "--connect-timeout": "5", "--request-timeout": "60", "--min-rate": "1K", "--max-download": "1G",
            "--over": pack, "--folder": "a", "--patch-of": pack, "--ca-file": f.trustKey,
        ]
        if let value = required.removeValue(forKey: flag) {
            return base + [flag, value] + required.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        }
        var arguments = base + required.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        if takesValue {
            guard let value = values[flag] else { return nil }
            arguments += [flag, value]
        } else {
            arguments.append(flag)
        }
        return arguments
    }

    @Test(.slow) func everyDocumentedFlagParses() throws {
        let documented = try Self.documentedFlags()
        var declared: [String: [String: Bool]] = [:]
        for command in Self.subcommands { declared[command] = Self.declaredOptions(help: try Self.help([command])) }
        let fixture = try Fixture()
        var runs = 0
        for flag in documented.keys.sorted() where flag != "--help" && flag != "--version" {
            let where_ = documented[flag]!.joined(separator: ", ")
            let accepting = Self.subcommands.filter { declared[$0]?[flag] != nil }
            guard !accepting.isEmpty else {
                Issue.record("\(flag) (documented in \(where_)) is not an option of any subcommand")
                continue
            }
            for command in accepting {
                guard let arguments = Self.invocation(command, flag, takesValue: declared[command]![flag]!, fixture)
                else {
                    Issue.record("\(command) \(flag): add a valid value for it to ContractTests.invocation")
                    continue
                }
                let run = try CLI.run(
                    arguments, password: Self.password,
                    environment: [
                        "CONTRACT_PASSWORD": Self.password, "XDG_DATA_HOME": fixture.fresh("xdg"),
                        "TMPDIR": fixture.dir.path,
                    ])
                runs += 1
                #expect(
                    run.status != 64,
                    "\(arguments.joined(separator: " ")) (\(flag) documented in \(where_)): \(run.stderr)")
                #expect(!run.stderr.contains("Unknown option"), "\(arguments.joined(separator: " ")): \(run.stderr)")
                #expect(!run.signaled, "\(arguments.joined(separator: " ")) crashed")
            }
        }
        #expect(runs >= 20)
    }

    @Test func versionPrintsOneLine() throws {
        let run = try CLI.run(["--version"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.text.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, "\(run.text)")
    }

    @Test func chunkKiBIsSpelledAsDocumented() throws {
        let dir = TemporaryDirectory("contract")
        let source = try dir.write(["a.txt": [1, 2, 3]], under: "src")
        let run = try CLI.run(
            [
                "pack", source.path, "--output", dir.appending("c.apack").path, "--format", "container", "--chunk-kib",
                "64",
            ],
            password: Self.password)
        #expect(run.status == 0, "\(run.stderr)")
        let bad = try CLI.run(
            [
                "pack", source.path, "--output", dir.appending("d.apack").path, "--format", "container", "--chunk-kib",
                "3",
            ],
            password: Self.password)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--chunk-kib"))
    }
}
#endif
