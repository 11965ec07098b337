import Foundation
import Synchronization

/// The temporary files this process has in flight (`AtomicFile`'s, and any a writer registers),
/// so that an interrupted command can remove them before it dies.
///
/// The CLI calls ``removeAll()`` from its SIGINT/SIGTERM handler (a dispatch source, so on an
/// ordinary thread, not in signal context) and then re-raises the signal. A path is registered
/// *before* the file is created and forgotten after it was renamed or removed, so there is no
/// window in which a temporary exists unregistered; removing a path that is not (or no longer)
/// there is harmless. The previous file at the target is never touched: it is replaced only by
/// the rename of a complete temporary.
package enum TemporaryFiles {
    private static let paths = Mutex<Set<String>>([])

    /// Starts tracking `path`.
    package static func register(_ path: String) {
        _ = paths.withLock { $0.insert(path) }
    }

    /// Stops tracking `path` (it was renamed into place or removed).
    package static func forget(_ path: String) {
        _ = paths.withLock { $0.remove(path) }
    }

    /// Removes every tracked file or directory (recursively); returns how many were tracked.
    @discardableResult
    package static func removeAll() -> Int {
        let all = paths.withLock { set -> Set<String> in
            defer { set.removeAll() }
            return set
        }
        for path in all { try? FileManager.default.removeItem(atPath: path) }
        return all.count
    }

    /// The paths tracked now (for tests).
    package static var current: Set<String> { paths.withLock { $0 } }
}
