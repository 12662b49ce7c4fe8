#!/usr/bin/env python3
"""The hiccup meter's cost (issue 15).

    python3 scripts/bench_hiccup.py [--rounds N] [--duration SECONDS] [--out FILE]

1. The probe thread's CPU: its on-CPU time (schedstat, ns) over a run of a
   msgr echo at depth 1, as a % of one CPU: target <= 1%.
2. The effect on throughput: msgr echo 64 B at depth 64 with the meter and
   with --no-hiccup, interleaved; ops/s with it over ops/s without: target
   >= 0.97 (the rounds' medians).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import WB, emit, machine_line, report, usable_cpus, wirebench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def probe_cpu_pct(results, client, server, secs):
    """Runs `secs` seconds and reads the wb-hiccup thread's on-CPU time
    just before the end: its share of one CPU, in %."""
    cmd = [WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client),
           "--server-cpus", str(server), "--duration", f"{secs}s", "--warmup", "0s"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        tid, t0, cpu0 = None, None, None
        deadline = time.time() + 5
        while tid is None and time.time() < deadline:
            for t in os.listdir(f"/proc/{p.pid}/task"):
                try:
                    if open(f"/proc/{p.pid}/task/{t}/comm").read().strip() == "wb-hiccup":
                        tid = t
                except OSError:
                    pass
            time.sleep(0.05)
        if tid is None:
            sys.exit("no wb-hiccup thread seen")
        def on_cpu():
            return int(open(f"/proc/{p.pid}/task/{tid}/schedstat").read().split()[0])
        t0, cpu0 = time.monotonic(), on_cpu()
        time.sleep(max(secs - 1.5, 1.0))
        t1, cpu1 = time.monotonic(), on_cpu()
    finally:
        p.communicate()
    return 100.0 * (cpu1 - cpu0) / 1e9 / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-hiccup-")
    fig = {k: [] for k in ["cpu", "on", "off"]}
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            fig["cpu"].append(probe_cpu_pct(results, client, server, a.duration))
            # Interleaved: with the meter, then without, each round.
            fig["on"].append(wirebench(results, client, server, a.duration, "--depth", "64")["ops_per_s"])
            fig["off"].append(
                wirebench(results, client, server, a.duration, "--depth", "64", "--no-hiccup")["ops_per_s"])
    finally:
        shutil.rmtree(results, ignore_errors=True)
    header = [
        "# Hiccup meter: its cost",
        "",
        f"`python3 scripts/bench_hiccup.py --rounds {a.rounds} --duration {a.duration}` (release build). "
        + machine_line(client, server),
        "The probe sleeps 1 ms in a loop on the client's CPU; its CPU is its thread's on-CPU time "
        "(schedstat) over a depth-1 run. Throughput: msgr echo 64 B at depth 64, with the meter and "
        "with `--no-hiccup`, interleaved in each round.",
    ]
    labels = {
        "cpu": ("probe thread CPU (% of one CPU)", "{:.2f}"),
        "on": ("ops/s at depth 64, meter on", "{:.0f}"),
        "off": ("ops/s at depth 64, meter off", "{:.0f}"),
    }
    ratios = [
        ("probe CPU, % of a CPU", fig["cpu"], "<= 1.0"),
        ("ops/s with the meter / without", [x / y for x, y in zip(fig["on"], fig["off"])], ">= 0.97"),
    ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
