#!/usr/bin/env python3
"""Fails when modules of a crate import each other in a circle.

For every crate under crates/, each file is a module (lib.rs and main.rs:
the crate root; x/mod.rs: x). A module depends on another when it names
it in code: `use crate::a::b`, `crate::a::b::f()`, `super::x`, `self::x`
(test modules are left out, each to its closing brace, wherever it is in
the file: they may use what they like; what follows one is code like any
other). A module's own children and ancestors named through `super` count
like any other module. `mod x;` declarations are not uses.

Also fails when the crates depend on each other against the design's
direction (core <- load <- transports <- runner <- binary; history on core
only; report on core, trace and history only), and when a module of a
layered crate (the runner) imports one of a layer above its own, or is in
no layer (a new module is placed where it belongs).

Usage: python3 scripts/check_import_cycles.py [ROOT]
"""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)

# What each workspace crate may depend on (among the workspace's crates).
ALLOWED = {
    "wirebench-trace": set(),
    "wirebench-core": set(),
    "wirebench-history": {"wirebench-core"},
    "wirebench-load": {"wirebench-core"},
    "wirebench-transports": {"wirebench-core", "wirebench-load", "wirebench-trace"},
    "wirebench-report": {"wirebench-core", "wirebench-trace", "wirebench-history"},
    "wirebench-runner": {
        "wirebench-core",
        "wirebench-load",
        "wirebench-transports",
        "wirebench-trace",
        "wirebench-history",
    },
    "wirebench": {
        "wirebench-core",
        "wirebench-runner",
        "wirebench-report",
        "wirebench-history",
    },
}


# The runner's modules, lowest layer first: a module may use its own layer
# and those below, never one above (the agent, which runs parts over the
# whole pipeline, sits above the pipeline it uses).
LAYERS = {
    "wirebench-runner": [
        ["process"],
        ["abort", "auth", "capture", "events", "outcome", "serve", "tree", "upload", "worker"],
        ["target"],
        ["observed"],
        ["exec"],
        ["driver"],
        ["session"],
        ["record"],
        ["command", "ipc_compare", "metrics", "sweep"],
        ["run"],
        ["agent", "flame"],
        ["search"],
    ],
}


def module_of(src: Path, f: Path) -> tuple:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("lib", "main"):
        parts = parts[:-1]
    elif parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


TEST_MOD = re.compile(r"^[ \t]*#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))?\s+)?mod \w+\s*\{", re.M)


def block_end(text: str, open_at: int) -> int:
    """The index just past the brace that closes the one at `open_at`,
    skipping strings, raw strings and character literals (comments are
    gone already)."""
    depth, i, n = 0, open_at, len(text)
    while i < n:
        end = literal_end(text, i)
        if end > i:
            i = end
            continue
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def strip_tests(text: str) -> str:
    """`text` without its `#[cfg(test)] mod x { ... }` blocks."""
    out, at = [], 0
    for m in TEST_MOD.finditer(text):
        if m.start() < at:
            continue
        out.append(text[at : m.start()])
        at = block_end(text, m.end() - 1)
    out.append(text[at:])
    return "".join(out)


RAW = re.compile(r'r(#*)"')
CHAR = re.compile(r"'(\\.[^']*|[^\\'])'")


def literal_end(text: str, i: int) -> int:
    """If a string, raw string or character literal starts at `i`, the
    index just past it; else `i`."""
    c = text[i]
    word_before = i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
    if c in "rb" and not word_before:
        j = i + 1 if c == "r" else (i + 2 if text.startswith("br", i) else i)
        m = RAW.match(text, j - 1) if j > i else None
        if m and text[j - 1] == "r":
            hashes = len(m.group(1))
            end = text.find('"' + "#" * hashes, m.end())
            return len(text) if end < 0 else end + 1 + hashes
    if c == '"':
        j = i + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return j + 1
    if c == "'":
        m = CHAR.match(text, i)
        if m:
            return m.end()
    return i


def strip_comments(text: str) -> str:
    """`text` without its comments (those inside strings are text)."""
    out, i, n = [], 0, len(text)
    while i < n:
        end = literal_end(text, i)
        if end > i:
            out.append(text[i:end])
            i = end
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)((?:::\w+)*)::\{([^;]*)\};", re.S)


def resolve(me: tuple, head: str, rest: list, modules: set) -> tuple | None:
    if head == "crate":
        base: tuple = ()
    elif head == "self":
        base = me
    else:  # super (possibly several)
        base = me[:-1]
        while rest and rest[0] == "super":
            base = base[:-1]
            rest = rest[1:]
    path = base
    best = base
    for p in rest:
        path = path + (p,)
        if path in modules:
            best = path
        else:
            break
    return best


