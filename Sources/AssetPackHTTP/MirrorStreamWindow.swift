import AssetPackCore
import Foundation

// The streaming window: a large read (at least `streamThreshold` bytes) gets its bytes from the
// network through memory (`WindowPiece`s) instead of the mirror file, and the download waits for
// the reader when the window is full.

extension RemoteMirror {
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
    func release(where done: (WindowPiece) -> Bool) {
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
    func endStreaming(_ ranges: [Range<UInt64>], budget: Int) {
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
    func offer(
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
    func seal(_ filling: StreamFill) {
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
}

/// Bytes of a streamed read waiting in memory for the reader: consecutive arrivals fill one
/// buffer before the next is taken.
///
/// The download writes past `count` without the lock and publishes by raising `count` under
/// it; readers copy bytes below `count` without the lock while they pin the piece. The other
/// fields change under the mirror's lock.
final class WindowPiece: @unchecked Sendable {
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
final class StreamFill: @unchecked Sendable {
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
