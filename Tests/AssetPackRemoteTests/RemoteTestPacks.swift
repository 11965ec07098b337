#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackFixtures
import AssetPackRemote
import AssetPackHTTP
import AssetPackTestSupport
import Foundation

extension TemporaryDirectory {
    /// Packs `files` with the password `pw` (a cheap scrypt, for tests) into `www/<name>`, the
    /// folder the remote tests serve; signed with `signingKey` when one is given.
    @discardableResult
    func packForServing(
        _ files: [String: [UInt8]], _ format: PackFormat, to name: String, signingKey: PublisherSigningKey? = nil,
        encryption: PackEncryption = .aes256
    ) throws -> URL {
        try pack(files, format, as: "www/\(name)", password: encryption == .none ? nil : "pw", signedBy: signingKey) {
            $0.zip.encryption = encryption
        }
    }
}

/// A remote pack opened as the library opens one (its mirror is the byte source of the format
/// its bytes say), with the mirror at hand for the tests' checks of what was fetched.
final class RemotePackReader: PackReader, @unchecked Sendable {
    let source: RemoteSource
    let reader: any PackReader
    var mirror: RemoteMirror { source.mirror }
    var transferred: (requests: Int, bytes: UInt64) { source.transferred }
    /// Where entries lie in the pack, as the format reader knows it.
    var local: Layout { Layout(reader: reader) }

    struct Layout {
        let reader: any PackReader
        func storedSpan(_ path: String) -> Range<UInt64>? {
            (reader as? ContainerPackReader)?.storedSpan(path) ?? (reader as? ZipPackReader)?.storedSpan(path)
        }
    }

    init(
        url: URL, credential: PackCredential?, limits: ReadLimits = .default, trustedKeys: [PublisherKey] = [],
        options: RemoteMirror.Options = RemoteMirror.Options()
    ) throws {
        source = try RemoteSource(url: url, options: options, limits: limits)
        reader = try AssetPacks.open(source, credential: credential, limits: limits, trustedKeys: trustedKeys)
    }

    var format: PackFormat { reader.format }
    var entries: EntryList { reader.entries }
    var openSeconds: Double { reader.openSeconds }
    var publisher: PublisherKey? { reader.publisher }
    var release: PackRelease? { reader.release }
    func entry(_ path: String) -> EntryInfo? { reader.entry(path) }
    func readTimed(_ path: String) throws -> (bytes: [UInt8], timing: EntryTiming) { try reader.readTimed(path) }
    func stream(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> EntryTiming {
        try reader.stream(path, body)
    }
    func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> EntryTiming {
        try reader.read(path, into: buffer)
    }
    func readRange(_ path: String, offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
        try reader.readRange(path, offset: offset, into: buffer)
    }
    func authenticatesEachPiece(_ path: String) -> Bool { reader.authenticatesEachPiece(path) }
}
#endif
