import ArgumentParser
import AssetPack
import Foundation

struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write one entry's verified bytes to standard output.",
        discussion: "Nothing is written unless the whole entry verified (CRC, and MAC or tag when encrypted).")

    @Argument(help: "The pack.") var pack: String
    @Argument(help: "The entry's path.") var entry: String
    @OptionGroup var credentials: CredentialOptions

    func run() throws {
        try reporting {
            let reader = try credentials.open(pack, forData: true)
            let bytes = try reader.read(entry)
            try bytes.withUnsafeBytes { try FileOutput.writeAll(STDOUT_FILENO, $0, path: "standard output") }
        }
    }
}
