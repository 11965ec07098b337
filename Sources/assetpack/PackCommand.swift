import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Pack: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pack a directory into an encrypted pack.",
            discussion: """
                The output's folder must exist. Special files (FIFOs, sockets, devices) are skipped with a warning. \
                The summary goes to stderr (--quiet drops it); stdout stays empty. It ends with the entries reused \
                from the pack that was at the output, packed afresh, and removed (in that pack, not in this one).
                """)

        @Argument(help: "The asset directory to pack.") var source: String
        @Option(name: .shortAndLong, help: "The pack file to write.") var output: String
        @Option(
            name: .customLong("format"),
            help:
                "zip (WinZip AES-256) or container (chunked AES-256-GCM). Default: the format of the pack already at --output (for a patch, of the last --patch-of pack), else zip."
        )
        var formatOption: PackFormat?
        @Option(help: "zip only: aes256 (default), zipcrypto (broken, compatibility only) or none.")
        var encryption: PackEncryption = .aes256
        @Option(help: "auto (store media, deflate the rest where it pays), store or deflate.")
        var compression: CompressionPolicy = .auto
        @Option(
            help: ArgumentHelp(
                "How hard to compress what is compressed: default (smaller packs, for release: what every device reads) or fast (quicker packing, larger packs, for iteration).",
                valueName: "default|fast"))
        var level: CompressionLevel?
        @Flag(help: "The same as --level fast.") var fast = false
        @Option(
            name: .customLong("chunk-kib"),
            help:
                "container only: the average chunk size in KiB (power of two, 4 to 4096; compressed entries use twice it); chunks are cut where the content says, from a quarter to four times the average."
        )
        var chunkKiB: Int = 64
        @Option(help: "container only: zstd (default: smaller, faster to read) or deflate.")
        var codec: ContainerCodec = .zstd
        @Option(
            name: .customLong("scrypt-cost"),
            help: ArgumentHelp(
                "container with a password only: what each guess at the password costs, as log2 of scrypt's N, 10 to 18 (each step doubles the time and memory of every open; 15, the default for a new pack, takes 32 MiB and about a tenth of a second). Lower it for slow devices. A re-pack keeps the cost of the pack at --output unless given, a patch the cost of the pack it patches; a new cost re-packs everything.",
                valueName: "LOG2N"))
        var scryptCost: Int?
        @Flag(help: "Include dot-files such as .DS_Store.") var includeHidden = false
        @Flag(
            help:
                "Compress and encrypt every entry, even those an existing pack at --output (same credential) already holds unchanged; also what replaces a pack at --output that this password or key does not open (refused without it). A container gets new keys (a new salt): every installed copy downloads it whole at its next update; --compact rewrites it keeping them."
        )
        var fresh = false
        @Flag(
            help:
                "container: rewrite the pack at --output whole, keeping its keys, dropping the zeros an append leaves where removed or replaced content and earlier indexes were (a re-pack appends and zeroes those bytes in place, so nothing it removed stays readable; it rewrites by itself when they would be half the file)."
        )
        var compact = false
        @Flag(
            help:
                "container: read and hash every source file, even those whose status (inode, size, modification and change times) is the one the pack at --output was packed from, and check the tag of every chunk kept from that pack, those an append leaves in place too (by default neither is: docs/INCREMENTAL.md); what repairs a pack that verify finds damaged."
        )
        var rehash = false
        @Option(
            name: .customLong("sign-key"),
            help: ArgumentHelp(
                "Sign the pack with this publisher key (from assetpack keygen); readers check it with --trust NAME.pub.",
                valueName: "NAME.key"))
        var signKey: String?
        @Option(
            name: .customLong("pack-version"),
            help: ArgumentHelp(
                "With --sign-key: the release number the signature binds (raise it with every release; installers refuse an older one). Default 0: unversioned. Lower than the version of the pack at --output (same key and name) is refused unless --allow-rollback.",
                valueName: "N"))
        var packVersion: UInt64?
        @Flag(
            help:
                "With --sign-key: sign a release older than the one at --output (same key and name), which installers refuse unless they allow a rollback."
        )
        var allowRollback = false
        @Option(
            help: ArgumentHelp(
                "With --sign-key: when the signature stops being trusted: an ISO 8601 date (2027-01-31, midnight UTC) or date-time (2027-01-31T12:00:00Z), or +N days or hours from now (+30d, +12h).",
                valueName: "DATE"))
        var expires: String?
        @Option(
            name: .customLong("pack-name"),
            help: ArgumentHelp(
                "With --sign-key: the name the signature binds (1 to 255 bytes; default: the output's file name without extension).",
                valueName: "NAME"))
        var packName: String?
        @Option(
            name: .customLong("patch-of"),
            help: ArgumentHelp(
                """
                Write a patch of this pack (repeat for a set, bottom first), read with the same credential: only \
                the files it lacks or holds with other bytes (size, CRC-32, then the bytes compared), and a \
                deletion record for its paths the source no longer has. Read the patch over it with --over.
                """, valueName: "BASE"))
        var patchOf: [String] = []
        @OptionGroup var quiet: QuietOption
        @OptionGroup var credentials: CredentialOptions

        /// `--format`, else the format of the pack a re-pack replaces (a patch: the pack it patches),
        /// so a re-pack or patch of a container never quietly becomes a zip, whose names anyone can
        /// list; else zip.
        var format: PackFormat {
            if let formatOption { return formatOption }
            // Only a regular file is read: opening a FIFO there would wait for a writer.
            let existing = patchOf.last ?? output
            guard (try? FileSystem.stat(existing))?.kind == .regular else { return AssetPacks.defaultFormat }
            return (try? AssetPacks.sniff(existing)) ?? AssetPacks.defaultFormat
        }

        func validate() throws {
            let format = format
            // Without --format, say where the format came from, and how to choose another.
            let inferred =
                formatOption != nil
                ? ""
                : " (no --format: \(format.rawValue), "
                    + (patchOf.isEmpty ? "the format of the pack at --output" : "the format of the pack patched")
                    + "; give --format to choose)"
            if fast && level == .default {
                throw ValidationError("--fast is --level fast: give one of --fast and --level default")
            }
            guard chunkKiB >= 4, chunkKiB <= 4096, chunkKiB & (chunkKiB - 1) == 0 else {
                throw ValidationError("--chunk-kib must be a power of two from 4 to 4096")
            }
            // Settings only some formats take: the format's driver says why it refuses one.
            let driver = try AssetPacks.driver(for: format)
            let given: [(PackSetting, String, Bool)] = [
                (.encryption, "--encryption", encryption != .aes256), (.codec, "--codec", codec != .zstd),
                (.compact, "--compact", compact), (.passwordKDF, "--scrypt-cost", scryptCost != nil),
            ]
            for (setting, flag, isGiven) in given where isGiven {
                if let why = driver.refusal(of: setting) {
                    throw ValidationError(
                        "\(flag) applies to \(AssetPacks.formats(taking: setting)) packs only; \(why)" + inferred)
                }
            }
            if let scryptCost {
                guard credentials.keyFile == nil else {
                    throw ValidationError("--scrypt-cost applies to passwords; a --key-file pack runs no KDF")
                }
                let costs = ContainerKDF.scryptCosts
                guard costs.contains(scryptCost) else {
                    throw ValidationError(
                        "--scrypt-cost must be from \(costs.lowerBound) to \(costs.upperBound) (scrypt N = 2^\(costs.lowerBound) … 2^\(costs.upperBound)), not \(scryptCost)"
                    )
                }
            }
            if signKey == nil && (packVersion != nil || expires != nil || packName != nil || allowRollback) {
                throw ValidationError(
                    "--pack-version, --expires, --pack-name and --allow-rollback describe a signature: give --sign-key too"
                )
            }
            _ = try expiry(now: Date())
            if let packName {
                do { try PackRelease.checkName(packName) } catch let error as AssetPackError {
                    throw ValidationError("--pack-name: \(error.message)")
                }
            }
        }

        /// `--expires` as an instant, refused unless it is after `now`.
        func expiry(now: Date) throws -> Date? {
            guard let expires else { return nil }
            do { return try PackRelease.futureExpiry(expires, now: now, of: "pack").get() } catch {
                throw ValidationError(error.text)
            }
        }

        func run() throws {
            let format = format  // sniffed once, before the pack replaces what is at --output
            try reporting(packingTo: output) {
                var options = PackOptions()
                options.format = format
                options.zip.encryption = encryption
                options.compression = compression
                options.level = fast ? .fast : level ?? .default
                options.includeHidden = includeHidden
                options.container.chunkSize = chunkKiB << 10
                options.container.codec = codec
                if let scryptCost { options.container.kdf = .scrypt(cost: scryptCost) }
                options.fresh = fresh
                options.compact = compact
                if rehash { options.sourceStatusCache = nil }
                options.signingKey = try signKey.map { try PublisherSigningKey.load(from: URL(fileURLWithPath: $0)) }
                options.releaseName = packName
                options.releaseVersion = packVersion ?? 0
                options.allowRollback = allowRollback
                options.releaseExpires = try expiry(now: Date())
                options.credential = try credentials.resolve(needed: encryption != .none, confirm: true)
                if encryption == .zipCrypto {
                    printWarning(
                        "ZipCrypto is broken: anyone can decrypt these entries without the password. Use it only for old readers."
                    )
                }
                Interrupts.onInterrupt(
                    say: (try? FileSystem.lstat(output)) != nil
                        ? "\(output) was not changed (the previous pack is kept)" : "\(output) was not written")
                if !patchOf.isEmpty {
                    try packPatch(options, progress: ProgressLine(enabled: !quiet.quiet && isatty(STDERR_FILENO) == 1))
                    return
                }
                // Only for the summary's "removed" and its warnings: with --quiet, no second look
                // at the pack replaced.
                options.describesReplacedPack = !quiet.quiet
                let progress = ProgressLine(enabled: !quiet.quiet && isatty(STDERR_FILENO) == 1)
                options.progress = {
                    progress.update(
                        done: $0.done, total: $0.total, label: $0.path, bytes: ($0.bytesDone, $0.bytesTotal))
                }
                let summary = try AssetPacks.pack(
                    source: URL(fileURLWithPath: source), to: URL(fileURLWithPath: output), options: options)
                progress.finish()
                for skipped in summary.skipped {
                    printWarning("skipped special file \(EntryPath.printable(skipped.path)) (\(skipped.kind))")
                }
                for warning in summary.warnings { printWarning(warning) }
                let inputBytes = summary.files.reduce(UInt64(0)) { $0 + $1.size }
                let removed = summary.removed
                quiet.say(
                    "packed \(plural(summary.files.count, "entry", "entries")) (\(inputBytes) bytes) into \(output) (\(summary.packSize) bytes, \(format.rawValue)\(chunkNote(summary))) in \(String(format: "%.2f", summary.seconds)) s: \(summary.reused) reused, \(summary.packed) packed"
                        + (removed.map { ", \($0) removed" } ?? "")

                        + (options.signingKey.map { ", signed by key \($0.publicKey.fingerprint)" } ?? "")
                        + (options.signingKey == nil
                            ? "" : " as " + (try options.release(for: output)).summary))
            }
        }
    }
}

