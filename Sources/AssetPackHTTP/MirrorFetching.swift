import AssetPackCore
import Foundation

// Fetching into the mirror: each missing byte is claimed by one thread (`inFlight`), which
// fetches it while the others wait for it, in the foreground (`ensure`) or the background
// (`prefetch`), `parallelRequests` requests at a time.

extension RemoteMirror {
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
    func claim(_ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        let claimed = ranges.flatMap { present.missing(in: $0) }.flatMap { inFlight.missing(in: $0) }
        for piece in claimed { inFlight.insert(piece) }
        return claimed
    }

    /// After a failed fetch: if it failed because the file changed, every later call fails too.
    func poisonIfChanged() {
        if let changed = client.changeDetected { lock.withLock { poisoned = changed } }
    }

    /// Waits (lock held) until bytes arrive; a streamed download wakes the waiter only once it
    /// has published bytes up to `end`. A cancellable wait wakes every 50 ms to look at it.
    func waitForBytes(upTo end: UInt64, cancellation: Cancellation?) {
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

    /// Fetches `plan` (disjoint ranges, claimed in `inFlight`), `parallelRequests` at a time,
    /// or one at a time in order to a streamed read (`through`).
    func run(
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
