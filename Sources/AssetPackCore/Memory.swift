import Foundation

/// Asks Linux to back a large, not yet touched output buffer with 2 MiB pages: 32 page faults
/// instead of 16,384 for 64 MiB, which otherwise cost about as much as decrypting the data.
/// Advisory only; a no-op for buffers under 4 MiB and on other systems
/// (``adviseHugePages(alignedRegion:)`` in Syscalls.swift).
package func adviseHugePages(_ buffer: UnsafeMutableRawBufferPointer) {
    let huge = 2 << 20
    guard buffer.count >= 2 * huge, let base = buffer.baseAddress else { return }
    let start = (Int(bitPattern: base) + huge - 1) & ~(huge - 1)
    let end = (Int(bitPattern: base) + buffer.count) & ~(huge - 1)
    if end > start {
        adviseHugePages(
            alignedRegion: UnsafeMutableRawBufferPointer(
                start: UnsafeMutableRawPointer(bitPattern: start), count: end - start))
    }
}