/// A container's chunk reuse, appending and dictionary, for the summary: "; 3 of 40 chunks reused,
/// 123 bytes written, appended: the file keeps 456 bytes of earlier versions (--compact drops
/// them), a 5568-byte zstd dictionary".
private func chunkNote(_ summary: AssetPacks.PackSummary) -> String {
    guard summary.chunks > 0 else { return "" }
    let history =
        summary.droppedBytes > 0
        ? ", rewritten whole: \(summary.droppedBytes) bytes of removed or replaced content and earlier versions dropped"
            + (summary.compacted ? " (they were half of the file)" : "")
        : (summary.appended ? ", appended" : "")
            + (summary.zeroedBytes > 0
                ? ": \(summary.zeroedBytes) bytes of removed or replaced content and earlier indexes zeroed" : "")
            + (summary.earlierBytes > 0
                ? (summary.zeroedBytes > 0 ? "; " : ": ")
                    + "the file keeps \(summary.earlierBytes) bytes no entry reads (--compact drops them)"
                : "")
    return
        "; \(summary.reusedChunks) of \(plural(summary.chunks, "chunk", "chunks")) reused, \(summary.bytesWritten) bytes written"
        + history
        + (summary.dictionaryBytes > 0 ? ", a \(summary.dictionaryBytes)-byte zstd dictionary" : "")
        + (summary.unreadSources > 0
            ? ", \(plural(summary.unreadSources, "source", "sources")) not read (unchanged status; --rehash reads them)"
            : "")
}

