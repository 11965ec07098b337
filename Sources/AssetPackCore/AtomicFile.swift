import Foundation

/// The one way this package writes a file that must appear whole or not at all: pack output,
/// the installed pack and its record, extracted entries, `cat --output`.
///
/// A temporary file is created beside the target (`O_EXCL`, a random name starting with
/// ``temporaryPrefix``), filled by the caller, optionally synced, checked, renamed over the target,
/// and the directory synced. Any failure removes the temporary file; the target then still holds
/// what it held before.
package enum AtomicFile {
    /// How every temporary file starts, so that an installer can sweep ones a crash left behind.
    package static let temporaryPrefix = ".assetpack-tmp-"

    /// Bytes a temporary name adds to its directory's path: `/`, the prefix, the writer's host
    /// (8 hex digits) and process id (at most 10 digits), each followed by `-`, and a UUID.
    package static let temporaryNameBytes = 1 + temporaryPrefix.utf8.count + 9 + 11 + 36

    /// This host, as 8 hex digits of a hash of its name (FNV-1a: an identifier, not a secret):
    /// a folder shared between hosts (NFS, two containers) holds temporaries of processes this
    /// host cannot see.
    package static let hostTag: String = {
        var name = [CChar](repeating: 0, count: 256)
        _ = gethostname(&name, name.count - 1)
        var hash: UInt32 = 2_166_136_261
        for byte in name.prefix(while: { $0 != 0 }) { hash = (hash ^ UInt32(UInt8(bitPattern: byte))) &* 16_777_619 }
        return String(hash, radix: 16).leftPadded(to: 8)
    }()

    /// A new temporary name in `folder`: the prefix, this host and process (so that a later
    /// writer can tell a temporary whose writer died from one being written), and a random UUID.
    package static func temporaryName(in folder: String) -> String {
        folder + "/" + temporaryPrefix + hostTag + "-\(getpid())-" + UUID().uuidString
    }

    /// Removes the temporaries in `folder` that this host's processes left and that no process
    /// of this host writes any more (killed during a write: SIGKILL leaves no chance to clean
    /// up), files or folders. A temporary of a live process, of another host, or named otherwise
    /// (before host and process ids were part of the name) is left alone: it may be in use.
    /// - Returns: How many were removed.
    @discardableResult
    package static func removeStaleTemporaries(in folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names where name.hasPrefix(temporaryPrefix) {
            let fields = name.dropFirst(temporaryPrefix.count).split(separator: "-", maxSplits: 2)
            guard fields.count == 3, fields[0] == hostTag, let pid = pid_t(fields[1]), pid > 0,
                UUID(uuidString: String(fields[2])) != nil
            else { continue }
            // ESRCH: no such process (EPERM means it exists under another user).
            guard kill(pid, 0) == -1, errno == ESRCH else { continue }
            if (try? FileManager.default.removeItem(atPath: folder + "/" + name)) != nil { removed += 1 }
        }
        return removed
    }

    /// The folder of `path` as the caller spelled it (NSString would also tidy "//" and "/.").
    package static func folder(of path: String) -> String {
        path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    }

    /// One clear error for a path no file can be written to: a directory, or a folder that is
    /// missing or not a folder. Writers whose library makes its own temporary file (libzip) call
    /// it first; ``write(_:mode:exactMode:durable:_:verify:)`` calls it itself.
    /// - Throws: `.invalidArgument` naming the path.
    package static func checkTarget(_ path: String) throws {
        if let target = try? FileSystem.stat(path) {
            if target.kind == .directory { throw AssetPackError(.invalidArgument, "\(path) is a directory") }
            // Renaming a new file over a device or FIFO would replace it (as root, /dev/null).
            if target.kind != .regular {
                throw AssetPackError(
                    .invalidArgument,
                    "\(path) is not a regular file (it is \(target.kind.name)), so it cannot be replaced atomically")
            }
        }
        let folder = folder(of: path)
        guard let status = try? FileSystem.stat(folder) else {
            throw AssetPackError(.invalidArgument, "cannot write \(path): folder \(folder) does not exist")
        }
        guard status.kind == .directory else {
            throw AssetPackError(.invalidArgument, "cannot write \(path): \(folder) is not a directory")
        }
    }

    /// Where output named `path` goes when it is not a file to replace.
    package enum Stream: Equatable, Sendable {
        /// A name of this process's open descriptor (`/dev/stdout`, `/dev/fd/N`,
        /// `/proc/self/fd/N`): written through the descriptor itself, at its own offset (a
        /// shell's `>>` stays an append).
        case descriptor(Int32)
        /// A character device, FIFO or socket (symbolic links followed: `/dev/null`): opened
        /// and written into.
        case device
    }

    /// Whether `path` names a stream that output is written into, never a file to replace.
    package static func stream(_ path: String) -> Stream? {
        var link = path
        for _ in 0..<40 {  // the kernel's own limit on links followed
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where link.hasPrefix(prefix) {
                if let n = Int32(link.dropFirst(prefix.count)) { return .descriptor(n) }
            }
            guard (try? FileSystem.lstat(link))?.kind == .symbolicLink, let target = try? FileSystem.readlink(link)
            else { break }
            link = target.hasPrefix("/") ? target : folder(of: link) + "/" + target
        }
        guard let target = try? FileSystem.stat(path) else { return nil }
        return [.characterDevice, .fifo, .socket].contains(target.kind) ? .device : nil
    }

    /// Writes `path` atomically.
    /// - Parameters:
    ///   - path: The file to create or replace. Its folder must exist.
    ///   - mode: The new file's mode, less the umask (applied by `open`, which reads it without the
    ///     race that reading it through `umask(2)` would have with other threads).
    ///   - exactMode: Set the mode exactly with `fchmod`, whatever the umask (the installer's 0600).
    ///   - durable: `fsync` the file before the rename and the directory after it.
    ///   - body: Fills the file through its descriptor (write or pwrite).
    ///   - verify: Runs after the file is complete and closed, with its temporary path, before the
    ///     rename; throwing leaves the target untouched.
    /// - Returns: What `body` returned.
    /// - Throws: What ``checkTarget(_:)``, `body` or `verify` throw; `.io` naming the file for a
    ///   failed system call.
    @discardableResult
    package static func write<T>(
        _ path: String, mode: mode_t = 0o666, exactMode: Bool = false, durable: Bool = true,
        _ body: (FileDescriptor) throws -> T, verify: (String) throws -> Void = { _ in }
    ) throws -> T {
        try checkTarget(path)
        let folder = folder(of: path)
        let (fd, temporary) = try createTemporary(in: folder, mode: mode, for: path)
        var renamed = false
        defer {
            if !renamed { try? FileSystem.unlink(temporary) }
            TemporaryFiles.forget(temporary)
        }
        let result: T
        do {
            defer { try? fd.close() }
            do { if exactMode { try fd.fchmod(mode) } } catch { throw error.io("cannot chmod \(temporary)") }
            result = try body(fd)
            do { if durable { try fd.fsync() } } catch { throw error.io("cannot sync \(temporary)") }
        }
        try verify(temporary)
        do { try FileSystem.rename(temporary, to: path) } catch { throw error.io("cannot rename into \(path)") }
        renamed = true
        if durable {
            let dir: FileDescriptor
            do { dir = try .open(folder, .readOnly, options: .directory) } catch {
                throw error.io("cannot open \(folder)")
            }
            defer { try? dir.close() }
            do { try dir.fsync() } catch { throw error.io("cannot sync \(folder)") }
        }
        return result
    }

    /// Creates a new temporary file in `folder` (`O_EXCL`, a fresh random name until one is free).
    private static func createTemporary(in folder: String, mode: mode_t, for path: String) throws
        -> (FileDescriptor, String)
    {
        while true {
            let temporary = temporaryName(in: folder)
            TemporaryFiles.register(temporary)  // before it exists: an interrupt removes it
            do {
                let fd = try FileDescriptor.open(
                    temporary, .readWrite, options: [.create, .exclusiveCreate], permissions: mode)
                return (fd, temporary)
            } catch  where error == .fileExists {
                TemporaryFiles.forget(temporary)
                continue
            } catch {
                TemporaryFiles.forget(temporary)
                throw error.io("cannot write \(path)")
            }
        }
    }
}

extension String {
    /// This string with zeros before it, up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
