import ArgumentParser
import AssetPack
import Foundation

struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write one entry's verified bytes to standard output (or to --output).",
        discussion: """
            Memory stays bounded whatever the entry's size. Container: each chunk is written after its \
            AES-GCM tag verified. Zip: the MAC and CRC cover the whole entry, so nothing is written \
            before they pass; entries over 64 MiB are first spooled to an unlinked 0600 file in $TMPDIR. \
            With --output, the file appears (atomically, by rename) only after the whole entry verified.
            """)

    @Argument(help: "The pack.") var pack: String
    @Argument(help: "The entry's path.") var entry: String
    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?
    @OptionGroup var credentials: CredentialOptions

    func run() throws {
        try reporting {
            let reader = try credentials.open(pack, forData: true)
            guard let output else {
                try reader.writeVerified(entry, to: STDOUT_FILENO, outputName: "standard output")
                return
            }
            try AtomicFile.write(output) { fd in try reader.writeVerified(entry, to: fd, outputName: output) }
        }
    }
}

/// A file that appears under its name only complete: written to a temporary file beside it and
/// renamed into place; on failure the temporary file is removed and nothing is left.
enum AtomicFile {
    static func write(_ path: String, _ body: (Int32) throws -> Void) throws {
        var st = stat()
        if stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            throw AssetPackError(.invalidArgument, "\(path) is a directory")
        }
        // The folder as the caller spelled it (NSString would also tidy "//" and "/.").
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var template = Array("\(folder)/.assetpack-out-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            let e = errno
            let why = e == ENOENT ? "folder \(folder) does not exist" : String(cString: strerror(e))
            throw AssetPackError(.io, "cannot write \(path): \(why)", underlying: e)
        }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            // mkstemp makes 0600; give the file the mode a new file would have (0666 less the umask).
            let mask = umaskValue()
            fchmod(fd, 0o666 & ~mask)
            try body(fd)
            guard fsync(fd) == 0 else { throw FileOutput.error("cannot write \(path)") }
        }
        guard rename(temporary, path) == 0 else { throw FileOutput.error("cannot rename into \(path)") }
        done = true
    }

    /// The process umask, read from /proc (umask(2) can only be read by changing it, which races
    /// with other threads creating files).
    private static func umaskValue() -> mode_t {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        else { return 0o022 }
        return value
    }
}
