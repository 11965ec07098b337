import AssetPackCore
import Dispatch
import Foundation
import Synchronization

/// Fills `buffer` from `source` at `offset`; the end of the pack first is an integrity failure
/// (truncation).
func readExactly(_ source: any ByteSource, _ buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
    if try source.read(into: buffer, at: offset) < buffer.count {
        throw AssetPackError(.integrityFailure, "container is truncated")
    }
}

/// Reads exactly `count` bytes at `offset`.
func preadArray(_ source: any ByteSource, count: Int, at offset: UInt64) throws -> [UInt8] {
    try [UInt8](unsafeUninitializedCapacity: count) { buf, n in
        try readExactly(source, UnsafeMutableRawBufferPointer(buf), at: offset)
        n = count
    }
}
