#!/usr/bin/env bash
# Chunk-level delta benchmark (issue 26; docs/INCREMENTAL.md, docs/REMOTE.md): a container pack of
# a generated 64 MiB entry is installed from a real nginx on 127.0.0.1, then edited four ways in
# turn; after each edit the pack is re-packed to the same output (timed, with the bytes it wrote) and the
# installed copy updated from the URL (bytes downloaded, from nginx's access log). Signed packs
# (--trust, no password) and unsigned ones (given their password) both; a compressible 64 MiB entry
# (text) signed. Then the same on a folder of mixed assets (Benchmarks/make-pack-corpus.py) with one
# 4 KiB file and one byte of its 64 MiB entry changed. The peers (zsync, casync) on the same edits: Benchmarks/delta-peers.sh (make
# bench-delta runs it first, as bench-delta-peers).
# Usage: Benchmarks/bench-delta.sh ASSETPACK_BINARY WORK_DIR   (make bench-delta runs it)
set -euo pipefail
bin=$(realpath "$1")
work=$(mkdir -p "$2" && realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
export ASSETPACK_PASSWORD=bench-only
[ -f "$work/publisher.key" ] || "$bin" keygen --out "$work/publisher" >/dev/null
. "$here/nginx-loopback.sh"
start_nginx "$work"
bytes() { awk '{b+=$4} END {printf "%d", b}' "$log"; }
requests() { awk 'END {printf "%d", NR}' "$log"; }
# The sealed index's length, which an update always downloads: header bytes 64..72, of the header
# slot (at 0 or 4096) with the higher generation (bytes 72..80) in a version-6 to -9 pack (docs/FORMAT.md).
index_size() {
  python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read(4224)
# Both slots (the current one may be slot 1, slot 0 wiped: no magic at offset 0), versions 6 to 9.
slots = [d[i:i + 128] for i in (0, 4096)]
slots = [s for s in slots if s[:8] == b"APACK\0\r\n"]
best = max(slots, key=lambda s: struct.unpack("<Q", s[72:80])[0] if s[8] >= 6 else 0)
print(struct.unpack("<Q", best[64:72])[0])
EOF
}
# seconds COMMAND...: wall seconds of one run (the command's stderr kept in $work/last.err).
seconds() {
  python3 - "$@" <<'EOF'
import subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stderr=subprocess.PIPE, text=True)
sys.stderr.write(r.stderr)
if r.returncode: sys.exit(r.returncode)
print("%.3f" % (time.perf_counter() - t))
EOF
}

# edit KIND FILE: the edits of the issue's table, applied to FILE in place.
edit() {
  python3 - "$1" "$2" <<'EOF'
import random, sys
kind, path = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
mid = len(data) // 2
if kind == "byte": data[mid] ^= 0xFF
elif kind == "insert": data[mid:mid] = random.Random(4).randbytes(4096)
elif kind == "append": data += random.Random(5).randbytes(1 << 20)
open(path, "wb").write(data)
EOF
}

