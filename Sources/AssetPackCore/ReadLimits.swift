/// Safety limits applied when opening and reading packs, which may be damaged or hostile.
///
/// Every size that comes from a pack is checked against these before memory is
/// allocated for it. The defaults suit app assets; raise them for unusual packs.
public struct ReadLimits: Sendable, Hashable {
    /// Most entries a pack may declare.
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

    /// The default limits.
    public init() {}

    /// The default limits.
    public static let `default` = ReadLimits()
}
