#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackTestSupport
import Foundation
import Testing

/// docs/CLI.md is the parser's own help (`make cli-doc`): every subcommand the binary lists has a
/// section holding its `--help` verbatim, so the reference cannot drift from the options.
@Suite struct CLIReferenceTests {
    static let reference: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("docs/CLI.md"), encoding: .utf8)) ?? ""
    }()

    static func help(_ arguments: [String]) throws -> String {
        let run = try CLI.run(arguments + ["--help"], environment: ["COLUMNS": "100"])
        #expect(run.status == 0, "\(run.stderr)")
        return run.text
    }

    @Test func everySubcommandsHelpIsInTheReference() throws {
        let top = try Self.help([])
        #expect(Self.reference.contains(top), "docs/CLI.md lacks `assetpack --help`: run make cli-doc")
        let subcommands = top.components(separatedBy: "SUBCOMMANDS:").last!.split(separator: "\n")
            .filter { $0.hasPrefix("  ") && $0.dropFirst(2).first?.isLowercase == true }
            .map { String($0.dropFirst(2).prefix { $0 != " " }) }
        #expect(subcommands.count >= 9, "\(subcommands)")
        for sub in subcommands {
            #expect(Self.reference.contains("## `assetpack \(sub)`"), "no section for \(sub)")
            #expect(
                Self.reference.contains(try Self.help([sub])),
                "docs/CLI.md's `assetpack \(sub)` is not its --help: run make cli-doc")
        }
    }
}
#endif
