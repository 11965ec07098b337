/// Safety limits applied when opening and reading packs, which may be damaged or hostile.
///
/// Every size that comes from a pack is checked against these before memory is
/// allocated for it. The defaults suit app assets; raise them for unusual packs.
public struct ReadLimits: Sendable, Hashable {
    /// Most entries a pack may hold, its own records below `.assetpack/` aside. The packer holds
    /// every pack to the default (a pack of more files is refused before anything is written).
    public var maxEntries: Int = 1_000_000
    /// Largest uncompressed entry, in bytes, a read will produce.
    public var maxEntrySize: UInt64 = 8 << 30
    /// Largest ratio of uncompressed to stored size accepted for a deflated entry
    /// (deflate's own maximum is about 1032:1).
    public var maxCompressionRatio: UInt64 = 1100
    /// Largest encrypted index (container) or central directory, in bytes.
    public var maxIndexSize: UInt64 = 256 << 20
    /// Most memory a password KDF may ask for, in bytes (container scrypt).
    public var maxKDFMemory: UInt64 = 1 << 30
    /// Most iterations a PBKDF2 KDF may ask for (container).
    public var maxKDFIterations: UInt32 = 10_000_000
    /// Most bytes one extraction may write in all: the sum of the selected entries' declared
    /// sizes, checked before anything is written (readers never produce more than an entry declares).
    public var maxExtractBytes: UInt64 = 64 << 30
    /// Largest pack, in bytes, opened from a URL or downloaded by an install. The size a server
    /// claims is checked against it before a byte is fetched or written (a signed pack's size is
    /// also checked against the size its publisher signed).
    public var maxPackSize: UInt64 = 16 << 30
    /// Largest deletion record (a patch's `.assetpack/deleted`), in bytes, as its entry declares
    /// it: checked before it is read, since every open decodes it whole. 16 MiB holds some
    /// 250,000 paths of 60 bytes.
    public var maxDeletionRecordSize: UInt64 = 16 << 20
    /// Most paths one deletion record may name.
    public var maxDeletedPaths: Int = 1_000_000

    /// The default limits.
    public init() {}

    /// The default limits.
    public static let `default` = ReadLimits()
}

extension ReadLimits {
    /// The one per-entry check every reader makes before it allocates for or decodes an entry:
    /// the declared size against ``maxEntrySize`` and, for a deflated entry over 1 KiB, the ratio
    /// of declared to stored size against ``maxCompressionRatio``.
    ///
    /// Readers apply it when an entry is read, never when a pack is opened, so one oversized
    /// entry leaves the others readable.
    /// - Throws: `.limitExceeded` naming the entry and the limit.
    package func check(_ entry: EntryInfo) throws {
        guard entry.size <= maxEntrySize, entry.size <= UInt64(Int.max) else {
            throw AssetPackError(
                .limitExceeded,
                "entry declares \(entry.size) bytes; the limit is \(maxEntrySize) (ReadLimits.maxEntrySize)",
                path: entry.path)
        }
        if entry.compression == .deflate, entry.size > 1024, entry.size / max(entry.storedSize, 1) > maxCompressionRatio
        {
            throw AssetPackError(
                .limitExceeded,
                "entry's compression ratio exceeds \(maxCompressionRatio):1 (ReadLimits.maxCompressionRatio)",
                path: entry.path)
        }
    }

    /// The check of a patch's deletion record `entry` before it is read (every open reads it
    /// whole, so the per-entry limits, which the read then applies as to any entry, are far too
    /// loose for it).
    /// - Throws: `.limitExceeded` naming the record, its size and the limit.
    package func checkDeletionRecord(_ entry: EntryInfo) throws {
        guard entry.size <= maxDeletionRecordSize else {
            throw AssetPackError(
                .limitExceeded,
                "the deletion record declares \(entry.size) bytes; the limit is \(maxDeletionRecordSize) (ReadLimits.maxDeletionRecordSize)",
                path: entry.path)
        }
    }

    /// The pack's own records, below `.assetpack/` (a zip's manifest and signature entry, a
    /// patch's deletion record), which a pack may hold beyond ``maxEntries``: the limit counts
    /// what the publisher packed.
    package static let ownRecords = 8

    /// The check of the entry count a pack's index or directory declares, before anything is
    /// allocated for its entries: at most ``maxEntries`` and the pack's own records
    /// (``checkEntryCount(_:)`` then counts the entries without them).
    /// - Throws: `.limitExceeded`.
    package func checkDeclaredEntries(_ declared: UInt64) throws {
        guard declared <= UInt64(maxEntries) + UInt64(Self.ownRecords) else {
            throw AssetPackError(
                .limitExceeded,
                "pack declares \(declared) entries, more than the limit \(maxEntries) (ReadLimits.maxEntries) and its own \(Self.ownRecords) records"
            )
        }
    }

    /// The one entry-count check, of what a pack holds (its own records aside): every reader
    /// makes it once a pack is open, and the packer before it writes, with the default limits,
    /// so a pack is never written that the default reader refuses.
    /// - Throws: `.limitExceeded`: "a pack of N entries is over the limit of M (ReadLimits.maxEntries)".
    package func checkEntryCount(_ count: Int) throws {
        guard count <= maxEntries else {
            throw AssetPackError(
                .limitExceeded, "a pack of \(count) entries is over the limit of \(maxEntries) (ReadLimits.maxEntries)")
        }
    }

    /// The check of a remote pack's size, as its server claims it, before anything is fetched.
    /// - Throws: `.limitExceeded` naming the URL, the size and the limit.
    package func checkPackSize(_ size: UInt64, of url: String) throws {
        guard size <= maxPackSize else {
            throw AssetPackError(
                .limitExceeded,
                "\(url): the server claims \(size) bytes; the limit is \(maxPackSize) (ReadLimits.maxPackSize, --max-download)"
            )
        }
    }

    /// The check a writer makes so that it never writes what the default reader refuses.
    /// - Throws: `.limitExceeded` naming the first file over ``maxEntrySize``.
    package func checkPackable(_ files: [SourceFile]) throws {
        if let big = files.first(where: { $0.size > maxEntrySize }) {
            throw AssetPackError(
                .limitExceeded,
                "\(big.diskPath) is \(big.size) bytes; readers refuse entries over \(maxEntrySize) bytes (ReadLimits.maxEntrySize)",
                path: big.path)
        }
    }
}
