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
    /// Every entry, sorted by path (decoded as it is asked for where the index is read in place).
    var entries: EntryList { get }
    /// Seconds spent opening the pack (parsing, and for the container the key derivation).
    var openSeconds: Double { get }
    /// The key derivation each open runs on the password: a container's scrypt or PBKDF2, as its
    /// header records it. `nil` for a pack opened with a raw key, a zip (whose PBKDF2 runs per
    /// entry, at a cost the format fixes) and a set.
    var passwordKDF: ContainerKDF? { get }
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
    /// - Returns: The entry, or `nil` when there is none, or when what the lookup reads cannot
    ///   be read (``lookup(_:)`` tells those apart).
    func entry(_ path: String) -> EntryInfo?

    /// Looks up an entry by path as ``entry(_:)`` does, and says why a lookup that reads what it
    /// cannot read fails: a version-8 container opens its index a segment at a time, when a
    /// lookup first reaches it, and a segment that fails authentication is an error here, never
    /// an entry that is not there (a ``PackSet`` must not serve a lower pack's older entry instead).
    /// - Returns: The entry, or `nil` when there is none.
    /// - Throws: `.integrityFailure` for a damaged index segment or record, `.io`.
    func lookup(_ path: String) throws -> EntryInfo?

    /// The paths this pack deletes from the packs below it in a ``PackSet``: a patch pack's
    /// deletion record (docs/FORMAT.md, "Deletion record"), read and checked at open. Sorted by
    /// UTF-8 bytes; empty for a pack that deletes nothing.
    var deletedPaths: [String] { get }

    /// The entries below `folder` (at any depth), sorted by path.
    ///
    /// `folder` is normalised like a path (NFC, `/`); an entry is below it when its path starts
    /// with the folder and a `/` (so folder `a` holds `a/b` and `a/b/c`, not `ab/c` and not a
    /// file named `a`). An empty folder (or `/`) holds every entry.
    func entries(under folder: String) -> [EntryInfo]

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

    /// Reads a whole entry into a buffer the caller owns, verified, with its timing record.
    ///
    /// What the buffer holds is the entry's bytes only if this returns without throwing.
    /// - Parameters:
    ///   - path: The entry path.
    ///   - buffer: At least the entry's size (``EntryInfo/size``); the bytes go to its start.
    /// - Returns: The timing record (`bytesOut` is the entry's size).
    /// - Throws: As ``readTimed(_:)``; `.invalidArgument` when `buffer` is too small.
    @discardableResult
    func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming

    /// Reads the entry's bytes `[offset, offset + buffer.count)` into a buffer the caller owns.
    ///
    /// What each format checks for a range, and what it costs, is its own: a container
    /// decrypts and authenticates only the chunks the range covers; a zip reads a stored,
    /// unencrypted entry's range directly and decodes any other entry from its start, checked
    /// whole (docs/FORMAT.md, "Range reads").
    /// - Parameters:
    ///   - path: The entry path.
    ///   - offset: The first byte of the entry to read.
    ///   - buffer: Where the bytes go; its size is the range's length.
    /// - Throws: `.entryNotFound`, `.invalidArgument` when the range is outside the entry,
    ///   `.integrityFailure`, `.untrusted`, `.io`, `.remote`.
    func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws

    /// Whether every piece ``stream(_:_:)`` hands over for `path` was authenticated before it
    /// was (a container's chunks, each by its tag), so that a caller may write pieces as they
    /// come; otherwise only the end of the stream vouches for them (a zip entry's MAC and CRC).
    func authenticatesEachPiece(_ path: String) -> Bool

    /// Reads the pack's whole index into memory now, so that no lookup reads any of it from the
    /// pack later: a version-8 container opens its index a segment at a time, as lookups reach
    /// it, and a reader kept open while its pack is updated in place (which zeroes the previous
    /// version's index) goes on finding every entry both versions share only if it holds all of
    /// it. Costs the index's memory (about 110 bytes an entry) and one decryption of it.
    /// - Throws: `.integrityFailure` for a segment that fails authentication, `.io`.
    func loadIndex() throws

    /// Checks what opening leaves to each read: every record of the index, and the index as a
    /// whole (a version-8 container's sorted paths, its hash table, chunks that share no byte).
    /// `assetpack verify` runs it. A reader that checks its whole index at open does nothing.
    /// - Throws: `.integrityFailure` naming what is wrong.
    func checkIndex() throws
}

extension PackReader {
    /// `nil`: a reader that checks no signature.
    public var release: PackRelease? { nil }

    /// `nil`: no key derivation once per open.
    public var passwordKDF: ContainerKDF? { nil }

    /// None: a pack that is no patch.
    public var deletedPaths: [String] { [] }

    /// ``entry(_:)``: a reader whose index was read whole at open has nothing a lookup can fail on.
    public func lookup(_ path: String) throws -> EntryInfo? { entry(path) }

    /// The entries below `folder`, from ``entries``.
    public func entries(under folder: String) -> [EntryInfo] {
        EntryPath.entries(entries, under: folder)
    }

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

    /// `false`: the end of a stream vouches for its pieces.
    public func authenticatesEachPiece(_ path: String) -> Bool { false }

    /// Nothing: the index was checked whole at open.
    public func checkIndex() throws {}

    /// Nothing: the index was read whole at open.
    public func loadIndex() throws {}

    /// Reads the entry's bytes `[offset, offset + count)` (see ``readRange(_:offset:into:)``).
    /// - Returns: The `count` bytes.
    /// - Throws: As ``readRange(_:offset:into:)``.
    public func readRange(_ path: String, offset: UInt64, count: Int) throws -> [UInt8] {
        guard count >= 0 else {
            throw AssetPackError(.invalidArgument, "a range cannot have a negative length (\(count))", path: path)
        }
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try readRange(path, offset: offset, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
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

extension EntryInfo {
    /// Refuses a range read outside the entry.
    /// - Throws: `.invalidArgument` naming the range and the entry's size.
    package func checkRange(offset: UInt64, count: Int) throws {
        guard count >= 0, offset <= size, UInt64(count) <= size - offset else {
            throw AssetPackError(
                .invalidArgument, "range \(offset)+\(count) is outside the entry (\(size) bytes)", path: path)
        }
    }
}
