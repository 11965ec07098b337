import ArgumentParser
import AssetPack
import AssetPackPerf
import Dispatch
import Foundation
import Synchronization

@main
struct AssetPackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assetpack",
        abstract: "Pack app assets into an encrypted pack, install it privately, and read entries by path.",
        discussion: """
            Passwords never go on the command line: set $ASSETPACK_PASSWORD, $ASSETPACK_PASSWORD_FILE or \
            $ASSETPACK_KEY_FILE (a container's raw key; `keygen --pack-key` makes one), as the PackAssets plugin \
            reads them, or use --password-env NAME, --password-file PATH, --key-file PATH, or answer the prompt \
            on a terminal.

            Exit codes: 0 success, 1 other error, 2 missing or wrong password, 3 entry not found, \
            4 integrity failure (CRC, MAC, corrupt or truncated pack), 5 untrusted (--trust given and the pack \
            is not signed by one of those keys, or differs from what was signed; a release's pack that is not the one \
            its manifest names, or an older release), 6 remote (a URL's server \
            failed, ignores Range, changed the file, or broke a deadline or the minimum rate; or libcurl \
            could not be loaded), 64 usage.
            """,
        version: assetpackVersion,
        subcommands: [
            Pack.self, List.self, Cat.self, Extract.self, Verify.self, Install.self, Release.self, Keygen.self,
            Perf.self,
        ])

    static func main() {
        // libzip converts every entry's DOS time with mktime(3) when it opens an archive. With TZ
        // unset, glibc re-stats /etc/localtime on every call (100,000 stats for a 100,000-entry
        // zip); naming the same file in TZ gives the same local time and one read.
        if getenv("TZ") == nil { setenv("TZ", ":/etc/localtime", 0) }
        Interrupts.removeTemporariesOnInterrupt()
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            finish(with: error, arguments: arguments)
        }
    }

    /// Exits as ArgumentParser's `exit(withError:)` would, except that a usage error is printed in
    /// the style of every other error (`assetpack: error: …`), and a misspelt command or a password
    /// on the command line is said as such.
    static func finish(with error: Error, arguments: [String]) -> Never {
        // Help and --version (to stdout), and errors already reported (ExitCode): as before.
        guard let (text, code) = report(for: error, arguments: arguments) else { exit(withError: error) }
        FileHandle.standardError.write(Data((text + "\n").utf8))
        Foundation.exit(code)
    }

    /// What ``finish(with:arguments:)`` prints on stderr for `error`, a failure of `arguments`,
    /// and the status it exits with; `nil` for help, `--version` and errors already reported
    /// (ArgumentParser prints those). The tests parse in-process and check this, as
    /// swift-argument-parser tests itself; one end-to-end test checks the binary prints it.
    static func report(for error: Error, arguments: [String]) -> (text: String, status: Int32)? {
        let code = exitCode(for: error)
        guard code != .success, !(error is ExitCode) else { return nil }
        let commands = configuration.subcommands.map { $0._commandName }
        if code == .validationFailure, let hint = UsageErrors.hint(for: arguments, commands: commands) {
            return ("assetpack: error: \(hint)\n  See 'assetpack --help' for more information.", code.rawValue)
        }
        return (UsageErrors.restyled(fullMessage(for: error)), code.rawValue)
    }
}

/// Ctrl-C and SIGTERM: clear the progress line, remove the temporary files in flight, say what
/// became of the output (`assetpack: interrupted: …`), then die of the signal as before (exit
/// status 128 + signal to a shell). The output a command was replacing is left as it was,
/// because it is replaced only by renaming a complete temporary.
enum Interrupts {
    /// Set once a signal arrived: the main thread must not exit with an ordinary status (say,
    /// because its temporary vanished under it) before the handler re-raises the signal.
    private static let interrupted = Atomic<Bool>(false)
    /// What the interrupted command leaves, said after `assetpack: interrupted: `.
    private static let outcome = Mutex<String?>(nil)
    /// The progress line on the terminal, cleared before the line is printed.
    private static let progress = Mutex<ProgressLine?>(nil)

