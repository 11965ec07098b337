import ArgumentParser
import AssetPack
import Foundation

struct Extract: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Extract verified entries into a directory (all, or those named).",
        discussion: "Each entry is written to a temporary file and renamed after it verified; nothing is written outside --into.")

    @Argument(help: "The pack.") var pack: String
    @Argument(help: "Entries to extract (default: all).") var entries: [String] = []
    @Option(help: "The directory to extract into.") var into: String
    @OptionGroup var credentials: CredentialOptions

    func run() throws {
        try reporting {
            let reader = try credentials.open(pack, forData: true)
            var count = 0
            try Extractor(directory: URL(fileURLWithPath: into)).extract(from: reader, paths: entries) { url, _ in
                count += 1
                print(url.path)
            }
            FileHandle.standardError.write(Data("assetpack: extracted \(count) entries into \(into)\n".utf8))
        }
    }
}
