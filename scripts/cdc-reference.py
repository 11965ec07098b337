#!/usr/bin/env python3
"""A plain, slow rendering of ContentChunker's definition (Sources/AssetPackCore/ContentChunker.swift),
written from its doc comment, not from the Swift code: prints the golden boundaries the tests pin
(ContentChunkerTests.goldenBoundaries), so the definition in FORMAT.md is checked, not just the code.

  python3 scripts/cdc-reference.py        # both vectors (about 10 s)
"""
M = (1 << 64) - 1
SEED = 0x4173736574434443  # "AssetCDC"


def splitmix64(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        yield z ^ (z >> 31)


_g = splitmix64(SEED)
GEAR = [next(_g) for _ in range(256)]


def mask(n):
    """n one bits, bits 63-n ... 62."""
    return ((1 << n) - 1) << (63 - n)


def masks(avg, level):
    a = avg.bit_length() - 1
    return mask(a + level), mask(a - level)


def chunk_ends_window(data, mn, avg, mx, level):
    """The definition as written: h(L) sums the 64 bytes before candidate length L."""
    small, large = masks(avg, level)
    ends, start = [], 0
    while start < len(data):
        rest, length = len(data) - start, None
        for cand in range(mn, min(mx - 1, rest) + 1):
            h = 0
            for k in range(64):
                h = (h + (GEAR[data[start + cand - 1 - k]] << k)) & M
            if h & (small if cand < avg else large) == 0:
                length = cand
                break
        if length is None:
            length = mx if rest >= mx else rest
        start += length
        ends.append(start)
    return ends


def chunk_ends_rolling(data, mn, avg, mx, level):
    """The same, rolling h = (h << 1) + Gear[b] from each chunk's first byte."""
    small, large = masks(avg, level)
    ends, start = [], 0
    while start < len(data):
        rest, length, h = len(data) - start, None, 0
        for i in range(min(mx - 1, rest)):
            h = ((h << 1) + GEAR[data[start + i]]) & M
            cand = i + 1
            if cand >= mn and h & (small if cand < avg else large) == 0:
                length = cand
                break
        if length is None:
            length = mx if rest >= mx else rest
        start += length
        ends.append(start)
    return ends


def splitmix_bytes(count, seed):
    """count bytes of consecutive SplitMix64(seed) outputs, each little-endian."""
    g, out = splitmix64(seed), bytearray()
    while len(out) < count:
        out += next(g).to_bytes(8, "little")
    return bytes(out[:count])


if __name__ == "__main__":
    big = splitmix_bytes(1 << 20, 26)
    print("standard (16 KiB / 64 KiB / 256 KiB, level 2), 1 MiB of SplitMix64(26):")
    print(chunk_ends_rolling(big, 16 << 10, 64 << 10, 256 << 10, 2))
    small = splitmix_bytes(64 << 10, 27)
    a = chunk_ends_window(small, 256, 1024, 4096, 2)
    assert a == chunk_ends_rolling(small, 256, 1024, 4096, 2)
    print("256 B / 1 KiB / 4 KiB, level 2, 64 KiB of SplitMix64(27):")
    print(a)
