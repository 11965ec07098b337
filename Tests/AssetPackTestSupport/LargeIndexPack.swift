import Foundation

/// A container whose version-8 index table spans three 1 MiB segments, small enough to pack in a
/// test: 700 one-line entries whose paths are ~3,600 bytes long (one deep folder, then the
/// entry's name), so the table's strings fill most of it. The strings are stored in entry order,
/// so the first entries' paths lie in the table's first segment and the last entries' in its
/// last; ``damageLastIndexSegment(of:)`` flips a byte there.
public enum LargeIndexPack {
    /// The entries, sorted: `path(i)` holds `content(i)`.
    public static let count = 700
    static let folder = (0..<14).map { "segment-\($0)-" + String(repeating: "x", count: 228) }.joined(separator: "/")
    public static func path(_ i: Int) -> String {
        folder + "/" + String(format: "e%04d-", i) + String(repeating: "y", count: 194)
    }
    public static func content(_ i: Int) -> [UInt8] { Array("entry \(i)\n".utf8) }
    public static var files: [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: (0..<count).map { (path($0), content($0)) })
    }

    /// Flips a byte of the last segment of the index table of the unsigned container at `url`
    /// (as a disk or a download might): past the table's last segment come only its tag and the
    /// digest section (32 bytes for each of the 700 entries and each of their 700 chunks, then a
    /// tag), so 2,000 bytes before those lie inside that segment.
    public static func damageLastIndexSegment(of url: URL) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        let digests = 32 * 2 * count + 16
        bytes[bytes.count - digests - 16 - 2000] ^= 0x01
        try Data(bytes).write(to: url)
    }
}
