import AssetPackCore
import Foundation
import Synchronization

/// Several open packs read as one namespace, in order: a base pack, then patches, DLC and
/// language packs (docs/ARCHITECTURE.md, "Pack sets").
///
/// A path resolves to the last pack that has it. A patch pack's deletions
/// (``PackReader/deletedPaths``) hide the paths of the packs below it, and a pack above the
/// patch can add them back. The packs are any open readers: any mix of formats, credentials,
/// local or remote. Making a set merges nothing: a lookup walks the packs top down (each pack's
/// own lookup, then its deletions), so a set of N packs opens in N packs' open and a read costs
/// at most N lookups before the serving pack's own read. The merged, sorted list (``entries``)
/// is built when it is first asked for (a merge of the packs' sorted lists, see `PackSetIndex`),
/// and so are the set's rules' checks (``checkIndex()``). ``EntryInfo/pack`` and
/// ``EntryTiming/pack`` name the pack that served the entry.
///
/// ```swift
/// let set = try PackSet([
///     .init(name: "base", reader: try AssetPacks.open(base, credential: password)),
///     .init(name: "patch-1", reader: try AssetPacks.open(patch, credential: password)),
/// ])
/// let level = try set.read("levels/1.json")     // from patch-1 if it has it, else from base
/// ```
///
/// A set is itself a ``PackReader`` (so ``AssetLibrary`` reads it as it reads one pack); a
/// single pack is a set of one. A set exposes no deletions of its own: they were applied inside it.
public final class PackSet: PackReader {
    /// One pack of a set: its name (for ``EntryInfo/pack``, listings and errors) and its reader.
    public struct Member: Sendable {
        /// The pack's name: a file name, a path or a URL, as the caller wants it shown.
        public var name: String
        /// The open pack.
        public var reader: any PackReader

        /// A pack named `name`.
        public init(name: String, reader: any PackReader) {
            self.name = name
            self.reader = reader
        }
    }

    /// The packs, bottom first.
    public let members: [Member]
    /// Every entry the set serves, sorted by path (UTF-8 byte order), each naming its pack: the
    /// members' lists merged when first asked for (lookups never merge).
    public var entries: EntryList { EntryList(merged().entries) }
    /// The members' open times plus the set's own (its members' deletion lists).
    public let openSeconds: Double
    /// Seconds spent merging the members' lists for ``entries``: 0 until the set is first listed.
    public var mergeSeconds: Double { merge.withLock { $0?.seconds ?? 0 } }
    /// Each member's deleted paths (a `String` set: found in any canonically equivalent form).
    private let deletions: [Set<String>]
    /// The merged index, once built.
    private let merge = Mutex<(index: PackSetIndex, seconds: Double)?>(nil)

    /// A set of `members`, bottom first. Nothing is merged: see ``checkIndex()`` for the rules a
    /// set's packs must keep, which a read does not need.
    /// - Throws: `.invalidArgument` for an empty list.
    public init(_ members: [Member]) throws {
        guard !members.isEmpty else { throw AssetPackError(.invalidArgument, "a pack set needs at least one pack") }
        let watch = Stopwatch()
        self.members = members
        self.deletions = members.map { Set($0.reader.deletedPaths) }
        self.openSeconds = members.reduce(watch.elapsed) { $0 + $1.reader.openSeconds }
    }