def is_test_file(f: Path) -> bool:
    """Whether `f` is a test module its parent declares under
    `#[cfg(test)]` (`mod tests;` with its body in `tests.rs`)."""
    if f.name != "tests.rs":
        return False
    d = f.parent
    for parent in (d / "mod.rs", d / "lib.rs", d.parent / f"{d.name}.rs"):
        if parent.exists() and re.search(r"#\[cfg\(test\)\]\s*(pub(\(crate\))? )?mod tests;", parent.read_text()):
            return True
    return False


def borrowed(src: Path) -> dict:
    """Files a crate compiles from another crate's folder, by module: core's
    `transport` loads transports/src/specs.rs by path, which makes each
    transport folder's `spec.rs` core's `transport::<t>`."""
    if src.parent.name != "core":
        return {}
    theirs = src.parent.parent / "transports" / "src"
    found = {("transport", "specs"): theirs / "specs.rs"} if (theirs / "specs.rs").exists() else {}
    for f in sorted(theirs.glob("*/spec.rs")):
        found[("transport", f.parent.name)] = f
    return found


def lent(src: Path, f: Path) -> bool:
    """Whether `f` is one of the files another crate compiles (see `borrowed`)."""
    return src.parent.name == "transports" and (
        f == src / "specs.rs" or (f.name == "spec.rs" and f.parent.parent == src)
    )


def crate_edges(src: Path) -> dict:
    """Each module of the crate at `src`, and the modules it uses."""
    files = [f for f in src.rglob("*.rs") if not is_test_file(f) and not lent(src, f)]
    modules = {module_of(src, f): f for f in files}
    modules.update(borrowed(src))
    edges: dict = {m: set() for m in modules}
    for m, f in modules.items():
        text = strip_tests(strip_comments(f.read_text()))
        refs = []
        for g in USE_GROUP.finditer(text):
            head, pre, inner = g.group(1), g.group(2), g.group(3)
            prefix = [p for p in pre.split("::") if p]
            for item in re.split(r",", inner):
                item = item.strip().split(" as ")[0].strip()
                parts = [p for p in re.split(r"::|\{|\}", item) if p.strip()]
                refs.append((head, prefix + parts[:2]))
        for p in PATH.finditer(text):
            refs.append((p.group(1), [x for x in p.group(2).split("::") if x]))
        # A child module named without `self::` (`engine::run()` in lib.rs).
        for c in {c[-1] for c in modules if len(c) == len(m) + 1 and c[: len(m)] == m}:
            if re.search(rf"(?<![:\w]){re.escape(c)}::", text):
                refs.append(("self", [c]))
        aliases = {}
        for head, rest in refs:
            target = resolve(m, head, rest, set(modules))
            if target is None:
                continue
            if target != m:
                edges[m].add(target)
            if rest and target and target[-1] == rest[-1]:
                aliases[rest[-1]] = target
        # `use crate::ui;` then `ui::summary::print()`: the alias's modules.
        for alias, target in aliases.items():
            for p in re.finditer(rf"(?<![:\w]){re.escape(alias)}((?:::\w+)+)", text):
                t = resolve(target, "self", [x for x in p.group(1).split("::") if x], set(modules))
                if t is not None and t != m:
                    edges[m].add(t)
    return edges


def arrows_up(src: Path, layers: list) -> list:
    """(module, module it uses, why) for each use of a higher layer, and
    each top-level module in no layer."""
    level = {name: i for i, group in enumerate(layers) for name in group}
    edges = crate_edges(src)
    bad = []
    tops = sorted({m[0] for m in edges if m})
    for t in tops:
        if t not in level:
            bad.append((t, None, "in no layer of scripts/check_import_cycles.py's LAYERS"))
    for m, targets in edges.items():
        if not m or m[0] not in level:
            continue
        for t in targets:
            if t and t[0] in level and level[t[0]] > level[m[0]]:
                bad.append((name(m), name(t), "a layer above"))
    return sorted(set(bad), key=str)


def crate_cycles(src: Path) -> list:
    edges = crate_edges(src)
    # Find cycles (Tarjan's strongly connected components).
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            strong(v)
    return comps


def name(m: tuple) -> str:
    return "::".join(("crate",) + m)


def main() -> int:
    bad = 0
    for manifest in sorted((ROOT / "crates").glob("*/Cargo.toml")):
        toml = tomllib.loads(manifest.read_text())
        crate = toml["package"]["name"]
        deps = {d for d in toml.get("dependencies", {}) if d.startswith("wirebench")}
        extra = deps - ALLOWED.get(crate, set())
        if extra:
            print(f"{crate} depends on {', '.join(sorted(extra))}: against the design's direction")
            bad += 1
        for comp in crate_cycles(manifest.parent / "src"):
            print(f"{crate}: modules import each other in a circle: {', '.join(sorted(name(m) for m in comp))}")
            bad += 1
        for m, t, why in arrows_up(manifest.parent / "src", LAYERS.get(crate, [])) if crate in LAYERS else []:
            print(f"{crate}: {m} uses {t}: {why}" if t else f"{crate}: crate::{m}: {why}")
            bad += 1
    if bad == 0:
        print("no import circles; crate dependencies point one way; no layer uses one above it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
