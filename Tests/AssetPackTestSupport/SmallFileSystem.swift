import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs mounted on a fresh directory, for tests of full disks (ENOSPC). Needs root.
///
/// It calls mount(2) and umount2(2) directly rather than running `/bin/mount`: Foundation's
/// `Process.run` leaks a weak reference on Linux (Swift 6.3.1), which LeakSanitizer reports under
/// `make asan`, and a system call is all this needs.
public final class SmallFileSystem: @unchecked Sendable {
    /// Whether this process may mount one (root on Linux).
    public static let isAvailable: Bool = {
        #if os(Linux)
        return getuid() == 0
        #else
        return false
        #endif
    }()

    private let holder = TemporaryDirectory("assetpack-tmpfs")
    /// The mount point.
    public var url: URL { holder.url }

    /// Mounts a tmpfs of `megabytes` MiB.
    /// - Throws: When mount(2) fails (the errno in the message).
    public init(megabytes: Int) throws {
        #if os(Linux)
        guard mount("tmpfs", holder.path, "tmpfs", 0, "size=\(megabytes)m") == 0 else {
            let code = errno
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [
                    NSLocalizedDescriptionKey: "mount tmpfs on \(holder.path): \(String(cString: strerror(code)))"
                ])
        }
        #else
        throw CocoaError(.featureUnsupported)
        #endif
    }

    deinit {
        #if os(Linux)
        _ = umount2(holder.path, 0)
        #endif
    }
}
