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
