import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - FileStatus

/// What `stat`, `lstat` or `fstat` report about a file, in platform-neutral types.
package struct FileStatus: Hashable, Sendable {
    /// The file's type (`st_mode & S_IFMT`).
    package enum Kind: Hashable, Sendable {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown

        /// How an error message names it: "a FIFO".
        package var name: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symbolicLink: "a symbolic link"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .unknown: "of an unknown type"
            }
        }
    }

    /// The file's type.
    package var kind: Kind
    /// Size in bytes (`st_size`).
    package var size: UInt64
    /// Permission bits, with set-user-ID, set-group-ID and sticky (`st_mode & 0o7777`).
    package var permissions: UInt32
    /// The device holding the file (`st_dev`).
    package var device: UInt64
    /// The file's inode number on that device (`st_ino`).
    package var inode: UInt64
    /// Last modification, in nanoseconds since the epoch.
    package var modificationTime: Int64
    /// Last change of the inode (content, mode, links, or a timestamp set by hand), in
    /// nanoseconds since the epoch: no system call sets it to a chosen value.
    package var changeTime: Int64
    /// How many names the file has (`st_nlink`).
    package var linkCount: UInt64
    /// The owner's user ID (`st_uid`).
    package var owner: UInt32

    init(_ st: CStat) {
        kind =
            switch st.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            case S_IFIFO: .fifo
            case S_IFSOCK: .socket
            case S_IFCHR: .characterDevice
            case S_IFBLK: .blockDevice
            default: .unknown
            }
        size = UInt64(max(0, st.st_size))
        permissions = UInt32(st.st_mode & 0o7777)
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
        linkCount = UInt64(truncatingIfNeeded: st.st_nlink)
        owner = UInt32(truncatingIfNeeded: st.st_uid)
        #if canImport(Darwin)
        let time = st.st_mtimespec, change = st.st_ctimespec
        #else
        let time = st.st_mtim, change = st.st_ctim
        #endif
        modificationTime = Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        changeTime = Int64(change.tv_sec) * 1_000_000_000 + Int64(change.tv_nsec)
    }

    /// Whether `other` describes the same file: same device, same inode.
    package func isSameFile(as other: FileStatus) -> Bool {
        device == other.device && inode == other.inode
    }
}
