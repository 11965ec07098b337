"""The tree both compare scripts read: 64 MiB of compressible text (random words), 64 MiB of random
bytes, a 4 KiB text and, with `stored_small`, 4 KiB of random bytes. Seeded: the same bytes every run."""
import os, random


def make_tree(tree, stored_small=False):
    os.makedirs(tree)
    rng = random.Random(1)
    words = [b"level", b"texture", b"audio", b"sprite", b"json", b"value", b"enemy", b"spawn", b"{", b"}", b'"name":']
    text = bytearray()
    while len(text) < 64 << 20:
        text += rng.choice(words) + b" "
    open(os.path.join(tree, "big.txt"), "wb").write(text[: 64 << 20])
    open(os.path.join(tree, "big.bin"), "wb").write(rng.randbytes(64 << 20))
    open(os.path.join(tree, "small.txt"), "wb").write((b"small entry text " * 300)[:4096])
    if stored_small:
        open(os.path.join(tree, "small.bin"), "wb").write(rng.randbytes(4096))
