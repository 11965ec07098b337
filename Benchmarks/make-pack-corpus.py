#!/usr/bin/env python3
"""Writes the packing benchmark's tree (the layout of `assetpack perf --corpus standard`, ~151 MiB,
1013 files): 1000 x 4 KiB random, 10 JSON-like texts from 512 B to 8 MiB, a 1 MiB .png of random
bytes, 64 MiB random and 64 MiB JSON-like text. Deterministic; skipped when DIR already holds it."""
import os
import random
import sys

root = sys.argv[1]
stamp = os.path.join(root, ".complete")
if os.path.exists(stamp):
    sys.exit(0)
rng = random.Random(20261123)


def text(n):
    words = [b'"name"', b'"value"', b'"id"', b'"position"', b'"texture"', b'"enabled"', b'true', b'false',
             b'{', b'}', b'[', b']', b':', b',', b'\n', b'  ']
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words)
        out += str(rng.randrange(100000)).encode()
    return bytes(out[:n])


def write(path, data):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)


for i in range(1000):
    write("small/%04d.bin" % i, rng.randbytes(4096))
for i, size in enumerate([512, 2 << 10, 16 << 10, 48 << 10, 200 << 10, 512 << 10, 900 << 10, 2 << 20, 5 << 20, 8 << 20]):
    write("json/doc-%02d.json" % i, text(size))
write("media/texture.png", rng.randbytes(1 << 20))
write("big/random.bin", rng.randbytes(64 << 20))
write("big/text.json", text(64 << 20))
open(stamp, "w").close()