    /// Opens the packs at `paths` (bottom first), each named by its path: on every core when no
    /// credential is a password (each open reads and decrypts its index), one after another when
    /// one is (a container's key derivation may take up to `limits.maxKDFMemory`, and several at
    /// once would multiply it). When several fail, the error is the lowest pack's, as if they were
    /// opened in order (opened at once, every other pack's open is finished first).
    /// - Parameters:
    ///   - paths: The packs' files, bottom first.
    ///   - credentials: One credential for every pack, or one per pack.
    ///   - limits: Safety limits for each pack.
    ///   - trustedKeys: The publisher keys every pack must be signed by; empty: unchecked.
    /// - Throws: `AssetPackError` from opening a pack (naming it).
    public convenience init(
        opening paths: [String], credentials: [PackCredential?], limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws {
        guard credentials.count == 1 || credentials.count == paths.count else {
            throw AssetPackError(
                .invalidArgument, "give one credential for every pack or one per pack (\(paths.count) packs)")
        }
        func open(_ i: Int) -> Result<any PackReader, any Error> {
            let credential = credentials.count == 1 ? credentials[0] : credentials[i]
            return Result {
                try AssetPacks.open(paths[i], credential: credential, limits: limits, trustedKeys: trustedKeys)
            }
        }
        var opened = [Result<any PackReader, any Error>?](repeating: nil, count: paths.count)
        if credentials.contains(where: { if case .password = $0 { true } else { false } }) {
            for i in paths.indices {
                opened[i] = open(i)
                if case .failure = opened[i] { break }  // the lowest failure is known
            }
        } else {
            // Each task fills its own slots; none throws (failures are results, sorted out below).
            try opened.withUnsafeMutableBufferPointer { opened in
                try concurrently(paths.count) { i in opened[i] = open(i) }
            }
        }
        var members: [Member] = []
        for (path, result) in zip(paths, opened) {
            do {
                // Opened in order, the packs after a failure are not: the loop throws before them.
                guard let result else { preconditionFailure("pack \(path) was not opened") }
                members.append(Member(name: path, reader: try result.get()))
            } catch let error as AssetPackError {
                throw error.naming(pack: path)
            }
        }
        try self.init(members)
    }

    /// The merged index, built on first use.
    private func merged() -> PackSetIndex {
        merge.withLock { built in
            if let built { return built.index }
            let watch = Stopwatch()
            let index = PackSetIndex(members)
            built = (index, watch.elapsed)
            return index
        }
    }

    /// Checks the rules a set's packs keep, which lookups do not need, and every member's index
    /// (``PackReader/checkIndex()``): no pack deletes a path no pack below it has, and no two
    /// packs hold one path in different Unicode forms (equal after NFC, other bytes). `list` and
    /// `verify` run it; the first rule broken, in a bottom-first walk, is the error. Each member's
    /// index is checked first (the lowest failing pack's error is thrown): the rules are checked
    /// on the members' listings, which a damaged index cannot give (a version-8 record in a
    /// segment that fails lists as an empty name), and a patch would be blamed for deleting what
    /// the damage hid.
    /// - Throws: `.integrityFailure` naming the pack and path, or both packs.
    public func checkIndex() throws {
        for m in members {
            do { try m.reader.checkIndex() } catch let error as AssetPackError { throw error.naming(pack: m.name) }
        }
        if let error = merged().firstError { throw error }
    }

    /// Every member's whole index, read into memory now (``PackReader/loadIndex()``).
    /// - Throws: What a member's throws, naming it.
    public func loadIndex() throws {
        for m in members { try named(m.name) { try m.reader.loadIndex() } }
    }

    // MARK: - PackReader

    /// The top pack's format.
    public var format: PackFormat { members[members.count - 1].reader.format }

    /// The top pack's publisher when every pack of the set was opened with trusted keys and
    /// verified; `nil` otherwise.
    public var publisher: PublisherKey? {
        members.allSatisfy { $0.reader.publisher != nil } ? members[members.count - 1].reader.publisher : nil
    }

    /// The member serving `path` and its entry there (the entry's path as that pack stores it):
    /// the packs from the top down, each pack's entries before its deletions (a pack that deletes
    /// a path and adds it serves it), the first that holds the path or deletes it deciding; the
    /// path as given first, then normalised (NFC, `/`) if no pack holds or deletes it as given.
    /// "Holds" is `String` equality (canonical equivalence) with the path as that pack stores it,
    /// as one dictionary of the whole set would decide: a pack that finds `a/b` only by tidying
    /// it into its stored `a\b` does not hold `a/b`.
    /// - Throws: What a pack's ``PackReader/lookup(_:)`` throws (naming the pack): a pack that
    ///   cannot say whether it holds the path stops the walk, never passes it down.
    private func resolve(_ path: String) throws -> (member: Int, entry: EntryInfo)? {
        enum Walk {
            case served(Int, EntryInfo)
            case deleted
        }
        func walk(_ path: String) throws -> Walk? {
            for m in members.indices.reversed() {
                if let entry = try named(members[m].name, { try members[m].reader.lookup(path) }), entry.path == path {
                    return .served(m, entry)
                }
                if deletions[m].contains(path) { return .deleted }
            }
            return nil
        }
        var outcome = try walk(path)
        if outcome == nil {
            let normalized = EntryPath.normalize(path)
            if !normalized.utf8.elementsEqual(path.utf8) { outcome = try walk(normalized) }
        }
        if case .served(let m, let entry) = outcome { return (m, entry) }
        return nil
    }

    private func resolved(_ path: String) throws -> (reader: any PackReader, path: String, pack: String) {
        guard let (m, entry) = try resolve(path) else { throw notFound(path) }
        return (members[m].reader, entry.path, members[m].name)
    }

    /// `.entryNotFound` for `path`, saying which pack deleted it when one did, so "no such entry"
    /// of a path the base has is not a puzzle.
    fileprivate func notFound(_ path: String) -> AssetPackError {
        let n = EntryPath.normalize(path)
        let by = members.last { $0.reader.deletedPaths.contains { EntryPath.normalize($0) == n } }
        return AssetPackError(
            .entryNotFound, "no such entry" + (by.map { ": deleted by \($0.name)" } ?? ""), path: path)
    }

    /// The entry `path` resolves to, naming its pack (`nil` also when a pack cannot be read:
    /// ``lookup(_:)`` says why).
    public func entry(_ path: String) -> EntryInfo? { try? lookup(path) }

    /// The entry `path` resolves to, naming its pack.
    /// - Throws: What a pack's lookup throws, naming the pack.
    public func lookup(_ path: String) throws -> EntryInfo? {
        try resolve(path).map { m, entry in
            var named = entry
            named.pack = members[m].name
            return named
        }
    }

    /// The pack that serves `path`, or `nil` when the set has no such entry (or a pack cannot
    /// be read).
    public func member(serving path: String) -> Member? { (try? resolve(path)).map { members[$0.member] } }

    public func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) {
        let (reader, stored, pack) = try resolved(path)
        var (bytes, timing) = try named(pack) { try reader.readTimed(stored) }
        timing.pack = pack
        return (bytes, timing)
    }

