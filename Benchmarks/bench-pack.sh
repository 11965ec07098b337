#!/usr/bin/env bash
# Packing benchmark (docs/PERFORMANCE.md, "Compression levels"; make bench-pack runs it): one tree
# packed by 7-Zip (`7zz a -tzip -mx1|-mx5 -mem=AES256`, its fastest and its default level) and by
# assetpack in both formats at --fast and the default level, fresh, under hyperfine; then zip packs
# at each libdeflate level of LEVELS (ZipLevelBench: the level set directly). Prints the median
# times with their ratio to 7-Zip, then the bytes by category (Benchmarks/pack-bytes.py): whole
# pack, compressible text entries, media, the rest. On the perf corpus, then an incremental
# re-pack after one 4 KiB file changed. 7z takes its password with -p: a throwaway password.
# Usage: Benchmarks/bench-pack.sh ASSETPACK ZIPLEVELBENCH WORK_DIR TREE RUNS "LEVELS"
#   TREE: corpus (Benchmarks/make-pack-corpus.py, ~151 MiB), game (Benchmarks/make-game-tree.sh,
#   Battle for Wesnoth's data from Debian, ~40 MB) or the path of any folder.
set -euo pipefail
bin=$(realpath "$1")
levelbench=$(realpath "$2")
mkdir -p "$3"
work=$(realpath "$3")
tree=$4
runs=$5
levels=$6
here=$(cd "$(dirname "$0")" && pwd)
export ASSETPACK_PASSWORD=bench-only
case "$tree" in
corpus) name=corpus; tree="$work/tree"; python3 "$here/make-pack-corpus.py" "$tree" ;;
game) name=game; tree="$work/game"; sh "$here/make-game-tree.sh" "$tree" ;;
*) name=$(basename "$tree"); tree=$(realpath "$tree") ;;
esac
out="$work/out-$name"
mkdir -p "$out"
cd "$out"
echo "tree: $tree ($(du -sb --exclude=.complete "$tree" | cut -f1) bytes; load: $(cut -d' ' -f1-3 /proc/loadavg))"

commands=(
    -n "7zz -mx1" "rm -f 7z-mx1.zip && cd '$tree' && 7zz a -tzip -mx1 -mem=AES256 -pbench-only '$out/7z-mx1.zip' * >/dev/null"
    -n "7zz -mx5" "rm -f 7z-mx5.zip && cd '$tree' && 7zz a -tzip -mx5 -mem=AES256 -pbench-only '$out/7z-mx5.zip' * >/dev/null")
for format in zip container; do
    ext=$([ $format = zip ] && echo zip || echo apack)
    commands+=(-n "$format --fast" "'$bin' pack '$tree' --format $format --fast --fresh --quiet --output $format-fast.$ext")
    commands+=(-n "$format default" "'$bin' pack '$tree' --format $format --fresh --quiet --output $format-default.$ext")
done
for level in $levels; do
    commands+=(-n "zip libdeflate $level" "'$levelbench' '$tree' level-$level.zip $level")
done
hyperfine --runs "$runs" --warmup 1 --export-json full.json --export-markdown full.md "${commands[@]}" >/dev/null

echo "median wall seconds and mean CPU seconds (hyperfine, $runs runs after 1 warm-up):"
python3 - full.json <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
median = {r["command"]: r["median"] for r in results}
# CPU seconds (user + system, mean over the runs) say more than wall time on a loaded machine.
cpu = {r["command"]: r["user"] + r["system"] for r in results}
print("| command | median s | × 7zz -mx1 | × 7zz -mx5 | CPU s | CPU × 7zz -mx1 | CPU × 7zz -mx5 |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in results:
    m, c = r["median"], cpu[r["command"]]
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
        r["command"], m, m / median["7zz -mx1"], m / median["7zz -mx5"], c, c / cpu["7zz -mx1"], c / cpu["7zz -mx5"]))
PY

packs=(7z-mx1=7z-mx1.zip 7z-mx5=7z-mx5.zip zip-fast=zip-fast.zip zip-default=zip-default.zip)
for level in container-fast container-default; do
    "$bin" list "$level.apack" --json >"$level.json"
    packs+=("$level=$level.json:$level.apack")
done
for level in $levels; do packs+=("libdeflate-$level=level-$level.zip"); done
python3 "$here/pack-bytes.py" 7z-mx5 "${packs[@]}"

if [ "$name" = corpus ]; then
    hyperfine --runs "$runs" --export-markdown incremental.md \
        -p "python3 -c \"import os; open('$tree/small/0500.bin','wb').write(os.urandom(4096))\"" \
        -n "incremental zip, one 4 KiB file changed" "'$bin' pack '$tree' --format zip --output zip-default.zip --quiet" \
        -n "incremental container, one 4 KiB file changed" \
        "'$bin' pack '$tree' --format container --output container-default.apack --quiet"
fi
echo "tables: $out/full.md$([ "$name" = corpus ] && echo " $out/incremental.md" || true)"
