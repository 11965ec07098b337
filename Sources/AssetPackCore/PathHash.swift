/// The hash a pack's path tables use: FNV-1a, 64-bit, over a path's UTF-8 bytes (offset basis
/// `0xcbf29ce484222325`, prime `0x100000001b3`). A container of version 8 stores a table built
/// with it (docs/FORMAT.md, "Version 8"); the zip reader builds one with it at open.
package enum PathHash {
    package static func fnv1a(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h &*= 0x0000_0100_0000_01B3
        }
        return h
    }

    package static func fnv1a(_ path: String) -> UInt64 {
        var path = path
        return path.withUTF8 { fnv1a(UnsafeRawBufferPointer($0)) }
    }
}

/// The open-addressing table both formats keep their paths in (a version-8 container stores it,
/// the zip reader builds it at open): `UInt32` slots holding a position plus one (0: empty),
/// at most half full, linear probing from ``PathHash/fnv1a(_:)-(UnsafeRawBufferPointer)``, and the
/// most slots any insertion visited, which bounds every lookup.
package struct PathSlots: Sendable {
    package private(set) var slots: [UInt32]
    package private(set) var maxProbe = 1

    /// Room for `count` paths: the least power of two above `2 × count`.
    package init(count: Int) {
        var size = 1
        while size < 2 * count + 1 { size <<= 1 }
        slots = [UInt32](repeating: 0, count: size)
    }

    /// Puts `position` under the path `bytes`, unless a position already in the table holds the
    /// same path (`isSame`): then the table is left as it is and that position is returned.
    package mutating func insert(_ position: Int, bytes: UnsafeRawBufferPointer, isSame: (Int) -> Bool) -> Int? {
        var slot = Int(truncatingIfNeeded: PathHash.fnv1a(bytes)) & (slots.count - 1)
        var probes = 1
        while slots[slot] != 0 {
            let other = Int(slots[slot]) - 1
            if isSame(other) { return other }
            slot = (slot + 1) & (slots.count - 1)
            probes += 1
        }
        slots[slot] = UInt32(position + 1)
        maxProbe = max(maxProbe, probes)
        return nil
    }

    /// The position whose path `matches`, looked for from the hash of `bytes` through at most
    /// `maxProbe` of `slotCount` slots (a power of two), `slot(i)` reading slot `i` (a stored
    /// table's too): `nil` at an empty slot or after `maxProbe`.
    package static func find(
        _ bytes: UnsafeRawBufferPointer, slotCount: Int, maxProbe: Int, slot: (Int) -> UInt32,
        matches: (Int) -> Bool
    ) -> Int? {
        guard slotCount > 0 else { return nil }
        var at = Int(truncatingIfNeeded: PathHash.fnv1a(bytes)) & (slotCount - 1)
        for _ in 0..<maxProbe {
            let value = Int(slot(at))
            if value == 0 { return nil }
            if matches(value - 1) { return value - 1 }
            at = (at + 1) & (slotCount - 1)
        }
        return nil
    }
}
