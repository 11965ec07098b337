import ArgumentParser
import AssetPack
import Foundation

/// Usage errors in the CLI's one style (`assetpack: error: …`, exit 64), and the two mistakes a
/// newcomer makes first said plainly: a misspelt command (ArgumentParser would complain about the
/// first option it does not know instead) and a password on the command line.
enum UsageErrors {
    /// Options that would put a password on the command line; none exists, on purpose.
    static let passwordOptions: Set<String> = ["--password", "--passwd", "--pass", "--passphrase", "--pw"]

    /// What to say for a usage error in `arguments` (without the program name), when it is one of
    /// the mistakes above; `nil` leaves ArgumentParser's message.
    static func hint(for arguments: [String], commands: [String]) -> String? {
        // Options end at `--`: after it a `--password` is an entry's name.
        let options = arguments.prefix { $0 != "--" }
        if options.contains(where: { passwordOptions.contains(String($0.prefix { $0 != "=" })) }) {
            return "passwords never go on the command line (any user can read it there, with ps): set "
                + "$ASSETPACK_PASSWORD, or use --password-env NAME, --password-file PATH, or answer the prompt "
                + "on a terminal (a container also takes --key-file PATH)"
        }
        if let first = arguments.first, !first.hasPrefix("-"), !commands.contains(first), first != "help" {
            let shown = EntryPath.printable(first)
            if let closest = closest(to: first, in: commands) {
                return "unknown command '\(shown)'; did you mean '\(closest)'?"
            }
            return "unknown command '\(shown)'; the commands are \(commands.joined(separator: ", "))"
        }
        return nil
    }

    /// The command `typed` most likely meant: within two edits (one for names of up to four
    /// letters), or a prefix of exactly one; `nil` when nothing is that close or two tie.
    static func closest(to typed: String, in commands: [String]) -> String? {
        let lower = typed.lowercased()
        let prefixed = commands.filter { $0.hasPrefix(lower) }
        if lower.count >= 2, prefixed.count == 1 { return prefixed[0] }
        let scored = commands.map { ($0, distance(lower, $0)) }.sorted { $0.1 < $1.1 }
        guard let best = scored.first, best.1 <= (lower.count <= 4 ? 1 : 2) else { return nil }
        if scored.count > 1, scored[1].1 == best.1 { return nil }
        return best.0
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    /// neighbours ("pakc" → "pack") each count one.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    /// ArgumentParser's text for a usage error, with its `Error: ` replaced by the CLI's prefix.
    static func restyled(_ text: String) -> String {
        text.hasPrefix("Error: ") ? "assetpack: error: " + text.dropFirst("Error: ".count) : "assetpack: error: " + text
    }
}
