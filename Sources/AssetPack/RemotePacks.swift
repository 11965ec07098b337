import AssetPackRemote
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
        try await offExecutor {
            try RemotePackReader(
                url: url, credential: credential, limits: limits, trustedKeys: trustedKeys,
                options: .init(transfer: transfer))
        }
    }

    /// Whether `location` names a remote pack (`http://` or `https://`).
    package static func isRemote(_ location: String) -> Bool { URL.isRemotePack(location) }

    /// Opens a local path or, for `http://` and `https://`, a remote pack (blocking).
    package static func open(
        location: String, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = [], transfer: TransferLimits = .default
    ) throws -> any PackReader {
        guard URL.isRemotePack(location) else {
            return try open(location, credential: credential, limits: limits, trustedKeys: trustedKeys)
        }
        guard let url = URL(string: location) else {
            throw AssetPackError(.invalidArgument, "\(location) is not a valid URL")
        }
        return try RemotePackReader(
            url: url, credential: credential, limits: limits, trustedKeys: trustedKeys,
            options: .init(transfer: transfer))
    }

    /// A remote pack's size (`nil` for a local pack).
    package static func remoteSize(of reader: any PackReader) -> UInt64? { (reader as? RemotePackReader)?.mirror.size }

    /// The whole-file signature check of an open pack: for a remote one, after fetching every byte.
    package static func verifySignature(of reader: any PackReader, at location: String, trustedKeys: [PublisherKey])
        throws -> PublisherKey
    {
        guard let remote = reader as? RemotePackReader else {
            return try verifySignature(at: location, trustedKeys: trustedKeys)
        }
        // The whole file, none of it evicted while the check reads it.
        remote.mirror.pin(0..<remote.mirror.size)
        try remote.mirror.ensure([0..<remote.mirror.size])
        return try verifySignature(at: remote.mirror.path, trustedKeys: trustedKeys)
    }
}
