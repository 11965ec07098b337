import Foundation

/// One regular file to be packed.
public struct SourceFile: Sendable, Hashable {
    /// The entry path it will have: relative, NFC, `/`-separated.
    public var path: String
    /// Its size in bytes when scanned.
    public var size: UInt64
    /// Where the file is: a path of its own, or a folder every file of a scan shares and the
    /// path below it (for most files the very string `path` is, so no string is held for the
    /// disk path at all: a million files' disk paths were 96 MB of a pack's peak).
    private var disk: Disk

    private enum Disk: Sendable, Hashable {
        case path(String)
        case below(folder: String, relative: String)
    }

    /// Where the file is on disk, as a path: what the packers open. (Kept as a string: a `URL`
    /// per file cost a million-file pack ~300 MB.)
    package var diskPath: String {
        get {
            switch disk {
            case .path(let path): path
            case .below(let folder, let relative): folder + "/" + relative
            }
        }
        set { disk = .path(newValue) }
    }

    /// Where the file is on disk.
    public var url: URL {
        get { URL(fileURLWithPath: diskPath) }
        set { diskPath = newValue.path }
    }

    /// Creates a source file description.
    public init(path: String, url: URL, size: UInt64) {
        self.init(path: path, diskPath: url.path, size: size)
    }

    /// Creates a source file description from the file's path on disk.
    package init(path: String, diskPath: String, size: UInt64) {
        self.path = path
        self.size = size
        disk = .path(diskPath)
    }

    /// A file at `relative` below `folder` (a scan's root, shared by its files), entry `path`.
    package init(path: String, folder: String, relative: String, size: UInt64) {
        self.path = path
        self.size = size
        // The entry path's own string when the two are the same bytes (a name already NFC).
        disk = .below(folder: folder, relative: relative.utf8.elementsEqual(path.utf8) ? path : relative)
    }

    public static func == (a: SourceFile, b: SourceFile) -> Bool {
        a.path == b.path && a.size == b.size && a.diskPath == b.diskPath
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(size)
        hasher.combine(diskPath)
    }
}

extension SourceFile {
    /// Opens the file to pack it, as the scan found it: a regular file. Between the scan and this
    /// open its name may have been given to something else: a symbolic link (to a file outside
    /// the source, which the scan would have refused) is not followed, a FIFO (whose open would
    /// wait for a writer forever) is not waited on, and anything but a regular file is refused.
    /// - Throws: `.io` naming the file.
    package func openForPacking() throws -> FileDescriptor {
        let fd: FileDescriptor
        do { fd = try .open(diskPath, .readOnly, options: [.noFollow, .nonBlocking]) } catch {
            if error == .tooManySymbolicLinks {
                throw AssetPackError(
                    .io, "\(diskPath) became a symbolic link after the source was scanned; pack again", path: path)
            }
            throw error.io("cannot open \(diskPath)")
        }
        let kind: FileStatus.Kind
        do { kind = try fd.status().kind } catch {
            try? fd.close()
            throw error.io("cannot stat \(diskPath)")
        }
        guard kind == .regular else {
            try? fd.close()
            throw AssetPackError(
                .io, "\(diskPath) is no longer a regular file (it changed after the source was scanned); pack again",
                path: path)
        }
        return fd
    }
}

/// A file the packer skipped because it is not a regular file (FIFO, socket, device).
public struct SkippedFile: Sendable, Hashable {
    /// Its path relative to the source directory.
    public var path: String
    /// What it is: "FIFO", "socket", "character device" or "block device".
    public var kind: String
}

