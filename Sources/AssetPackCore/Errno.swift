import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The package's one file-system layer, in the style of swift-system, one concern per file:
// `Errno` and the `EINTR` retry here, the POSIX calls in SystemCalls.swift, `FileStatus`,
// `FileDescriptor`, `FileSystem` (paths), `InterruptSignals`; `madvise` and the wiper in
// Memory.swift. Platform differences live only in these files. Errors are `Errno`; turning one
// into an `AssetPackError` with a message is the caller's job (`Errno.io(_:)` in FileIO.swift).

/// A system error number, as `errno` reports it.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value (`ENOENT`, …).
    package let rawValue: Int32

    /// Wraps a C error number.
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now. Read it right after the failed call: anything else
    /// (cleanup, `close`, an allocation) may change it.
    package static var current: Errno { Errno(rawValue: errno) }

    /// `strerror`'s text ("No such file or directory").
    package var description: String { String(cString: strerror(rawValue)) }

    /// `EINTR`: a signal interrupted the call; every call here retries it.
    package static let interrupted = Errno(rawValue: EINTR)
    /// `ENOENT`.
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EEXIST`.
    package static let fileExists = Errno(rawValue: EEXIST)
    /// `ESTALE`: what ``FileDescriptor/reopen(_:)`` throws when the path now names another file.
    package static let staleFileHandle = Errno(rawValue: ESTALE)
    /// `ELOOP`: (with `O_NOFOLLOW`) the last component is a symbolic link.
    package static let tooManySymbolicLinks = Errno(rawValue: ELOOP)
}

/// Retries `call` while it fails with `EINTR`; any other failure (`-1`) throws the `errno` it left.
@inline(__always)
func retryingInterrupts<T: FixedWidthInteger>(_ call: () -> T) throws(Errno) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

/// Throws the `errno` a call left when it returned `-1`; never retries (`close`, `rename`, …).
@inline(__always)
func check(_ result: Int32) throws(Errno) {
    if result == -1 { throw Errno.current }
}

// The C functions under names of their own: inside `FileDescriptor` and `FileSystem` a method
// called `read` or `stat` would hide the C function of that name.
