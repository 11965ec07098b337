import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Cat: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write one entry's verified bytes to standard output (or to --output).",
            discussion: """
                Memory stays bounded whatever the entry's size. Container: each chunk is written after its \
                AES-GCM tag verified. Zip: the MAC and CRC cover the whole entry, so nothing is written \
                before they pass; entries over 64 MiB are first spooled to an unlinked 0600 file in $TMPDIR. \
                With --output, a file appears (atomically, by rename) only after the whole entry verified; a device or FIFO (/dev/null) is written into like standard output.
                """)

        @Argument(help: PackSetOptions.packHelp) var pack: String
        @Argument(help: "The entry's path.") var entry: String
        @OptionGroup var set: PackSetOptions
        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?
        @Flag(
            help: """
                Print the read's timing record to stderr: wall time from lookup to the last byte written \
                (for a URL, the download included), rate, and where the time went; then what opening the \
                pack (or the set's packs) took before it: a container derives its key there, a URL fetches the index.
                """)
        var timing = false
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions
        @OptionGroup var network: NetworkOptions

        func run() throws {
            try reporting {
                let opened = try credentials.open(pack, set: set, forData: true, trust: trust, network: network)
                let reader = opened.reader
                let watch = Stopwatch()
                let record = try write(reader)
                if timing {
                    let open = Self.describeOpen(
                        seconds: reader.openSeconds, packs: max(1, opened.names.count), kdf: reader.passwordKDF)
                    FileHandle.standardError.write(
                        Data("assetpack: \(Self.describe(record, wall: watch.elapsed)); \(open)\n".utf8))
                }
            }
        }

        /// `timing: PATH: N bytes in W ms (R MiB/s): lookup …, key derivation …, decrypt …, crc … ms
        /// (decoder)`: the read, from the lookup on (key derivation is the entry's own: PBKDF2 for a
        /// zip entry, a subkey for a container's).
        static func describe(_ t: EntryTiming, wall: Double) -> String {
            let rate = Units.rate(bytes: Double(t.bytesOut), seconds: wall)
            return "timing: \(t.path): \(t.bytesOut) bytes in \(ms(wall)) ms (\(rate)): lookup \(ms(t.lookup)), "
                + "key derivation \(ms(t.keyDerivation)), decrypt \(ms(t.decrypt)), crc \(ms(t.crc)) ms (\(t.decoder))"
        }

        /// `the open before it: O ms (scrypt 2^15)`, or `the open of N packs before it: O ms` for a
        /// set: apart from the read, because a container's password KDF (often longer than a small
        /// read) runs there, once per open.
        static func describeOpen(seconds: Double, packs: Int, kdf: ContainerKDF?) -> String {
            let what = packs > 1 ? "the open of \(packs) packs before it" : "the open before it"
            let note: String =
                switch kdf {
                case .scrypt(let logN, _, _)?: " (scrypt 2^\(logN))"
                case .pbkdf2SHA256(let n)?: " (PBKDF2, \(n) iterations)"
                case nil: ""
                }
            return "\(what): \(ms(seconds)) ms\(note)"
        }

        private static func ms(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000) }

        private func write(_ reader: any PackReader) throws -> EntryTiming {
            guard let output else {
                return try reader.writeVerified(entry, to: STDOUT_FILENO, outputName: "standard output")
            }
            switch AtomicFile.stream(output) {
            case nil:
                return try AtomicFile.write(output) { fd in
                    try reader.writeVerified(entry, to: fd.rawValue, outputName: output)
                }
            case .descriptor(let fd):
                return try reader.writeVerified(entry, to: fd, outputName: output)
            case .device:
                break
            }
            // A device or FIFO (`-o /dev/null`) is written into, like standard output.
            let fd: FileDescriptor
            do throws(Errno) { fd = try .open(output, .writeOnly) } catch { throw error.io("cannot open \(output)") }
            defer { try? fd.close() }
            return try reader.writeVerified(entry, to: fd.rawValue, outputName: output)
        }
    }
}
