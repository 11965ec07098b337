#ifndef ASSETPACK_HINTS_H
#define ASSETPACK_HINTS_H

/// Asks the processor to start loading the cache line holding `address`, for a read soon after,
/// without waiting for it: two loads whose addresses are both known then miss at the same time
/// instead of one after the other. A hint only; it never faults.
static inline void assetpack_prefetch(const void *address) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(address, 0, 3);
#endif
}

#endif
