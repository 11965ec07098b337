#!/usr/bin/env bash
# The peers of chunk-level delta updates (issue 26; docs/PERFORMANCE.md, "Delta updates: zsync and
# casync"): the bytes zsync and casync download to turn an old copy of a file into its new version,
# over HTTP from nginx on 127.0.0.1, counted from nginx's access log ($body_bytes_sent of every
# request: the index or control file and the data).
#   files: the two 64 MiB entries of the benchmark tree (Benchmarks/make-pack-corpus.py):
#          big/random.bin (incompressible) and big/text.json (JSON-like, compressible);
#   edits: nothing changed; 1 byte changed in the middle; 4 KiB (random) inserted in the middle;
#          1 MiB (random) appended;
#   folder: the whole ~151 MiB tree (1013 files) with one 4 KiB file rewritten (small/0500.bin):
#          casync on the directory (.caidx, seeded with the old tree), zsync on an uncompressed tar
#          of it (zsync knows single files only).
# Both tools with their defaults: zsync 2 KiB blocks (zsyncmake's choice for these sizes), casync
# 16/64/256 KiB chunks with its default chunk compression. Needs zsync, casync, nginx and python3
# (make bench-delta-peers installs them); uses no network beyond loopback.
# Usage: Benchmarks/delta-peers.sh OUTDIR      prints a markdown table (also in OUTDIR/peers.md)
set -euo pipefail
work=$(mkdir -p "$1" && realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
for tool in zsync zsyncmake casync /usr/sbin/nginx python3 tar cmp; do
  command -v "$tool" >/dev/null || { echo "delta-peers.sh: $tool is missing (make bench-delta-peers installs it)" >&2; exit 1; }
done
python3 "$here/make-pack-corpus.py" "$work/tree"
. "$here/nginx-loopback.sh"
start_nginx "$work"
# Body bytes of the logged requests whose URI matches $1 (an awk regex), and of the rest.
bytes() { sleep 0.2; awk -v re="$1" '$2 ~ re {a += $4} $2 !~ re {b += $4} END {printf "%d %d %d\n", a, b, NR}' "$log"; }

# edit KIND SRC DST: DST is SRC after the edit.
edit() {
  python3 - "$@" <<'EOF'
import os, random, sys
kind, src, dst = sys.argv[1:]
data = bytearray(open(src, "rb").read())
rng = random.Random(26)
mid = len(data) // 2
if kind == "1 byte changed in the middle":
    data[mid] ^= 0x01
elif kind == "4 KiB inserted in the middle":
    data[mid:mid] = rng.randbytes(4096)
elif kind == "1 MiB appended":
    data += rng.randbytes(1 << 20)
open(dst, "wb").write(data)
EOF
}

# zsync OLD NEW: prints "control data requests" (bytes) for updating OLD to NEW.
run_zsync() {
  local old=$1 new=$2
  rm -f "$work/www/new.bin" "$work/www/new.bin.zsync" "$work/out.bin" "$work/out.bin.zs-old"
  cp "$new" "$work/www/new.bin"
  (cd "$work/www" && zsyncmake -u new.bin -o new.bin.zsync new.bin)
  : >"$log"
  (cd "$work" && zsync -q -i "$old" -o out.bin "$base/new.bin.zsync" >/dev/null 2>&1)
  cmp -s "$work/out.bin" "$new" || { echo "zsync produced wrong bytes" >&2; exit 1; }
  bytes '\.zsync$'
}

# casync OLD NEW: the same with casync (a .caibx for a file, a .caidx for a directory).
run_casync() {
  local old=$1 new=$2 index=new.caibx
  [ -d "$new" ] && index=new.caidx
  rm -rf "$work/www/store" "$work/www/new.cai"* "$work/out"
  casync make --store="$work/www/store" "$work/www/$index" "$new" >/dev/null
  : >"$log"
  casync extract --store="$base/store/" --seed="$old" "$base/$index" "$work/out" >/dev/null 2>&1
  if [ -d "$new" ]; then diff -r -q "$work/out" "$new" >/dev/null; else cmp -s "$work/out" "$new"; fi \
    || { echo "casync produced wrong bytes" >&2; exit 1; }
  bytes '\.cai[bd]x$'
}

kib() { python3 -c "import sys; print('%.1f' % (int(sys.argv[1]) / 1024))" "$1"; }
table="$work/peers.md"
{
  echo "| file | edit | zsync .zsync KiB | zsync data KiB | zsync total KiB | casync index KiB | casync chunks KiB | casync total KiB |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$table"
row() {  # row FILE EDIT OLD NEW
  local z c
  read -r zc zd zn < <(run_zsync "$3" "$4")
  read -r ci cc cn < <(run_casync "$3" "$4")
  echo "| $1 | $2 | $(kib "$zc") | $(kib "$zd") | $(kib $((zc + zd))) | $(kib "$ci") | $(kib "$cc") | $(kib $((ci + cc))) |" >>"$table"
  echo "$1, $2: zsync $((zc + zd)) B in $zn requests, casync $((ci + cc)) B in $cn requests" >&2
}

for file in big/random.bin big/text.json; do
  for kind in "nothing changed" "1 byte changed in the middle" "4 KiB inserted in the middle" "1 MiB appended"; do
    edit "$kind" "$work/tree/$file" "$work/edited.bin"
    row "$file (64 MiB)" "$kind" "$work/tree/$file" "$work/edited.bin"
  done
done

# The folder: a copy of the tree with one 4 KiB file rewritten; zsync over tars of both.
rm -rf "$work/tree-new"
cp -a "$work/tree" "$work/tree-new"
rm -f "$work/tree-new/.complete" "$work/tree-old.tar" "$work/tree-new.tar"
python3 -c "import random, sys; open(sys.argv[1], 'wb').write(random.Random(1).randbytes(4096))" \
  "$work/tree-new/small/0500.bin"
rm -rf "$work/tree-old"
cp -a "$work/tree" "$work/tree-old"
rm -f "$work/tree-old/.complete"
tarball() { tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf "$2" .; }
tarball "$work/tree-old" "$work/tree-old.tar"
tarball "$work/tree-new" "$work/tree-new.tar"
read -r zc zd zn < <(run_zsync "$work/tree-old.tar" "$work/tree-new.tar")
read -r ci cc cn < <(run_casync "$work/tree-old" "$work/tree-new")
echo "| folder (151 MiB, 1013 files) | one 4 KiB file changed | $(kib "$zc") | $(kib "$zd") | $(kib $((zc + zd))) | $(kib "$ci") | $(kib "$cc") | $(kib $((ci + cc))) |" >>"$table"
echo "folder: zsync $((zc + zd)) B in $zn requests (tar), casync $((ci + cc)) B in $cn requests" >&2
cat "$table"
