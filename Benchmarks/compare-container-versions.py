#!/usr/bin/env python3
"""Container reads, one format version against another: each binary reads the pack it wrote.

Usage: compare-container-versions.py OLD_BINARY NEW_BINARY [RUNS] [-- EXTRA PACK FLAGS FOR NEW]

Builds a tree (64 MiB of compressible text, 64 MiB of random bytes, a 4 KiB text, 4 KiB of random
bytes) in a temporary folder; OLD_BINARY packs it as a container (its format version), NEW_BINARY
too (its version, with the extra flags); then each binary reads every entry of its own pack with
`cat --timing` (the read alone: no process start, no open), alternating old and new, RUNS times
(default 15). Prints pack sizes and times, the medians of the reads, GB/s for the 64 MiB entries
and the ratios new/old. A 4 KiB text entry against the 4 KiB stored one tells what decompressing a
small entry costs. Issues 25 and 26 quote this.
"""
import os, re, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_tree import make_tree  # noqa: E402

args = sys.argv[1:]
extra = args[args.index("--") + 1:] if "--" in args else []
args = args[:args.index("--")] if "--" in args else args
old, new = args[0], args[1]
runs = int(args[2]) if len(args) > 2 else 15
env = dict(os.environ, ASSETPACK_PASSWORD="compare-pw")
work = tempfile.mkdtemp(prefix="assetpack-versions-")
tree = os.path.join(work, "tree")
make_tree(tree, stored_small=True)
entries = ["big.txt", "big.bin", "small.txt", "small.bin"]
packs = {}
for label, binary, flags in [("old", old, []), ("new", new, extra)]:
    out = os.path.join(work, label + ".apack")
    t = time.perf_counter()
    subprocess.run([binary, "pack", tree, "--format", "container", "--output", out, "--quiet", *flags], env=env,
                   check=True)
    packs[label] = out
    print(f"{label}: packed in {time.perf_counter() - t:.2f} s, {os.path.getsize(out)} bytes"
          f" (format version {open(out, 'rb').read(9)[8]})")
times = {}
for run in range(runs):
    for entry in entries:
        order = ["old", "new"] if run % 2 == 0 else ["new", "old"]
        for label in order:
            binary = old if label == "old" else new
            out = subprocess.run([binary, "cat", packs[label], entry, "--timing", "--output", "/dev/null"],
                                 env=env, capture_output=True, text=True)
            match = re.search(r"in ([\d.]+) ms", out.stderr)
            if not match:
                sys.exit(f"{label} {entry}: {out.stderr.strip()}")
            times.setdefault((entry, label), []).append(float(match.group(1)))
print(f"{'entry':10} {'old ms':>9} {'new ms':>9} {'new/old':>8} {'old GB/s':>9} {'new GB/s':>9}   (medians of {runs} runs)")
for entry in entries:
    a = statistics.median(times[(entry, "old")])
    b = statistics.median(times[(entry, "new")])
    size = os.path.getsize(os.path.join(tree, entry))
    print(f"{entry:10} {a:9.3f} {b:9.3f} {b / a:8.2f} {size / a / 1e6:9.2f} {size / b / 1e6:9.2f}")
for label in ["old", "new"]:
    t = statistics.median(times[("small.txt", label)]) / statistics.median(times[("small.bin", label)])
    print(f"{label}: 4 KiB compressible read / 4 KiB stored read = {t:.2f}")
subprocess.run(["rm", "-rf", work])
