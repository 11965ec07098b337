#!/usr/bin/env bash
# Seed corpora for the fuzz targets: small packs of every kind, password "fuzz", key 32 × 0x07.
set -euo pipefail
out=$1 bin=$2
src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
mkdir -p "$src/d/e" "$out/FuzzZip" "$out/FuzzZipStructure" "$out/FuzzContainer" "$out/FuzzContainerIndex"
printf 'hello' > "$src/a.txt"; printf 'nineteen bytes here' > "$src/d/n.txt"
head -c 3000 /dev/zero | tr '\0' 'x' > "$src/d/e/text.json"; head -c 700 /dev/urandom > "$src/r.bin"
export ASSETPACK_PASSWORD=fuzz
for enc in aes256 zipcrypto none; do
  for comp in store deflate; do "$bin" pack "$src" -o "$out/FuzzZip/$enc-$comp.zip" --encryption $enc --compression $comp >/dev/null; done
done
cp "$out"/FuzzZip/*.zip "$out/FuzzZipStructure/"
head -c 32 /dev/zero | tr '\0' '\007' > "$src.key"
"$bin" pack "$src" -o "$out/FuzzContainer/key.apack" --format container --key-file "$src.key" --chunk-kib 4 >/dev/null
# A second generation appended to a copy (version 6: both header slots, chunks out of order).
cp "$out/FuzzContainer/key.apack" "$out/FuzzContainer/key-appended.apack"
printf 'changed' > "$src/a.txt"; head -c 700 /dev/urandom >> "$src/r.bin"
"$bin" pack "$src" -o "$out/FuzzContainer/key-appended.apack" --format container --key-file "$src.key" --chunk-kib 4 >/dev/null
cp "$out/FuzzContainer/key.apack" "$out/FuzzContainer/key-appended.apack" "$out/FuzzContainerIndex/"
rm -f "$src.key"
