import AssetPackCore
import Foundation
import Testing

/// Flips one byte of a file in place.
public func flipByte(at offset: Int, in path: String, with mask: UInt8 = 0xFF) throws {
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    bytes[offset] ^= mask
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Every single-byte flip (`^ 0xFF`) of `original`, each judged by `outcome`: the error code a
/// reader refused it with, or `nil` when it was accepted.
/// - Returns: The offsets whose flip was accepted, and how often each code refused one.
public func flipEveryByte(
    of original: [UInt8], _ outcome: ([UInt8]) throws -> AssetPackError.Code?
) rethrows -> (accepted: [Int], codes: [AssetPackError.Code: Int]) {
    var accepted: [Int] = []
    var codes: [AssetPackError.Code: Int] = [:]
    for i in flipOffsets(original) {
        var flipped = original
        flipped[i] ^= 0xFF
        if let code = try outcome(flipped) { codes[code, default: 0] += 1 } else { accepted.append(i) }
    }
    return (accepted, codes)
}

/// The offsets a flip test of `pack` damages: every byte, but in a version-6 or -7 container's
/// zero padding between its header slots and its data (offsets 128 to 8192: the empty second slot
/// at 4096 and the bytes around it, never read) only every 97th, where a flip is undetected and
/// harmless by design (``appendablePadding``).
public func flipOffsets(_ pack: [UInt8]) -> [Int] {
    guard let padding = appendablePadding(pack) else { return Array(pack.indices) }
    return pack.indices.filter { !padding.contains($0) || ($0 - padding.lowerBound) % 97 == 0 }
}

/// A version-6 or -7 container's bytes that no reader reads while its second slot is empty: from
/// the end of slot 0 to the data, but for the empty second slot itself, which a reader checks is
/// all zeros (a damaged slot there may be a newer generation's: docs/FORMAT.md, "Version 6");
/// `nil` for anything else.
public func appendablePadding(_ pack: [UInt8]) -> UnreadBytes? {
    guard pack.count > 8192, pack.starts(with: Array("APACK\0\r\n".utf8)), (6...9).contains(pack[8]),
        !pack[4096..<4104].elementsEqual(Array("APACK\0\r\n".utf8))
    else { return nil }
    return UnreadBytes(ranges: [128..<4096, 4224..<8192])
}

/// A version-8 or -9 container's digest section (docs/FORMAT.md, "Version 8"), from its current
/// slot 0: bytes a read never decrypts (only a re-pack, a delta download and `verify` do, and
/// each refuses it damaged); `nil` for anything else.
public func digestSection(_ pack: [UInt8]) -> Range<Int>? {
    func u64(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(pack[at + $1]) << (8 * $1) } }
    guard pack.count > 8192, pack.starts(with: Array("APACK\0\r\n".utf8)), (8...9).contains(pack[8]) else { return nil }
    let (offset, length) = (u64(56), u64(64))
    guard offset + 20 <= pack.count, offset + length <= pack.count else { return nil }
    let table = (0..<4).reduce(0) { $0 | Int(pack[offset + $1]) << (8 * $1) }
    let start = offset + 20 + table + 16 * ((table + (1 << 20) - 1) >> 20)
    return start..<offset + length
}

/// Offsets of a pack that no reader reads.
public struct UnreadBytes: Sendable {
    public let ranges: [Range<Int>]
    public func contains(_ offset: Int) -> Bool { ranges.contains { $0.contains(offset) } }
    /// The first of them.
    public var lowerBound: Int { ranges.first?.lowerBound ?? 0 }
}

/// Byte-level surgery on zip files, for building damaged and hostile archives in tests.
public enum ZipSurgery {
    /// Offsets of every local header (`PK\u{3}\u{4}`) and central header (`PK\u{1}\u{2}`) whose name is `name`.
    public static func headers(named name: [UInt8], in bytes: [UInt8]) -> (local: [Int], central: [Int]) {
        var local: [Int] = []
        var central: [Int] = []
        var i = 0
        while i + 46 <= bytes.count {
            if bytes[i] == 0x50, bytes[i + 1] == 0x4B {
                if bytes[i + 2] == 3, bytes[i + 3] == 4 {
                    let n = Int(bytes[i + 26]) | Int(bytes[i + 27]) << 8
                    if i + 30 + n <= bytes.count, Array(bytes[(i + 30)..<(i + 30 + n)]) == name { local.append(i) }
                } else if bytes[i + 2] == 1, bytes[i + 3] == 2 {
                    let n = Int(bytes[i + 28]) | Int(bytes[i + 29]) << 8
                    if i + 46 + n <= bytes.count, Array(bytes[(i + 46)..<(i + 46 + n)]) == name { central.append(i) }
                }
            }
            i += 1
        }
        return (local, central)
    }

    /// Renames an entry in place (local and central headers); the new name must have the same byte length.
    public static func rename(_ old: String, to new: [UInt8], in bytes: inout [UInt8]) {
        let oldBytes = Array(old.utf8)
        precondition(oldBytes.count == new.count, "same length only")
        let (local, central) = headers(named: oldBytes, in: bytes)
        precondition(!local.isEmpty && !central.isEmpty, "entry \(old) not found")
        for h in local { bytes.replaceSubrange((h + 30)..<(h + 30 + new.count), with: new) }
        for h in central { bytes.replaceSubrange((h + 46)..<(h + 46 + new.count), with: new) }
    }

    /// Overwrites the declared uncompressed size of an entry (local and central headers).
    public static func setUncompressedSize(_ name: String, _ size: UInt32, in bytes: inout [UInt8]) {
        let (local, central) = headers(named: Array(name.utf8), in: bytes)
        let le = (0..<4).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
        for h in local { bytes.replaceSubrange((h + 22)..<(h + 26), with: le) }
        for h in central { bytes.replaceSubrange((h + 24)..<(h + 28), with: le) }
    }
}

/// The code of the ``AssetPackError`` `body` throws, or `nil` when it returns: what a damage or
/// attack sweep compares. Any other error is recorded as an issue (and answered `.io`).
public func refusal(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void)
    -> AssetPackError.Code?
{
    do {
        try body()
        return nil
    } catch let error as AssetPackError {
        return error.code
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        return .io
    }
}
