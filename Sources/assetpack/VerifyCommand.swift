import ArgumentParser
import AssetPack
import Foundation

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read and check every entry, printing the time each took.",
        discussion: "Exits non-zero if any entry fails (2 password, 4 integrity).")

    @Argument(help: "The pack.") var pack: String
    @OptionGroup var credentials: CredentialOptions

    func run() throws {
        try reporting {
            let reader = try credentials.open(pack, forData: true)
            var firstFailure: AssetPackError?
            var failures = 0
            print(pad("STATUS", 6), pad("SIZE", 12, right: true), pad("MS", 10, right: true), pad("CHECK", 8), "PATH")
            for e in reader.entries {
                do {
                    let (_, timing) = try reader.readTimed(e.path)
                    print(
                        pad("ok", 6), pad(String(e.size), 12, right: true),
                        pad(String(format: "%.3f", timing.total * 1000), 10, right: true),
                        pad(timing.crcChecked ? "crc" : "mac", 8), e.path)
                } catch let error as AssetPackError {
                    failures += 1
                    firstFailure = firstFailure ?? error
                    print(pad("FAIL", 6), pad(String(e.size), 12, right: true), pad("-", 10, right: true), pad(error.code.rawValue, 8), e.path)
                    printError(error.naming(e.path).description)
                }
            }
            print("\(reader.entries.count - failures) of \(reader.entries.count) entries verified")
            if let firstFailure { throw ExitCode(cliExitCode(for: firstFailure.code)) }
        }
    }
}
