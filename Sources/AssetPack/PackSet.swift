import AssetPackCore
import Foundation

/// Several open packs read as one namespace, in order: a base pack, then patches, DLC and
/// language packs (docs/ARCHITECTURE.md, "Pack sets").
///
/// A path resolves to the last pack that has it. A patch pack's deletions
/// (``PackReader/deletedPaths``) hide the paths of the packs below it, and a pack above the
/// patch can add them back. The packs are any open readers: any mix of formats, credentials,
/// local or remote. One merged index is built when the set is made (a merge of the packs'
/// sorted lists, see `PackSetIndex`), so a read costs one hash lookup and then the chosen pack's
/// own read. ``EntryInfo/pack`` and ``EntryTiming/pack``
/// name the pack that served the entry.
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
    /// Every entry the set serves, sorted by path (UTF-8 byte order), each naming its pack.
    public let entries: [EntryInfo]
    /// The members' open times plus ``mergeSeconds``.
    public let openSeconds: Double
    /// Seconds spent building the merged index.
    public let mergeSeconds: Double
    /// Every path of the set → its position in ``entries`` (-1: deleted).
    private let index: [String: Int32]
    /// The member serving each entry of ``entries``.
    private let servedBy: [Int32]

    /// Builds the merged index of `members`, bottom first.
    /// - Throws: `.invalidArgument` for an empty list; `.integrityFailure` naming both packs when
    ///   two packs hold one path in different Unicode forms (equal after NFC, different bytes),
    ///   and naming the pack and path when a pack deletes a path no pack below it has.
    public init(_ members: [Member]) throws {
        guard !members.isEmpty else { throw AssetPackError(.invalidArgument, "a pack set needs at least one pack") }
        let watch = Stopwatch()
        let merged = try PackSetIndex(members)
        self.entries = merged.entries
        self.servedBy = merged.servedBy
        self.index = merged.table
        self.members = members
        self.mergeSeconds = watch.elapsed
        self.openSeconds = members.reduce(mergeSeconds) { $0 + $1.reader.openSeconds }
    }

    /// Opens the packs at `paths` (bottom first), each named by its path, and merges them.
    /// - Parameters:
    ///   - paths: The packs' files, bottom first.
    ///   - credentials: One credential for every pack, or one per pack.
    ///   - limits: Safety limits for each pack.
    ///   - trustedKeys: The publisher keys every pack must be signed by; empty: unchecked.
    /// - Throws: `AssetPackError` from opening a pack (naming it) or from merging.
    public convenience init(
        opening paths: [String], credentials: [PackCredential?], limits: ReadLimits = .default,
        trustedKeys: [PublisherKey] = []
    ) throws {
        guard credentials.count == 1 || credentials.count == paths.count else {
            throw AssetPackError(
                .invalidArgument, "give one credential for every pack or one per pack (\(paths.count) packs)")
        }
        var members: [Member] = []
        for (i, path) in paths.enumerated() {
            let credential = credentials.count == 1 ? credentials[0] : credentials[i]
            do {
                members.append(
                    Member(
                        name: path,
                        reader: try AssetPacks.open(
                            path, credential: credential, limits: limits, trustedKeys: trustedKeys)))
            } catch let error as AssetPackError {
                throw error.naming(pack: path)
            }
        }
        try self.init(members)
    }

    // MARK: - PackReader

    /// The top pack's format.
    public var format: PackFormat { members[members.count - 1].reader.format }

    /// The top pack's publisher when every pack of the set was opened with trusted keys and
    /// verified; `nil` otherwise.
    public var publisher: PublisherKey? {
        members.allSatisfy { $0.reader.publisher != nil } ? members[members.count - 1].reader.publisher : nil
    }

    /// The position in ``entries`` of the entry serving `path` (normalised first), or `nil`
    /// when the set has no such entry: one lookup, or two when `path` is not in normal form.
    private func resolve(_ path: String) -> Int? {
        let found =
            index[path]
            ?? {
                let n = EntryPath.normalize(path); return n == path ? nil : index[n]
            }()
        guard let found, found >= 0 else { return nil }
        return Int(found)
    }

    private func resolved(_ path: String) throws -> (reader: any PackReader, path: String, pack: String) {
        guard let i = resolve(path) else { throw notFound(path) }
        let member = members[Int(servedBy[i])]
        return (member.reader, entries[i].path, member.name)
    }

    /// `.entryNotFound` for `path`, saying which pack deleted it when one did, so "no such entry"
    /// of a path the base has is not a puzzle.
    fileprivate func notFound(_ path: String) -> AssetPackError {
        let n = EntryPath.normalize(path)
        let by = members.last { $0.reader.deletedPaths.contains { EntryPath.normalize($0) == n } }
        return AssetPackError(
            .entryNotFound, "no such entry" + (by.map { ": deleted by \($0.name)" } ?? ""), path: path)
    }

    /// The entry `path` resolves to, naming its pack.
    public func entry(_ path: String) -> EntryInfo? { resolve(path).map { entries[$0] } }

    /// The pack that serves `path`, or `nil` when the set has no such entry.
    public func member(serving path: String) -> Member? { resolve(path).map { members[Int(servedBy[$0])] } }

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
        resolve(path).map { members[Int(servedBy[$0])].reader.authenticatesEachPiece(path) } ?? false
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
