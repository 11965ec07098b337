#!/usr/bin/env python3
"""Times container packs of a 64 MiB random entry: a full pack (--fresh), a re-pack after one
changed byte, and a re-pack with nothing changed, for one or more assetpack binaries in
alternating runs (docs/PERFORMANCE.md, "Chunk-level deltas").

Usage: repack-phases.py [--runs N] [--scrypt-cost C] WORK_DIR BINARY [BINARY ...]

Each run is traced with `strace --seccomp-bpf -f -tt -e trace=openat,ftruncate` (needs strace;
only those two calls stop the process). Prints per binary the medians of
- the whole command's wall time (process start, key derivation, writing and fsync included);
- the entry's processing alone: from opening the source file to the index's ftruncate (a re-pack
  with nothing changed writes nothing, so it has none).
"""
import argparse, os, random, re, statistics, subprocess, time

parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=7)
parser.add_argument("--scrypt-cost", type=int)
parser.add_argument("work")
parser.add_argument("binaries", nargs="+")
args = parser.parse_args()
os.environ.setdefault("ASSETPACK_PASSWORD", "bench-only")
tree = os.path.join(args.work, "tree")
os.makedirs(tree, exist_ok=True)
source = os.path.join(tree, "level.bin")
with open(source, "wb") as f:
    f.write(random.Random(1).randbytes(64 << 20))


def flip(offset):
    with open(source, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def run(binary, output, extra):
    command = [binary, "pack", tree, "--format", "container", "--output", output, "--quiet"] + extra
    trace = os.path.join(args.work, "trace.txt")
    t = time.perf_counter()
    subprocess.run(["strace", "--seccomp-bpf", "-f", "-tt", "-e", "trace=openat,ftruncate", "-o", trace] + command,
                   check=True)
    wall = time.perf_counter() - t
    start = end = None
    for line in open(trace):
        m = re.match(r"\d+ +(\d+):(\d+):([\d.]+) (.*)", line)
        if not m:
            continue
        at = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
        if start is None and source in m[4]:
            start = at
        if m[4].startswith("ftruncate"):
            end = at
    return wall, (end - start if start is not None and end is not None else float("nan"))


cost = ["--scrypt-cost", str(args.scrypt_cost)] if args.scrypt_cost else []
results = {b: {k: ([], []) for k in ("full", "one byte", "nothing")} for b in args.binaries}
for i in range(args.runs):
    for b in args.binaries:
        output = os.path.join(args.work, "%d.apack" % args.binaries.index(b))
        for kind in ("full", "one byte", "nothing"):
            if kind == "one byte":
                flip((32 << 20) + i)
            wall, processing = run(b, output, ["--fresh"] + cost if kind == "full" else [])
            results[b][kind][0].append(wall)
            results[b][kind][1].append(processing)
        flip((32 << 20) + i)  # back to the original bytes for the next binary
for b in args.binaries:
    print(b)
    for kind, (walls, processing) in results[b].items():
        written = [p for p in processing if p == p]  # not NaN
        print("  %-9s wall %.3f s, entry processing %s (medians of %d)"
              % (kind, statistics.median(walls),
                 "%.3f s" % statistics.median(written) if written else "-", len(walls)))
