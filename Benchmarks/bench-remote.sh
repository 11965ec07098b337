#!/usr/bin/env bash
# Remote-pack benchmark (docs/REMOTE.md, "Measured"): a real nginx on loopback serving the ~151 MiB
# benchmark tree packed both ways (signed), and for each format:
#   1. one 4 KiB entry read by `assetpack cat URL`: bytes and requests, from nginx's access log;
#   2. an installed pack updated after one 4 KiB file changed: bytes downloaded, from the log;
#   3. the 64 MiB random entry read by `assetpack cat URL` against `curl` fetching the same
#      byte range, and against `assetpack cat` of the local pack (hyperfine, medians); then the
#      entry read alone (`cat --timing`) against curl's transfer time (`-w %{time_total}`); over
#      http and over https (a second nginx, HTTP/2 offered, a throwaway CA: --ca-file, --cacert);
#   4. the transport alone: 64 MiB fetched by curl, by AssetPack's HTTP client, by URLSession.
# Usage: Benchmarks/bench-remote.sh ASSETPACK_BINARY WORK_DIR   (make bench-remote runs it)
set -euo pipefail
bin=$(realpath "$1")
work=$(mkdir -p "$2" && realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
export ASSETPACK_PASSWORD=bench-only
python3 "$here/make-pack-corpus.py" "$work/tree"
[ -f "$work/publisher.key" ] || "$bin" keygen --out "$work/publisher" >/dev/null
. "$here/nginx-loopback.sh"
start_nginx "$work"
start_nginx_tls "$work"
# Body bytes and request count in the access log since it was emptied.
count() { awk '{n++; b+=$4} END {printf "%d bytes in %d requests", b, n}' "$log"; }

# throughput LABEL FILE [CREDENTIAL ARGS...]: `assetpack cat` of big/random.bin over http and over
# https, against curl fetching the same number of bytes and against `assetpack cat` of the local file.
throughput() {
  local label=$1 file=$2
  shift 2
  throughput_over "$label, http" "$base" "" "" "$file" "$@"
  throughput_over "$label, https" "$tls_base" "--ca-file $ca" "--cacert $ca" "$file" "$@"
}

# throughput_over LABEL BASE ASSETPACK_TLS_ARGS CURL_TLS_ARGS FILE [CREDENTIAL ARGS...]
throughput_over() {
  local label=$1 base=$2 ours=$3 theirs=$4 file=$5
  shift 5
  local name span
  name=$(basename "$file")
  span=$("$bin" list "$file" "$@" --json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    if e["path"] == "big/random.bin": print(e["stored_size"])')
  hyperfine -N --warmup 2 --runs "${BENCH_RUNS:-10}" --export-json "$work/throughput-${label/, /-}.json" \
    -n "assetpack cat URL big/random.bin ($label)" "$bin cat $base/$name big/random.bin $* $ours -o /dev/null" \
    -n "curl the same number of bytes" "curl -s $theirs -r 0-$((span - 1)) -o /dev/null $base/$name" \
    -n "assetpack cat of the local pack (open, KDF, decrypt: the part that is not network)" \
    "$bin cat $file big/random.bin $* -o /dev/null"
  python3 - "$work/throughput-${label/, /-}.json" "$label" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
m = [statistics.median(x["times"]) for x in r]
print("%s, whole processes: assetpack %.1f ms, curl %.1f ms: %.2fx; local cat %.1f ms, so the network adds %.1f ms = %.2fx curl; %.2fx max(local cat, curl)"
      % (sys.argv[2], m[0] * 1e3, m[1] * 1e3, m[0] / m[1], m[2] * 1e3, (m[0] - m[2]) * 1e3, (m[0] - m[2]) / m[1],
         m[0] / max(m[1], m[2])))
EOF
  # The entry read alone (`cat --timing`: lookup to last byte written, after process start and
  # open) against curl's own transfer time (`-w %{time_total}`), interleaved run by run.
  python3 - "$label" "${BENCH_RUNS:-10}" "$bin cat $base/$name big/random.bin $* $ours -o /dev/null --timing" \
    "curl -s $theirs -r 0-$((span - 1)) -o /dev/null -w %{time_total} $base/$name" <<'EOF'
import re, statistics, subprocess, sys
label, runs, cat, curl = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
reads, transfers, size = [], [], 0
for i in range(runs + 2):
    err = subprocess.run(cat, capture_output=True, text=True, check=True).stderr
    out = subprocess.run(curl, capture_output=True, text=True, check=True).stdout
    if i < 2: continue  # warm-up
    m = re.search(r"([0-9]+) bytes in ([0-9.]+) ms", err)
    size = int(m.group(1))
    reads.append(float(m.group(2)) / 1e3)
    transfers.append(float(out))
r, t = statistics.median(reads), statistics.median(transfers)
print("%s, the entry read (cat --timing) against curl's transfer (time_total): %.1f ms vs %.1f ms: %.2fx (%.0f vs %.0f MiB/s)"
      % (label, r * 1e3, t * 1e3, r / t, size / r / 2**20, size / t / 2**20))
EOF
}

for fmt in zip container; do
  ext=$([ "$fmt" = zip ] && echo zip || echo apack)
  pack="$work/www/bench.$ext"
  "$bin" pack "$work/tree" --format "$fmt" --output "$pack" --sign-key "$work/publisher.key" --quiet
  size=$(stat -c %s "$pack")
  echo "== $fmt: $pack, $size bytes"

  : >"$log"
  "$bin" cat "$base/bench.$ext" small/0500.bin --trust "$work/publisher.pub" -o /dev/null
  echo "one 4 KiB entry (open + read, --trust): $(count) of $size ($(awk -v s="$size" '{b+=$4} END {printf "%.3f%%", 100*b/s}' "$log"))"

  rm -rf "$work/home-$fmt"
  "$bin" install "$base/bench.$ext" --into "$work/home-$fmt" --trust "$work/publisher.pub" --quiet >/dev/null
  python3 -c "import os; open('$work/tree/small/0500.bin','wb').write(os.urandom(4096))"
  "$bin" pack "$work/tree" --format "$fmt" --output "$pack" --sign-key "$work/publisher.key" --quiet
  touch -d "+10 seconds" "$pack"  # nginx's ETag is mtime (seconds) and size
  : >"$log"
  "$bin" install "$base/bench.$ext" --into "$work/home-$fmt" --trust "$work/publisher.pub"
  echo "update after one 4 KiB file changed: $(count) of $size ($(awk -v s="$size" '{b+=$4} END {printf "%.3f%%", 100*b/s}' "$log"))"
  cmp "$pack" "$work/home-$fmt/bench.$ext" && echo "installed pack equals the remote one"

  throughput "$fmt" "$pack"
done

# The transport alone: the same 64 MiB of the pack fetched and discarded by curl, by AssetPack's
# HTTP client (libcurl), and by a bare Foundation URLSession (docs/REMOTE.md, "Transport").
transport="$(dirname "$bin")/TransportBench"
if [ -x "$transport" ]; then
  n=$((64 << 20))
  hyperfine -N --warmup 2 --runs "${BENCH_RUNS:-10}" --export-json "$work/transport.json" \
    -n "curl" "curl -s -r 0-$((n - 1)) -o /dev/null $base/bench.apack" \
    -n "HTTPRangeClient (libcurl)" "$transport $base/bench.apack $n client" \
    -n "URLSession" "$transport $base/bench.apack $n urlsession" >/dev/null
  python3 - "$work/transport.json" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
m = {x["command"]: statistics.median(x["times"]) for x in r}
c = m["curl"]
print("transport, 64 MiB over loopback (whole processes, medians): " +
      ", ".join("%s %.1f ms = %.2fx" % (k, v * 1e3, v / c) for k, v in m.items()))
EOF
fi

# The same read with a raw-key container: no KDF at open, so the comparison is download,
# decryption and verification against the download alone.
[ -f "$work/raw.key" ] || head -c 32 /dev/urandom >"$work/raw.key"  # kept: the pack below is re-packed with it
"$bin" pack "$work/tree" --format container --output "$work/www/bench-key.apack" --key-file "$work/raw.key" --quiet
throughput "container-raw-key" "$work/www/bench-key.apack" --key-file "$work/raw.key"
