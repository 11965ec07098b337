import ArgumentParser
import AssetPack
import AssetPackRemote
import Foundation

extension AssetPackCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read and check every entry, printing the time each took.",
            discussion: """
                Every record is read, streamed with bounded memory, and checked; a path that more than one record \
                has is itself a failure. Over a set (--over, a release), the records a pack above replaces or \
                deletes are read and checked too: PACK names each record's pack, and --json marks them "served": false. The table goes to stdout, the summary and the legend to stderr; \
                --quiet prints neither (failures still go to stderr), --json prints a document instead.

                CHECK says what verified the bytes: sig (with --trust: the bytes are the ones the publisher signed), gcm+crc (container: AES-GCM tag per chunk, then CRC-32), \
                mac+crc (WinZip AES: HMAC-SHA1, then CRC-32), mac (WinZip AE-2: HMAC-SHA1 only), \
                crc (ZipCrypto or unencrypted zip: CRC-32 only, which does not stop tampering). \
                MS is milliseconds.

                A signed pack is also checked against its own key on every signed byte, as install checks it \
                (with --trust: against the trusted keys). \
                Exits non-zero if any entry fails (2 password, 4 integrity, 5 untrusted with --trust).
                """)

        @Argument(help: PackSetOptions.packHelp) var pack: String
        @Flag(help: "Print a JSON document on stdout instead of the table.") var json = false
        @OptionGroup var set: PackSetOptions
        @OptionGroup var quiet: QuietOption
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions
        @OptionGroup var network: NetworkOptions

        /// The CHECK column: wide enough for its longest value, an error code ("integrity-failure").
        static let checkWidth = 17

        static let legend =
            "CHECK: sig = publisher signature (--trust), gcm = AES-GCM tag per chunk, mac = WinZip AES HMAC-SHA1, crc = CRC-32 (no protection against tampering)"

        func run() throws {
            try reporting {
                let opened = try credentials.open(pack, set: set, forData: true, trust: trust, network: network)
                let reader = opened.reader
                var results: [VerifyDocument.Entry] = []
                var firstFailure: AssetPackError?
                let table = !json && !quiet.quiet
                // A set: which pack each record was read from, as `list` shows it.
                let packColumn = PackColumn(opened.names)
                if table {
                    print(
                        ([
                            pad("STATUS", 6), pad("SIZE", 12, right: true), pad("MS", 10, right: true),
                            pad("CHECK", Self.checkWidth),
                        ] + packColumn.cell("PACK") + ["PATH"]).joined(separator: " "))
                }
                /// Reads and checks record `e` of `source` (the pack named `pack`, or the reader of the
                /// whole set), adding its row.
                func verify(_ e: EntryInfo, in source: any PackReader, pack: String?, served: Bool) throws {
                    do {
                        let timing = try source.verify(e.path)
                        let check = (source.publisher == nil ? "" : "sig+") + Self.check(e, timing)
                        results.append(
                            .init(
                                path: e.path, size: e.size, status: "ok", check: check, seconds: timing.total,
                                pack: pack, served: served ? nil : false))
                        if table {
                            print(
                                ([
                                    pad("ok", 6), pad(String(e.size), 12, right: true),
                                    pad(String(format: "%.3f", timing.total * 1000), 10, right: true),
                                    pad(check, Self.checkWidth),
                                ] + packColumn.cell(pack) + [EntryPath.printable(e.path)]).joined(separator: " "))
                        }
                    } catch let error as AssetPackError {
                        firstFailure = firstFailure ?? error
                        results.append(
                            .init(
                                path: e.path, size: e.size, status: "fail", error: error.message, pack: pack,
                                served: served ? nil : false))
                        if table {
                            print(
                                ([
                                    pad("FAIL", 6), pad(String(e.size), 12, right: true), pad("-", 10, right: true),
                                    pad(error.code.rawValue, Self.checkWidth),
                                ] + packColumn.cell(pack) + [EntryPath.printable(e.path)]).joined(separator: " "))
                        }
                        let named = error.naming(e.path)
                        printError((served || pack == nil ? named : named.naming(pack: pack!)).description)
                    }
                }
                try reader.checkIndex()  // what opening left to reads: the whole index
                for e in reader.entries { try verify(e, in: reader, pack: e.pack, served: true) }
                // A set: the records no pack serves, because a pack above replaces or deletes them,
                // are records too; a damaged one is a damaged pack, whatever the set reads.
                var notServed = 0
                if let set = reader as? PackSet {
                    let servedBy = Dictionary(
                        reader.entries.map { ($0.path, $0.pack) }, uniquingKeysWith: { a, _ in a })
                    for member in set.members {
                        for e in member.reader.entries where servedBy[e.path] ?? nil != member.name {
                            try verify(e, in: member.reader, pack: member.name, served: false)
                            notServed += 1
                        }
                    }
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    let document = VerifyDocument(
                        format: reader.format.rawValue, entries: results,
                        release: reader.release.map(ReleaseDocument.init))
                    print(String(decoding: try encoder.encode(document), as: UTF8.self))
                } else {
                    let ok = results.filter { $0.status == "ok" }.count
                    quiet.say(
                        "\(ok) of \(plural(results.count, "entry", "entries")) verified"
                            + (notServed == 0
                                ? "" : " (\(notServed) of them replaced or deleted by a pack above, read all the same)")
                    )
                    if let release = reader.release { quiet.say("signed release: \(release.summary)") }
                    quiet.say(Self.legend)
                }
                if let firstFailure { throw ExitCode(cliExitCode(for: firstFailure.code)) }
                // With --trust, every stored byte too, as an installer checks it: also the bytes no
                // entry read returns (the zip's .assetpack/manifest, say). Without it, a signed pack
                // against its own key, as an installer without trusted keys checks it (exit 4).
                if reader.publisher != nil {
                    for source in opened.sources { _ = try AssetPacks.trustedSignature(source, trusting: trust.keys()) }
                } else {
                    for source in opened.sources { _ = try AssetPacks.intactSignature(source, what: source.name) }
                }
            }
        }

        /// What verified an entry's bytes: its encryption says, whatever the format.
        static func check(_ entry: EntryInfo, _ timing: EntryTiming) -> String {
            let crc = timing.crcChecked ? "crc" : nil
            let cipher: String? =
                switch entry.encryption {
                case .aes256GCM: "gcm"
                case .aes128, .aes192, .aes256: "mac"
                case .none, .zipCrypto, .other: nil
                }
            let checks = [cipher, crc].compactMap { $0 }.joined(separator: "+")
            return checks.isEmpty ? "none" : checks
        }
    }
}

/// `verify --json`: one record per entry; `check` and `seconds` for entries that verified, `error` for those that failed.
struct VerifyDocument: Encodable {
    struct Entry: Encodable {
        var path: String
        var size: UInt64
        var status: String
        var check: String?
        var seconds: Double?
        var error: String?
        /// With --over: the pack that served the entry, or holds the record (absent for a single pack).
        var pack: String?
        /// `false` for a record of a set's pack that no pack serves (a pack above replaces or
        /// deletes its path): read and checked all the same. Absent for the entries served.
        var served: Bool?
    }
    var format: String
    var entries: [Entry]
    /// With --trust: what the verified signature states.
    var release: ReleaseDocument?
}
