import Foundation

// What the two command-line tools share: `assetpack` (the CLI) and `assetpack-pack` (the lean
// packing tool the PackAssets build plugin runs). Kept here so that the exit codes, the credential
// files and the expiry syntax cannot drift apart between them.

extension AssetPackError.Code {
    /// The tools' exit-code contract for an error of this code: 2 missing or wrong password,
    /// 3 entry not found, 4 integrity, 5 untrusted, 6 remote, 1 anything else (64, usage, is
    /// the tools' own: ``ToolExit/usage``).
    package var toolExitCode: Int32 {
        switch self {
        case .missingPassword, .wrongPassword: 2
        case .entryNotFound: 3
        case .integrityFailure: 4
        case .untrusted: 5
        case .remote: 6
        default: 1
        }
    }
}

/// Exit codes the tools use that no ``AssetPackError`` carries.
package enum ToolExit {
    /// A usage error: an unknown option, a missing or malformed value (BSD's `EX_USAGE`).
    package static let usage: Int32 = 64
}

extension PackCredential {
    /// The password on the first line of the file at `path` (a trailing `\r` dropped).
    /// - Throws: `.io` when the file cannot be read, `.missingPassword` when the line is empty.
    package static func passwordFile(_ path: String) throws -> PackCredential {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AssetPackError(.io, "cannot read password file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let line =
            text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let password = line.hasSuffix("\r") ? String(line.dropLast()) : line
        guard !password.isEmpty else {
            throw AssetPackError(.missingPassword, "password file \(path) is empty")
        }
        return .password(password)
    }

    /// The raw 32-byte container key in the file at `path`: 32 bytes, or 64 hex digits
    /// (whitespace around them ignored).
    /// - Throws: `.io` when the file cannot be read, `.invalidArgument` when it holds neither.
    package static func keyFile(_ path: String) throws -> PackCredential {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AssetPackError(.io, "cannot read key file \(path)")
        }
        if data.count == 32 { return .key([UInt8](data)) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 64, let bytes = hexBytes(text) { return .key(bytes) }
        throw AssetPackError(.invalidArgument, "key file \(path) must hold 32 raw bytes or 64 hex digits")
    }

    /// The bytes of an even number of hex digits; `nil` when one is not a hex digit.
    static func hexBytes(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var chars = text.makeIterator()
        while let a = chars.next(), let b = chars.next() {
            guard let byte = UInt8(String([a, b]), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}

extension PackRelease {
    /// What the tools say about an expiry they cannot read.
    package static let expirySyntax =
        "give an ISO 8601 date (2027-01-31) or date-time (2027-01-31T12:00:00Z), or +N days or hours (+30d, +12h)"

    /// An expiry as the tools take it: an ISO 8601 date (midnight UTC) or date-time with a zone,
    /// or `+Nd` / `+Nh` after `now`; `nil` when `text` is none of these.
    package static func parseExpiry(_ text: String, now: Date) -> Date? {
        if text.hasPrefix("+"), let unit = text.last, let count = UInt32(text.dropFirst().dropLast()) {
            switch unit {
            case "d": return now.addingTimeInterval(TimeInterval(count) * 86_400)
            case "h": return now.addingTimeInterval(TimeInterval(count) * 3_600)
            default: return nil
            }
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = text.contains("T") ? [.withInternetDateTime] : [.withFullDate]
        return formatter.date(from: text)
    }

    /// `--expires text` as an instant after `now`, or what the tools say when it is not one:
    /// malformed, or not in the future (a `what` signed so would be refused at once).
    package static func futureExpiry(_ text: String, now: Date, of what: String) -> Result<Date, ExpiryMessage> {
        guard let date = parseExpiry(text, now: now) else {
            return .failure(ExpiryMessage(text: "--expires \(text): \(expirySyntax)"))
        }
        guard date > now else {
            return .failure(
                ExpiryMessage(text: "--expires \(text) is not in the future: the \(what) would be refused at once"))
        }
        return .success(date)
    }
}

/// Why `--expires` was refused, for a tool to report as its usage error.
package struct ExpiryMessage: Error {
    package let text: String
}
