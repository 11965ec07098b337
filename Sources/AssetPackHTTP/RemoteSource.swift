import AssetPackCore
import Foundation

/// A mirror is a pack's ``ByteSource``: a format reads a remote pack exactly as it reads a local
/// file, and the mirror fetches what each read needs (docs/REMOTE.md).
extension RemoteMirror: ByteSource {
    /// The URL: errors name the pack the user asked for, not the mirror file.
    package var name: String { client.url.absoluteString }

    /// Bytes from a streamed read's memory, or from the file once they are there (fetched now
    /// when nobody is fetching them).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        let count = Int(min(UInt64(buffer.count), size - min(offset, size)))
        guard count > 0 else { return 0 }
        let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        do {
            if try !supply(into: part, at: offset) { try readFile(into: part, at: offset) }
        } catch let error as AssetPackError {
            throw naming(error)
        }
        return count
    }

    /// The structure: fetched now, never evicted.
    package func retain(_ span: Range<UInt64>) throws {
        let span = span.clamped(to: 0..<size)
        guard !span.isEmpty else { return }
        do { try ensure([span]) } catch let error as AssetPackError { throw naming(error) }
        pin(span)
    }

    /// An entry's read: its span is fetched in the background (streamed through memory when
    /// large) while `body` decodes what has arrived.
    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        let spans = spans.filter { !$0.isEmpty }
        guard !spans.isEmpty else { return try body() }
        do {
            return try using(spans, prefetching: true, largestRead: largestRead, body)
        } catch let error as AssetPackError {
            throw naming(error)
        }
    }
}

/// A remote pack opened for reading: its mirror in a private temporary directory, removed
/// when the last reader lets go of it (whoever still holds the mirror, such as a fetch thread
/// winding down).
package final class RemoteSource: ByteSource {
    package let mirror: RemoteMirror

    /// Opens `url` with one request (its first bytes, size and version).
    /// - Throws: `.limitExceeded` (larger than `limits.maxPackSize`), `.remote`, `.io`.
    package init(url: URL, options: RemoteMirror.Options = RemoteMirror.Options(), limits: ReadLimits = .default)
        throws
    {
        mirror = try RemoteMirror(url: url, options: options, limits: limits)
    }

    deinit { mirror.removeTemporaryFiles() }

    package var size: UInt64 { mirror.size }
    package var name: String { mirror.name }
    /// Requests made and body bytes received so far.
    package var transferred: (requests: Int, bytes: UInt64) { mirror.client.transferred }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try mirror.read(into: buffer, at: offset)
    }

    package func retain(_ span: Range<UInt64>) throws { try mirror.retain(span) }

    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        try mirror.access(spans, largestRead: largestRead, body)
    }
}

extension URL {
    /// Whether `string` names a remote pack (`http://` or `https://`).
    package static func isRemotePack(_ string: String) -> Bool {
        let lower = string.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}
