import Foundation

/// Reads entries from one open pack by path. Both backends (zip and container) conform.
///
/// Every whole-entry read verifies the entry before returning it: CRC-32 where the
/// pack stores one, and the MAC or AEAD tag where the entry is encrypted. Wrong
/// bytes are never returned; a failed check throws `AssetPackError` with code
/// `.integrityFailure` naming the entry.
///
/// Implementations are safe to use from many threads at once.
public protocol PackReader: AnyObject, Sendable {
    /// The pack's format.
    var format: PackFormat { get }
    /// Every entry, sorted by path.
    var entries: [EntryInfo] { get }
    /// Seconds spent opening the pack (parsing, and for the container the key derivation).
    var openSeconds: Double { get }
    /// The trusted publisher key whose signature was verified when the pack was opened, or
    /// `nil` when the reader was given no trusted keys. Every read of such a reader also checks
    /// the entry's bytes against the signed manifest (`.untrusted` when they differ).
    var publisher: PublisherKey? { get }
    /// What the verified signature states about the release (name, version, expiry, size), or
    /// `nil` when the reader was given no trusted keys. A pack signed before signature block
    /// version 2 has ``PackRelease/legacy``.
    var release: PackRelease? { get }

    /// Looks up an entry by path, normalising the path first (NFC, `/`).
    /// - Parameter path: The entry path.
    /// - Returns: The entry, or `nil` when there is none.
    func entry(_ path: String) -> EntryInfo?

    /// Reads a whole entry into memory, verified, with a record of where the time went.
    /// - Parameter path: The entry path (normalised before lookup).
    /// - Returns: The entry's bytes and its timing record.
    /// - Throws: `AssetPackError` (`.entryNotFound`, `.wrongPassword`, `.integrityFailure`, …).
    func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming)

    /// Streams an entry's bytes in chunks, for entries too large to hold at once.
    ///
    /// Chunks are passed to `body` as they are decoded. The final verification (CRC,
    /// and for zip AES the HMAC) happens at the end, so a caller must treat what it
    /// received as tentative until this method returns without throwing.
    /// - Parameters:
    ///   - path: The entry path.
    ///   - body: Called with each chunk; the buffer is valid only during the call.
    /// - Returns: The timing record of the whole read.
    /// - Throws: `AssetPackError`, or whatever `body` throws.
    @discardableResult
    func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming
}

extension PackReader {
    /// `nil`: a reader that checks no signature.
    public var release: PackRelease? { nil }

    /// Reads a whole entry into memory, verified.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError`.
    public func read(_ path: String) throws -> [UInt8] {
        try readTimed(path).bytes
    }

    /// Reads a whole entry into a `Data`, verified.
    /// - Parameter path: The entry path.
    /// - Returns: The entry's bytes.
    /// - Throws: `AssetPackError`.
    public func readData(_ path: String) throws -> Data {
        Data(try readTimed(path).bytes)
    }

    /// Whether the pack has an entry at `path` (normalised first).
    public func contains(_ path: String) -> Bool {
        entry(path) != nil
    }
}

/// A path → entry index built once when a pack opens: lookups are a hash, not a scan.
package struct EntryIndex<Value: Sendable>: Sendable {
    private var table: [String: Value] = [:]

    /// Creates an empty index.
    package init() {}

    /// Creates an empty index with room for `capacity` paths (no rehashing while it fills).
    package init(capacity: Int) { table.reserveCapacity(capacity) }

    /// Adds `value` under `path` (already normalised by the caller).
    /// - Returns: `false` if the path was already present (the first one is kept).
    @discardableResult
    package mutating func insert(_ path: String, _ value: Value) -> Bool {
        if table[path] != nil { return false }
        table[path] = value
        return true
    }

    /// Finds a value by path, normalising it first.
    package func lookup(_ path: String) -> Value? {
        if let v = table[path] { return v }
        let normalized = EntryPath.normalize(path)
        return normalized == path ? nil : table[normalized]
    }

    /// Number of paths in the index.
    package var count: Int { table.count }
}

extension EntryIndex where Value == Int {
    /// Builds a path → position index over `paths` in one pass, specialised for `Int`
    /// positions so that opening a pack with many entries stays fast.
    /// - Parameter paths: The paths, already normalised by the caller.
    /// - Returns: `nil` if two paths are equal as strings (canonically equivalent).
    package init?(positionsOf paths: [String]) {
        self.init()
        table.reserveCapacity(paths.count)
        for (i, path) in paths.enumerated() where table.updateValue(i, forKey: path) != nil {
            return nil
        }
    }
}

/// Where a reader's entries lie in its pack file: what a remote reader fetches before it lets
/// the local reader read (docs/REMOTE.md).
package protocol StoredLayout: PackReader {
    /// The file bytes a whole read of `path` touches, or `nil` when there is no such entry.
    func storedSpan(_ path: String) -> Range<UInt64>?
    /// The file bytes a read of the entry's bytes `[offset, offset + count)` touches (a
    /// container reads only the chunks it covers), or `nil` when there is no such entry.
    func storedSpan(_ path: String, offset: UInt64, count: Int) -> Range<UInt64>?
}

/// Called before a reader reads pack bytes from its file: a remote reader makes it wait until
/// those bytes have arrived, or hands them over from memory (docs/REMOTE.md, "Streaming
/// reads"). Unset, it costs one load.
package final class ReadHook: @unchecked Sendable {
    /// Either fills the buffer with the pack's bytes at the offset and returns `true`, or
    /// returns `false` once the file holds them.
    package typealias Body = @Sendable (UnsafeMutableRawBufferPointer, UInt64) throws -> Bool

    private let lock = NSLock()
    private var body: Body?

    package init() {}

    /// Sets (or clears) what runs before each read.
    package func set(_ body: Body?) { lock.withLock { self.body = body } }

    /// Whether a hook is set.
    package var isSet: Bool { lock.withLock { body != nil } }

    /// Runs the hook for the `buffer.count` bytes at `offset`.
    /// - Returns: Whether the hook filled `buffer` (the reader then does not read the file).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Bool {
        guard let body = lock.withLock({ body }) else { return false }
        return try body(buffer, offset)
    }
}

/// The first error thrown by any of several threads.
package final class FirstError: @unchecked Sendable {
    private let lock = NSLock()
    private var first: (any Error)?

    package init() {}

    /// Whether an error was recorded (workers stop taking work).
    package var failed: Bool { lock.withLock { first != nil } }

    /// Records `error` unless one came first.
    package func record(_ error: any Error) { lock.withLock { if first == nil { first = error } } }

    /// Throws the recorded error, if any.
    package func rethrow() throws { if let first = lock.withLock({ first }) { throw first } }
}