    @discardableResult
    public func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        let (reader, stored, pack) = try resolved(path)
        var timing = try named(pack) { try reader.stream(stored, body) }
        timing.pack = pack
        return timing
    }

    @discardableResult
    public func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
        let (reader, stored, pack) = try resolved(path)
        var timing = try named(pack) { try reader.read(stored, into: buffer) }
        timing.pack = pack
        return timing
    }

    /// The serving pack's answer: a set's entries come from packs of any format.
    public func authenticatesEachPiece(_ path: String) -> Bool {
        (try? resolve(path)).map { members[$0.member].reader.authenticatesEachPiece($0.entry.path) } ?? false
    }

    public func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
        let (reader, stored, pack) = try resolved(path)
        try named(pack) { try reader.readRange(stored, offset: offset, into: buffer) }
    }

    /// Runs a member's read; an `AssetPackError` it throws names the pack.
    private func named<T>(_ pack: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as AssetPackError { throw error.naming(pack: pack) }
    }
}

extension AssetPackError {
    /// The error with `pack` named in its message (once).
    package func naming(pack: String) -> AssetPackError {
        var copy = self
        if copy.pack == nil { copy.pack = pack }
        if !message.hasPrefix("\(pack): ") { copy.message = "\(pack): \(message)" }
        return copy
    }
}

extension PackReader {
    /// `.entryNotFound` for `path` as this reader explains it: a ``PackSet`` names the pack that
    /// deleted the path. For code that looks an entry up itself (``entry(_:)``) before reading it.
    package func noSuchEntry(_ path: String) -> AssetPackError {
        (self as? PackSet)?.notFound(path) ?? AssetPackError(.entryNotFound, "no such entry", path: path)
    }
}
