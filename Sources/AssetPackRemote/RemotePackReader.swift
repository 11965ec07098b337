import AssetPackContainer
import AssetPackCore
import AssetPackZip
import Foundation

/// A pack on an HTTP server, read by range requests through a ``RemoteMirror``.
///
/// It is the local reader of its format, opened on the mirror: the same checks (structure,
/// limits, CRC, MAC or tag, the publisher signature when keys are trusted) run on the same
/// bytes. Before each read it fetches the entry's stored span (for a container range read,
/// only the chunks the range covers). Bytes the reader was not given read as zeros, which
/// every check refuses: a bug in the fetch plan shows as an integrity failure, never as wrong
/// bytes. Reads block the calling thread on the network, as local reads block on the disk.
package final class RemotePackReader: PackReader, @unchecked Sendable {
    package let mirror: RemoteMirror
    package let local: any StoredLayout
    package let openSeconds: Double

    /// Opens the pack at `url`: the first 64 KiB, then the container's index and signature or
    /// the zip's end records, central directory and (trusting) signature entry.
    /// - Throws: As the local readers do, plus `.remote` for the server's failures.
    package convenience init(
        url: URL, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = [],
        options: RemoteMirror.Options = RemoteMirror.Options()
    ) throws {
        let watch = Stopwatch()
        let mirror = try RemoteMirror(url: url, options: options, limits: limits)
        do {
            try self.init(
                mirror: mirror, credential: credential, limits: limits, trustedKeys: trustedKeys, started: watch)
        } catch {
            mirror.removeTemporaryFiles()
            throw error
        }
    }

    /// The mirror's temporary file goes with the reader, whoever still holds the mirror (a
    /// fetch thread winding down).
    deinit { mirror.removeTemporaryFiles() }

    /// Opens the pack held (or to be fetched) in `mirror`.
    /// - Parameter fetchSignature: Fetch a zip's signature entry even without trusted keys (an
    ///   installer checks it itself).
    package init(
        mirror: RemoteMirror, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = [], fetchSignature: Bool = false, started: Stopwatch = Stopwatch()
    ) throws {
        let watch = started
        self.mirror = mirror
        do {
            let format = try Self.fetchStructure(
                of: mirror, limits: limits, signature: !trustedKeys.isEmpty || fetchSignature)
            switch format {
            case .container:
                local = try ContainerPackReader(
                    path: mirror.path, credential: credential, limits: limits, trustedKeys: trustedKeys)
            case .zip:
                local = try ZipPackReader(
                    path: mirror.path, credential: credential, limits: limits, trustedKeys: trustedKeys)
            }
        } catch let error as AssetPackError {
            throw mirror.naming(error.untrustedIfUnreadable(trusting: trustedKeys))
        }
        let hookMirror = mirror
        let hook: ReadHook.Body = { buffer, offset in try hookMirror.supply(into: buffer, at: offset) }
        (local as? ContainerPackReader)?.readHook.set(hook)
        (local as? ZipPackReader)?.readHook.set(hook)
        openSeconds = watch.elapsed
    }

    /// Fetches (and pins) what a pack's structure needs into `mirror`: the container's header,
    /// index and signature block, or the zip's end records, central directory and, with
    /// `signature`, its signature entry. Each is checked against `limits` before it is
    /// downloaded, so a hostile size claim costs nothing.
    /// - Returns: The pack's format.
    /// - Throws: `.unsupportedFormat` (neither format), `.limitExceeded`, `.integrityFailure`,
    ///   `.remote`.
    package static func fetchStructure(of mirror: RemoteMirror, limits: ReadLimits, signature: Bool) throws
        -> PackFormat
    {
        let head = try mirror.read(0, Int(min(mirror.size, 8)))
        if head.starts(with: ContainerFormat.magic) {
            let header = try mirror.read(0, min(ContainerFormat.headerSize, Int(mirror.size)))
            guard header.count == ContainerFormat.headerSize else {
                throw AssetPackError(.integrityFailure, "container is truncated")
            }
            let parsed = try header.withUnsafeBytes { try ContainerHeader.parse($0) }
            // What the local reader refuses anyway, refused before it is downloaded.
            guard parsed.indexLength <= limits.maxIndexSize,
                mirror.size - min(parsed.indexOffset, mirror.size) <= limits.maxIndexSize * 2
            else {
                throw AssetPackError(
                    .limitExceeded,
                    "the container's index and signature (from offset \(parsed.indexOffset)) exceed the index limit")
            }
            let start = min(parsed.indexOffset, mirror.size)
            try mirror.ensure([start..<mirror.size])
            mirror.pin(start..<mirror.size)
            return .container
        }
        guard
            try head.starts(with: [0x50, 0x4B, 0x03, 0x04]) || head.starts(with: [0x50, 0x4B, 0x05, 0x06])
                // A stub in front (a self-extractor): the end record says it is a zip.
                || endsLikeAZip(mirror)
        else {
            throw AssetPackError(
                .unsupportedFormat, "\(mirror.client.url.absoluteString) is not an AssetPack container or a zip archive"
            )
        }
        let directory = try ZipStructure.directoryRange(fileSize: mirror.size) { try mirror.read($0, $1) }
        guard mirror.size - min(directory.offset, mirror.size) <= limits.maxIndexSize + (1 << 20) else {
            throw AssetPackError(
                .limitExceeded, "the zip's central directory exceeds the limit of \(limits.maxIndexSize) bytes")
        }
        var tail = min(directory.offset, mirror.size)..<mirror.size
        try mirror.ensure([tail])
        if signature {
            // The signature entry is the last one before the directory; only it is fetched
            // (an unsigned zip's last entry may be large, and is not needed to know the pack
            // is unsigned).
            let structure = try ZipStructure(fileSize: mirror.size, limits: limits) { try mirror.read($0, $1) }
            if let last = structure.records.max(by: { $0.localHeaderOffset < $1.localHeaderOffset }),
                ZipSignature.mayBeSignature(last, records: structure.records.count)
            {
                tail = min(last.localHeaderOffset, tail.lowerBound)..<mirror.size
                try mirror.ensure([tail])
            }
        }
        mirror.pin(tail)
        return .zip
    }

    /// Whether the remote file ends with a zip's end-of-central-directory record (fetching its
    /// tail); the server's failures are thrown, not taken for "no".
    private static func endsLikeAZip(_ mirror: RemoteMirror) throws -> Bool {
        do {
            _ = try ZipStructure.directoryRange(fileSize: mirror.size) { try mirror.read($0, $1) }
            return true
        } catch let error as AssetPackError where error.code != .remote && error.code != .io {
            return false
        }
    }

    package var format: PackFormat { local.format }
    package var entries: [EntryInfo] { local.entries }
    package var publisher: PublisherKey? { local.publisher }
    package var release: PackRelease? { local.release }
    package func entry(_ path: String) -> EntryInfo? { local.entry(path) }

    /// Requests made and body bytes received so far (the open included).
    package var transferred: (requests: Int, bytes: UInt64) { mirror.client.transferred }

    package func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
        try reading(path, local.storedSpan(path)) { try local.readTimed(path) }
    }

    @discardableResult
    package func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        try reading(path, local.storedSpan(path)) { try local.stream(path, body) }
    }

    /// Reads bytes `[offset, offset + count)` of a container entry, fetching only the chunks
    /// they lie in. Zip entries are read whole and cut.
    package func readRange(_ path: String, offset: UInt64, count: Int) throws -> [UInt8] {
        let span = local.storedSpan(path, offset: offset, count: count)
        if let container = local as? ContainerPackReader {
            return try reading(path, span) { try container.readRange(path, offset: offset, count: count) }
        }
        let bytes = try reading(path, span) { try local.read(path) }
        guard count >= 0, offset <= UInt64(bytes.count), UInt64(count) <= UInt64(bytes.count) - offset else {
            throw AssetPackError(
                .invalidArgument, "range \(offset)+\(count) is outside the entry (\(bytes.count) bytes)", path: path)
        }
        return Array(bytes[Int(offset)..<Int(offset) + count])
    }

    /// Runs the local read of `span` while the span cannot be evicted; errors name the URL
    /// rather than the mirror file.
    ///
    /// Where the local reader reads the span only through its read hook (container chunks,
    /// WinZip AES entries), the span is fetched in the background and each read waits for its
    /// own bytes: decryption overlaps the download. Entries libzip decodes read the file
    /// without the hook, so their span is fetched first.
    private func reading<T>(_ path: String, _ span: Range<UInt64>?, _ read: () throws -> T) throws -> T {
        // No span: no such entry, which the local reader reports.
        guard let span else { return try read() }
        do {
            return try mirror.using([span], prefetching: streams(path), largestRead: largestRead, read)
        } catch let error as AssetPackError {
            throw mirror.naming(error)
        }
    }

    /// The largest single read the local reader makes of an entry's bytes: a container chunk,
    /// or the zip decoder's piece. A streamed read's window holds at least two of them.
    private var largestRead: Int {
        (local as? ContainerPackReader)?.largestRead ?? BulkAESDecoder.defaultChunkSize
    }

    /// Whether every read of `path`'s bytes goes through the local reader's read hook.
    private func streams(_ path: String) -> Bool {
        if local is ContainerPackReader { return true }
        return (local as? ZipPackReader)?.readsThroughHook(path) ?? false
    }
}

extension URL {
    /// Whether `string` names a remote pack (`http://` or `https://`).
    package static func isRemotePack(_ string: String) -> Bool {
        let lower = string.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}
