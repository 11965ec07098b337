import AssetPack
import AssetPackCore
import Foundation

extension AssetLibrary {
    /// Installs (or updates) the pack at `url` with `installer` and opens the installed copy:
    /// the remote counterpart of `openInstalling(bundled:installer:as:credential:limits:)`. The
    /// download resumes after an interruption, and an update of a signed pack downloads only the
    /// entries that changed (<doc:RemotePacks>).
    /// - Parameters:
    ///   - url: The pack's `http://` or `https://` URL.
    ///   - installer: The private directory and the publisher keys it requires.
    ///   - name: The installed file's name (default: the URL's last path component).
    ///   - credential: Password or raw key; also lets a container update download only what changed.
    ///   - limits: Safety limits for damaged or hostile packs.
    /// - Returns: The open library; its `installation` says what was installed.
    /// - Throws: ``AssetPackError``, `.remote` for the server's failures.
    public static func openInstalling(
        from url: URL, installer: PrivateInstaller, as name: String? = nil, credential: PackCredential?,
        limits: ReadLimits = .default
    ) async throws -> AssetLibrary {
        let installed = try await installer.install(from: url, as: name, credential: credential).installation
        return try await Cancellation.offExecutor {
            let reader = try AssetPacks.open(
                installed.path.path, credential: credential, limits: limits, trustedKeys: installer.trustedKeys)
            return AssetLibrary(reader: reader, url: installed.path, installation: installed)
        }
    }
}
