#!/usr/bin/env bash
# make bench-portable: the same packs read by ReadBench built in the default configuration and in
# the portable one (zlib and swift-crypto only), alternately, three rounds (docs/PERFORMANCE.md,
# "The portable configuration"). Usage: bench-portable.sh DEFAULT_BIN PORTABLE_BIN DEFAULT_CLI WORK_DIR
set -euo pipefail
default_bin=$1 portable_bin=$2 cli=$3 work=$4
mkdir -p "$work/src/small"
if [ ! -e "$work/pack.zip" ]; then
  python3 - "$work/src" <<'PY'
import os, random, sys
root = sys.argv[1]
r = random.Random(1)
open(f"{root}/big.bin", "wb").write(r.randbytes(64 << 20))
line = b"The quick brown fox jumps over the lazy dog, again and again. 0123456789\n"
open(f"{root}/text64.txt", "wb").write((line * ((64 << 20) // len(line) + 1))[: 64 << 20])
for i in range(200):
    open(f"{root}/small/{i:03d}.json", "wb").write(r.randbytes(4096))
PY
  head -c 32 /dev/urandom > "$work/key.bin"
  "$cli" pack "$work/src" -o "$work/deflate.apack" --format container --codec deflate --key-file "$work/key.bin"
  ASSETPACK_PASSWORD="bench password" "$cli" pack "$work/src" -o "$work/pack.zip" --format zip
fi
for round in 1 2 3; do
  for config in default portable; do
    bin=$default_bin; [ "$config" = portable ] && bin=$portable_bin
    echo "== round $round, $config"
    ASSETPACK_KEY_FILE="$work/key.bin" "$bin" "$work/deflate.apack" 15 big.bin text64.txt small/007.json
    ASSETPACK_PASSWORD="bench password" "$bin" "$work/pack.zip" 15 big.bin text64.txt small/007.json
  done
done
