import AssetPackCore
import AssetPackCrypto

/// One pack format, implemented once against a ``ByteSource`` (a local file, a remote mirror)
/// and registered in one list, `AssetPacks.formats`, that open, pack, install and update
/// iterate. Nothing outside a format's module knows its layout: what an installer, an updater
/// or a delta download needs of a pack, it asks here (docs/ARCHITECTURE.md, "The seam").
package protocol PackFormatDriver: Sendable {
    /// The format this driver reads and writes.
    var format: PackFormat { get }
    /// What a pack of this format is called in messages ("a zip archive").
    var noun: String { get }

    // What the tools ask of a format instead of naming it (issue 40: no decision by format
    // outside the format modules; `scripts/check-architecture.py` rejects format literals there).

    /// The file extension a tool gives a pack of this format it names itself ("zip", "apack").
    var fileExtension: String { get }
    /// Why this format does not take `setting`, or `nil` when it does ("zip entries are deflated").
    func refusal(of setting: PackSetting) -> String?
    /// Whether opening a pack checks its credential (a container's key commitment), so that a
    /// wrong one fails before any entry is read; `false` when only reading an entry can tell.
    var checksCredentialAtOpen: Bool { get }
    /// Whether this format's writer counts the entries a re-pack removed (`PackSummary.removed`)
    /// from the pack it reads at the output; `false`: a tool lists that pack itself.
    var countsRemovedEntries: Bool { get }
    /// Starts deriving the key of the pack at `output` ahead of the re-pack that opens it
    /// (extension below: none by default).
    func prefetchKey(of output: String, credential: PackCredential, limits: ReadLimits) -> (any PackKeyPrefetch)?
    /// The deflate level this format's writer uses at `level`.
    func deflateLevel(_ level: CompressionLevel) -> Int32
    /// A second reader of `source` through another decoder, for a tool to compare against the
    /// default one (zip: libzip's own decoding, in the default configuration), with the decoder's
    /// name ("libzip").
    func crossCheckReader(_ source: any ByteSource, credential: PackCredential?) throws
        -> (name: String, reader: any PackReader)?

    /// Whether `source` holds a pack of this format, from its bytes (never its name). Reads as
    /// little as it can: a magic number, an end record.
    /// - Throws: Only the source's own failures (`.io`, `.remote`); a pack of another format is `false`.
    func recognizes(_ source: any ByteSource) throws -> Bool

    /// Opens a reader on `source`: structure checked, keys derived, signature verified against
    /// `trustedKeys` when there are any.
    /// - Throws: `AssetPackError` as the format's reader documents.
    func open(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits, trustedKeys: [PublisherKey])
        throws -> any PackReader

    /// A writer of this format.
    func makeWriter() -> any PackWriter

    /// The pack's signature: its block, checked against its own key (not trusted), or `nil` for
    /// an unsigned pack. Reads only the structure, not the bytes the block describes (what a
    /// download checks before the bulk of the pack): a remote source keeps it, within `limits`.
    func signature(_ source: any ByteSource, limits: ReadLimits) throws -> PackSignature?

    /// The pack's signature by a key in `trusted`, checked without its password: block,
    /// structure and every stored byte (what an installer checks).
    /// - Returns: The verified block.
    /// - Throws: `.untrusted` when it is unsigned, signed by a key not in `trusted`, or altered.
    func trustedSignature(_ source: any ByteSource, trusting trusted: [PublisherKey]) throws -> PackSignature

    /// The spans a signature's items describe, in item order, or `nil` when they cannot be
    /// known without what is missing (a container's index needs its credential). A delta
    /// download copies an installed pack's span whose SHA-256 is a signed item.
    func signedSpans(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> [Range<UInt64>]?

    /// What identifies stored bytes of an unsigned pack across versions without hashing them
    /// (a container's key ids), or `nil` when the format has none (docs/REMOTE.md, "Delta").
    func storedIdentities(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> StoredIdentities?

    /// The spans, besides its first and last 64 KiB, that tell this pack from any other pack
    /// of the same size (a zip's central directory); read by the installer's fingerprint.
    func identifyingSpans(_ source: any ByteSource) -> [Range<UInt64>]

    /// How `installed` becomes `remote` by appending, when the format says `remote` may be
    /// `installed` with later generations appended (a version-6 container); else `nil`. Only
    /// the structure of each is read, and nothing is trusted: the installer verifies the
    /// result, and installs it whole when it is not `remote`.
    func appendPlan(installed: any ByteSource, remote: any ByteSource) throws -> AppendPlan?

    /// The bytes of `source`'s data region that no entry of its current version occupies (a
    /// version-6 container's removed or replaced chunks and earlier indexes), read with
    /// `credential`; `[]` for a format without them.
    func deadRanges(_ source: any ByteSource, credential: PackCredential, limits: ReadLimits) throws -> [Range<UInt64>]
}

/// How an installed pack becomes a newer version of itself in place (docs/REMOTE.md,
/// "Installing and updating", step 4): its bytes `kept` stay; the remote's `tail` is appended
/// after them, and synced; then the remote's `head` (the header the remote's current version is
/// read by, which the verification of the result covers) is written at `headAt`, where nothing
/// the installed version needs lies. Every other byte before `kept` stays the installed pack's.
/// At every step the installed file is a whole pack of one version or the other.
package struct AppendPlan: Sendable, Equatable {
    /// Bytes the two versions share: not downloaded, not written.
    package var kept: Range<UInt64>
    /// The remote's bytes after `kept`, to its end.
    package var tail: Range<UInt64>
    /// The remote's header bytes that make the result the remote's version.
    package var head: Range<UInt64>
    /// Where `head` goes in the installed pack.
    package var headAt: UInt64
    /// The installed pack's own header, which `head` supersedes: zeroed once `head` is synced,
    /// so that nothing leads a reader back to the installed version (a damaged `head` is then
    /// refused, not read as the older version).
    package var supersedes: Range<UInt64>?
    /// Bytes of `kept` that the result reads as zeros: what the remote version removed or
    /// replaced, which its publisher zeroed. Written with zeros once `head` is synced (the
    /// installed version reads them until then).
    package var zeroed: [Range<UInt64>] = []

    package init(
        kept: Range<UInt64>, tail: Range<UInt64>, head: Range<UInt64>, headAt: UInt64,
        supersedes: Range<UInt64>? = nil, zeroed: [Range<UInt64>] = []
    ) {
        self.kept = kept
        self.tail = tail
        self.head = head
        self.headAt = headAt
        self.supersedes = supersedes
        self.zeroed = zeroed
    }

    /// The pack the plan makes of `installed` and `remote`, read before anything is written:
    /// the installed bytes before `kept` with `head` at `headAt`, `kept`, then `tail`.
    package func result(installed: any ByteSource, remote: any ByteSource, name: String) -> SplicedByteSource {
        let at = headAt..<headAt + UInt64(head.count)
        precondition(
            at.upperBound <= kept.lowerBound && kept.upperBound == tail.lowerBound, "a plan's spans must tile the pack")
        let kept: any ByteSource = zeroed.isEmpty ? installed : ZeroedByteSource(installed, zeroing: zeroed)
        return SplicedByteSource(
            [
                (0..<at.lowerBound, installed, 0), (at, remote, head.lowerBound),
                (at.upperBound..<self.kept.lowerBound, installed, at.upperBound),
                (self.kept, kept, self.kept.lowerBound), (tail, remote, tail.lowerBound),
            ], size: tail.upperBound, name: name)
    }
}

/// Stored bytes of a pack that an identity names: equal identities under equal `keys` mean
/// equal bytes (docs/REMOTE.md, "Delta updates of unsigned containers").
package struct StoredIdentities: Sendable {
    /// What must match between two packs for their identities to be comparable at all.
    package var keys: [UInt8]
    /// Each identity and the stored bytes it names.
    package var entries: [(identity: [UInt8], span: Range<UInt64>)]

    package init(keys: [UInt8], entries: [(identity: [UInt8], span: Range<UInt64>)]) {
        self.keys = keys
        self.entries = entries
    }
}

/// A key derivation a format started ahead of the open that needs it (``PackFormatDriver/prefetchKey(of:credential:limits:)``).
package protocol PackKeyPrefetch: AnyObject, Sendable {
    /// Withdraws it: no later open takes its key.
    func finish()
}

extension PackFormatDriver {
    /// Starts deriving, on another thread, the key of the pack of this format at `output` under
    /// `credential`, for a re-pack to scan its sources meanwhile; `nil` (the default) when there
    /// is nothing to derive ahead. The caller calls `finish()` once the re-pack is done.
    package func prefetchKey(of output: String, credential: PackCredential, limits: ReadLimits) -> (
        any PackKeyPrefetch
    )? {
        nil
    }

    package func storedIdentities(_ source: any ByteSource, credential: PackCredential?, limits: ReadLimits) throws
        -> StoredIdentities?
    { nil }

    package func identifyingSpans(_ source: any ByteSource) -> [Range<UInt64>] { [] }

    package func appendPlan(installed: any ByteSource, remote: any ByteSource) throws -> AppendPlan? { nil }

    package func deadRanges(_ source: any ByteSource, credential: PackCredential, limits: ReadLimits) throws
        -> [Range<UInt64>]
    { [] }
}
