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

        @Argument(help: "The pack: a path, or an http:// or https:// URL.") var pack: String
        @Argument(help: "The entry's path.") var entry: String
        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions

        func run() throws {
            try reporting {
                let reader = try credentials.open(pack, forData: true, trust: trust)
                guard let output else {
                    try reader.writeVerified(entry, to: STDOUT_FILENO, outputName: "standard output")
                    return
                }
                guard AtomicFile.isStream(output) else {
                    try AtomicFile.write(output) { fd in try reader.writeVerified(entry, to: fd, outputName: output) }
                    return
                }
                // A device or FIFO (`-o /dev/null`) is written into, like standard output.
                let fd: FileDescriptor
                do throws(Errno) { fd = try .open(output, .writeOnly) } catch {
                    throw error.io("cannot open \(output)")
                }
                defer { try? fd.close() }
                try reader.writeVerified(entry, to: fd.rawValue, outputName: output)
            }
        }
    }
}
