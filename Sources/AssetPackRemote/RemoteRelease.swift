import AssetPack
import AssetPackCore
import AssetPackHTTP
import Foundation

extension PrivateInstaller {
    /// Installs the release whose signed manifest is at `location`: an `http://` or `https://`
    /// URL or a local path (docs/REMOTE.md, "Installing a release").
    ///
    /// As ``installRelease(at:)``, with packs that are URLs (or paths relative to a manifest URL)
    /// downloaded as ``install(from:as:credential:limits:transfer:progress:)`` downloads a pack:
    /// resumable, and a delta from the installed pack of the same name in the release before.
    /// A pack's size is compared with the manifest's before its download, its SHA-256 before
    /// anything is renamed.
    /// - Parameters:
    ///   - location: The manifest's URL (or local path).
    ///   - credential: The packs' password or key (a container delta needs it).
    ///   - limits: `maxPackSize` bounds every download.
    ///   - transfer: Every request's deadlines and minimum rate.
    /// - Returns: The release installed and what it cost.
    /// - Throws: As ``installRelease(at:)``, plus `.remote`; `CancellationError`.
    @discardableResult
    public func installRelease(
        from location: URL, credential: PackCredential? = nil, limits: ReadLimits = .default,
        transfer: TransferLimits = .default
    ) async throws -> ReleaseInstallation {
        let options = RemoteMirror.Options(transfer: transfer)
        let text = location.isFileURL ? location.path : location.absoluteString
        return try await Cancellation.offExecutor {
            try installRelease(location: text, credential: credential, limits: limits, options: options)
        }
    }

    /// ``installRelease(from:credential:limits:transfer:)``, blocking, for a local path or a URL.
    package func installRelease(
        location: String, credential: PackCredential?, limits: ReadLimits, options: RemoteMirror.Options
    ) throws -> ReleaseInstallation {
        var requests = 0
        let document: Data
        let base: String
        if ReleaseManifest.isURL(location) {
            let source = try AssetPacks.source(location: location, limits: limits, transfer: options.transfer)
            guard source.size <= UInt64(ReleaseManifest.maxDocumentSize) else {
                throw AssetPackError(.integrityFailure, "\(location) is too large to be a release manifest")
            }
            document = Data(try source.bytes(at: 0, count: Int(source.size)))
            requests = 1
            base = location
        } else {
            document = try Self.readManifest(location)
            base = Self.folder(of: location)
        }
        var result = try installRelease(document: document, base: base) { pack, at, slot, previous, inner in
            guard ReleaseManifest.isURL(at) else {
                return PackFetch(
                    copied: try inner.install(URL(fileURLWithPath: at), into: slot, expected: pack).copied)
            }
            guard let url = URL(string: at) else { throw AssetPackError(.invalidArgument, "\(at) is not a valid URL") }
            let got = try inner.installRemote(
                url, into: slot, previous: previous, expected: pack, credential: credential, limits: limits,
                options: options)
            return PackFetch(
                copied: got.installation.copied, downloaded: got.downloaded, reused: got.reused,
                requests: got.requests)
        }
        result.requests += requests
        return result
    }
}