/// A single self-rewriting progress line on a terminal (entries, bytes, rate, ETA); silent otherwise.
extension AssetPackCommand.Pack {
    /// `--patch-of`: packs only what differs from the base (or base set), with its deletions.
    func packPatch(_ options: PackOptions, progress: ProgressLine) throws {
        var options = options
        // A patch written over a pack it patches would replace its own base, which is then gone.
        if let out = try? FileSystem.stat(output) {
            for path in patchOf {
                guard let status = try? FileSystem.stat(path), status.device == out.device, status.inode == out.inode
                else { continue }
                throw AssetPackError(
                    .invalidArgument,
                    "--output \(output) is \(path), which --patch-of names: the patch would replace the pack it patches"
                )
            }
        }
        let base: any PackReader
        do {
            base =
                patchOf.count == 1
                ? try AssetPacks.open(patchOf[0], credential: options.credential)
                : try PackSet(opening: patchOf, credentials: [options.credential])
        } catch let error as AssetPackError where patchOf.count == 1 {
            throw error.naming(pack: patchOf[0])
        }
        options.progress = {
            progress.update(done: $0.done, total: $0.total, label: $0.path, bytes: ($0.bytesDone, $0.bytesTotal))
        }
        let patch = try AssetPacks.packPatch(
            source: URL(fileURLWithPath: source), over: base, to: URL(fileURLWithPath: output), options: options)
        progress.finish()
        for skipped in patch.pack.skipped {
            printWarning("skipped special file \(EntryPath.printable(skipped.path)) (\(skipped.kind))")
        }
        // An unsigned patch of a signed base: a set read with --trust refuses it, as an installer
        // trusting the key refuses an unsigned re-pack (warned the same way).
        if options.signingKey == nil {
            for path in patchOf where (try? FileSystem.stat(path))?.kind == .regular {
                guard let signed = (try? AssetPacks.signature(at: path)) ?? nil else { continue }
                printWarning(
                    "\(path), which this patches, is signed by key \(signed.publisher.fingerprint); this patch is not signed, so reading them as a set with --trust refuses it (give --sign-key to sign it)"
                )
            }
        }
        quiet.say(
            "packed a patch of \(patchOf.joined(separator: " + ")) into \(output) (\(patch.pack.packSize) bytes, \(options.format.rawValue)) in \(String(format: "%.2f", patch.pack.seconds)) s: \(patch.added.count) added, \(patch.changed.count) changed, \(patch.deleted.count) deleted"
                + (options.signingKey.map { ", signed by key \($0.publicKey.fingerprint)" } ?? "")
                + (options.signingKey == nil ? "" : " as " + (try options.release(for: output)).summary))
    }
}

final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private let unit: String?
    private let lock = NSLock()
    private let start = Date()
    private var last = Date.distantPast
    private var shown = false
    private var stopped = false

    /// A line counting `unit` ("files", "steps"; `nil`: bytes only); silent unless `enabled`.
    /// An interruption clears it (see ``Interrupts``).
    init(enabled: Bool, unit: String? = "files") {
        self.enabled = enabled
        self.unit = unit
        if enabled { Interrupts.clearOnInterrupt(self) }
    }

    /// Redraws at most ten times a second (and at the end). `bytes` is (done, total), when known.
    func update(done: Int, total: Int, label: String, bytes: (UInt64, UInt64)? = nil) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        let now = Date()
        guard now.timeIntervalSince(last) > 0.1 || done == total else { return }
        last = now
        shown = true
        FileHandle.standardError.write(
            Data(
                ("\r"
                    + ProgressBarText.render(
                        done: done, total: total, unit: unit, label: label, bytes: bytes,
                        elapsed: now.timeIntervalSince(start)) + "\u{1B}[K").utf8))
    }

    /// Clears the line (when one was drawn).
    func finish() {
        guard enabled, shown else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    /// Clears the line and draws no more: the process is being interrupted.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        stopped = true
        finish()
    }
}
