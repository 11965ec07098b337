import ArgumentParser
import AssetPack
import Foundation

@main
struct AssetPackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assetpack",
        abstract: "Pack app assets into an encrypted pack, install it privately, and read entries by path.",
        discussion: """
            Passwords never go on the command line: set $ASSETPACK_PASSWORD, or use --password-env NAME, \
            --password-file PATH, --key-file PATH (container raw key), or answer the prompt on a terminal.

            Exit codes: 0 success, 1 other error, 2 missing or wrong password, 3 entry not found, \
            4 integrity failure (CRC, MAC, corrupt or truncated pack), 64 usage.
            """,
        subcommands: [Pack.self, List.self, Cat.self, Extract.self, Verify.self, Install.self, Perf.self])
}

/// Runs a command body, turning `AssetPackError` into one line on stderr and the contract's exit code.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as AssetPackError {
        printError(error.description)
        throw ExitCode(cliExitCode(for: error.code))
    }
}

/// The CLI's exit-code contract.
func cliExitCode(for code: AssetPackError.Code) -> Int32 {
    switch code {
    case .missingPassword, .wrongPassword: 2
    case .entryNotFound: 3
    case .integrityFailure: 4
    default: 1
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data("assetpack: error: \(message)\n".utf8))
}

func printWarning(_ message: String) {
    FileHandle.standardError.write(Data("assetpack: warning: \(message)\n".utf8))
}

extension EntryCompression: ExpressibleByArgument {}
extension PackFormat: ExpressibleByArgument {}
extension PackEncryption: ExpressibleByArgument {}
extension CompressionPolicy: ExpressibleByArgument {}
