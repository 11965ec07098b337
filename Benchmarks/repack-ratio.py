#!/usr/bin/env python3
"""A re-pack against its full pack, interleaved: each round runs PREP then the re-pack, and PREP
then the full pack (in turn first), and times the two commands (no shell; PREP is not timed). Prints the medians and the median of
the per-round ratios: on a shared machine, drift hits both commands of a round alike, where
hyperfine times all runs of one command before the other's.

    repack-ratio.py ROUNDS PREP REPACK FULL

PREP is a shell command given the output's name as $1 (it restores the pack and edits the
source); REPACK and FULL are commands with {out} where the output goes. docs/INCREMENTAL.md
("Guessed, not cut; compared, not hashed") has the commands it was run with.
"""
import shlex
import statistics
import subprocess
import sys
import time


def timed(prep, command, out):
    subprocess.run(["sh", "-c", prep, "prep", out], check=True)
    args = shlex.split(command.replace("{out}", out))
    start = time.perf_counter()
    subprocess.run(args, check=True)
    return time.perf_counter() - start


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    rounds, prep, repack, full = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    repacks, fulls, ratios = [], [], []
    for i in range(rounds):
        if i % 2 == 0:
            a = timed(prep, repack, "repacked.container")
            b = timed(prep, full, "full.container")
        else:
            b = timed(prep, full, "full.container")
            a = timed(prep, repack, "repacked.container")
        repacks.append(a)
        fulls.append(b)
        ratios.append(a / b)
    print(
        "re-pack %.1f ms, full pack %.1f ms (medians of %d rounds): ratio of medians %.3f, median ratio %.3f"
        % (statistics.median(repacks) * 1e3, statistics.median(fulls) * 1e3, rounds,
           statistics.median(repacks) / statistics.median(fulls), statistics.median(ratios)))


if __name__ == "__main__":
    main()
