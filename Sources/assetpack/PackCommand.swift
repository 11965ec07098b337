import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Pack: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pack a directory into an encrypted pack.",
            discussion: """
                The output's folder must exist. Special files (FIFOs, sockets, devices) are skipped with a warning. \
                The summary goes to stderr (--quiet drops it); stdout stays empty.
                """)

        @Argument(help: "The asset directory to pack.") var source: String
        @Option(name: .shortAndLong, help: "The pack file to write.") var output: String
        @Option(help: "zip (WinZip AES via libzip) or container (chunked AES-256-GCM).") var format: PackFormat = .zip
        @Option(help: "zip only: aes256 (default), zipcrypto (broken, compatibility only) or none.")
        var encryption: PackEncryption = .aes256
        @Option(help: "auto (store media, deflate the rest where it pays), store or deflate.")
        var compression: CompressionPolicy = .auto
        @Option(name: .customLong("chunk-kib"), help: "container only: chunk size in KiB (power of two, 4 to 16384).")
        var chunkKiB: Int = 64
        @Flag(help: "Include dot-files such as .DS_Store.") var includeHidden = false
        @OptionGroup var quiet: QuietOption
        @OptionGroup var credentials: CredentialOptions

        func validate() throws {
            if format == .container && encryption != .aes256 {
                throw ValidationError("--encryption applies to zip packs only; the container is always AES-256-GCM")
            }
            guard chunkKiB >= 4, chunkKiB <= 16384, chunkKiB & (chunkKiB - 1) == 0 else {
                throw ValidationError("--chunk-kib must be a power of two from 4 to 16384")
            }
        }

        func run() throws {
            try reporting {
                var options = PackOptions()
                options.format = format
                options.zip.encryption = encryption
                options.compression = compression
                options.includeHidden = includeHidden
                options.container.chunkSize = chunkKiB << 10
                options.credential = try credentials.resolve(needed: encryption != .none, confirm: true)
                if encryption == .zipCrypto {
                    printWarning(
                        "ZipCrypto is broken: anyone can decrypt these entries without the password. Use it only for old readers."
                    )
                }
                let progress = ProgressLine(enabled: !quiet.quiet && isatty(STDERR_FILENO) == 1)
                options.progress = { progress.update(done: $0.done, total: $0.total, label: $0.path) }
                let summary = try AssetPacks.pack(
                    source: URL(fileURLWithPath: source), to: URL(fileURLWithPath: output), options: options)
                progress.finish()
                for skipped in summary.skipped {
                    printWarning("skipped special file \(EntryPath.printable(skipped.path)) (\(skipped.kind))")
                }
                let inputBytes = summary.files.reduce(UInt64(0)) { $0 + $1.size }
                quiet.say(
                    "packed \(summary.files.count) entries (\(inputBytes) bytes) into \(output) (\(summary.packSize) bytes, \(format.rawValue)) in \(String(format: "%.2f", summary.seconds)) s"
                )
            }
        }
    }
}

/// A single self-rewriting progress line on a terminal; silent otherwise.
final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private let lock = NSLock()
    private var last = Date.distantPast
    private var shown = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(done: Int, total: Int, label: String) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        guard now.timeIntervalSince(last) > 0.1 || done == total else { return }
        last = now
        shown = true
        let width = 30
        let filled = total > 0 ? width * done / total : width
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let text = "\r[\(bar)] \(done)/\(total) \(label.prefix(40))\u{1B}[K"
        FileHandle.standardError.write(Data(text.utf8))
    }

    func finish() {
        guard enabled, shown else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
