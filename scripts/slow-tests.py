#!/usr/bin/env python3
"""Print the `swift test --skip` pattern for every suite and test tagged `.slow`.

`make test` (the fast tier) leaves the tests tagged `.tags(.slow)` to `make test-full`. Swift 6.3's
`swift test` cannot skip by tag (`--skip tag:slow` arrives with Swift Testing's ST-0025), so this
script reads the tag off the sources and prints one regular expression over test IDs
(`Target.Suite/function(labels:)`):

    Target\\.(Suite|Suite)(/|$)|Target\\.Suite/function\\(|...

A tag it cannot place (no suite or function after the attribute) is an error, so a tagged test
can never run in the fast tier by accident. `--list` prints one `Target.Suite[/function]` per line;
`--shard K/N` keeps every N-th item from the K-th.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "Tests"
SLOW = re.compile(r"\.tags\([^)]*\.slow\b")
TYPE = re.compile(r"^(?:@Suite\b.*?\s)?(?:(?:public|final|private|fileprivate|internal)\s+)*(?:struct|class|enum|actor|extension)\s+(\w+)", re.M)
DECLARATION = {"@Suite": re.compile(r"\s*(?:(?:public|final|private|fileprivate|internal)\s+)*(?:struct|class|enum|actor)\s+(\w+)"),
               "@Test": re.compile(r"\s*(?:(?:public|private|fileprivate|internal|static|mutating|nonisolated)\s+)*func\s+(\w+)")}


def code_only(text: str) -> str:
    """`text` with comments and string literals (plain, raw, multi-line) blanked out, newlines kept, so
    an attribute quoted in a string or a comment is not read as one."""
    out, i, n = list(text), 0, len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif text[i] == "#" or text[i] == '"':
            hashes = len(text[i:]) - len(text[i:].lstrip("#"))
            quote = i + hashes
            if quote >= n or text[quote] != '"':
                i += 1
                continue
            delimiter = '"""' if text.startswith('"""', quote) else '"'
            close, k = delimiter + "#" * hashes, quote + len(delimiter)
            while k < n and not text.startswith(close, k):
                k += 2 if text[k] == "\\" and hashes == 0 else 1
            end = k + len(close)
            blank(i, end)
            i = end
        else:
            i += 1
    return "".join(out)


def balanced(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at `start` (in code_only text)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parentheses")


def slow_items(path: pathlib.Path) -> list[str]:
    text = code_only(path.read_text(encoding="utf-8"))
    target = path.relative_to(TESTS).parts[0]
    items = []
    for match in re.finditer(r"@(Suite|Test)\b", text):
        kind, end = "@" + match.group(1), match.end()
        arguments = ""
        if end < len(text) and text[end] == "(":
            close = balanced(text, end)
            arguments, end = text[end:close], close
        if not SLOW.search(arguments):
            continue
        line = text.count("\n", 0, match.start()) + 1
        declared = DECLARATION[kind].match(text, end)
        if not declared:
            sys.exit(f"{path}:{line}: .slow on a {kind} that declares no {'type' if kind == '@Suite' else 'function'}")
        if kind == "@Suite":
            items.append(f"{target}.{declared.group(1)}")
        else:
            enclosing = [t for t in TYPE.finditer(text) if t.start() < match.start()]
            if not enclosing:
                sys.exit(f"{path}:{line}: .slow on a test outside any suite")
            items.append(f"{target}.{enclosing[-1].group(1)}/{declared.group(1)}")
    return items


def main() -> None:
    items = sorted({item for path in sorted(TESTS.rglob("*.swift")) for item in slow_items(path)})
    arguments = sys.argv[1:]
    if "--shard" in arguments:
        # --shard K/N: every N-th item from the K-th (1-based), so `make test-full` can run the slow
        # tier as N test processes at once (most of it waits on servers and child processes).
        k, n = (int(x) for x in arguments[arguments.index("--shard") + 1].split("/"))
        if not 1 <= k <= n:
            sys.exit(f"--shard {k}/{n}: K must be from 1 to N")
        items = items[k - 1 :: n]
    if "--list" in arguments:
        print("\n".join(items))
        return
    suites = [i for i in items if "/" not in i]
    tests = [i for i in items if "/" in i and i.split("/")[0] not in suites]
    alternatives = [re.escape(s) + "(/|$)" for s in suites] + [re.escape(t) + r"\(" for t in tests]
    print("|".join(alternatives))


if __name__ == "__main__":
    main()
