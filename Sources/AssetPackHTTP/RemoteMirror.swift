import AssetPackCore
import Foundation

/// A sparse local file the size of a remote pack, filled on demand by range requests
/// (docs/REMOTE.md, "Request plan" and "Cache").
///
/// Readers read the mirror as they read any local pack; before they do, ``ensure(_:)`` fetches
/// the bytes they will touch that are not there yet. Missing pieces closer than
/// `coalescingGap` are fetched as one request, and requests are at most `maxRequest` bytes,
/// run up to `parallelRequests` at a time. Bytes fetched beyond `cacheLimit` are evicted, least
/// recently used first, by punching holes in the file (the pinned ranges, the pack's header and
/// directory, never are). Once the server's file is seen to change, every later call fails: a
/// mirror never holds bytes of two versions.
package final class RemoteMirror: @unchecked Sendable {
    /// Tuning for the request plan.
    package struct Options: Sendable {
        /// Missing pieces with a gap of at most this many bytes are fetched together.
        package var coalescingGap: UInt64 = 64 << 10
        /// The size of a single request (up to a quarter more, rather than a tiny extra request).
        package var maxRequest: UInt64 = 8 << 20
        /// Requests in flight at once.
        package var parallelRequests = 4
        /// Bytes of entry data kept; older ones are evicted (least recently used).
        package var cacheLimit: UInt64 = 256 << 20
        /// Retries of transient failures.
        package var retry = HTTPRangeClient.Retry()
        /// Every request's deadlines and minimum rate.
        package var transfer = TransferLimits.default
        /// A streamed read asks for at most this many bytes per request, so that one request's
        /// deadline (``TransferLimits/requestTimeout``) bounds a few tens of MiB, not a whole entry.
        package var maxStreamedRequest: UInt64 = 32 << 20
        /// An install records what it downloaded after every this many bytes (what a resumed
        /// install need not fetch again).
        package var saveInterval: UInt64 = 32 << 20
        /// The first request: this many bytes from the start of the file.
        package var probeSize: UInt64 = 64 << 10
        /// Reads of at least this many stored bytes are streamed through memory: the bytes go
        /// from the network to the reader without the mirror file, and are not cached.
        package var streamThreshold: UInt64 = 4 << 20
        /// Bytes a streamed read holds in memory ahead of its reader (at least two of the
        /// reader's largest reads plus two 1 MiB buffers, so that any read fits; each streamed
        /// read under way has its own); the download waits for room (and, if the reader takes
        /// nothing for `streamPatience`, writes the rest to the file instead). Small: each
        /// buffer's first use costs a page fault per 4 KiB.
        package var streamWindow = 4 << 20
        /// Requests go to this server instead of the network (tests: the remote logic in-process).
        package var inMemoryServer: InMemoryHTTPServer?
        /// How long a streamed download waits for its reader to make room before it writes to
        /// the file instead: a reader waiting for bytes behind the window would wait forever.
        package var streamPatience: TimeInterval = 0.5
        package init() {}
        /// The defaults, with `transfer`'s deadlines.
        package init(transfer: TransferLimits) { self.transfer = transfer }
    }

    package let client: HTTPRangeClient
    package let options: Options
    /// The mirror file (mode 0600, in a private temporary directory removed by
    /// ``removeTemporaryFiles()`` or on deinit).
    package let path: String
    package let size: UInt64
    // Internal, not private: the fetching, the streaming window and the cache are extensions in
    // files of their own (MirrorFetching.swift, MirrorStreamWindow.swift, MirrorCache.swift).
    let fd: FileDescriptor
    let folder: String?
    /// Whether the private temporary directory is gone (guarded by `lock`).
    var folderRemoved = false
    /// The sweep of what killed processes left in the temporary folder, run beside the open and
    /// the read (a `$TMPDIR` of thousands of names costs milliseconds to list) and waited for by
    /// ``removeTemporaryFiles()``, so it is over when the mirror is.
    private var sweep: DispatchGroup?
    /// Guards the state below; signalled whenever bytes arrive or a fetch gives up.
    let lock = NSCondition()
    var present = RangeSet()
    /// Bytes some thread is fetching: others wait for them rather than fetch them twice.
    var inFlight = RangeSet()
    var pinned = RangeSet()
    var recent: [Range<UInt64>] = []
    var inUse: [Range<UInt64>: Int] = [:]
    var poisoned: AssetPackError?
    /// Streamed reads: their spans, and the bytes that arrived for them and wait in memory.
    var streaming: [Range<UInt64>: Int] = [:]
    var window: [WindowPiece] = []
    var windowHeld = 0
    var windowPeak = 0
    /// The memory the streamed reads under way may hold, together.
    var windowLimit = 0
    /// The ends of the ranges readers wait for, and how many downloads wait for room: a
    /// piece wakes the waiting threads only when one of them can go on (libcurl hands over
    /// pieces of 16 KiB; waking every reader for each would cost more than the copying).
    var awaitedEnds: [UInt64] = []
    var waitingForRoom = 0

    /// Opens `url` with one request (the first `probeSize` bytes, which also gives the size and
    /// version) into a new mirror in a private temporary directory.
    /// - Throws: `.limitExceeded` when the size the server claims exceeds `limits.maxPackSize`
    ///   (checked before the mirror file exists); `.remote`; `.io`.
    package convenience init(url: URL, options: Options = Options(), limits: ReadLimits = .default) throws {
        let client = try HTTPRangeClient(
            url: url, retry: options.retry, limits: options.transfer, inMemory: options.inMemoryServer)
        let collected = Collected()
        try client.fetch(0..<options.probeSize) { piece, _ in collected.append(piece) }
        let probe = collected.bytes
        guard let version = client.version else {
            throw AssetPackError(.remote, "\(url.absoluteString): no response")
        }
        try limits.checkPackSize(version.size, of: url.absoluteString)
        // Named as every temporary of ours (host, process, UUID), so that what a killed process
        // left (SIGKILL, a crash) is told from a mirror in use, and removed here.
        let temporaries = NSTemporaryDirectory()
        let folder = AtomicFile.temporaryName(in: temporaries)
        do { try FileSystem.mkdir(folder, permissions: 0o700) } catch {
            throw error.io("cannot create a temporary directory")
        }
        // An interrupted command (Ctrl-C) removes it too.
        TemporaryFiles.register(folder)
        do {
            try self.init(client: client, path: folder + "/pack", size: version.size, options: options, folder: folder)
        } catch {
            try? FileSystem.rmdir(folder)
            TemporaryFiles.forget(folder)
            throw error
        }
        // This mirror's own folder is named for a live process: the sweep passes it by.
        sweep = Self.sweep(temporaries)
        try store(probe, at: 0)
        lock.withLock { _ = present.insert(0..<UInt64(probe.count)) }
        pin(0..<UInt64(probe.count))
    }

    /// A mirror in an existing file of `size` bytes (an install's download; it stays).
    package init(
        client: HTTPRangeClient, path: String, size: UInt64, options: Options, present: RangeSet = RangeSet(),
        folder: String? = nil
    ) throws {
        self.client = client
        self.options = options
        self.path = path
        self.size = size
        self.folder = folder
        let fd: FileDescriptor
        do {
            fd = try .open(path, .readWrite, options: .create, permissions: 0o600)
        } catch { throw error.io("cannot create \(path)") }
        do {
            let current = try fd.status().size
            if current != size { try fd.truncate(to: size) }
        } catch {
            try? fd.close()
            if folder != nil { try? FileSystem.unlink(path) }
            throw error.io("cannot size \(path) to \(size) bytes")
        }
        self.fd = fd
        self.present = present
    }

    deinit {
        try? fd.close()
        removeTemporaryFiles()
    }

    /// Removes the mirror file and its private temporary directory now (a mirror in a file of
    /// the caller's, an install's download, stays). The owner calls it when it is done:
    /// deinit may come too late, because a background fetch thread can hold the last
    /// reference past the end of a command, and a process that exits first runs no deinit.
    /// The descriptor stays open, so a fetch still under way writes into the unlinked file.
    package func removeTemporaryFiles() {
        guard let folder else { return }
        let first: Bool = lock.withLock {
            defer { folderRemoved = true }
            return !folderRemoved
        }
        guard first else { return }
        try? FileSystem.unlink(path)
        try? FileSystem.rmdir(folder)
        TemporaryFiles.forget(folder)
        sweep?.wait()
    }

    /// Sweeps `folder` of dead processes' temporaries in the background, unless a sweep of it is
    /// under way already (mirrors opened at once share it). - Returns: The sweep's group.
    private static func sweep(_ folder: String) -> DispatchGroup {
        sweepsLock.withLock {
            if let running = sweeps[folder], running.wait(timeout: .now()) == .timedOut { return running }
            let group = DispatchGroup()
            DispatchQueue.global(qos: .utility).async(group: group) { AtomicFile.removeStaleTemporaries(in: folder) }
            sweeps[folder] = group
            return group
        }
    }
    private static let sweepsLock = NSLock()
    nonisolated(unsafe) private static var sweeps: [String: DispatchGroup] = [:]

    /// The ranges held so far (in the file).
    package var held: RangeSet { lock.withLock { present } }

    /// Memory held for streamed reads (buffers of bytes not read yet).
    package var windowBytes: Int { lock.withLock { windowHeld } }

    /// The most memory streamed reads held at once.
    package var windowPeakBytes: Int { lock.withLock { windowPeak } }

    /// Fetches `ranges` and runs `body` while they cannot be evicted (a read of them).
    /// - Parameter prefetching: Start fetching `ranges` in the background and run `body` at
    ///   once (its reads wait for their bytes through the reader's hook) instead of first.
    /// - Parameter largestRead: The largest single read the reader makes of these bytes: a
    ///   streamed read's window holds at least two of them, whatever `streamWindow` says.
    package func using<T>(
        _ ranges: [Range<UInt64>], prefetching: Bool = false, largestRead: Int = 0, _ body: () throws -> T
    ) throws -> T {
        lock.withLock { for r in ranges { inUse[r, default: 0] += 1 } }
        defer {
            lock.withLock {
                for r in ranges {
                    inUse[r, default: 1] -= 1
                    if inUse[r] == 0 { inUse[r] = nil }
                }
            }
        }
        if prefetching {
            let large = ranges.filter { $0.upperBound - $0.lowerBound >= options.streamThreshold }
            // Each streamed read brings its own share of memory, so that concurrent ones do not
            // starve each other, and a read never needs more than the window holds.
            let budget = max(options.streamWindow, 2 * largestRead + 2 * WindowPiece.size) * large.count
            lock.withLock {
                for r in large { streaming[r, default: 0] += 1 }
                windowLimit += budget
            }
            defer { if !large.isEmpty { endStreaming(large, budget: budget) } }
            for range in ranges { prefetch(range, through: large.contains(range)) }
            let result = try body()
            lock.withLock {
                for range in ranges where !large.contains(range) { touch(range) }
                evict()
            }
            return result
        }
        try ensure(ranges)
        return try body()
    }

    /// Marks `range` as never evicted (the pack's structure).
    package func pin(_ range: Range<UInt64>) { lock.withLock { _ = pinned.insert(range) } }

    func store(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try store($0, at: offset) }
    }

    func store(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        guard offset + UInt64(bytes.count) <= size else {
            throw AssetPackError(.remote, "\(client.url.absoluteString): the server sent bytes past the file's size")
        }
        do { try fd.pwriteAll(bytes, at: offset) } catch { throw error.io("cannot write \(path)") }
    }

    /// Writes bytes obtained elsewhere (an installed pack's identical span) and holds them.
    package func adopt(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try store(bytes, at: offset)
        lock.withLock { _ = present.insert(offset..<offset + UInt64(bytes.count)) }
    }

    /// Reads bytes, fetching them first if needed.
    package func read(_ offset: UInt64, _ count: Int) throws -> [UInt8] {
        try ensure([offset..<offset + UInt64(count)])
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, n in
            try readFile(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            n = count
        }
    }

    /// Fills `buffer` from the mirror file at `offset`.
    func readFile(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
        let got: Int
        do { got = try fd.preadFully(into: buffer, at: offset) } catch { throw error.io("cannot read \(path)") }
        guard got == buffer.count else { throw AssetPackError(.integrityFailure, "the remote pack is truncated") }
    }

    /// `error` with the mirror file's path replaced by the URL it mirrors.
    package func naming(_ error: AssetPackError) -> AssetPackError {
        var named = error
        named.message = error.message.replacingOccurrences(of: path, with: client.url.absoluteString)
        if named.path == path { named.path = client.url.absoluteString }
        return named
    }

    /// Syncs the file to disk.
    package func sync() throws {
        do { try fd.fsync() } catch { throw error.io("cannot sync \(path)") }
    }
}

/// Bytes collected from a fetch (the probe).
private final class Collected: @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    func append(_ piece: UnsafeRawBufferPointer) { bytes.append(contentsOf: piece) }
}
