#!/usr/bin/env python3
"""Bytes of packs by category, as make bench-pack prints them: whole file, the compressible text
entries (text, JSON, Lua, cfg, XML and the like, by extension), media (the extensions the packer
stores by name) and everything else, each with its ratio to a reference pack (7-Zip -mx5).

usage: pack-bytes.py REFERENCE-LABEL LABEL=PACK [LABEL=PACK ...]
A PACK ending in .zip is read with Python's zipfile (the central directory: sizes need no
password); any other PACK is a file holding `assetpack list --json` of it, with the pack's
own path after a colon: LABEL=LISTING.json:PACK. Sizes per entry are the stored bytes (for
WinZip AES entries, salt, verifier and MAC included, for both tools alike)."""
import json
import os
import sys
import zipfile

TEXT = {"txt", "json", "lua", "cfg", "xml", "html", "htm", "css", "js", "md", "map", "fai", "csv", "yaml",
        "yml", "ini", "conf", "tmpl", "svg", "glsl", "shader", "ruleset", "spec", "tilespec", "serv", "po",
        "lst", "tsv", "toml", "mtl", "obj"}
# CompressionPolicy.compressedExtensions (Sources/AssetPackCore/SourceTree.swift).
MEDIA = {"jpg", "jpeg", "png", "webp", "gif", "heic", "heif", "avif", "jxl", "mp3", "ogg", "oga", "opus", "m4a",
         "aac", "flac", "mp4", "m4v", "mov", "webm", "mkv", "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar",
         "br", "lz4", "ktx2", "basis", "astc", "pvr", "woff", "woff2"}


def category(path):
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return "text" if ext in TEXT else "media" if ext in MEDIA else "other"


def entries(spec):
    if spec.endswith(".zip"):
        with zipfile.ZipFile(spec) as z:
            return spec, [(i.filename, i.file_size, i.compress_size) for i in z.infolist() if not i.is_dir()]
    listing, pack = spec.split(":", 1)
    with open(listing) as f:
        doc = json.load(f)
    return pack, [(e["path"], e["size"], e["stored_size"]) for e in doc["entries"]]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    reference = sys.argv[1]
    rows = []
    for arg in sys.argv[2:]:
        label, spec = arg.split("=", 1)
        pack, listed = entries(spec)
        sums = {"text": [0, 0, 0], "media": [0, 0, 0], "other": [0, 0, 0]}
        for path, size, stored in listed:
            s = sums[category(path)]
            s[0] += 1
            s[1] += size
            s[2] += stored
        rows.append((label, os.path.getsize(pack), sums))
    ref = next((r for r in rows if r[0] == reference), None)
    if ref is None:
        sys.exit("pack-bytes.py: no pack labelled %r" % reference)

    def ratio(a, b):
        return "%.3f" % (a / b) if b else "-"

    t = ref[2]["text"]
    print("text entries: %d, %d bytes; media: %d, %d bytes; other: %d, %d bytes (uncompressed)"
          % (t[0], t[1], ref[2]["media"][0], ref[2]["media"][1], ref[2]["other"][0], ref[2]["other"][1]))
    print("| pack | whole pack, bytes | × %s | text entries, bytes | × %s | media, bytes | other, bytes |"
          % (reference, reference))
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, whole, sums in rows:
        print("| %s | %d | %s | %d | %s | %d | %d |" % (
            label, whole, ratio(whole, ref[1]), sums["text"][2], ratio(sums["text"][2], ref[2]["text"][2]),
            sums["media"][2], sums["other"][2]))


main()
