#!/usr/bin/env bash
# The zstd level table of docs/PERFORMANCE.md ("zstd levels"): per-chunk bytes, compression speed and
# decode speed (one core) of zstd levels against libdeflate (ZstdBench), on the compressible files
# (json, lua, cfg, xml, txt) of `assetpack perf --corpus standard`'s tree, of make bench-pack's tree
# (Benchmarks/make-pack-corpus.py) and of a real game's data from a Debian package, then 7-Zip's
# AES-256 zip (-mx5 and -mx1, one thread) of the same files. CHUNKS=64,128,256 and
# CORPORA="perf pack game" by default.
#   Benchmarks/zstd-levels.sh WORKDIR [DEBIAN-DATA-PACKAGE]   (make bench-zstd)
set -euo pipefail
work=$1 deb=${2:-wesnoth-1.16-data}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
chunks=${CHUNKS:-64,128,256} corpora=${CORPORA:-perf pack game}
python3 "$here/Benchmarks/make-pack-corpus.py" "$work/tree"
if [ ! -d "$work/game" ]; then
  (cd "$work" && rm -f ./*.deb && apt-get download "$deb" >/dev/null && dpkg -x ./*.deb game-tmp && mv game-tmp game && rm -f ./*.deb)
fi
cd "$here"
swift build -c release --static-swift-stdlib --product ZstdBench >/dev/null  # as the Makefile's RELEASE
bench=$(swift build -c release --static-swift-stdlib --show-bin-path)/ZstdBench
[ -d "$work/perf-tree" ] || { "$bench" --write-perf-corpus "$work/perf-tree.tmp" && mv "$work/perf-tree.tmp" "$work/perf-tree"; }

# 7zz on one thread (-mmt1) over exactly the files ZstdBench reads: bytes, and MB of input per CPU
# second (user + sys, the fastest of 3 runs), comparable with ZstdBench's one-core figures.
seven() {
  local list=$1 dir=$2 level=$3
  local best=999999 t raw size
  for _ in 1 2 3; do
    rm -f "$work/7z-$$.zip"
    t=$( { TIMEFORMAT='%U %S'; time (cd "$dir" && 7zz a -tzip "$level" -mmt1 -mem=AES256 -pbench-only \
      "$work/7z-$$.zip" "@$list" >/dev/null); } 2>&1 | awk '{print $1 + $2}')
    best=$(echo "if ($t < $best) $t else $best" | bc)
  done
  # The entries' packed bytes (each with WinZip AES's 28 bytes of salt, check and MAC), not the
  # archive: its headers are not what a codec decides.
  size=$(7zz l -slt "$work/7z-$$.zip" | awk '/^Packed Size/ {s += $4} END {print s}')
  raw=$(cd "$dir" && tr '\n' '\0' < "$list" | du -cb --files0-from=- | tail -1 | cut -f1)
  printf '| 7zz a -tzip %s -mmt1 -mem=AES256 | %s | %.2f | %.1f |\n' "$level" "$size" "$(echo "$raw / $size" | bc -l)" \
    "$(echo "$raw / $best / 1000000" | bc -l)"
}

corpus() {
  local name=$1 dir=$2; shift 2
  echo "## $name"
  "$bench" --chunk-kib "$chunks" "$@"
  local list="$work/files-$c.list"
  (cd "$dir" && find . -type f \( -iname '*.json' -o -iname '*.lua' -o -iname '*.cfg' -o -iname '*.xml' -o -iname '*.txt' \) \
    | sed 's|^\./||' | sort > "$list")
  echo
  echo "| 7-Zip (whole files, zip) | packed bytes (entries, incl. 28 B AES each) | ratio | MB/s (1 core, CPU time) |"
  echo "|---|---:|---:|---:|"
  seven "$list" "$dir" -mx5
  seven "$list" "$dir" -mx1
  echo
}

for c in $corpora; do
  case $c in
  perf) corpus "assetpack perf --corpus standard" "$work/perf-tree" "$work/perf-tree/json" "$work/perf-tree/big/text.json" ;;
  pack) corpus "make bench-pack's tree" "$work/tree" "$work/tree/json" "$work/tree/big/text.json" ;;
  game) corpus "$deb" "$work/game" "$work/game" ;;
  esac
done
