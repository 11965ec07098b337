import AssetPackCore
import Foundation

/// One download of a remote pack into a staging file, with its progress recorded beside it:
/// resumable, and a delta when spans of an installed pack are copied in first. What to copy is
/// the pack formats' to say; this owns how (docs/REMOTE.md, "Installing").
package struct RemoteDownload {
    /// What `.<name>.download.json` holds.
    struct State: Codable {
        var url: String
        var version: HTTPRangeClient.Version
        var present: RangeSet
    }

    /// Bytes copied from the installed pack.
    package var reused: UInt64 = 0
    /// Bytes an earlier, interrupted download had fetched.
    package var resumed: UInt64 = 0
    private var client: HTTPRangeClient?
    private var version: HTTPRangeClient.Version?
    private var staging = ""
    private var statePath = ""
    private var options = RemoteMirror.Options()
    /// The staging file as a sparse mirror of the remote pack (a ``ByteSource``).
    package private(set) var mirror: RemoteMirror?

    /// Nothing downloaded (an install that was current).
    package init() {}

    /// The staging file.
    package var stagingPath: String { staging }

    /// Where a download is assembled: the file, and the file its progress is kept in to resume
    /// it (the installer names both).
    package struct Staging: Sendable {
        package var file: String
        package var state: String
        package init(file: String, state: String) {
            self.file = file
            self.state = state
        }
    }

    /// Opens the staging file for `version`, with what an earlier download of the same
    /// version left in it, after checking that the file system holding `room` has space for
    /// the rest (before the file is created or grows), or for `roomNeeded` bytes when that is
    /// less (an update in place; ``checkRoomForRest(in:)`` then checks again before a whole
    /// download).
    /// - Throws: `.io`, naming both sizes when there is no room.
    package init(
        client: HTTPRangeClient, version: HTTPRangeClient.Version, staging: Staging, options: RemoteMirror.Options,
        room: String, roomNeeded: UInt64? = nil
    ) throws {
        self.client = client
        self.version = version
        self.staging = staging.file
        self.statePath = staging.state
        var options = options
        options.cacheLimit = .max
        self.options = options
        var present = RangeSet()
        if let data = FileManager.default.contents(atPath: statePath),
            let state = try? JSONDecoder().decode(State.self, from: data),
            state.url == client.url.absoluteString, state.version.isSame(as: version),
            (try? FileSystem.stat(staging.file))?.size == version.size
        {
            present = state.present
            resumed = present.total
        } else {
            try? FileSystem.unlink(staging.file)
            try? FileSystem.unlink(statePath)
        }
        do {
            try Self.checkRoom(needed: min(roomNeeded ?? .max, version.size - present.total), in: room)
        } catch {
            discard()
            throw error
        }
        do {
            mirror = try RemoteMirror(
                client: client, path: staging.file, size: version.size, options: options, present: present)
        } catch {
            // A file system that cannot hold the size (EFBIG) leaves the file it created.
            discard()
            throw error
        }
    }

    /// Deletes the staging file and its state.
    package func discard() {
        try? FileSystem.unlink(staging)
        try? FileSystem.unlink(statePath)
    }

    /// Drops everything fetched or copied, to download the whole file.
    package mutating func restart() throws {
        guard let client, let version else { return }
        mirror = nil
        try? FileSystem.unlink(staging)
        try? FileSystem.unlink(statePath)
        reused = 0
        resumed = 0
        mirror = try RemoteMirror(client: client, path: staging, size: version.size, options: options)
    }

    /// Refuses a download the file system at `directory` has no room for (what is still to be
    /// downloaded, against the bytes an unprivileged process may write).
    /// - Throws: `.io` naming both sizes.
    package static func checkRoom(needed: UInt64, in directory: String) throws {
        let available: UInt64
        do { available = try FileSystem.availableBytes(directory) } catch { throw error.io("cannot stat \(directory)") }
        guard needed <= available else {
            throw AssetPackError(
                .io,
                "not enough space in \(directory): the pack needs \(needed) more bytes, \(available) are free")
        }
    }

    /// Checks that the file system holding `room` has space for what the staging file still
    /// lacks, before a whole download fills it.
    /// - Throws: `.io`, naming both sizes.
    package func checkRoomForRest(in room: String) throws {
        guard let mirror else { return }
        try Self.checkRoom(needed: mirror.size - mirror.held.total, in: room)
    }

    /// Copies each wanted span (keyed by what identifies its bytes) whose key names a span of
    /// the same length in `previous` (an installed pack), then records the progress.
    /// - Returns: Bytes copied.
    @discardableResult
    package mutating func copy(
        _ wanted: [(key: [UInt8], span: Range<UInt64>)], from available: [[UInt8]: Range<UInt64>],
        of previous: any ByteSource
    ) throws -> UInt64 {
        guard let mirror else { return 0 }
        var copied: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for (key, span) in wanted where !mirror.held.contains(span) {
            guard let source = available[key], source.count == span.count else { continue }
            var done: UInt64 = 0
            while done < UInt64(source.count) {
                try Cancellation.current?.check()
                let n = Int(min(UInt64(buffer.count), UInt64(source.count) - done))
                try buffer.withUnsafeMutableBytes { raw in
                    let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<n])
                    try previous.readExactly(into: piece, at: source.lowerBound + done)
                    try mirror.adopt(UnsafeRawBufferPointer(piece), at: span.lowerBound + done)
                }
                done += UInt64(n)
            }
            copied += UInt64(span.count)
        }
        try mirror.sync()
        reused += copied
        try save()
        return copied
    }

    /// Downloads what the staging file still lacks, in batches, recording the progress after
    /// each, and after a failure what arrived before it.
    package mutating func fetchRest(progress: (@Sendable (UInt64, UInt64) -> Void)?) throws {
        guard let mirror else { return }
        try fetch([0..<mirror.size], progress: progress)
    }

    /// ``fetchRest(progress:)`` of `spans` only (an update in place: the new header and tail).
    /// Progress counts against the bytes of `spans`.
    package mutating func fetch(_ spans: [Range<UInt64>], progress: (@Sendable (UInt64, UInt64) -> Void)?) throws {
        guard let mirror else { return }
        // Ctrl-C or SIGTERM (the CLI's): what arrived is synced and recorded, as after a cut,
        // so that the next install resumes instead of downloading it again.
        if let client, let version {
            let statePath = statePath
            TemporaryFiles.keepOnInterrupt(staging) {
                if (try? mirror.sync()) != nil {
                    try? Self.save(client: client, version: version, mirror: mirror, statePath: statePath)
                }
            }
        }
        defer { TemporaryFiles.forgetKeep(staging) }
        let spans = spans.map { $0.clamped(to: 0..<mirror.size) }  // disjoint
        let missing = spans.flatMap { mirror.held.missing(in: $0) }
        let total = spans.reduce(UInt64(0)) { $0 + UInt64($1.count) }
        let done = ProgressCounter(total - missing.reduce(UInt64(0)) { $0 + UInt64($1.count) })
        progress?(done.value, total)
        var batch: [Range<UInt64>] = []
        var batchBytes: UInt64 = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            do {
                try mirror.ensure(batch) { bytes in progress?(done.add(bytes), total) }
            } catch {
                // What arrived before the failure (a cut response's bytes too) is kept for the
                // next run to resume from: synced first, so the record never claims lost bytes.
                if (try? mirror.sync()) != nil { try? save() }
                throw error
            }
            try mirror.sync()
            try save()
            batch = []
            batchBytes = 0
        }
        for range in RemoteMirror.plan(missing, gap: 0, maxRequest: options.maxRequest) {
            batch.append(range)
            batchBytes += range.upperBound - range.lowerBound
            if batchBytes >= options.saveInterval { try flush() }
        }
        try flush()
    }

    /// Whether every byte is there.
    package var isComplete: Bool { mirror.map { $0.held.contains(0..<$0.size) } ?? false }

    /// Makes the staging file the installed pack: mode 0600, synced, renamed, directory synced.
    package func commit(to destination: String) throws {
        guard let mirror else { return }
        try mirror.sync()
        do {
            try FileSystem.chmod(staging, 0o600)
            try FileSystem.rename(staging, to: destination)
        } catch { throw error.io("cannot install \(destination)") }
        try? FileSystem.unlink(statePath)
        let folder = AtomicFile.folder(of: destination)
        if let fd = try? FileDescriptor.open(folder, .readOnly) {
            try? fd.fsync()
            try? fd.close()
        }
    }

    private func save() throws {
        guard let client, let version, let mirror else { return }
        try Self.save(client: client, version: version, mirror: mirror, statePath: statePath)
    }

    /// Records what `mirror` holds of `version` in `statePath`, for the next run to resume.
    private static func save(
        client: HTTPRangeClient, version: HTTPRangeClient.Version, mirror: RemoteMirror, statePath: String
    ) throws {
        let state = State(url: client.url.absoluteString, version: version, present: mirror.held)
        let data = try JSONEncoder().encode(state)
        try AtomicFile.write(statePath, mode: 0o600, exactMode: true) { fd in
            try data.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: statePath) }
        }
    }
}

private final class ProgressCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var done: UInt64
    init(_ start: UInt64) { done = start }
    var value: UInt64 { lock.withLock { done } }
    func add(_ bytes: UInt64) -> UInt64 {
        lock.withLock {
            done += bytes
            return done
        }
    }
}
