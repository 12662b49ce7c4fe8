#!/usr/bin/env python3
"""Tracer benchmark of issue 9: what recording events costs.

    python3 scripts/bench_trace.py [--rounds N] [--duration SECONDS] [--out FILE]

1. The cost of one recorded event against one rdtsc read, in one process
   (crates/trace/examples/trace_cost.rs): target <= 2x.
2. A msgr echo run (64 B, depth 1 and depth 32) with and without --trace at
   full sampling (every request traced on the client and the server),
   interleaved: the traced run's ops/s against the untraced one's: target
   overhead <= 5%.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchlib import emit, machine_line, report, usable_cpus, wirebench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COST = os.path.join(ROOT, "target", "release", "examples", "trace_cost")




def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench-trace", "--example", "trace_cost"],
                   cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-trace-")
    fig = {k: [] for k in ["rdtsc_ns", "event_ns", "d1", "d1t", "d32", "d32t"]}
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            c = json.loads(subprocess.run([COST], capture_output=True, text=True, check=True).stdout)
            fig["rdtsc_ns"].append(c["rdtsc_ns"])
            fig["event_ns"].append(c["event_ns"])
            for depth in ["1", "32"]:
                fig[f"d{depth}"].append(wirebench(results, client, server, a.duration, "--depth", depth)["ops_per_s"])
                fig[f"d{depth}t"].append(
                    wirebench(results, client, server, a.duration, "--depth", depth, "--trace")["ops_per_s"])
    finally:
        shutil.rmtree(results, ignore_errors=True)
    header = [machine_line(client, server),
              f"{a.rounds} interleaved rounds of {a.duration} s per run (after 1 s of warm-up); median [min .. max]."]
    labels = {
        "rdtsc_ns": ("one rdtsc read (ns)", "{:.2f}"),
        "event_ns": ("one recorded event (ns)", "{:.2f}"),
        "d1": ("msgr echo 64 B depth 1 (ops/s)", "{:,.0f}"),
        "d1t": ("same, --trace, every request (ops/s)", "{:,.0f}"),
        "d32": ("msgr echo 64 B depth 32 (ops/s)", "{:,.0f}"),
        "d32t": ("same, --trace, every request (ops/s)", "{:,.0f}"),
    }
    per = lambda x, y: [p / q for p, q in zip(fig[x], fig[y])]
    ratios = [
        ("event / rdtsc (per round)", per("event_ns", "rdtsc_ns"), "<= 2"),
        ("traced / untraced ops/s, depth 1 (per round)", per("d1t", "d1"), ">= 0.95"),
        ("traced / untraced ops/s, depth 32 (per round)", per("d32t", "d32"), ">= 0.95"),
    ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
