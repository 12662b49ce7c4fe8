#!/usr/bin/env python3
"""The hiccup meter's cost (issue 15).

    python3 scripts/bench_hiccup.py [--rounds N] [--duration SECONDS] [--out FILE]

1. The probe thread's CPU: its on-CPU time (schedstat, ns) over a run of a
   msgr echo at depth 1, as a % of one CPU: target <= 1%.
2. The effect on what a run measures: ops/s with the meter over ops/s with
   --no-hiccup, interleaved, for runs whose client sleeps in different
   ways: msgr echo 64 B at depth 1, over 8 connections, and at depth 64
   (the embedded reactor server), and HTTP/1.1 GETs of 1 KiB from nginx
   over 8 connections (when nginx is installed). Target: the rounds'
   median within 0.97 .. 1.03 (issue 15 asked >= 0.97 at depth 64; a meter
   that speeds a run up changes its answer as much as one that slows it).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import bench_protocols
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


CASES = [
    ("d1", "msgr echo, depth 1", ["--depth", "1"]),
    ("c8", "msgr echo, 8 connections", ["--conns-per-client", "8"]),
    ("d64", "msgr echo, depth 64", ["--depth", "64"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-hiccup-")
    cases = list(CASES)
    fig = {"cpu": []}
    ng = None
    try:
        if shutil.which("nginx"):
            ng = bench_protocols.Nginx(server)
            cases.append(("h1", "HTTP/1.1 GET 1 KiB from nginx, 8 connections", None))
        for key, _, _ in cases:
            fig[f"{key}_on"], fig[f"{key}_off"] = [], []
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            fig["cpu"].append(probe_cpu_pct(results, client, server, a.duration))
            # Interleaved, each case each round; which side goes first
            # alternates from round to round.
            sides = [("on", []), ("off", ["--no-hiccup"])]
            for key, _, args in cases:
                for side, extra in sides if r % 2 == 0 else sides[::-1]:
                    if args is None:
                        ops = bench_protocols.run(results, client, a.duration, "--target", ng.url_h1, *extra)["ops"]
                    else:
                        ops = wirebench(results, client, server, a.duration, *args, *extra)["ops_per_s"]
                    fig[f"{key}_{side}"].append(ops)
    finally:
        if ng is not None:
            ng.stop()
        shutil.rmtree(results, ignore_errors=True)
    header = [
        "# Hiccup meter: its cost",
        "",
        f"`python3 scripts/bench_hiccup.py --rounds {a.rounds} --duration {a.duration}` (release build). "
        + machine_line(client, server),
        "The probe sleeps 10 ms in a loop on the client's CPU; its CPU is its thread's on-CPU time "
        "(schedstat) over a depth-1 run. Its effect: ops/s of each case with the meter and with "
        "`--no-hiccup`, interleaved in each round, which goes first alternating (msgr: 64 B echoes from the embedded reactor server "
        "on the server CPU; HTTP: nginx, one worker, on the server CPU).",
    ]
    labels = {"cpu": ("probe thread CPU (% of one CPU)", "{:.2f}")}
    ratios = [("probe CPU, % of a CPU", fig["cpu"], "<= 1.0")]
    for key, name, _ in cases:
        labels[f"{key}_on"] = (f"{name}: ops/s, meter on", "{:.0f}")
        labels[f"{key}_off"] = (f"{name}: ops/s, meter off", "{:.0f}")
        ratios.append((f"{name}: ops/s with the meter / without",
                       [x / y for x, y in zip(fig[f"{key}_on"], fig[f"{key}_off"])], "0.97 .. 1.03"))
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
