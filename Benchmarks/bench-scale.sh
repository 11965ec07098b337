#!/usr/bin/env bash
# bench-scale.sh ASSETPACK DIR: the whole-process peak memory (maximum RSS, /usr/bin/time) of
# `assetpack cat` reading one entry of each pack ScaleBench left in DIR, and of `assetpack
# --version` (the process's own: Swift runtime, Foundation, the binary). Medians of 5 runs.
set -euo pipefail
bin=$1 dir=$2
command -v /usr/bin/time >/dev/null || { echo "bench-scale: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
rss() {  # median maximum RSS in KB of 5 runs of "$@"
  for _ in 1 2 3 4 5; do
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
  done | sort -n | sed -n 3p
}
base=$(rss "$bin" --version)
echo "| pack | entries | peak RSS of cat (one entry) | over the process's own ($base KB) |"
echo "|---|---:|---:|---:|"
for pack in $(ls "$dir" | grep -E '^[0-9]+\.(apack|zip)$' | sort -n); do
  n=${pack%%.*}
  entry=$(printf 'd%04d/f%07d.json' $((n / 2 / 1000)) $((n / 2)))  # one of the n - 1 JSON files
  if [[ $pack == *.apack ]]; then
    kb=$(rss "$bin" cat "$dir/$pack" "$entry" --key-file "$dir/key")
  else
    kb=$(ASSETPACK_PASSWORD=bench-scale rss "$bin" cat "$dir/$pack" "$entry")
  fi
  printf '| %s | %d | %.1f MB | %.1f MB |\n' "$pack" "$n" "$(echo "$kb / 1000" | bc -l)" "$(echo "($kb - $base) / 1000" | bc -l)"
done