    /// Whether a signal arrived: errors the main thread meets from then on (its temporary
    /// removed under it) are not printed.
    static var isInterrupted: Bool { interrupted.load(ordering: .sequentiallyConsistent) }

    /// Sets what an interruption from now on leaves, e.g. "out.pack was not changed (the previous pack is kept)".
    static func onInterrupt(say text: String) { outcome.withLock { $0 = text } }

    /// The progress line to clear on an interruption.
    static func clearOnInterrupt(_ line: ProgressLine) { progress.withLock { $0 = line } }

    static func removeTemporariesOnInterrupt() {
        TemporaryFiles.removeOnInterrupt {
            interrupted.store(true, ordering: .sequentiallyConsistent)
            progress.withLock { $0?.stop() }
            let said = outcome.withLock { $0 }.map { "interrupted: \($0)" } ?? "interrupted"
            FileHandle.standardError.write(Data("assetpack: \(said)\n".utf8))
        }
        atexit {
            while Interrupts.interrupted.load(ordering: .sequentiallyConsistent) { pause() }
        }
    }
}

/// The version `assetpack --version` prints (the package's release; pack formats carry their own versions).
let assetpackVersion = "0.3.0"

/// Runs a command body, turning `AssetPackError` into one line on stderr and the contract's exit code.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as AssetPackError {
        printError(error.description)
        throw ExitCode(cliExitCode(for: error.code))
    }
}

/// ``reporting(_:)`` for a command that writes a pack to `output`: an I/O error (a full disk, a
/// failing write) also says what became of `output`, which a failed pack leaves as it was (the
/// new pack is written beside it, then renamed over it): "(nothing was written to OUT)" or
/// "(OUT is unchanged)", when a look at `output` before and after agrees.
func reporting(packingTo output: String, _ body: () throws -> Void) throws {
    // The same file at the same size: a failed atomic write never touched it, and a failed
    // container append (docs/FORMAT.md, version 6) cut it back to the previous generation, which
    // changes its modification time and nothing a reader reads.
    func look() -> FileStatus? {
        guard var status = try? FileSystem.lstat(output) else { return nil }
        status.modificationTime = 0
        return status
    }
    let before = look()
    try reporting {
        do { try body() } catch var error as AssetPackError where error.code == .io {
            if look() == before {
                error.message += before == nil ? " (nothing was written to \(output))" : " (\(output) is unchanged)"
            }
            throw error
        }
    }
}

/// The CLI's exit-code contract (shared with `assetpack-pack`: `AssetPackError.Code.toolExitCode`).
func cliExitCode(for code: AssetPackError.Code) -> Int32 { code.toolExitCode }

func printError(_ message: String) {
    guard !Interrupts.isInterrupted else { return }  // the interruption is what happened
    FileHandle.standardError.write(Data("assetpack: error: \(message)\n".utf8))
}

func printWarning(_ message: String) {
    guard !Interrupts.isInterrupted else { return }
    FileHandle.standardError.write(Data("assetpack: warning: \(message)\n".utf8))
}

/// `--quiet`: summaries and tables that are not the command's data go to stderr, unless quiet.
/// Errors and warnings are printed either way; data (cat's bytes, extract's and install's paths,
/// list's table, --json documents) goes to stdout either way.
struct QuietOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print no summary (errors and warnings still go to stderr).") var quiet = false

    /// Writes one line of chatter to stderr unless quiet.
    func say(_ line: String) {
        guard !quiet, !Interrupts.isInterrupted else { return }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// A table column padded to `width` terminal columns (wide CJK characters count two).
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    TerminalText.pad(text, width, right: right)
}

/// `--format NAME`: the formats of the registry (`AssetPacks.formats`), nothing else.
extension PackFormat: ExpressibleByArgument {
    public init?(argument: String) {
        guard let driver = AssetPacks.formats.first(where: { $0.format.rawValue == argument }) else { return nil }
        self = driver.format
    }

    public static var allValueStrings: [String] { AssetPacks.formats.map(\.format.rawValue) }
}
extension PackEncryption: ExpressibleByArgument {}
extension CompressionPolicy: ExpressibleByArgument {}
extension ContainerCodec: ExpressibleByArgument {}
extension CompressionLevel: ExpressibleByArgument {}
