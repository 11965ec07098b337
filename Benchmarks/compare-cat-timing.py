#!/usr/bin/env python3
"""Compares two assetpack binaries' entry reads on the same packs: `assetpack cat --timing`.

Usage: compare-cat-timing.py OLD_BINARY NEW_BINARY [RUNS]

Builds a tree (64 MiB of compressible text, 64 MiB of random bytes, one 4 KiB text) in a
temporary folder, packs it once with NEW_BINARY as an AES zip, an unencrypted zip and a
container, then reads each entry with both binaries in alternating order, RUNS times (default
15), and prints the medians of the read's wall time (what `--timing` reports: the read alone,
not process start or the pack's open) and their ratio.
"""
import os, re, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_tree import make_tree  # noqa: E402

old, new = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 15
env = dict(os.environ, ASSETPACK_PASSWORD="compare-pw")
work = tempfile.mkdtemp(prefix="assetpack-compare-")
tree = os.path.join(work, "tree")
make_tree(tree)
packs = {"zip": ["--format", "zip"], "zip-plain": ["--format", "zip", "--encryption", "none"],
         "container": ["--format", "container"]}
for name, flags in packs.items():
    subprocess.run([new, "pack", tree, "--output", os.path.join(work, name), *flags], env=env, check=True,
                   capture_output=True)
times = {}
for run in range(runs):
    for name in packs:
        for entry in ["big.txt", "big.bin", "small.txt"]:
            order = [("old", old), ("new", new)] if run % 2 == 0 else [("new", new), ("old", old)]
            for label, binary in order:
                out = subprocess.run([binary, "cat", os.path.join(work, name), entry, "--timing", "--output",
                                      "/dev/null"], env=env, capture_output=True, text=True)
                match = re.search(r"in ([\d.]+) ms", out.stderr)
                if not match:
                    sys.exit(f"{label} {name} {entry}: {out.stderr.strip()}")
                times.setdefault((name, entry, label), []).append(float(match.group(1)))
print(f"{'pack':10} {'entry':10} {'old ms':>9} {'new ms':>9} {'new/old':>8}   (medians of {runs} runs)")
for name in packs:
    for entry in ["big.txt", "big.bin", "small.txt"]:
        a = statistics.median(times[(name, entry, "old")])
        b = statistics.median(times[(name, entry, "new")])
        print(f"{name:10} {entry:10} {a:9.2f} {b:9.2f} {b / a:8.2f}")
subprocess.run(["rm", "-rf", work])
