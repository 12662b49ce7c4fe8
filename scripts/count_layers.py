#!/usr/bin/env python3
"""The counts issue 47 judges the code's shape by, and their targets.

- a transport named (`TransportSpec::S3`, `TransportKind::Shm`) outside
  the registry and the transports' own folders (core/src/transport/ (the registry),
  transports/src/; `TransportKind::ALL` and the registry macros' `$kind`
  name none);
- the request module's lines, and string `TAKES` lists;
- functions of 150 lines or more, and the longest;
- files over 800 lines;
- import circles and arrows up the runner's layers (check_import_cycles.py);
- the binary's code lines (not blank, not comments).

    python3 scripts/count_layers.py [--list]
"""

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_import_cycles import block_end, strip_comments, strip_tests  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FN = re.compile(r"\bfn\s+(\w+)[^;{]*\{", re.S)


def rust_files():
    return sorted(p for p in (ROOT / "crates").rglob("*.rs") if "/target/" not in str(p))


def rel(p):
    return str(p.relative_to(ROOT))


def functions(path):
    """(name, lines) of each function of `path`'s code (tests left out)."""
    text = strip_tests(strip_comments(path.read_text()))
    out = []
    for m in FN.finditer(text):
        end = block_end(text, m.end() - 1)
        out.append((m.group(1), text[m.start():end].count("\n") + 1))
    return out


def main():
    listing = "--list" in sys.argv
    files = rust_files()
    outside = []
    for f in files:
        r = rel(f)
        if r.startswith(("crates/core/src/transport/", "crates/transports/src/")) or "/tests/" in r or r.endswith("/tests.rs"):
            continue
        code = strip_tests(strip_comments(f.read_text()))
        # A transport named (not `ALL`, not a registry macro's `$kind`).
        n = len(re.findall(r"\bTransport(?:Spec|Kind)::(?!ALL\b)[A-Z]", code))
        if n:
            outside.append((n, r))
    request = ROOT / "crates/core/src/request"
    request_lines = sum(len(p.read_text().splitlines()) for p in request.rglob("*.rs") if p.name != "tests.rs")
    takes = sum(len(re.findall(r"TAKES:\s*&\[&str\]", f.read_text())) for f in files)
    long_fns = sorted(((n, name, rel(f)) for f in files
                       if "/tests/" not in rel(f) and not rel(f).endswith("/tests.rs")
                       for name, n in functions(f) if n >= 150), reverse=True)
    big_files = sorted(((len(f.read_text().splitlines()), rel(f)) for f in files), reverse=True)
    big_files = [b for b in big_files if b[0] > 800]
    check = subprocess.run([sys.executable, str(ROOT / "scripts/check_import_cycles.py")],
                           capture_output=True, text=True)
    circles = sum("in a circle" in l for l in check.stdout.splitlines())
    ups = sum("a layer above" in l or "in no layer" in l for l in check.stdout.splitlines())
    binary = 0
    for f in (ROOT / "crates/wirebench/src").rglob("*.rs"):
        for line in strip_comments(f.read_text()).splitlines():
            binary += bool(line.strip())
    rows = [
        ("a transport named outside the registry and the transports' folders",
         sum(n for n, _ in outside), "0-3"),
        ("the request module's lines", request_lines, "< 400"),
        ("string TAKES lists", takes, "0"),
        ("functions of 150 lines or more", len(long_fns), "<= 5"),
        ("files over 800 lines", len(big_files), "0"),
        ("import circles", circles, "0"),
        ("arrows up the runner's layers (or modules in none)", ups, "0"),
        ("the binary's code lines", binary, "< 2000"),
    ]
    print("| count | now | target |\n| --- | ---: | --- |")
    for name, n, target in rows:
        print(f"| {name} | {n} | {target} |")
    if listing:
        print("\nTransportSpec::/TransportKind:: by file:")
        for n, r in sorted(outside, reverse=True):
            print(f"  {n:3} {r}")
        print("\nfunctions of 150 lines or more:")
        for n, name, r in long_fns:
            print(f"  {n:4} {name} ({r})")
        print("\nfiles over 800 lines:")
        for n, r in big_files:
            print(f"  {n:5} {r}")


if __name__ == "__main__":
    main()
