import AssetPackCore
import Foundation

/// Writes verified entries below a directory, never outside it.
///
/// Each entry is streamed into a temporary file beside its destination and renamed into
/// place only after the whole entry verified, so a failed entry leaves no file. Before anything
/// is written, every selected name is checked: `EntryPath.safeComponents` (no absolute paths,
/// `..`, backslashes, NUL, components over 255 bytes), the whole destination path against
/// `PATH_MAX`, two entries that would land on one file, and the sum of the declared sizes
/// against `ReadLimits.maxExtractBytes`, an entry that another entry needs as its folder, and
/// what the disk already holds on the way: no folder may be a symbolic link or a file, and no
/// destination a directory, FIFO or device, nor (unless ``overwrites``) an existing file. Directories an extraction created are removed again
/// if it fails and they are still empty.
public struct Extractor: Sendable {
    /// The directory entries are written below.
    public let directory: URL
    /// The limits; `ReadLimits.maxExtractBytes` caps one extraction.
    public let limits: ReadLimits
    /// Replace files that already exist where entries go. Off by default: an existing file is
    /// refused before anything is written (as `tar -k` and `unzip -n` keep what is there).
    public var overwrites = false

    /// Longest path the kernel accepts (`PATH_MAX`, including the terminating NUL).
    static let pathMax = 4096

    /// Creates an extractor for `directory` (created, with its parents, if missing).
    public init(directory: URL, limits: ReadLimits = .default) {
        self.directory = directory
        self.limits = limits
    }

    /// Extracts `paths` (all entries when empty) from `reader`.
    /// - Parameters:
    ///   - reader: An open pack.
    ///   - paths: Entry paths to extract; empty means every entry. An entry named more than
    ///     once (`a.txt`, `./a.txt`) is extracted once.
    ///   - each: Called after each entry is written, with its destination and timing.
    /// - Throws: `.entryNotFound`; `.invalidArgument` for unsafe names, a path too long,
    ///   `--into` that is not a directory, a folder on the way that is a symbolic link or a file,
    ///   or a destination that is a directory, FIFO or device; `.integrityFailure` when two
    ///   entries of the pack would be written to the same file, or one is another's folder;
    ///   `.limitExceeded` over `ReadLimits.maxExtractBytes` (all of these before anything is
    ///   written); any read error naming the entry; `.io`. Entries written before a read
    ///   failure stay written.
    public func extract(
        from reader: any PackReader, paths: [String] = [], each: (URL, EntryTiming) -> Void = { _, _ in }
    ) throws {
        let planned = try plan(reader, paths)
        // Declared sizes, which may add up past 64 bits (a wrapped sum would pass the limit).
        let total = checkedTotal(planned.lazy.map(\.entry.size))
        if total.map({ $0 > limits.maxExtractBytes }) ?? true {
            throw AssetPackError(
                .limitExceeded,
                "extracting \(planned.count) entries would write \(total.map { "\($0)" } ?? "more than \(UInt64.max)") bytes; the limit is \(limits.maxExtractBytes) (ReadLimits.maxExtractBytes)"
            )
        }
        let root = directory.path
        for item in planned {
            let destination = root + "/" + item.parts.joined(separator: "/")
            // The temporary file beside it has a name of fixed length; check the longer of the two.
            let folder = root + "/" + item.parts.dropLast().joined(separator: "/")
            let longest = max(destination.utf8.count, folder.utf8.count + AtomicFile.temporaryNameBytes)
            guard longest < Self.pathMax else {
                throw AssetPackError(
                    .invalidArgument,
                    "destination path would be \(longest) bytes; the system's limit is \(Self.pathMax - 1); nothing was extracted",
                    path: item.entry.path)
            }
        }
        try checkTargets(planned, below: root)
        var created: [String] = []
        do {
            try makeRoot(root, created: &created)
            for item in planned {
                var dir = root
                for part in item.parts.dropLast() {
                    dir += "/" + part
                    try makeDirectory(dir, created: &created)
                }
                let destination = dir + "/" + item.parts.last!
                let timing = try write(item.entry, from: reader, to: destination)
                each(URL(fileURLWithPath: destination), timing)
            }
        } catch {
            // Remove the directories this call created that are still empty, deepest first.
            for dir in created.reversed() { try? FileSystem.rmdir(dir) }
            throw error
        }
    }

