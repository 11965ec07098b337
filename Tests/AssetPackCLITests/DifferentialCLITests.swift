#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Differential, end to end: the built `assetpack` binary's read paths (`cat`, `extract`, `verify`)
/// over seeded trees packed in every format × encryption/chunk size × compression. The password
/// goes in `$ASSETPACK_PASSWORD`, never on the command line.
///
/// Seeds: `DifferentialSeeds` (`ASSETPACK_SEED=N` to reproduce one, `ASSETPACK_SOAK_SEEDS=K`, `make soak`).
@Suite(.slow) struct DifferentialCLITests {
    static let password = "differential cli pässword"

    struct Case: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var combination: PackCombination
        var testDescription: String { "seed \(seed) \(combination)" }
    }

    /// Each entry costs a process per read path, so the CLI suite runs the first fixed seed only
    /// (its `.cli` tree holds every stream-buffer multiple in both kinds) unless seeds are given.
    static var cases: [Case] {
        let seeds =
            DifferentialSeeds.current == DifferentialSeeds.fixed
            ? [DifferentialSeeds.fixed[0]] : DifferentialSeeds.current
        return seeds.flatMap { seed in PackCombination.all.map { Case(seed: seed, combination: $0) } }
    }

    static func describe(_ c: Case, _ entry: GeneratedEntry?, _ command: String) -> String {
        let what = entry.map { "entry \"\($0.path)\" size \($0.bytes.count) (\($0.kind.rawValue))" } ?? "every entry"
        return "seed \(c.seed), \(c.combination), \(what), `assetpack \(command)` — "
            + DifferentialSeeds.reproduce(c.seed, filter: "DifferentialCLITests")
    }

    @Test("cat, extract and verify return the source bytes", arguments: cases)
    func catExtractVerify(_ c: Case) throws {
        let tree = TreeGenerator.tree(seed: c.seed, profile: .cli)
        let dir = TemporaryDirectory("assetpack-differential-cli")
        let source = try dir.write(tree.files, under: "src")
        let pack = dir.appending(c.combination.format == .zip ? "pack.zip" : "pack.apack")
        try AssetPacks.pack(source: source, to: pack, options: c.combination.options(password: Self.password))
        let password = c.combination.encrypted ? Self.password : nil

        // cat: every entry, byte for byte on stdout.
        for entry in tree.entries {
            let run = try CLI.run(["cat", pack.path, entry.path], password: password)
            if run.status != 0 || run.signaled {
                Issue.record(
                    "exit \(run.status)\(run.signaled ? " (signal)" : ""): \(run.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) | \(Self.describe(c, entry, "cat"))"
                )
                continue
            }
            if let difference = run.stdout.withUnsafeBytes({ byteDifference($0, entry.bytes) }) {
                Issue.record("wrong bytes on stdout: \(difference) | \(Self.describe(c, entry, "cat"))")
            }
        }

        // extract --into: every file byte for byte, nothing else in the directory.
        let out = dir.appending("extracted")
        let extract = try CLI.run(["extract", pack.path, "--into", out.path], password: password)
        if extract.status != 0 || extract.signaled {
            Issue.record(
                "exit \(extract.status): \(extract.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) | \(Self.describe(c, nil, "extract --into DIR"))"
            )
        }
        var found = Self.files(under: out)
        for entry in tree.entries {
            guard found.removeValue(forKey: entry.path) != nil else {
                // `extract` stops at the first failing entry: extract this one alone to tell a failure
                // of its own from one that was merely never reached.
                let alone = dir.appending("alone-\(entry.crc32)-\(entry.bytes.count)")
                let single = try CLI.run(["extract", pack.path, entry.path, "--into", alone.path], password: password)
                let data = try? Data(contentsOf: alone.appendingPathComponent(entry.path))
                if single.status != 0 || single.signaled {
                    Issue.record(
                        "exit \(single.status): \(single.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) | \(Self.describe(c, entry, "extract PACK ENTRY --into DIR"))"
                    )
                } else if let difference = data.map({ $0.withUnsafeBytes { byteDifference($0, entry.bytes) } })
                    ?? "no file"
                {
                    Issue.record(
                        "wrong extracted file: \(difference) | \(Self.describe(c, entry, "extract PACK ENTRY --into DIR"))"
                    )
                } else if extract.status == 0 {
                    Issue.record("not extracted by a successful run | \(Self.describe(c, entry, "extract --into DIR"))")
                }
                continue
            }
            let data = try Data(contentsOf: out.appendingPathComponent(entry.path))
            if let difference = data.withUnsafeBytes({ byteDifference($0, entry.bytes) }) {
                Issue.record(
                    "wrong bytes in the extracted file: \(difference) | \(Self.describe(c, entry, "extract --into DIR"))"
                )
            }
        }
        if !found.isEmpty {
            Issue.record(
                "extract left files that are not entries: \(found.keys.sorted()) | \(Self.describe(c, nil, "extract --into DIR"))"
            )
        }

        // verify: exit 0, an "ok" line for every entry, and the summary.
        let verify = try CLI.run(["verify", pack.path], password: password)
        if verify.status != 0 || verify.signaled {
            Issue.record(
                "exit \(verify.status): \(verify.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) | \(Self.describe(c, nil, "verify"))"
            )
        }
        let lines = verify.text.split(separator: "\n").map(String.init)
        for entry in tree.entries
        where !lines.contains(where: { $0.hasPrefix("ok ") && $0.hasSuffix(" " + entry.path) }) {
            let line = lines.first { $0.hasSuffix(" " + entry.path) } ?? "(no line)"
            Issue.record("no ok line; its line: \(line) | \(Self.describe(c, entry, "verify"))")
        }
        let summary = "\(tree.entries.count) of \(tree.entries.count) entries verified"
        if !verify.stderr.split(separator: "\n").contains(Substring(summary)) {
            Issue.record("no \"\(summary)\" line; last line: \(lines.last ?? "") | \(Self.describe(c, nil, "verify"))")
        }
    }

    /// Regular files (and anything else that is not a directory) below `root`, by relative path.
    static func files(under root: URL) -> [String: Bool] {
        var out: [String: Bool] = [:]
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return out }
        while let relative = walker.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(relative).path, isDirectory: &isDir),
                isDir.boolValue
            {
                continue
            }
            out[relative] = true
        }
        return out
    }
}
#endif
