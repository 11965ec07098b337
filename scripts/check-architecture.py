#!/usr/bin/env python3
"""Checks docs/ARCHITECTURE.md and the sources against Package.swift (run by `make lint`).

- Every module a file under Sources/<Target>/ imports is a direct dependency of <Target>
  (SwiftPM lets a target import its dependencies' dependencies; the architecture does not).
- Each C module (C*) has exactly one importing target, and it imports it `internal`.
- No decision by format outside the formats' own modules (the seam): no format switch, no
  comparison with a format literal, no format literal or list, no format-type downcast and no
  format reader or writer made by name. Core (which declares `PackFormat`) and the registry
  (Sources/AssetPack/AssetPack.swift: the drivers' list and the default format) are the exceptions.
- An install directory's files (`.assetpack.lock`, `.NAME.install`, `.NAME.download`) are named
  in one place, the install transaction (Sources/AssetPack/InstallTransaction.swift).
- Every Swift target of Sources/ has a row in ARCHITECTURE.md's module table, and the row's
  "May import" column names exactly its dependencies.
"""
import json, os, re, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
package = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True,
                                    capture_output=True, text=True).stdout)
targets = {}
for t in package["targets"]:
    deps = set()
    for d in t.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in d:
                deps.add(d[kind][0])
    targets[t["name"]] = (t.get("type"), t.get("path"), deps)

problems = []
owned = {n for n, (kind, _, _) in targets.items()}


def is_c_module(name):
    """A system library's module map, or a C target (no Swift in its folder: CLibcurl's loader)."""
    kind, path, _ = targets[name]
    if kind == "system-target":
        return True
    folder = os.path.join(root, path or os.path.join("Sources", name))
    return kind == "regular" and os.path.isdir(folder) and not any(
        f.endswith(".swift") for _, _, files in os.walk(folder) for f in files)


c_importers = {}
import_re = re.compile(r"^\s*(?:@_exported\s+|internal\s+|package\s+|public\s+)?import\s+(\w+)", re.M)
for name, (kind, path, deps) in targets.items():
    if kind not in ("regular", "executable") or path is not None and not path.startswith("Sources"):
        continue
    folder = os.path.join(root, path or os.path.join("Sources", name))
    for dirpath, _, files in os.walk(folder):
        for f in files:
            if not f.endswith(".swift"):
                continue
            text = open(os.path.join(dirpath, f), encoding="utf-8").read()
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            for m in import_re.finditer(text):
                module = m.group(1)
                if module in owned and module != name and module not in deps:
                    problems.append(f"{rel}: imports {module}, which is not a dependency of {name} in Package.swift")
                if module in owned and is_c_module(module):
                    c_importers.setdefault(module, set()).add(name)
                    if not m.group(0).lstrip().startswith("internal import"):
                        problems.append(f"{rel}: imports the C module {module} without `internal`")
            if name not in ("AssetPackZip", "AssetPackContainer", "AssetPackCore") and rel != os.path.join(
                    "Sources", "AssetPack", "AssetPack.swift"):
                code = re.sub(r"//[^\n]*", "", text)  # comments may name formats
                for pattern in (r"switch\s+[\w.]*format\b", r"case\s+\.(zip|container)\s*:",
                                r"(as\?|as!|is)\s+(ZipPackReader|ContainerPackReader)\b",
                                r"(==|!=)\s*\.(zip|container)\b", r"\.(zip|container)\s*(==|!=)",
                                r"PackFormat\.(zip|container)\b",
                                r"\b(ZipPackReader|ContainerPackReader|ZipPackWriter|ContainerPackWriter)\s*\("):
                    for m in re.finditer(pattern, code):
                        line = code[:m.start()].count("\n") + 1
                        problems.append(f"{rel}:{line}: a decision by format outside the format modules ({m.group(0)})")
            if rel != os.path.join("Sources", "AssetPack", "InstallTransaction.swift"):
                code = re.sub(r"//[^\n]*", "", text)
                for m in re.finditer(r'"\.assetpack\.lock"|\.install"|\.download(\.json)?"', code):
                    line = code[:m.start()].count("\n") + 1
                    problems.append(f"{rel}:{line}: an install directory's file named outside InstallTransaction ({m.group(0)})")
for module, importers in c_importers.items():
    if len(importers) > 1:
        problems.append(f"{module} is imported by {sorted(importers)}; a C module has one importer")

doc = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
rows = {}
for line in doc.splitlines():
    m = re.match(r"^\| `([\w-]+)` \| .* \| (.*) \|$", line)
    if m:
        rows[m.group(1)] = m.group(2)
short = {"AssetPackCore": "Core", "AssetPackCrypto": "Crypto", "AssetPackFormat": "Format", "AssetPackZip": "Zip",
         "AssetPackContainer": "Container", "AssetPackHTTP": "HTTP", "AssetPackRemote": "Remote",
         "AssetPackPerf": "Perf", "AssetPack": "AssetPack", "ArgumentParser": "ArgumentParser"}
for name, (kind, path, deps) in targets.items():
    if kind not in ("regular", "executable") or not (path is None or path.startswith("Sources")):
        continue
    if is_c_module(name):
        # The C modules share one row, which names each of them.
        if not any(f"`{name}`" in key for key in re.findall(r"^\| (`C\w+`(?:, `C\w+`)*) \|", doc, re.M)):
            problems.append(f"docs/ARCHITECTURE.md: the C modules' row does not name {name}")
        continue
    if name not in rows:
        problems.append(f"docs/ARCHITECTURE.md: no row for the module {name}")
        continue
    listed = set(re.findall(r"`?(\w+)`?", re.sub(r"\([^)]*\)", "", rows[name]))) - {"Foundation"}
    expected = {short.get(d, d) for d in deps}
    if listed != expected:
        problems.append(f"docs/ARCHITECTURE.md: {name} may import {sorted(listed)}; Package.swift says {sorted(expected)}")

for p in problems:
    print("architecture:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
