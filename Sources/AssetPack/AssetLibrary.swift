import AssetPackCore
import Dispatch
import Foundation

/// An app's assets: one open pack, or a ``PackSet`` of several, read by path. The one entry
/// point app code needs.
///
/// ```swift
/// let library = try AssetLibrary.openInstalling(
///     bundled: Bundle.module.url(forResource: "assets", withExtension: "pack")!,
///     appID: "com.example.game", credential: .password(secret))
/// let level = try library.readData("levels/level1.json")      // verified bytes
/// let music = try await library.load("audio/music.ogg")       // the same, off the caller's executor
/// ```
///
/// `openInstalling(bundled:appID:credential:limits:trustedKeys:)` copies the bundled pack into the app's
/// private directory with ``PrivateInstaller`` when it is missing or changed (and copies nothing
/// otherwise), then opens the installed copy with ``AssetPacks/open(_:credential:limits:trustedKeys:)-(String,_,_,_)``.
///
/// A library is `Sendable`: the reader behind it is safe to use from many threads at once, so
/// one library can serve a whole app. Every read verifies the entry (CRC-32, and the MAC or
/// AEAD tag) before returning it, and throws `AssetPackError` otherwise.
///
/// The `async` variants of the read methods run the read on a global Dispatch queue, so a
/// caller on the main actor (or any actor) is not blocked by decryption or key derivation.
/// They check for cancellation before the read starts; a read that has started runs to the end.
public final class AssetLibrary: Sendable {
    /// The open pack (a ``PackSet`` when the library reads several).
    public let reader: any PackReader
    /// The pack's file (the installed copy when the library was opened by installing; the top
    /// pack of a set).
    public let url: URL
    /// What the install did, when the library was opened with `openInstalling`; `nil` otherwise.
    public let installation: PrivateInstaller.Installation?

    /// Wraps a reader that is already open.
    /// - Parameters:
    ///   - reader: The open pack.
    ///   - url: The pack's file.
    ///   - installation: What installing it did, if it was installed.
    public init(reader: any PackReader, url: URL, installation: PrivateInstaller.Installation? = nil) {
        self.reader = reader
        self.url = url
        self.installation = installation
    }

