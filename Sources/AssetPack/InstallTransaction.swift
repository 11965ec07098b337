import AssetPackCore
import AssetPackFormat
import Foundation

/// One install into a private directory, from its lock to its commit: the only place that knows
/// the directory's files. Every install runs inside one (a local pack, a URL, each pack of a
/// release, and the release itself):
///
/// - it makes the directory private and holds its lock, `.assetpack.lock`, for its whole run,
///   after removing the temporaries a crashed install left;
/// - it names each installed pack's files (``Slot``): the pack, its install record
///   `.NAME.install`, and a download's staging file `.NAME.download` with its progress
///   `.NAME.download.json`;
/// - it says whether a slot still holds the install it recorded (``Slot/current(source:)``), and
///   commits a new one by recording it (``Slot/commit(_:)``);
/// - a first install that fails leaves no directory behind.
package struct InstallTransaction {
    /// The lock file every install of the directory takes.
    package static let lockName = ".assetpack.lock"

    /// The installer whose directory and trust this install has.
    package let installer: PrivateInstaller
    package var directory: URL { installer.directory }

    /// Runs `body` in a transaction on `installer`'s directory: the directory made (or tightened
    /// to) 0700, its lock held, stale temporaries removed. A failure of a transaction that created
    /// the directory removes it again when the lock file is all it holds (a download kept to
    /// resume is content, and keeps it).
    package static func run<T>(_ installer: PrivateInstaller, _ body: (InstallTransaction) throws -> T) throws -> T {
        let transaction = InstallTransaction(installer: installer)
        let lockPath = transaction.path(lockName)
        var created = false
        var attempts = 0
        var lock: FileLock
        // A failed first install removes its folder and lock file (below): an installer that
        // was waiting on that file then holds a lock nobody else can see, so it starts over
        // (the folder made again) until the file it locked is the one the path names.
        while true {
            created = try transaction.makePrivateDirectory() || created
            lock = try FileLock(lockPath)
            if lock.holds(lockPath) { break }
            lock.unlock()
            attempts += 1
            guard attempts < 100 else { throw AssetPackError(.io, "cannot lock \(lockPath): it keeps being replaced") }
        }
        defer { lock.unlock() }
        transaction.removeStaleTemporaries()
        do { return try body(transaction) } catch {
            if created, transaction.fileNames() == [lockName] {
                try? FileSystem.unlink(lockPath)
                try? FileSystem.rmdir(transaction.directory.path)
            }
            throw error
        }
    }

    /// The slot of the pack installed as `name`.
    /// - Throws: `.invalidArgument` for a name that is not a plain file name (hidden names are
    ///   the transaction's own).
    package func slot(_ name: String) throws -> Slot {
        try Self.checkName(name)
        return Slot(transaction: self, name: name)
    }

    /// - Throws: `.invalidArgument` for a name that is not a plain file name.
    fileprivate static func checkName(_ name: String) throws {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"), !name.contains("\0") else {
            throw AssetPackError(.invalidArgument, "installed name '\(name)' must be a plain file name")
        }
        // The files kept beside the pack are named after it (`.NAME.download.json` the longest):
        // each must be a name the file system takes, and none a temporary's, which every install
        // sweeps away (a name starting `assetpack-tmp-` lost its record at each install).
        let longest = ".\(name).download.json"  // Slot.stagingStatePath's name
        guard longest.utf8.count <= 255 else {
            throw AssetPackError(
                .invalidArgument,
                "installed name '\(name)' is too long: the files kept beside it (\(longest)) would be over 255 bytes")
        }
        guard !("." + name).hasPrefix(AtomicFile.temporaryPrefix) else {
            throw AssetPackError(
                .invalidArgument,
                "installed name '\(name)' starts like the installer's temporary files, which an install removes")
        }
    }

    /// The names in the directory.
    package func fileNames() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    }

    /// The path of `name` in the directory.
    package func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// One installed name: the pack and the files beside it that belong to it.
    package struct Slot {
        package let transaction: InstallTransaction
        /// The installed file's name.
        package let name: String

        /// The installed pack.
        package var pack: URL { transaction.directory.appendingPathComponent(name) }
        /// What the install recorded (``InstallRecord``).
        package var recordURL: URL { transaction.directory.appendingPathComponent(".\(name).install") }
        /// Where a download of this pack is assembled before it replaces the pack.
        package var stagingPath: String { transaction.path(".\(name).download") }
        /// A download's progress, kept to resume it.
        package var stagingStatePath: String { stagingPath + ".json" }

        /// The record of the last install, if any.
        package func record() -> InstallRecord? { InstallRecord.load(recordURL) }

        /// The installed pack's size, `nil` when no regular file is installed.
        package func installedSize() -> UInt64? { (try? PrivateInstaller.regularFile(pack.path))?.size }

        /// The install recorded, when the pack installed is still the one it recorded: its size,
        /// its head and tail as recorded, and (when the installer trusts keys) recorded under a key
        /// it still trusts. The caller compares the record's source with its own.
        package struct Current {
            package var record: InstallRecord
            /// The trusted key the install was checked under; `nil` without trusted keys.
            package var publisher: PublisherKey?
            /// The key the record names, trusted or not (what a re-record keeps).
            package var recordedPublisher: PublisherKey?
        }

        /// ``Current`` when the slot holds what it recorded and `source` says the record is of the
        /// source being installed now; `nil` when it must be installed again.
        /// - Parameter source: Whether the recorded install is of this source (its size, mtime and
        ///   fingerprint, or its SHA-256; a URL's validators). Asked only of an install the slot
        ///   still holds.
        /// - Throws: `.untrusted` when the installed pack is the source's and its signature expired
        ///   (trusting keys): an unchanged but expired pack is not current, and nothing would make
        ///   it so. A new source is installed over an expired pack. What `source` throws.
        package func current(source: (InstallRecord) throws -> Bool) throws -> Current? {
            let installer = transaction.installer
            // The pack installed is a file of its own, the app's, private: a copy made 0644, or
            // a hard link another user made to a pack they can write (into a directory once
            // open to them), is installed again rather than called current.
            guard let record = record(), let installed = try? FileSystem.lstat(pack.path), installed.kind == .regular,
                installed.size == record.size, installed.permissions == 0o600, installed.linkCount == 1,
                installed.owner == UInt32(geteuid())
            else { return nil }
            let recordedPublisher = record.publisher.flatMap { try? PublisherKey(text: $0) }
            let trustedBefore =
                installer.trustedKeys.isEmpty || recordedPublisher.map(installer.trustedKeys.contains) == true
            guard trustedBefore, record.holdsInstalled(pack.path, recordedAt: recordURL), try source(record) else {
                return nil
            }
            try installer.checkInstalledNotExpired(pack.path)
            return Current(
                record: record, publisher: installer.trustedKeys.isEmpty ? nil : recordedPublisher,
                recordedPublisher: recordedPublisher)
        }

        /// Commits the install of the pack now in place: its record, with the installed pack's
        /// head and tail, written atomically. The pack is installed once this returns.
        package func commit(_ record: InstallRecord) throws {
            try record.installed(at: pack.path).save(recordURL)
        }

        /// Removes the pack, its record and any download of it.
        package func remove() {
            for path in [pack.path, recordURL.path, stagingPath, stagingStatePath] { try? FileSystem.unlink(path) }
        }
    }

    // MARK: - Steps

    /// Creates the directory (0700) or tightens it. - Returns: whether it was created.
    private func makePrivateDirectory() throws -> Bool {
        let path = directory.path
        let existed = (try? FileSystem.lstat(path)) != nil
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw AssetPackError(.io, "cannot create \(path): \(error.localizedDescription)")
        }
        guard let status = try? FileSystem.lstat(path), status.kind == .directory else {
            throw AssetPackError(.io, "\(path) is not a directory")
        }
        do { try FileSystem.chmod(path, 0o700) } catch { throw error.io("cannot make \(path) private") }
        return !existed
    }

    /// Any temporary left in the directory while we hold the lock is from a crashed install.
    private func removeStaleTemporaries() {
        for name in fileNames() where name.hasPrefix(AtomicFile.temporaryPrefix) { try? FileSystem.unlink(path(name)) }
    }
}

