import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Extract: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Extract verified entries into a directory (all, or those named).",
            discussion: """
                Each entry is written to a temporary file and renamed after it verified; nothing is written outside \
                --into, which is created with its parents if missing. Names, and what is already on disk where the \
                files go (a folder that is a symbolic link, a directory or FIFO in a file's place, a file already \
                there unless --force), are checked before anything is written, and the declared sizes may add up to 64 GiB at most \
                (ReadLimits.maxExtractBytes). Extracting every entry first checks the index as list and verify \
                do (a damaged one is refused, exit 4, before anything is written). Each file written is printed \
                on stdout; the summary goes to stderr.
                """)

        @Argument(help: PackSetOptions.packHelp) var pack: String
        @Argument(help: "Entries to extract (default: all).") var entries: [String] = []
        @Option(help: "The directory to extract into.") var into: String
        @Flag(
            help: "Replace files that already exist where entries go (refused by default, before anything is written).")
        var force = false
        @OptionGroup var set: PackSetOptions
        @OptionGroup var quiet: QuietOption
        @OptionGroup var credentials: CredentialOptions
        @OptionGroup var trust: TrustOptions
        @OptionGroup var network: NetworkOptions

        func run() throws {
            try reporting {
                let reader = try credentials.open(pack, set: set, forData: true, trust: trust, network: network).reader
                var count = 0
                var extractor = Extractor(directory: URL(fileURLWithPath: into))
                extractor.overwrites = force
                try extractor.extract(from: reader, paths: entries) { url, _ in
                    count += 1
                    print(url.path)
                }
                quiet.say("assetpack: extracted \(plural(count, "entry", "entries")) into \(into)")
            }
        }
    }
}