table="$work/delta.md"
{
  echo "| pack | edit | re-pack s | full pack s | ratio | chunks re-sealed | bytes written by re-pack | bytes downloaded by install URL | requests | of which index | bytes written by install |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"

run() {  # run MODE TREE ENTRY: MODE signed|unsigned
  local mode=$1 tree=$2 entry=$3 sign=() trust=() cred=()
  if [ "$mode" = signed ]; then
    sign=(--sign-key "$work/publisher.key"); trust=(--trust "$work/publisher.pub")
  else
    cred=(--password-env ASSETPACK_PASSWORD)
  fi
  local pack="$work/www/$mode.apack" home="$work/home-$mode"
  rm -rf "$home" "$pack"
  "$bin" pack "$tree" --format container --output "$pack" "${sign[@]}" --quiet
  "$bin" install "$base/$mode.apack" --into "$home" "${trust[@]}" "${cred[@]}" --quiet >/dev/null
  local kinds=(byte insert append none)
  [ -n "$entry" ] || kinds=(none)
  for kind in "${kinds[@]}"; do
    local label
    case $kind in
      byte) label="1 byte changed in the middle";; insert) label="4 KiB inserted in the middle";;
      append) label="1 MiB appended";; none) label="nothing changed";;
    esac
    [ "$kind" != none ] && edit "$kind" "$tree/$entry"
    local repack full summary
    repack=$(seconds "$bin" pack "$tree" --format container --output "$pack" "${sign[@]}" 2>"$work/repack.err")
    summary=$(cat "$work/repack.err")
    full=$(seconds "$bin" pack "$tree" --format container --output "$work/full.apack" --fresh "${sign[@]}" --quiet 2>/dev/null)
    # nginx's ETag is mtime (seconds) and size: a rewritten pack gets a later mtime, as an upload
    # would give it. An unchanged re-pack leaves the file alone (0 bytes written): not touched.
    grep -q " 0 bytes written" "$work/repack.err" || touch -d "+$((RANDOM % 50 + 10)) seconds" "$pack"
    : >"$log"
    "$bin" install "$base/$mode.apack" --into "$home" "${trust[@]}" "${cred[@]}" 2>"$work/install.err" >/dev/null
    cmp -s "$pack" "$home/$mode.apack" || { echo "installed pack differs from the remote one" >&2; exit 1; }
    local sealed written
    sealed=$(sed -n 's/.*; \([0-9]*\) of \([0-9]*\) chunks\{0,1\} reused.*/\2 \1/p' <<<"$summary" | awk '{print $1 - $2}')
    written=$(sed -n 's/.* \([0-9]*\) bytes written.*/\1/p' <<<"$summary")
    # What the installer says it wrote (an update in place: the tail, into its staging file and
    # the installed pack; otherwise the new file it renamed over the old one), or 0 when current.
    local size
    size=$(sed -n 's/.*; \([0-9]*\) bytes written.*/\1/p' "$work/install.err")
    size=${size:-0}
    echo "| $mode $(basename "$tree") | $label | $repack | $full | $(python3 -c "print('%.2f' % ($repack / $full))") | ${sealed:-?} | ${written:-?} | $(bytes) | $(requests) | $(index_size "$pack") | $size |" >>"$table"
  done
}

python3 -c "import random; open('$work/big-src','wb').write(random.Random(1).randbytes(64 << 20))"
for mode in signed unsigned; do
  rm -rf "$work/one"; mkdir -p "$work/one"; cp "$work/big-src" "$work/one/level.bin"
  run "$mode" "$work/one" level.bin
done

# The benchmark tree (Benchmarks/make-pack-corpus.py): its compressible 64 MiB entry (JSON-like
# text, the kind of level file or table a game patches; zstd packs it 2.4:1) edited the same four
# ways, signed; then the whole tree.
python3 "$here/make-pack-corpus.py" "$work/tree" >/dev/null
rm -rf "$work/text"; mkdir -p "$work/text"; cp "$work/tree/big/text.json" "$work/text/level.json"
run signed "$work/text" level.json

# A folder of mixed assets: one 4 KiB file replaced and one byte of the 64 MiB entry changed.
for mode in signed; do
  pack="$work/www/corpus.apack"; home="$work/home-corpus"
  rm -rf "$home"
  "$bin" pack "$work/tree" --format container --output "$pack" --sign-key "$work/publisher.key" --quiet
  "$bin" install "$base/corpus.apack" --into "$home" --trust "$work/publisher.pub" --quiet >/dev/null
  python3 -c "import os; open('$work/tree/small/0500.bin','wb').write(os.urandom(4096))"
  edit byte "$work/tree/big/random.bin"
  repack=$(seconds "$bin" pack "$work/tree" --format container --output "$pack" --sign-key "$work/publisher.key" 2>"$work/repack.err")
  touch -d "+30 seconds" "$pack"
  : >"$log"
  "$bin" install "$base/corpus.apack" --into "$home" --trust "$work/publisher.pub" 2>"$work/install.err" >/dev/null
  echo "| signed corpus | one 4 KiB file and 1 byte of the 64 MiB entry | $repack | | | | $(sed -n 's/.* \([0-9]*\) bytes written.*/\1/p' "$work/repack.err") | $(bytes) | $(requests) | $(index_size "$pack") | $(sed -n 's/.*; \([0-9]*\) bytes written.*/\1/p' "$work/install.err") |" >>"$table"
done

cat "$table"
