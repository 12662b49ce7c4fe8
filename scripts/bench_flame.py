#!/usr/bin/env python3
"""What recording stacks costs the server (issue 21): `flame` on CPU with
frame pointers and with DWARF, and off CPU, against a plain run.

    python3 scripts/bench_flame.py [--rounds N] [--duration SECONDS] [--out FILE]

Each round, interleaved (the order rotating round by round), the embedded
reactor server at depth 1, client and server pinned apart:
1. plain: `wirebench run`;
2. fp: `wirebench flame` (cpu-clock at 999 Hz, `--call-graph fp`);
3. dwarf: `wirebench flame --call-graph dwarf` (16 KiB of stack a sample);
4. off-CPU: `wirebench flame --off-cpu` (every switch of the server's
   threads with its stack, every wake-up, their CPU time).

Reported: ops/s of each (the server's loss while perf records), and the
wall time of the whole command less the run's (perf starting, stopping, and
`perf script` plus folding afterwards). No target: these figures document
the cost (docs/measurement.md); ratios are against the plain run.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import WB, emit, machine_line, report, usable_cpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one(results, client, server, secs, kind):
    """ops/s and the command's wall time beyond the run's duration."""
    common = ["--results", results, "--format", "json", "--client-cpus", str(client),
              "--server-cpus", str(server), "--duration", f"{secs}s", "--warmup", "1s",
              "--depth", "1"]
    cmd = {
        "plain": [WB, "run", *common],
        "fp": [WB, "flame", *common],
        "dwarf": [WB, "flame", "--call-graph", "dwarf", *common],
        "off": [WB, "flame", "--off-cpu", *common],
    }[kind]
    began = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - began
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    if kind == "plain":
        s = json.loads(p.stdout)["summary"]
    else:
        line = next(l for l in p.stdout.splitlines() if "run result: " in l)
        path = line.rsplit("run result: ", 1)[1].strip()
        s = json.load(open(path))["summary"]
    return s["ops_per_s"], wall - secs - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--out")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    kinds = ["plain", "fp", "dwarf", "off"]
    fig = {f"{k}_{m}": [] for k in kinds for m in ["ops", "extra"]}
    results = tempfile.mkdtemp(prefix="wb-bench-flame-")
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
            for k in order:
                ops, extra = one(results, client, server, a.duration, k)
                fig[f"{k}_ops"].append(ops)
                fig[f"{k}_extra"].append(extra)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    header = [
        "# flame: what recording stacks costs",
        "",
        f"`python3 scripts/bench_flame.py --rounds {a.rounds} --duration {a.duration}` (release build). "
        + machine_line(client, server),
        "The embedded reactor server, depth 1, 1 s of warm-up; the four commands interleaved, "
        "their order rotating round by round. 'Extra time' is the command's wall time less the "
        "run's (warm-up + duration): perf starting and stopping, `perf script`, folding.",
    ]
    labels = {}
    for k, name in [("plain", "run"), ("fp", "flame (fp)"), ("dwarf", "flame --call-graph dwarf"),
                    ("off", "flame --off-cpu")]:
        labels[f"{k}_ops"] = (f"ops/s, {name}", "{:.0f}")
        labels[f"{k}_extra"] = (f"extra time (s), {name}", "{:.1f}")
    ratios = [
        (f"ops/s {k} / run", [x / p for x, p in zip(fig[f"{k}_ops"], fig["plain_ops"])], "")
        for k in ["fp", "dwarf", "off"]
    ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