/// Walks a source directory the way the packer needs it walked.
///
/// - Entries are sorted by path (byte order of the NFC UTF-8), so packs are deterministic.
/// - Dot-files and dot-directories (`.DS_Store`, `.git`) are skipped unless `includeHidden`.
/// - Symbolic links are followed only when they resolve inside the source directory;
///   a link that leaves it is an error, never silently packed or skipped.
/// - Two names that normalise to the same NFC path are an error.
package enum SourceTree {
    /// Lists the files below `root`.
    /// - Parameters:
    ///   - root: The source directory.
    ///   - includeHidden: Whether to include dot-files and dot-directories.
    ///   - excluding: A file never to include (the pack being written, if it is inside `root`),
    ///     known by its device and inode: a link to it, or another name of it, is left out too.
    /// - Returns: The files, sorted by path.
    /// - Throws: `.invalidArgument` for a missing, empty or non-directory source, a symlink
    ///   leaving the tree, or colliding names; `.io` for unreadable files or directories.
    package static func scan(root: URL, includeHidden: Bool, excluding: URL? = nil) throws -> [SourceFile] {
        try scanReporting(root: root, includeHidden: includeHidden, excluding: excluding).files
    }

    /// Lists the files below `root`, and the special files (FIFOs, sockets, devices) it skipped,
    /// so that a caller can say so. Throws what ``scan(root:includeHidden:excluding:)`` throws.
    /// - Parameter maxFiles: More files than this is `.limitExceeded`, as the packer's entry-count
    ///   check says it, found during the walk (links inside the tree may repeat a folder's files
    ///   under many paths).
    package static func scanReporting(
        root: URL, includeHidden: Bool, excluding: URL? = nil, maxFiles: Int = ReadLimits().maxEntries
    ) throws
        -> (files: [SourceFile], skipped: [SkippedFile])
    {
        let rootPath = root.path
        guard let realRoot = realPath(rootPath) else {
            throw AssetPackError(.invalidArgument, "source directory \(rootPath) does not exist")
        }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: realRoot, isDirectory: &isDir), isDir.boolValue else {
            throw AssetPackError(.invalidArgument, "source \(rootPath) is not a directory")
        }
        // The excluded file is known by its device and inode: a `realpath` per file (five
        // `readlink`s each) was half the system calls of a 1,000-file re-pack's scan.
        let excluded = excluding.flatMap { try? FileSystem.stat($0.path) }
        var files: [SourceFile] = []
        var seen: [String: String] = [:]
        var skipped: [SkippedFile] = []
        // The folders on the path being walked, by device and inode: a link to one of them is a
        // cycle. (Only those: a link to a folder elsewhere in the tree packs its files under the
        // link's path too, whichever the walk reaches first; names and `realpath` strings are
        // not identities, as an NFC name and its NFD twin compare equal as Swift strings.)
        var ancestors: [(device: UInt64, inode: UInt64)] = []
        var limit = ReadLimits()
        limit.maxEntries = maxFiles

        // Folders walked: links inside the tree may reach one folder by many paths (a chain of
        // folders each linking twice to the next doubles the walk at every step), and a walk that
        // finds no files would otherwise never meet the file limit.
        var walked = 0
        func walk(_ dir: String, relative: String) throws {
            walked += 1
            guard walked <= maxFiles, skipped.count <= maxFiles else {
                throw AssetPackError(
                    .limitExceeded,
                    "the source reaches more than \(maxFiles) folders or special files (symbolic links inside it may reach a folder by many paths); the limit is ReadLimits.maxEntries"
                )
            }
            let here = try FileSystem.stat(dir)
            ancestors.append((here.device, here.inode))
            defer { ancestors.removeLast() }
            // Whether `dir` is the root's path and `relative`, with no link followed on the way:
            // its files' disk paths are then kept as the root and their relative paths.
            // (Compared as bytes: `==` on strings would take an NFD name for its NFC form.)
            let direct = dir.utf8.elementsEqual((relative.isEmpty ? realRoot : realRoot + "/" + relative).utf8)
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: dir)
            } catch {
                throw AssetPackError(.io, "cannot read directory \(dir): \(error.localizedDescription)")
            }
            for name in names {
                if name.hasPrefix(".") && !includeHidden { continue }
                let full = dir + "/" + name
                let rel = relative.isEmpty ? name : relative + "/" + name
                var status: FileStatus
                do { status = try FileSystem.lstat(full) } catch { throw error.io("cannot stat \(full)") }
                var target = full
                if status.kind == .symbolicLink {
                    guard let resolved = realPath(full) else {
                        throw AssetPackError(.invalidArgument, "symbolic link \(rel) is dangling")
                    }
                    // As bytes: `hasPrefix` on strings would take an NFD twin folder's path for
                    // the root's.
                    guard
                        resolved.utf8.elementsEqual(realRoot.utf8) || resolved.utf8.starts(with: (realRoot + "/").utf8)
                    else {
                        throw AssetPackError(
                            .invalidArgument,
                            "symbolic link \(rel) points outside the source directory (to \(resolved))")
                    }
                    do {
                        status = try FileSystem.stat(resolved)
                    } catch {
                        throw AssetPackError(.io, "cannot stat \(resolved)", underlying: .errno(error.rawValue))
                    }
                    target = resolved
                }
                switch status.kind {
                case .directory:
                    let cycle = ancestors.contains { $0.device == status.device && $0.inode == status.inode }
                    if cycle { continue }  // a link to a folder the walk is inside
                    try walk(target, relative: rel)
                case .regular:
                    if let excluded, status.device == excluded.device, status.inode == excluded.inode { continue }
                    do { try FileSystem.checkReadable(target) } catch { throw error.io("cannot read \(full)") }
                    let path = EntryPath.normalize(rel)
                    // A name the normalising turns into `..` or `.` components (`x\..\..\e.txt`,
                    // whose backslashes become separators) would be a path out of any folder
                    // it is extracted into, for every reader of the pack.
                    if let part = path.split(separator: "/", omittingEmptySubsequences: false).first(where: {
                        $0.isEmpty || $0 == "." || $0 == ".."
                    }) {
                        throw AssetPackError(
                            .invalidArgument,
                            "file \(EntryPath.printable(rel)) would be packed as \(EntryPath.printable(path)), whose '\(part)' component leaves the folder it is extracted into"
                        )
                    }
                    if let other = seen[path] {
                        throw AssetPackError(
                            .invalidArgument, "\(other) and \(rel) have the same normalised name \(path)")
                    }
                    seen[path] = rel
                    try limit.checkEntryCount(files.count + 1)
                    files.append(
                        direct && target.utf8.elementsEqual(full.utf8)
                            ? SourceFile(path: path, folder: realRoot, relative: rel, size: status.size)
                            : SourceFile(path: path, diskPath: target, size: status.size))
                default:
                    // Sockets, FIFOs and devices are not assets: skipped, and reported.
                    let kind =
                        switch status.kind {
                        case .fifo: "FIFO"
                        case .socket: "socket"
                        case .characterDevice: "character device"
                        case .blockDevice: "block device"
                        default: "special file"
                        }
                    skipped.append(SkippedFile(path: rel, kind: kind))
                }
            }
        }
        try walk(realRoot, relative: "")
        guard !files.isEmpty else {
            throw AssetPackError(.invalidArgument, "source directory \(rootPath) has no files to pack")
        }
        files.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        return (files, skipped.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) })
    }

    private static func realPath(_ path: String) -> String? {
        try? FileSystem.realpath(path)
    }
}

/// Which entries the packer compresses.
public enum CompressionPolicy: String, Sendable, CaseIterable {
    /// Store already-compressed media; deflate the rest unless deflate saves too little.
    case auto
    /// Store every entry.
    case store
    /// Deflate every entry.
    case deflate

    /// File extensions whose contents are already compressed (lower case).
    public static let compressedExtensions: Set<String> = [
        "jpg", "jpeg", "png", "webp", "gif", "heic", "heif", "avif", "jxl",
        "mp3", "ogg", "oga", "opus", "m4a", "aac", "flac",
        "mp4", "m4v", "mov", "webm", "mkv",
        "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "br", "lz4",
        "ktx2", "basis", "astc", "pvr", "woff", "woff2",
    ]

    /// Smallest saving, as a fraction of the size, that makes deflate worth it under `.auto`.
    public static let minimumSaving = 0.05
}
