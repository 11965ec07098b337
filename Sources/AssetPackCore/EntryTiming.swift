/// Where the time went when one entry was read.
///
/// All durations are seconds measured with a monotonic clock. The parts need not add
/// up to `total` exactly: the remainder is bookkeeping (allocation, copying).
public struct EntryTiming: Sendable, Hashable, Codable {
    /// The entry's path.
    public var path: String
    /// Whole read, from call to return.
    public var total: Double = 0
    /// Finding the entry by path.
    public var lookup: Double = 0
    /// Deriving the entry's key (zip: PBKDF2 per entry; container: subkey derivation only).
    public var keyDerivation: Double = 0
    /// Decrypting, authenticating and inflating the data.
    public var decrypt: Double = 0
    /// Computing and comparing the CRC-32.
    public var crc: Double = 0
    /// Bytes read from the pack for this entry.
    public var bytesIn: UInt64 = 0
    /// Bytes returned to the caller.
    public var bytesOut: UInt64 = 0
    /// Whether the CRC-32 was checked and matched (`false` when the format had no CRC to check,
    /// in which case a MAC was the check).
    public var crcChecked: Bool = false
    /// Which decoder produced the bytes (e.g. `libzip`, `bulk-aes`, `container`).
    public var decoder: String = ""
    /// The pack that served the entry, when it was read through a ``PackSet`` (its name in
    /// the set); `nil` for a single pack's reader (and then absent from JSON).
    public var pack: String?

    /// Creates an empty timing record for `path`.
    public init(path: String) { self.path = path }
}

/// A monotonic stopwatch.
package struct Stopwatch: Sendable {
    private let start: ContinuousClock.Instant
    /// Starts timing now.
    package init() { start = .now }
    /// Seconds since the stopwatch started.
    package var elapsed: Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    /// Runs `body` and adds its duration to `accumulator`.
    @inlinable
    package static func time<T>(_ accumulator: inout Double, _ body: () throws -> T) rethrows -> T {
        let watch = Stopwatch()
        defer { accumulator += watch.elapsed }
        return try body()
    }
}