extension PrivateInstaller {
    /// Runs `body` in an ``InstallTransaction`` on the directory.
    package func transaction<T>(_ body: (InstallTransaction) throws -> T) throws -> T {
        try InstallTransaction.run(self, body)
    }

    /// Runs `body` on the slot `name` in a transaction; the name is checked before the directory
    /// is touched.
    /// - Throws: `.invalidArgument` for a name that is not a plain file name.
    package func transaction<T>(installing name: String, _ body: (InstallTransaction.Slot) throws -> T) throws -> T {
        try InstallTransaction.checkName(name)
        return try InstallTransaction.run(self) { try body($0.slot(name)) }
    }
}

/// An exclusive `flock` on a file, held until `unlock()`.
struct FileLock {
    private let fd: FileDescriptor
    init(_ path: String) throws {
        do {
            fd = try .open(path, .readWrite, options: .create, permissions: 0o600)
        } catch {
            throw error.io("cannot open lock file \(path)")
        }
        do {
            try fd.lockExclusive()
        } catch {
            try? fd.close()
            throw error.io("cannot lock \(path)")
        }
    }
    func unlock() {
        try? fd.unlock()
        try? fd.close()
    }

    /// Whether `path` still names the file this lock is on (not removed or replaced since).
    func holds(_ path: String) -> Bool {
        guard let mine = try? fd.status(), let named = try? FileSystem.stat(path) else { return false }
        return mine.inode == named.inode && mine.device == named.device
    }
}
