import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Foundation

/// What an install recorded, in a small file beside the pack.
package struct InstallRecord: Codable, Equatable {
    package var sha256: String
    package var size: UInt64
    package var sourceSize: UInt64
    package var sourceModified: Int64
    /// `PrivateInstaller.fingerprint(of:)` of the source; `nil` in records from before it existed.
    package var sourceFingerprint: String?
    /// The text of the trusted key whose signature was checked at install, if any.
    package var publisher: String?
    /// ``PrivateInstaller/installedHead(of:)`` of the installed pack as installed: an install
    /// that finds the pack current checks it, so installed bytes that changed since (a damaged
    /// header slot that would make a reader fall back to an older version) are installed again.
    /// `nil` in records from before it existed (then the whole SHA-256 is checked, once).
    package var installedHead: String?

    package init(
        sha256: String, size: UInt64, sourceSize: UInt64, sourceModified: Int64, sourceFingerprint: String?,
        publisher: String?
    ) {
        self.sha256 = sha256
        self.size = size
        self.sourceSize = sourceSize
        self.sourceModified = sourceModified
        self.sourceFingerprint = sourceFingerprint
        self.publisher = publisher
    }

    /// This record, with the installed head of the pack now at `path`.
    package func installed(at path: String) throws -> InstallRecord {
        var record = self
        record.installedHead = try PrivateInstaller.installedHead(of: path)
        return record
    }

    /// Whether the pack at `path` still holds the bytes installed: its head and tail as
    /// recorded (or, for a record without them, its SHA-256).
    package func holdsInstalled(_ path: String) -> Bool {
        if let installedHead { return (try? PrivateInstaller.installedHead(of: path)) == installedHead }
        return (try? PrivateInstaller.sha256(of: path)) == sha256
    }

    /// ``holdsInstalled(_:)``, and a record from before `installedHead` that holds gets it,
    /// saved at `url` (the lock held by the caller), so the whole SHA-256 is read once, not at
    /// every launch.
    package func holdsInstalled(_ path: String, recordedAt url: URL) -> Bool {
        guard holdsInstalled(path) else { return false }
        if installedHead == nil { try? installed(at: path).save(url) }
        return true
    }

    package static func load(_ url: URL) -> InstallRecord? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(InstallRecord.self, from: data)
    }

    /// Writes atomically: temporary file, fsync, rename, fsync the directory.
    package func save(_ url: URL) throws {
        let data = try JSONEncoder().encode(self)
        try AtomicFile.write(url.path, mode: 0o600, exactMode: true) { fd in
            try data.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: url.path) }
        }
    }
}