    /// Opens a pack in place, without installing it.
    /// - Parameters:
    ///   - url: The pack's file.
    ///   - credential: Password (either format) or raw key (container); `nil` for an unencrypted zip.
    ///   - limits: Safety limits for damaged or hostile packs.
    ///   - trustedKeys: The publisher keys the app pins (<doc:Security>); empty: unchecked.
    /// - Throws: `AssetPackError` (`.io`, `.unsupportedFormat`, `.missingPassword`, `.wrongPassword`,
    ///   `.untrusted`, …).
    public convenience init(
        contentsOf url: URL, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws {
        let reader = try AssetPacks.open(url.path, credential: credential, limits: limits, trustedKeys: trustedKeys)
        self.init(reader: reader, url: url)
    }

    /// Opens several packs in place as one ``PackSet`` (bottom first: the last pack that has a
    /// path serves it; a patch pack's deletions hide paths of the packs below it).
    /// - Parameters:
    ///   - urls: The packs' files, bottom first (the base pack, then patches and DLC).
    ///   - credentials: One credential for every pack, or one per pack.
    ///   - limits: Safety limits for damaged or hostile packs.
    ///   - trustedKeys: The publisher keys the app pins; every pack must be signed by one. Empty: unchecked.
    /// - Throws: `AssetPackError` from opening a pack (naming it) or from merging the set.
    public convenience init(
        contentsOf urls: [URL], credentials: [PackCredential?], limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws {
        let set = try PackSet(
            opening: urls.map(\.path), credentials: credentials, limits: limits, trustedKeys: trustedKeys)
        self.init(reader: set, url: urls[urls.count - 1])
    }

    // MARK: - Opening by installing

    /// Installs a bundled pack into the app's private directory if needed, then opens the installed copy.
    ///
    /// The first call copies the pack (atomically, verified); later calls with the same pack copy
    /// nothing. ``installation`` says which happened.
    /// - Parameters:
    ///   - bundled: The pack shipped with the app (for example from `Bundle.module`).
    ///   - appID: The app's id: the private directory is `$XDG_DATA_HOME/<appID>`, else
    ///     `~/.local/share/<appID>` (see ``PrivateInstaller/init(appID:trustedKeys:allowRollback:)``).
    ///   - credential: Password (either format) or raw key (container); `nil` for an unencrypted zip.
    ///   - limits: Safety limits for damaged or hostile packs.
    ///   - trustedKeys: The publisher keys the app pins (<doc:Security>): the install and every
    ///     read check the pack's signature. Empty: unchecked.
    /// - Returns: The open library.
    /// - Throws: `AssetPackError`: `.invalidArgument` for a bad app id, `.io` or `.integrityFailure`
    ///   from the install, `.untrusted`, and any error opening the pack (`.wrongPassword`, …).
    public static func openInstalling(
        bundled: URL, appID: String, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws -> AssetLibrary {
        try openInstalling(
            bundled: bundled, installer: PrivateInstaller(appID: appID, trustedKeys: trustedKeys),
            credential: credential, limits: limits)
    }

    /// Installs a bundled pack with an explicit installer if needed, then opens the installed copy.
    /// - Parameters:
    ///   - bundled: The pack shipped with the app.
    ///   - installer: Where to install it (``PrivateInstaller/init(directory:trustedKeys:allowRollback:)`` for a directory of your choice).
    ///   - name: The installed file's name; the bundled pack's file name when `nil`.
    ///   - credential: Password (either format) or raw key (container); `nil` for an unencrypted zip.
    ///   - limits: Safety limits for damaged or hostile packs.
    /// - Returns: The open library, checking signatures with the installer's trusted keys.
    /// - Throws: `AssetPackError` from the install or from opening the pack.
    public static func openInstalling(
        bundled: URL, installer: PrivateInstaller, as name: String? = nil, credential: PackCredential?,
        limits: ReadLimits = .default
    ) throws -> AssetLibrary {
        guard FileManager.default.fileExists(atPath: bundled.path) else {
            throw AssetPackError(.io, "no bundled pack at \(bundled.path)")
        }
        // Before a first install copies the pack: does the credential open it? Where opening checks
        // it (a container) that is all; else (a zip, whose entries each carry a verifier) its
        // smallest encrypted entry is read.
        let installed = try installer.install(bundled, as: name) { pack in
            let reader = try AssetPacks.open(pack, credential: credential, limits: limits)
            if try !AssetPacks.driver(for: reader.format).checksCredentialAtOpen,
                let probe = reader.entries.filter({ $0.encryption != .none }).min(by: { $0.storedSize < $1.storedSize })
            {
                do { _ = try reader.readTimed(probe.path) } catch let error as AssetPackError
                    where [.wrongPassword, .missingPassword].contains(error.code)
                {
                    throw error.inPack(pack.path)
                }
            }
        }
        let reader = try AssetPacks.open(
            installed.path, credential: credential, limits: limits, trustedKeys: installer.trustedKeys)
        return AssetLibrary(reader: reader, url: installed.path, installation: installed)
    }

    /// Like the synchronous `openInstalling(bundled:appID:credential:limits:trustedKeys:)`, but the install (a copy and
    /// SHA-256 on first launch) and the open (scrypt for a password-protected container) run on a
    /// global Dispatch queue instead of the caller's executor.
    /// - Parameters:
    ///   - bundled: The pack shipped with the app.
    ///   - appID: The app's id, naming its private directory.
    ///   - credential: Password (either format) or raw key (container); `nil` for an unencrypted zip.
    ///   - limits: Safety limits for damaged or hostile packs.
    ///   - trustedKeys: The publisher keys the app pins; empty: unchecked.
    /// - Returns: The open library.
    /// - Throws: `AssetPackError`, or `CancellationError` if the task was cancelled before it started.
    public static func openInstalling(
        bundled: URL, appID: String, credential: PackCredential?, limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) async throws -> AssetLibrary {
        try await Cancellation.offExecutor {
            try openInstalling(
                bundled: bundled, appID: appID, credential: credential, limits: limits, trustedKeys: trustedKeys)
        }
    }

    // MARK: - Entries

    /// Every entry, sorted by path.
    public var entries: EntryList { reader.entries }

    /// The pack's format.
    public var format: PackFormat { reader.format }

    /// Looks up an entry by path (normalised first: NFC, `/`).
    /// - Parameter path: The entry path.
    /// - Returns: The entry, or `nil` when there is none (or the index part the lookup reads
    ///   cannot be read: ``lookup(_:)`` says why).
    public func entry(_ path: String) -> EntryInfo? { reader.entry(path) }

    /// Looks up an entry by path as ``entry(_:)`` does, and throws when what the lookup reads
    /// cannot be read (a container's index is opened a segment at a time, as lookups reach it).
    /// - Parameter path: The entry path.
    /// - Returns: The entry, or `nil` when there is none.
    /// - Throws: `AssetPackError` (`.integrityFailure`, `.io`).
    public func lookup(_ path: String) throws -> EntryInfo? { try reader.lookup(path) }

    /// Checks the pack's whole index (every record, and for a set every pack's and the set's
    /// rules), as `assetpack verify` does.
    /// - Throws: `AssetPackError` (`.integrityFailure` naming what is wrong, `.io`).
    public func checkIndex() throws { try reader.checkIndex() }

    /// Reads the pack's whole index into memory now (every pack's, for a set). A version-8
    /// container opens its index a segment at a time, as lookups reach it; after this call it
    /// reads none of it from the file again, so a library kept open while its pack is updated in
    /// place goes on reading every entry both versions share (docs/SECURITY.md, "Removed content
    /// still readable"). Costs the index's memory, about 110 bytes an entry.
    /// - Throws: `AssetPackError` (`.integrityFailure`, `.io`).
    public func loadIndex() throws { try reader.loadIndex() }

    /// Whether the pack has an entry at `path` (normalised first).
    /// - Parameter path: The entry path.
    public func contains(_ path: String) -> Bool { reader.entry(path) != nil }

    // MARK: - Reading

    /// Reads a whole entry, verified.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError` (`.entryNotFound`, `.wrongPassword`, `.integrityFailure`, …) naming the entry.
    public func readData(_ path: String) throws -> Data {
        Data(try inPack { try reader.readTimed(path).bytes })
    }

    /// Reads a whole entry as bytes, verified.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError` naming the entry.
    public func read(_ path: String) throws -> [UInt8] {
        try inPack { try reader.readTimed(path).bytes }
    }

    /// Reads a whole entry, verified, with a record of where the time went.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes and its `EntryTiming`.
    /// - Throws: `AssetPackError` naming the entry.
    public func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
        try inPack { try reader.readTimed(path) }
    }

    /// Reads a JSON entry and decodes it.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - path: The entry path.
    ///   - decoder: The decoder to use.
    /// - Returns: The decoded value.
    /// - Throws: `AssetPackError` for the read; the decoder's `DecodingError` for the JSON.
    public func decode<T: Decodable>(_ type: T.Type, from path: String, using decoder: JSONDecoder = JSONDecoder())
        throws -> T
    {
        try decoder.decode(type, from: readData(path))
    }

    /// Streams an entry in chunks, for entries too large to hold at once.
    ///
    /// The final check happens at the end: treat the chunks as tentative until this returns.
    /// - Parameters:
    ///   - path: The entry path.
    ///   - body: Called with each chunk; the buffer is valid only during the call.
    /// - Returns: The timing record of the whole read.
    /// - Throws: `AssetPackError` naming the entry, or whatever `body` throws.
    @discardableResult
    public func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        try inPack { try reader.stream(path, body) }
    }

    /// Runs `body`, naming this library's pack in the `AssetPackError` it throws (a set's member
    /// names its own pack first).
    private func inPack<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as AssetPackError { throw error.inPack(url.path) }
    }

    // MARK: - Reading without blocking the caller

    // The async reads have names of their own (`load…`), not async overloads of the `read…`
    // methods: in top-level code `try await library.readData(…)` would silently pick the
    // synchronous overload, blocking the caller.

    /// Reads a whole entry, verified, on a global Dispatch queue rather than the caller's executor.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError` naming the entry, or `CancellationError` if the task was
    ///   cancelled before the read started.
    public func load(_ path: String) async throws -> Data {
        try await Cancellation.offExecutor { [self] in try readData(path) }
    }

    /// Reads a whole entry as bytes, verified, on a global Dispatch queue.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError` naming the entry, or `CancellationError`.
    public func loadBytes(_ path: String) async throws -> [UInt8] {
        try await Cancellation.offExecutor { [self] in try read(path) }
    }

    /// Reads a whole entry, verified and timed, on a global Dispatch queue.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes and its `EntryTiming`.
    /// - Throws: `AssetPackError` naming the entry, or `CancellationError`.
    public func loadTimed(_ path: String) async throws -> (bytes: [UInt8], timing: EntryTiming) {
        try await Cancellation.offExecutor { [self] in try readTimed(path) }
    }
}
