import Foundation

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
    /// The set behind a lock. (A `static let` `Mutex` from Synchronization drew a ThreadSanitizer
    /// "Swift access race" report on the global under concurrent `withLock`; a class holding an
    /// `NSLock` is the plain form of the same thing.)
    private final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: Set<String> = []
        /// Files being appended to in place (by path, for their writers), each through its open
        /// descriptor (the file appended to, whatever the path names by then), and the size it had.
        var appends: [String: (descriptor: FileDescriptor, size: UInt64)] = [:]
        /// Downloads to keep (by path): each saves what it holds, for the next run to resume.
        private var keepers: [String: @Sendable () -> Void] = [:]

        /// Runs `body` under the lock, with the keepers.
        func updateKeepers<R>(_ body: (inout [String: @Sendable () -> Void]) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&keepers)
        }

        func update<R>(_ body: (inout Set<String>) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&paths)
        }

        /// Runs `body` under the lock, with the appends.
        func updateAppends<R>(_ body: (inout [String: (descriptor: FileDescriptor, size: UInt64)]) throws -> R)
            rethrows -> R
        {
            lock.lock()
            defer { lock.unlock() }
            return try body(&appends)
        }
    }

    private static let registry = Registry()

    /// Orders every write into a file being appended to (``appendWrite(_:_:)``, shared) before an
    /// interrupt's cut of it (``removeAll()``, exclusive): a write that started before the cut
    /// finished before it, and one after it finds its descriptor cut and writes nothing. Without
    /// it the writer thread's next `pwrite` or `ftruncate` grew the file again after the handler
    /// had cut it back, while the tool said it "was not changed".
    nonisolated(unsafe) private static let gate: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
        return lock
    }()
    /// Descriptors of appends an interrupt cut back: written under the gate's exclusive hold,
    /// read under its shared one.
    nonisolated(unsafe) private static var cut: Set<Int32> = []

    /// Runs `body`, a write into the file open as `descriptor` (an append's, or any other: the
    /// check costs a shared lock), unless an interrupt cut that append back: then it throws
    /// `.io` and writes nothing. Holds the gate shared for the whole write, so an interrupt's cut
    /// waits for it.
    package static func appendWrite<R>(_ descriptor: FileDescriptor, _ body: () throws -> R) throws -> R {
        pthread_rwlock_rdlock(gate)
        defer { pthread_rwlock_unlock(gate) }
        guard !cut.contains(descriptor.rawValue) else {
            throw AssetPackError(.io, "interrupted: the append was cut back")
        }
        return try body()
    }

    /// Starts tracking `path`.
    package static func register(_ path: String) {
        _ = registry.update { $0.insert(path) }
    }

    /// Stops tracking `path` (it was renamed into place or removed).
    package static func forget(_ path: String) {
        _ = registry.update { $0.remove(path) }
    }

    /// Saves every download kept for a resume (outside the lock: a save writes its record through
    /// an ``AtomicFile``, which registers its own temporary), removes every tracked file or
    /// directory (recursively), and cuts every file being appended to back to the size it had;
    /// returns how many were tracked.
    @discardableResult
    package static func removeAll() -> Int {
        let keepers = registry.updateKeepers { keepers in
            defer { keepers.removeAll() }
            return Array(keepers.values)
        }
        for save in keepers { save() }
        let all = registry.update { set -> Set<String> in
            defer { set.removeAll() }
            return set
        }
        for path in all { try? FileManager.default.removeItem(atPath: path) }
        let appends = registry.updateAppends { appends -> Int in
            defer { appends.removeAll() }
            // Exclusive: no write into an append is under way while it is cut, and none lands
            // after. Taken inside the registry's lock, as a commit takes it (shared) inside that
            // lock too: one order, no deadlock.
            pthread_rwlock_wrlock(gate)
            defer { pthread_rwlock_unlock(gate) }
            for (_, append) in appends {
                cut.insert(append.descriptor.rawValue)
                if (try? append.descriptor.status().size) != append.size {
                    try? append.descriptor.truncate(to: append.size)
                }
            }
            return appends.count
        }
        return all.count + appends
    }

    /// Starts tracking an append to the file at `path`, open as `descriptor` (which must stay open
    /// until ``commitAppend(_:_:)`` or ``forgetAppend(_:)``), which is `size` bytes long: an
    /// interrupt before the commit cuts it back to that (a container's re-pack in place).
    package static func registerAppend(_ path: String, descriptor: FileDescriptor, size: UInt64) {
        registry.updateAppends { $0[path] = (descriptor, size) }
    }

    /// Runs `commit` (what makes the appended bytes part of the file: a container's header slot)
    /// and stops tracking the append, unless an interrupt already cut it back; the two exclude
    /// each other, so an interrupt never cuts a committed append.
    /// - Returns: Whether `commit` ran.
    @discardableResult
    package static func commitAppend(_ path: String, _ commit: () throws -> Void) throws -> Bool {
        try registry.updateAppends { appends in
            guard appends.removeValue(forKey: path) != nil else { return false }
            try commit()
            return true
        }
    }

    /// Stops tracking an append that failed (and was cut back by its writer).
    package static func forgetAppend(_ path: String) {
        _ = registry.updateAppends { $0.removeValue(forKey: path) }
    }

    /// Keeps the download at `path` on an interrupt: `save` (which must not throw, and runs on
    /// the interrupt's thread while the download goes on) records what it holds, so that the
    /// next run resumes it instead of starting over. Until ``forgetKeep(_:)``.
    package static func keepOnInterrupt(_ path: String, save: @escaping @Sendable () -> Void) {
        registry.updateKeepers { $0[path] = save }
    }

    /// Stops keeping the download at `path` (it finished, or failed and saved or removed itself).
    package static func forgetKeep(_ path: String) {
        _ = registry.updateKeepers { $0.removeValue(forKey: path) }
    }
}

extension TemporaryFiles {
    /// Ctrl-C and SIGTERM: runs `first` (a tool clears its progress line, says what it leaves),
    /// removes the registered temporary files, then dies of the signal (exit status 128 + signal
    /// to a shell). Both tools call it once at start; what a command was replacing is left as it
    /// was, because it is replaced only by renaming a complete temporary.
    package static func removeOnInterrupt(then first: @escaping @Sendable () -> Void = {}) {
        InterruptSignals.onInterrupt {
            first()
            removeAll()
        }
    }
}

extension TemporaryFiles {
    /// Runs `body` with `bytes` in a new file `name` inside a new private temporary folder
    /// (registered, so an interrupt removes it), then removes both: how a writer packs one of a
    /// pack's own records (the deletion record, the container's dictionary) as an entry read
    /// from a file.
    /// - Throws: `.io` when the folder or file cannot be made; whatever `body` throws.
    package static func withFile<R>(named name: String, holding bytes: [UInt8], _ body: (URL) throws -> R) throws -> R {
        let folder: String
        do {
            folder = try FileSystem.makeTemporaryDirectory(
                template: NSTemporaryDirectory() + "/assetpack-record-XXXXXX")
        } catch { throw error.io("cannot create a temporary folder for the pack's \(name)") }
        let file = folder + "/" + name
        register(folder)
        defer {
            try? FileSystem.unlink(file)
            try? FileSystem.rmdir(folder)
            forget(folder)
        }
        do { try Data(bytes).write(to: URL(fileURLWithPath: file)) } catch {
            throw AssetPackError(.io, "cannot write the pack's \(name): \(error.localizedDescription)", path: file)
        }
        return try body(URL(fileURLWithPath: file))
    }
}
