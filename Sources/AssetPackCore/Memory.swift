internal import CMemoryHints
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks Linux to back a large, not yet touched output buffer with 2 MiB pages: 32 page faults
/// instead of 16,384 for 64 MiB, which otherwise cost about as much as decrypting the data.
/// Advisory only; a no-op for buffers under 4 MiB and on other systems
/// (``adviseHugePages(alignedRegion:)`` below).
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

/// `madvise(MADV_HUGEPAGE)` over `region`, whose bounds must be page-aligned. Linux only: a no-op
/// elsewhere (Darwin has no transparent huge pages). Advisory: failure is ignored.
package func adviseHugePages(alignedRegion region: UnsafeMutableRawBufferPointer) {
    #if os(Linux)
    _ = madvise(region.baseAddress, region.count, MADV_HUGEPAGE)
    #endif
}

/// Asks the processor to start loading the cache line at `address` without waiting for it, so that
/// two reads whose addresses are both known miss the cache at the same time instead of one after
/// the other (``IndexTable``'s lookup: docs/PERFORMANCE.md, "Three misses, not four"). A hint: it
/// reads nothing and never faults, whatever the address.
package func prefetchCacheLine(_ address: UnsafeRawPointer) {
    assetpack_prefetch(address)
}

/// Overwrites `buffer` with zeros in a way the compiler may not drop as a dead store, for secrets
/// about to be freed: `explicit_bzero` (glibc), `memset_s` (Darwin). The one memory wiper: key
/// seeds, derived keys and keystream scratch in every module go through it.
package func wipeMemory(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    #if canImport(Darwin)
    _ = memset_s(base, buffer.count, 0, buffer.count)
    #else
    explicit_bzero(base, buffer.count)
    #endif
}
