import AssetPackCore

import Foundation

extension RemoteDownload {
    /// The install's first request (`bytes=0-0`): the remote file's version, and whether the
    /// server ignores `Range`, so that the file must come in one whole-file GET
    /// (docs/REMOTE.md, "Servers without Range").
    /// - Throws: `.remote`: a failing server, or one that ignores `Range` and sends neither
    ///   `ETag` nor `Last-Modified` (an installed version could not be told from a new one).
    package static func probe(_ client: HTTPRangeClient) throws -> (version: HTTPRangeClient.Version, whole: Bool) {
        do {
            try client.fetch(0..<1) { _, _ in }
        } catch let error as AssetPackError {
            guard let announced = client.ignoredRange else { throw error }
            guard announced.etag != nil || announced.lastModified != nil else {
                throw AssetPackError(
                    .remote,
                    "\(client.url.absoluteString): the server ignores Range requests and sends neither ETag nor Last-Modified"
                )
            }
            return (announced, true)
        }
        guard let version = client.version else {
            throw AssetPackError(.remote, "\(client.url.absoluteString): no response")
        }
        return (version, false)
    }

    /// For a server that ignores `Range`: the whole file in one GET into `staging` (mode 0600),
    /// at most `limit` bytes and never more than its `Content-Length`, after checking that the
    /// file system holding `room` has space for it; then
    /// recorded as complete, so that ``verify(trustedKeys:credential:)`` and
    /// ``commit(to:)`` check and install it as they do a ranged download. No resume: a download
    /// that fails is deleted, and the next install starts over.
    package static func whole(
        client: HTTPRangeClient, version: HTTPRangeClient.Version, staging place: Staging,
        options: RemoteMirror.Options, limit: UInt64, room: String, progress: (@Sendable (UInt64, UInt64) -> Void)?
    ) throws -> RemoteDownload {
        let (staging, statePath) = (place.file, place.state)
        try? FileSystem.unlink(statePath)
        try? FileSystem.unlink(staging)
        try checkRoom(needed: version.size, in: room)
        let fd: FileDescriptor
        do {
            fd = try .open(staging, .writeOnly, options: [.create, .truncate], permissions: 0o600)
        } catch { throw error.io("cannot create \(staging)") }
        do {
            defer { try? fd.close() }
            progress?(0, version.size)
            try client.fetchWhole(expected: version, limit: limit) { piece, offset in
                do { try fd.pwriteAll(piece, at: offset) } catch let e as Errno {
                    throw e.io("cannot write \(staging)")
                }
                progress?(offset + UInt64(piece.count), version.size)
            }
            let state = State(url: client.url.absoluteString, version: version, present: RangeSet([0..<version.size]))
            let data = try JSONEncoder().encode(state)
            try AtomicFile.write(statePath, mode: 0o600, exactMode: true) { out in
                try data.withUnsafeBytes { try FileOutput.writeAll(out, $0, path: statePath) }
            }
        } catch {
            try? FileSystem.unlink(staging)
            try? FileSystem.unlink(statePath)
            throw error
        }
        // The staging file and its record, complete: taken up as a finished download.
        var download = try RemoteDownload(
            client: client, version: version, staging: place, options: options, room: room)
        download.resumed = 0
        return download
    }
}