    /// The selected entries with their path components, every name checked, duplicates merged.
    private func plan(_ reader: any PackReader, _ paths: [String]) throws -> [(entry: EntryInfo, parts: [String])] {
        // Every entry: the index checked first, as `list` checks it (a listing cannot throw: a
        // version-8 record in a segment that fails, or one that fails its own checks, would list
        // as an empty or mangled name, whose read then says "no such entry"; and a set's rules are
        // kept). Its cost is small beside writing every entry.
        if paths.isEmpty { try reader.checkIndex() }
        let selected: [EntryInfo] =
            try paths.isEmpty
            ? Array(reader.entries)
            : paths.map { p in
                guard let e = try reader.lookup(p) else { throw reader.noSuchEntry(p) }
                return e
            }
        var planned: [(entry: EntryInfo, parts: [String])] = []
        var seen: [String: EntryInfo] = [:]
        var folders: Set<String> = []
        for entry in selected {
            let parts = try EntryPath.safeComponents(entry.path)
            let key = parts.joined(separator: "/")
            if let first = seen[key] {
                // The same entry named twice (`a.txt`, `./a.txt`) is extracted once.
                if !paths.isEmpty && first == entry { continue }
                throw AssetPackError(
                    .integrityFailure,
                    "two entries of the pack would be written to this path: which one is meant is ambiguous",
                    path: entry.path)
            }
            seen[key] = entry
            planned.append((entry, parts))
            for depth in 1..<parts.count { folders.insert(parts[0..<depth].joined(separator: "/")) }
        }
        // A file where another entry needs a folder (`x` and `x/y`): one of them cannot be written.
        for (entry, parts) in planned where folders.contains(parts.joined(separator: "/")) {
            throw AssetPackError(
                .integrityFailure,
                "another entry of the pack lies below this one, so it would have to be both a file and a folder",
                path: entry.path)
        }
        return planned
    }

    /// What is already on disk where the entries go, checked before anything is written: every
    /// folder on the way that exists must be a real directory (not a symbolic link, not a
    /// file), and each destination that exists must be a file a rename can replace (not a
    /// directory, FIFO or device). Extraction checks again as it goes (someone may change the
    /// tree meanwhile); this makes a refusal leave nothing written.
    private func checkTargets(_ planned: [(entry: EntryInfo, parts: [String])], below root: String) throws {
        guard let status = try? FileSystem.stat(root) else { return }  // nothing below it exists yet
        guard status.kind == .directory else { throw AssetPackError(.invalidArgument, "\(root) is not a directory") }
        var checked: [String: Bool] = [:]  // folder → whether it exists
        for item in planned {
            var dir = root
            var exists = true
            for part in item.parts.dropLast() {
                dir += "/" + part
                if let known = checked[dir] {
                    exists = known
                } else {
                    let found = try? FileSystem.lstat(dir)
                    if let found, found.kind != .directory {
                        throw AssetPackError(
                            .invalidArgument, "\(dir) exists and is not a directory (or is a symbolic link)")
                    }
                    exists = found != nil
                    checked[dir] = exists
                }
                if !exists { break }
            }
            guard exists else { continue }
            let destination = dir + "/" + item.parts.last!
            try AtomicFile.checkTarget(destination)
            if !overwrites, (try? FileSystem.lstat(destination)) != nil {
                throw AssetPackError(
                    .invalidArgument,
                    "\(destination) exists: extract does not replace files (--force, or Extractor.overwrites, does); nothing was extracted",
                    path: item.entry.path)
            }
        }
    }

    /// Creates `--into` with its parents (`mkdir -p`); an existing one may be a symbolic link to a directory.
    private func makeRoot(_ path: String, created: inout [String]) throws {
        if let status = try? FileSystem.stat(path) {
            guard status.kind == .directory else {
                throw AssetPackError(.invalidArgument, "\(path) is not a directory")
            }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeRoot(parent, created: &created) }
        try makeDirectory(path, created: &created)
    }

    /// Creates one directory below the root; an existing one must be a real directory, not a link.
    private func makeDirectory(_ path: String, created: inout [String]) throws {
        if let status = try? FileSystem.lstat(path) {
            guard status.kind == .directory else {
                throw AssetPackError(.invalidArgument, "\(path) exists and is not a directory (or is a symbolic link)")
            }
            return
        }
        do {
            try FileSystem.mkdir(path, permissions: 0o755)
            created.append(path)
        } catch  where error == .fileExists {
            // Made meanwhile by someone else: a directory all the same.
        } catch {
            throw error.io("cannot create \(path)")
        }
    }

    /// Streams the entry into a temporary file beside `destination`, renamed into place after the
    /// read verified. Not synced: an extraction is repeatable, and syncing every file of a large
    /// tree would cost more than the extraction.
    private func write(_ entry: EntryInfo, from reader: any PackReader, to destination: String) throws -> EntryTiming {
        try AtomicFile.write(destination, mode: 0o644, durable: false) { fd in
            try reader.stream(entry.path) { chunk in try FileOutput.writeAll(fd, chunk, path: destination) }
        }
    }
}
