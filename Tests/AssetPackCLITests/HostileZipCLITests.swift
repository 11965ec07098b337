#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Zips built to mislead the reader, through the built binary (found by a hostile-input hunt):
/// two directories that libzip and our parser choose between differently, and declared sizes
/// whose sums overflow 64 bits.
@Suite struct HostileZipCLITests {
    let dir = TemporaryDirectory("hostile-zip")
    static let password = "hostile"

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: Self.password) }

    /// A ZipCrypto zip given a second central directory, its records in the other order, and two
    /// end records: the last (which our parser takes: its comment reaches the end of the file)
    /// names the real directory; the one before it, whose comment is that end record, names the
    /// second (which libzip 1.7.3 takes). libzip decodes ZipCrypto entries, by index: without a
    /// check, `x.txt` would give `y.txt`'s bytes, whose CRC-32 was forged to equal `x.txt`'s, and
    /// exit 0. libzip may read only the bytes of the entry our parser checked: every command
    /// that reads `x.txt` is refused (exit 4) and nothing of `y.txt` comes out under its name.
    @Test func libzipReadsOnlyTheEntryOurDirectoryNames() throws {
        let real = Array("I am the real X!".utf8)
        let evil = Self.forged(Array("EVIL PAYLOAD".utf8), crc: CRC32.checksum(real))
        #expect(evil.count == real.count && CRC32.checksum(evil) == CRC32.checksum(real))
        let src = try dir.write(["x.txt": real, "y.txt": evil], under: "src")
        let zip = dir.appending("zc.zip").path
        let packed = try run(["pack", src.path, "-o", zip, "--format", "zip", "--encryption", "zipcrypto", "-q"])
        #expect(packed.status == 0, "\(packed.stderr)")
        let plain = try run(["cat", zip, "x.txt"])
        #expect(plain.status == 0 && plain.stdout == real, "\(plain.stderr)")

        try Data(Self.withSecondDirectory([UInt8](try Data(contentsOf: URL(fileURLWithPath: zip)))))
            .write(to: URL(fileURLWithPath: zip))
        let cat = try run(["cat", zip, "x.txt"])
        #expect(cat.status == 4 && cat.stdout != evil, "\(cat.status) \(cat.stderr)")
        #expect(cat.stderr.contains("outside this entry"), "\(cat.stderr)")
        #expect(try run(["verify", zip]).status == 4)
        let into = dir.appending("out").path
        let extract = try run(["extract", zip, "--into", into])
        #expect(extract.status == 4, "\(extract.stderr)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: into + "/x.txt"))).map { [UInt8]($0) } != evil)
    }

    /// Two entries declaring 2^63 bytes each (zip64 extra fields): `list` lists them and says their
    /// total is past 64 bits, where adding them up trapped (exit 132).
    @Test func listingSizesPast64BitsDoesNotTrap() throws {
        var b = ZipBuilder.Entry("b.bin", Array("x".utf8)), c = ZipBuilder.Entry("c.bin", Array("y".utf8))
        (b.declaredSize, c.declaredSize) = (1 << 63, 1 << 63)
        let zip = dir.appending("huge.zip")
        try ZipBuilder([ZipBuilder.Entry("a.txt", Array("hello\n".utf8)), b, c]).write(to: zip)

        let list = try run(["list", zip.path])
        #expect(!list.signaled && list.status == 0, "\(list.status) \(list.stderr)")
        #expect(list.stderr.contains("3 entries, more than \(UInt64.max) bytes"), "\(list.stderr)")
        let json = try run(["list", zip.path, "--json"])
        #expect(!json.signaled && json.status == 0, "\(json.stderr)")
        let verify = try run(["verify", zip.path])
        #expect(!verify.signaled && verify.status == 1 && verify.stderr.contains("maxEntrySize"), "\(verify.stderr)")
    }

    /// Declared sizes whose sum wraps past 2^64 to a few bytes: `extract` refuses the total before
    /// anything is written, as it refuses 70 GiB, where the wrapped sum let it write `a.txt`.
    @Test func extractRefusesATotalThatWrapsBeforeWriting() throws {
        var b = ZipBuilder.Entry("b.bin", Array("x".utf8)), c = ZipBuilder.Entry("c.bin", Array("y".utf8))
        (b.declaredSize, c.declaredSize) = (70 << 30, 0 &- (70 << 30))
        let zip = dir.appending("wrap.zip")
        try ZipBuilder([ZipBuilder.Entry("a.txt", Array("hello\n".utf8)), b, c]).write(to: zip)

        let into = dir.appending("out").path
        let extract = try run(["extract", zip.path, "--into", into])
        #expect(
            extract.status == 1 && extract.stderr.contains("maxExtractBytes"), "\(extract.status) \(extract.stderr)")
        #expect(!FileManager.default.fileExists(atPath: into + "/a.txt"))
    }

    // MARK: - Building the zips

    /// `prefix` and 4 bytes more whose CRC-32 is `target`: the CRC of the 4 bytes' bits is affine
    /// over GF(2), so 32 independent single-bit changes span every value.
    static func forged(_ prefix: [UInt8], crc target: UInt32) -> [UInt8] {
        func bytes(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
        let base = CRC32.checksum(prefix + bytes(0))
        var basis: [Int: (value: UInt32, mask: UInt32)] = [:]
        for i in 0..<32 {
            var (v, m) = (CRC32.checksum(prefix + bytes(1 << UInt32(i))) ^ base, UInt32(1) << UInt32(i))
            for bit in stride(from: 31, through: 0, by: -1) where v >> UInt32(bit) & 1 == 1 {
                guard let row = basis[bit] else {
                    basis[bit] = (v, m)
                    break
                }
                (v, m) = (v ^ row.value, m ^ row.mask)
            }
        }
        var (v, x) = (target ^ base, UInt32(0))
        for bit in stride(from: 31, through: 0, by: -1) where v >> UInt32(bit) & 1 == 1 {
            let row = basis[bit]!
            (v, x) = (v ^ row.value, x ^ row.mask)
        }
        return prefix + bytes(x)
    }

    /// `zip` (one end record, no comment) with its directory's records copied after it in reverse
    /// order, and its end record replaced by one naming that copy whose comment is the original
    /// end record (naming the original directory).
    static func withSecondDirectory(_ zip: [UInt8]) -> [UInt8] {
        func u16(_ at: Int) -> Int { Int(zip[at]) | Int(zip[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let end = zip.count - 22
        let (count, size, offset) = (u16(end + 10), u32(end + 12), u32(end + 16))
        var records: [[UInt8]] = []
        var at = offset
        while at < offset + size {
            let length = 46 + u16(at + 28) + u16(at + 30) + u16(at + 32)
            records.append(Array(zip[at..<at + length]))
            at += length
        }
        let copy = Array(records.reversed().joined())
        func endRecord(_ size: Int, _ offset: Int, comment: [UInt8] = []) -> [UInt8] {
            [0x50, 0x4B, 0x05, 0x06] + le(0, 4) + le(count, 2) + le(count, 2) + le(size, 4) + le(offset, 4)
                + le(comment.count, 2) + comment
        }
        return Array(zip[..<(offset + size)]) + copy
            + endRecord(copy.count, offset + size, comment: endRecord(size, offset))
    }
}
#endif
