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
    private let fd: FileDescriptor
    private let folder: String?
    /// Whether the private temporary directory is gone (guarded by `lock`).
    private var folderRemoved = false
    /// Guards the state below; signalled whenever bytes arrive or a fetch gives up.
    private let lock = NSCondition()
    private var present = RangeSet()
    /// Bytes some thread is fetching: others wait for them rather than fetch them twice.
    private var inFlight = RangeSet()
    private var pinned = RangeSet()
    private var recent: [Range<UInt64>] = []
    private var inUse: [Range<UInt64>: Int] = [:]
    private var poisoned: AssetPackError?
    /// Streamed reads: their spans, and the bytes that arrived for them and wait in memory.
    private var streaming: [Range<UInt64>: Int] = [:]
    private var window: [WindowPiece] = []
    private var windowHeld = 0
    private var windowPeak = 0
    /// The memory the streamed reads under way may hold, together.
    private var windowLimit = 0
    /// The ends of the ranges readers wait for, and how many downloads wait for room: a
    /// piece wakes the waiting threads only when one of them can go on (libcurl hands over
    /// pieces of 16 KiB; waking every reader for each would cost more than the copying).
    private var awaitedEnds: [UInt64] = []
    private var waitingForRoom = 0

    /// Opens `url` with one request (the first `probeSize` bytes, which also gives the size and
    /// version) into a new mirror in a private temporary directory.
    /// - Throws: `.limitExceeded` when the size the server claims exceeds `limits.maxPackSize`
    ///   (checked before the mirror file exists); `.remote`; `.io`.
    package convenience init(url: URL, options: Options = Options(), limits: ReadLimits = .default) throws {
        let client = try HTTPRangeClient(url: url, retry: options.retry, limits: options.transfer)
        let collected = Collected()
        try client.fetch(0..<options.probeSize) { piece, _ in collected.append(piece) }
        let probe = collected.bytes
        guard let version = client.version else {
            throw AssetPackError(.remote, "\(url.absoluteString): no response")
        }
        try limits.checkPackSize(version.size, of: url.absoluteString)
        let folder: String
        do {
            folder = try FileSystem.makeTemporaryDirectory(
                template: NSTemporaryDirectory() + "/assetpack-remote-XXXXXX")
        } catch { throw error.io("cannot create a temporary directory") }
        // An interrupted command (Ctrl-C) removes it too.
        TemporaryFiles.register(folder)
        do {
            try self.init(client: client, path: folder + "/pack", size: version.size, options: options, folder: folder)
        } catch {
            try? FileSystem.rmdir(folder)
            TemporaryFiles.forget(folder)
            throw error
        }
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
    }

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

    /// Fetches whatever of `ranges` is neither held nor being fetched by another thread, waits
    /// for the rest, then marks them recently used.
    /// - Throws: `.remote`, `.integrityFailure` (a short file), `.io`.
    /// - Parameter touching: Record the ranges as recently used (a read hook's chunk-sized
    ///   waits do not: the read's whole span is recorded once).
    package func ensure(
        _ ranges: [Range<UInt64>], touching: Bool = true, progress: (@Sendable (UInt64) -> Void)? = nil
    ) throws {
        let wanted = ranges.map { $0.clamped(to: 0..<size) }.filter { !$0.isEmpty }
        let cancellation = Cancellation.current
        // Rounds: a range another thread was fetching can come back missing if its fetch
        // failed; then this thread fetches it itself (and meets that error, or not).
        for _ in 0..<8 {
            let claimed: [Range<UInt64>] = try lock.withLock {
                if let poisoned { throw poisoned }
                return claim(wanted)
            }
            let plan = Self.plan(claimed, gap: options.coalescingGap, maxRequest: options.maxRequest)
            if !plan.isEmpty {
                do {
                    try run(plan, progress: progress, cancellation: cancellation)
                } catch {
                    poisonIfChanged()
                    throw error
                }
            }
            let done: Bool = try lock.withLock {
                while true {
                    if let poisoned { throw poisoned }
                    try cancellation?.check()
                    if wanted.allSatisfy(present.contains) {
                        if touching {
                            for range in wanted { touch(range) }
                            evict()
                        }
                        return true
                    }
                    // Missing and nobody fetching it: claim it in the next round.
                    if wanted.flatMap({ present.missing(in: $0) }).contains(where: { !inFlight.contains($0) }) {
                        return false
                    }
                    // A streamed download publishing these bytes to memory wakes this too.
                    waitForBytes(upTo: wanted.map(\.lowerBound).min() ?? 0, cancellation: cancellation)
                }
            }
            if done { return }
        }
        throw AssetPackError(
            .remote, "\(client.url.absoluteString): bytes could not be fetched (other fetches kept failing)")
    }

    /// Claims the parts of `ranges` neither held nor in flight, for this thread to fetch.
    /// Called with the lock held.
    private func claim(_ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        let claimed = ranges.flatMap { present.missing(in: $0) }.flatMap { inFlight.missing(in: $0) }
        for piece in claimed { inFlight.insert(piece) }
        return claimed
    }

    /// After a failed fetch: if it failed because the file changed, every later call fails too.
    private func poisonIfChanged() {
        if let changed = client.changeDetected { lock.withLock { poisoned = changed } }
    }

    /// Waits (lock held) until bytes arrive; a streamed download wakes the waiter only once it
    /// has published bytes up to `end`. A cancellable wait wakes every 50 ms to look at it.
    private func waitForBytes(upTo end: UInt64, cancellation: Cancellation?) {
        awaitedEnds.append(end)
        if cancellation == nil {
            lock.wait()
        } else {
            _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        awaitedEnds.remove(at: awaitedEnds.firstIndex(of: end)!)
    }

    /// Starts fetching `range` in the background, in order; a later ``ensure(_:progress:)`` (or
    /// a read hook) waits for the parts in flight instead of fetching them again.
    /// - Parameter through: Stream the bytes through memory to ``supply(into:at:)`` (one
    ///   request at a time, in order) instead of writing them to the file.
    package func prefetch(_ range: Range<UInt64>, through: Bool = false) {
        // Claimed now, so that the reader's first read waits for these bytes instead of
        // racing the background thread to fetch them.
        let claimed: [Range<UInt64>] = lock.withLock {
            poisoned == nil ? claim([range.clamped(to: 0..<size)]) : []
        }
        // A streamed read asks for large pieces: the bytes are wanted in order, and each extra
        // request costs a round trip with the connection idle.
        let plan = Self.plan(
            claimed, gap: options.coalescingGap, maxRequest: through ? options.maxStreamedRequest : options.maxRequest)
        guard !plan.isEmpty else { return }
        let cancellation = Cancellation.current
        Thread.detachNewThread { [self] in
            // A failure gives the claims back; the reads waiting for them fetch for themselves
            // and meet the error there.
            do { try run(plan, progress: nil, through: through, cancellation: cancellation) } catch {
                poisonIfChanged()
            }
        }
    }

    /// The read hook of a remote reader: fills `buffer` with the bytes at `offset` from a
    /// streamed read's memory (and the file for parts that went there), or makes sure the file
    /// holds them.
    /// - Returns: Whether `buffer` was filled; `false` means the file holds the bytes.
    package func supply(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Bool {
        let range = offset..<offset + UInt64(buffer.count)
        guard !range.isEmpty, range.upperBound <= size else {
            try ensure([range], touching: false)
            return false
        }
        // Under the lock: find the pieces and pin them; the copying happens outside it.
        let cancellation = Cancellation.current
        let pieces: [(piece: WindowPiece, part: Range<UInt64>)]? = try lock.withLock {
            while true {
                if let poisoned { throw poisoned }
                try cancellation?.check()
                if present.contains(range) { return nil }
                let overlapping = window.filter { $0.range.overlaps(range) }
                let missing = present.missing(in: range).flatMap { RangeSet(overlapping.map(\.range)).missing(in: $0) }
                if missing.isEmpty {
                    for piece in overlapping { piece.pins += 1 }
                    return overlapping.map { ($0, $0.range.clamped(to: range)) }
                }
                // Missing and nobody fetching it: fetch it into the file.
                if missing.contains(where: { !inFlight.contains($0) }) { return nil }
                waitForBytes(upTo: range.upperBound, cancellation: cancellation)
            }
        }
        guard let pieces else {
            try ensure([range], touching: false)
            return false
        }
        defer {
            lock.withLock {
                for (piece, part) in pieces {
                    piece.pins -= 1
                    piece.taken += Int(part.upperBound - part.lowerBound)
                    piece.releaseIfUnused()  // dropped while this copied
                }
                release { $0.taken >= $0.count && $0.sealed }
            }
        }
        var filled = RangeSet()
        for (piece, part) in pieces {
            // Published bytes of a pinned piece stay put until it is unpinned.
            let from = Int(part.lowerBound - piece.start), to = Int(part.lowerBound - range.lowerBound)
            let n = Int(part.upperBound - part.lowerBound)
            UnsafeMutableRawBufferPointer(rebasing: buffer[to..<to + n])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: piece.storage[from..<from + n]))
            filled.insert(part)
        }
        for part in filled.missing(in: range) {
            // The rest went to the file (a download that ran out of patience); the read holds
            // the span, so it is not evicted meanwhile.
            let to = Int(part.lowerBound - range.lowerBound)
            try readFile(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[to..<to + Int(part.upperBound - part.lowerBound)]),
                at: part.lowerBound)
        }
        return true
    }

    /// Takes the pieces `done` says are finished out of the window; their buffers go when no
    /// reader copies from them and the download no longer fills them. Called with the lock held.
    private func release(where done: (WindowPiece) -> Bool) {
        var freed = false
        window.removeAll { piece in
            guard done(piece) else { return false }
            windowHeld -= piece.storage.count
            piece.dropped = true
            piece.releaseIfUnused()
            freed = true
            return true
        }
        if freed && waitingForRoom > 0 { lock.broadcast() }
    }

    /// A streamed read is over: what it left unread in memory goes (it was never cached), its
    /// download stops (``offer(_:at:filling:)`` sees the read gone), and any part that went to
    /// the file is recorded as used, so that the cache limit can evict it.
    private func endStreaming(_ ranges: [Range<UInt64>], budget: Int) {
        lock.withLock {
            for r in ranges {
                streaming[r, default: 1] -= 1
                if streaming[r] == 0 { streaming[r] = nil }
                if present.overlap(with: RangeSet([r])) > 0 { touch(r) }
            }
            windowLimit -= budget
            release { piece in !streaming.keys.contains { $0.contains(piece.start) } }
            evict()
            lock.broadcast()
        }
    }

    /// Hands bytes of a streamed read to memory: they are copied into the piece the download
    /// fills without the lock, and published (made visible to readers) every `publishEvery`
    /// bytes, when the piece is full, and by ``seal(_:)`` at the end.
    /// - Returns: How many bytes (from the start) memory took. The rest go to the file when the
    ///   reader took nothing for `streamPatience` (from then on, all of this download's bytes do:
    ///   one wait, not one per piece); `stop` when no streamed read wants them any more.
    private func offer(
        _ bytes: UnsafeRawBufferPointer, at offset: UInt64, filling: StreamFill
    ) -> (taken: Int, stop: Bool) {
        if filling.spilling { return (0, false) }
        var done = 0
        while done < bytes.count {
            let at = offset + UInt64(done)
            if filling.piece == nil || filling.piece!.end != at || filling.piece!.isFull {
                seal(filling)
                switch newPiece(at: at) {
                case .piece(let piece): filling.piece = piece
                case .noRoom:
                    filling.spilling = true
                    return (done, false)
                case .unwanted: return (done, true)
                }
            }
            let piece = filling.piece!
            let n = piece.write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
            done += n
            // A piece shorter than libcurl's 16 KiB means a slow network: publish at once.
            if piece.isFull || piece.written - piece.count >= Self.publishEvery || bytes.count < 16 << 10 {
                publish(piece)
            }
        }
        return (done, false)
    }

    /// Readers see a piece's bytes in steps of this many (each step takes the lock once).
    static let publishEvery = 128 << 10

    /// Makes what the download wrote into `piece` visible to readers, and wakes one that waits
    /// for it.
    private func publish(_ piece: WindowPiece) {
        lock.withLock {
            guard piece.written > piece.count else { return }
            let new = piece.start + UInt64(piece.count)..<piece.end
            piece.count = piece.written
            if piece.dropped { return }
            inFlight.remove(new)
            if let first = awaitedEnds.min(), first <= new.upperBound { lock.broadcast() }
        }
    }

    /// The download is done with the piece it fills: publish the rest; it can go once read.
    private func seal(_ filling: StreamFill) {
        guard let piece = filling.piece else { return }
        filling.piece = nil
        publish(piece)
        lock.withLock {
            piece.sealed = true
            if piece.dropped {
                piece.releaseIfUnused()
            } else if piece.taken >= piece.count {
                release { $0 === piece }
            }
        }
    }

    private enum NewPiece {
        case piece(WindowPiece)
        /// The readers took nothing for `streamPatience`.
        case noRoom
        /// No streamed read wants these bytes (it ended, or the mirror is poisoned).
        case unwanted
    }

    /// A new piece for bytes from `at`, after waiting (up to the patience) for room.
    private func newPiece(at: UInt64) -> NewPiece {
        lock.withLock {
            guard poisoned == nil, streaming.keys.contains(where: { $0.contains(at) }) else { return .unwanted }
            let deadline = Date(timeIntervalSinceNow: options.streamPatience)
            while windowHeld + WindowPiece.size > windowLimit {
                let before = windowHeld
                waitingForRoom += 1
                let woken = lock.wait(until: deadline)
                waitingForRoom -= 1
                if !woken && windowHeld >= before { return .noRoom }
                // The read may have ended while this waited.
                guard poisoned == nil, streaming.keys.contains(where: { $0.contains(at) }) else { return .unwanted }
            }
            let piece = WindowPiece(at: at)
            window.append(piece)
            windowHeld += piece.storage.count
            windowPeak = max(windowPeak, windowHeld)
            return .piece(piece)
        }
    }

    /// Fetches `plan` (disjoint ranges, claimed in `inFlight`), `parallelRequests` at a time,
    /// or one at a time in order to a streamed read (`through`).
    private func run(
        _ plan: [Range<UInt64>], progress: (@Sendable (UInt64) -> Void)?, through: Bool = false,
        cancellation: Cancellation?
    ) throws {
        let failure = FirstError()
        let next = Counter()
        defer {
            // Give back whatever was not fetched, and wake the waiters to see what arrived.
            lock.withLock {
                for range in plan { inFlight.remove(range) }
                lock.broadcast()
            }
        }
        // Threads of their own: they wait on the network, and Dispatch's pool is as wide as
        // the CPU count (2 requests in flight on 2 cores, not `parallelRequests`).
        let workers = through ? 1 : min(options.parallelRequests, plan.count)
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                while !failure.failed, let i = next.take(below: plan.count) {
                    let range = plan[i]
                    let filling = StreamFill()
                    defer { seal(filling) }
                    do {
                        try client.fetch(range, gathering: !through, cancellation: cancellation) {
                            [self] bytes, at in
                            let (taken, stop) = through ? offer(bytes, at: at, filling: filling) : (0, false)
                            // The read is over: stop downloading bytes nobody will read.
                            if stop { throw AssetPackError(.remote, "the streamed read ended") }
                            guard taken < bytes.count else { return }
                            let piece = UnsafeRawBufferPointer(rebasing: bytes[taken...])
                            let offset = at + UInt64(taken)
                            try store(piece, at: offset)
                            // Pieces arrive in order: waiters may go on before the whole request.
                            let arrived = offset..<offset + UInt64(piece.count)
                            lock.withLock {
                                present.insert(arrived)
                                inFlight.remove(arrived)
                                lock.broadcast()
                            }
                        }
                        progress?(range.upperBound - range.lowerBound)
                    } catch {
                        failure.record(error)
                    }
                }
            }
        }
        group.wait()
        try failure.rethrow()
    }

    private func store(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try store($0, at: offset) }
    }

    private func store(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
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

    // MARK: - Cache

    private func touch(_ range: Range<UInt64>) {
        if pinned.contains(range) { return }
        recent.removeAll { $0 == range }
        recent.append(range)
    }

    /// Punches out the least recently used ranges while unpinned bytes exceed the limit.
    private func evict() {
        var held = present.total - pinned.overlap(with: present)
        var spared: [Range<UInt64>] = []
        defer { recent.insert(contentsOf: spared, at: 0) }
        while held > options.cacheLimit, recent.count > 1 {
            let victim = recent.removeFirst()
            if inUse.keys.contains(where: { $0.overlaps(victim) }) {
                spared.append(victim)  // being read: evicted later, not under the reader
                continue
            }
            for part in present.intersection(victim) {
                // Only the unpinned parts: a span may share a page-sized edge with the structure.
                var pieces = RangeSet([part])
                for pin in pinned.ranges { pieces.remove(pin) }
                for piece in pieces.ranges {
                    punchHole(piece)
                    present.remove(piece)
                    held -= piece.upperBound - piece.lowerBound
                }
            }
        }
    }

    /// Gives the range's disk blocks back (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`
    /// on Linux; elsewhere the bytes stay on disk, only forgotten).
    private func punchHole(_ range: Range<UInt64>) {
        // A hole not punched only keeps bytes on disk: the range is forgotten all the same.
        try? fd.punchHole(range)
    }

    // MARK: - Plan

    /// Merges `missing` pieces whose gap is at most `gap` and splits the result into requests of
    /// at most `maxRequest` bytes.
    package static func plan(_ missing: [Range<UInt64>], gap: UInt64, maxRequest: UInt64) -> [Range<UInt64>] {
        var merged: [Range<UInt64>] = []
        for range in missing.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = merged.last, range.lowerBound <= last.upperBound + gap {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        // Equal pieces of at most `maxRequest` (a 8 MiB + 2 KiB range is one request, not two).
        return merged.flatMap { range -> [Range<UInt64>] in
            let length = range.upperBound - range.lowerBound
            let pieces = max(1, (length + maxRequest * 5 / 4 - 1) / (maxRequest * 5 / 4))
            return (0..<pieces).map { i in
                range.lowerBound + length * i / pieces..<range.lowerBound + length * (i + 1) / pieces
            }
        }
    }
}

/// Bytes of a streamed read waiting in memory for the reader: consecutive arrivals fill one
/// buffer before the next is taken.
///
/// The download writes past `count` without the lock and publishes by raising `count` under
/// it; readers copy bytes below `count` without the lock while they pin the piece. The other
/// fields change under the mirror's lock.
private final class WindowPiece: @unchecked Sendable {
    let start: UInt64
    let storage: UnsafeMutableRawBufferPointer
    /// Bytes the download wrote (its own).
    var written = 0
    /// Bytes readers may see.
    var count = 0
    /// Bytes readers have copied out.
    var taken = 0
    /// Readers copying from the piece now.
    var pins = 0
    /// The download is done with it.
    var sealed = false
    /// Out of the window: its buffer goes when it is neither pinned nor being filled.
    var dropped = false

    var range: Range<UInt64> { start..<start + UInt64(count) }
    var end: UInt64 { start + UInt64(written) }
    var isFull: Bool { written == storage.count }

    /// Buffers of pieces that went, for the next ones: fresh memory costs a page fault per
    /// 4 KiB, as much as the copy itself.
    private static let spare = SpareBuffers()
    static let size = 1 << 20

    init(at offset: UInt64) {
        start = offset
        storage = Self.spare.take()
    }

    /// Writes what fits of `bytes` after the bytes written. - Returns: How many it took.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = min(bytes.count, storage.count - written)
        UnsafeMutableRawBufferPointer(rebasing: storage[written..<written + n])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
        written += n
        return n
    }

    /// Gives the buffer back once the piece is out of the window, sealed and unpinned (each of
    /// those three changes calls this; the last one releases). Called with the mirror's lock held.
    func releaseIfUnused() {
        guard dropped, sealed, pins == 0, !released else { return }
        released = true
        Self.spare.give(storage)
    }
    private var released = false
}

/// The piece one streamed download is filling, and whether it now writes to the file.
private final class StreamFill: @unchecked Sendable {
    var piece: WindowPiece?
    var spilling = false
}

private final class SpareBuffers: @unchecked Sendable {
    private let lock = NSLock()
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    static let kept = 32

    func take() -> UnsafeMutableRawBufferPointer {
        lock.withLock { buffers.popLast() } ?? .allocate(byteCount: WindowPiece.size, alignment: 64)
    }

    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let kept = lock.withLock {
            guard buffers.count < Self.kept else { return false }
            buffers.append(buffer)
            return true
        }
        if !kept { buffer.deallocate() }
    }
}

/// Bytes collected from a fetch (the probe).
private final class Collected: @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    func append(_ piece: UnsafeRawBufferPointer) { bytes.append(contentsOf: piece) }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func take(below limit: Int) -> Int? {
        lock.withLock {
            guard value < limit else { return nil }
            defer { value += 1 }
            return value
        }
    }
}
