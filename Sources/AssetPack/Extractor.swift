import AssetPackCore
import Foundation

/// Writes verified entries below a directory, never outside it.
///
/// Each entry is streamed into a temporary file beside its destination and renamed into
/// place only after the whole entry verified, so a failed entry leaves no file. Names are
/// checked with `EntryPath.safeComponents` (no absolute paths, `..`, backslashes, NUL),
/// no two selected entries may normalise to the same path, and no directory on the way
/// may be a symbolic link.
public struct Extractor: Sendable {
    /// The directory entries are written below.
    public let directory: URL

    /// Creates an extractor for `directory` (created if missing).
    public init(directory: URL) {
        self.directory = directory
    }

    /// Extracts `paths` (all entries when empty) from `reader`.
    /// - Parameters:
    ///   - reader: An open pack.
    ///   - paths: Entry paths to extract; empty means every entry.
    ///   - each: Called after each entry is written, with its destination and timing.
    /// - Throws: `.entryNotFound`, `.invalidArgument` for unsafe or colliding names, any read
    ///   error naming the entry, `.io`. Entries written before a failure stay written.
    public func extract(
        from reader: any PackReader, paths: [String] = [], each: (URL, EntryTiming) -> Void = { _, _ in }
    ) throws {
        let selected: [EntryInfo] =
            try paths.isEmpty
            ? reader.entries
            : paths.map { p in
                guard let e = reader.entry(p) else { throw AssetPackError(.entryNotFound, "no such entry", path: p) }
                return e
            }
        // Check every name before writing anything.
        var planned: [(EntryInfo, [String])] = []
        var seen = Set<String>()
        for entry in selected {
            let parts = try EntryPath.safeComponents(entry.path)
            let key = parts.joined(separator: "/")
            guard seen.insert(key).inserted else {
                if paths.isEmpty || Set(paths).count == paths.count {
                    throw AssetPackError(.invalidArgument, "two entries would be written to the same path", path: entry.path)
                }
                continue  // the same entry named twice on the command line
            }
            planned.append((entry, parts))
        }
        try makeDirectory(directory.path)
        for (entry, parts) in planned {
            var dir = directory.path
            for part in parts.dropLast() {
                dir += "/" + part
                try makeDirectory(dir)
            }
            let destination = dir + "/" + parts.last!
            let timing = try write(entry, from: reader, to: destination, in: dir)
            each(URL(fileURLWithPath: destination), timing)
        }
    }

    private func makeDirectory(_ path: String) throws {
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw AssetPackError(.invalidArgument, "\(path) exists and is not a directory (or is a symbolic link)")
            }
            return
        }
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw FileOutput.error("cannot create \(path)") }
    }

    private func write(_ entry: EntryInfo, from reader: any PackReader, to destination: String, in dir: String) throws
        -> EntryTiming
    {
        let temporary = dir + "/" + PrivateInstaller.temporaryPrefix + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileOutput.error("cannot create \(temporary)") }
        var done = false
        defer { if !done { unlink(temporary) } }
        let timing: EntryTiming
        do {
            defer { close(fd) }
            timing = try reader.stream(entry.path) { chunk in try FileOutput.writeAll(fd, chunk, path: temporary) }
        }
        guard rename(temporary, destination) == 0 else { throw FileOutput.error("cannot rename into \(destination)") }
        done = true
        return timing
    }
}
