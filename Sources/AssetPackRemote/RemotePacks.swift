@_exported import AssetPack
import AssetPackCore
import AssetPackHTTP
import Foundation

extension AssetPacks {
    /// Opens a pack on an HTTP(S) server, read by range requests (docs/REMOTE.md).
    ///
    /// Opening costs two or three requests (the first 64 KiB; the container's index and
    /// signature, or the zip's central directory and end records). Each read then fetches only
    /// its entry's bytes (a container range read: only the chunks it covers), which the
    /// returned reader checks exactly as it checks a local pack's. The server must answer
    /// `Range` requests with `206` and send an `ETag` or `Last-Modified`; a file that changes
    /// while it is read is refused, and the reader then refuses every later read. Reads block
    /// the calling thread on the network: call them off the main thread.
    /// - Parameters:
    ///   - url: An `http://` or `https://` URL.
    ///   - credential: The password or key.
    ///   - limits: Caps on KDF cost, index size, entry count and sizes.
    ///   - trustedKeys: Publisher keys to require a signature from (<doc:Security>).
    ///   - transfer: Every request's deadlines and minimum rate (this open's and the reader's
    ///     reads').
    /// - Returns: A reader with the same API and checks as a local pack's.
    /// - Throws: ``AssetPackError``: as ``open(_:credential:limits:trustedKeys:)``, plus `.remote`
    ///   when the server fails, ignores `Range`, changes the file or breaks a deadline, and
    ///   `.limitExceeded` for a pack larger than `limits.maxPackSize`; `CancellationError`.
    public static func open(
        url: URL, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = [],
        transfer: TransferLimits = .default
    ) async throws -> any PackReader {
        try await Cancellation.offExecutor {
            try openRemote(url, credential: credential, limits: limits, trustedKeys: trustedKeys, transfer: transfer)
        }
    }

    /// Opens the pack at `url` (blocking): its mirror is the byte source of the format its
    /// bytes say, read exactly as a local file is.
    package static func openRemote(
        _ url: URL, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = [],
        transfer: TransferLimits = .default, options: RemoteMirror.Options? = nil
    ) throws -> any PackReader {
        let source = try RemoteSource(url: url, options: options ?? .init(transfer: transfer), limits: limits)
        return try open(source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    /// The byte source of a local path or, for `http://` and `https://`, of a remote pack (one
    /// request: its first bytes, size and version). Open it with ``open(_:credential:limits:trustedKeys:)``;
    /// keep it to check the whole pack's signature afterwards without fetching it again.
    package static func source(
        location: String, limits: ReadLimits = .default, transfer: TransferLimits = .default
    ) throws -> any ByteSource {
        guard URL.isRemotePack(location) else { return try FileByteSource(path: location) }
        guard let url = URL(string: location) else {
            throw AssetPackError(.invalidArgument, "\(location) is not a valid URL")
        }
        return try RemoteSource(url: url, options: .init(transfer: transfer), limits: limits)
    }

    /// Whether `location` names a remote pack (`http://` or `https://`).
    package static func isRemote(_ location: String) -> Bool { URL.isRemotePack(location) }

    /// Opens a local path or, for `http://` and `https://`, a remote pack (blocking).
    package static func open(
        location: String, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = [], transfer: TransferLimits = .default
    ) throws -> any PackReader {
        let source: any ByteSource
        do { source = try self.source(location: location, limits: limits, transfer: transfer) } catch let error
            as AssetPackError
        {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        return try open(source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }
}
