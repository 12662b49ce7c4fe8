#!/usr/bin/env python3
"""Messenger benchmark of issue 3: wirebench against the reference tools, in one go.

    python3 scripts/bench_msgr.py [--rounds N] [--duration SECONDS] [--out FILE]

Runs, interleaved and repeated (round 1: every variant, round 2: every
variant, ...), with the client pinned to one CPU and the server to another:

  1. sockperf ping-pong, TCP, 64 B, --full-rtt            (reference latency)
  2. wirebench echo 64 B, depth 1                           (target: p50 <= 1.2 x sockperf p50)
  3. wirebench echo 64 B, depth 1, --poll (both sides)      (target: p50 <= 0.5 x sockperf p50)
  4. wirebench echo 4 KiB, depth 64, --arch reactor         (reactor vs pool)
  5. wirebench echo 4 KiB, depth 64, --arch pool
  6. iperf3 single stream, server sending (-R)              (reference bandwidth)
  7. wirebench stream 64 KiB (server sending)               (target: >= 0.8 x iperf3)

and prints each figure (median of the rounds, with min and max) and the
ratios. Needs the Debian packages sockperf and iperf3 (installed when
missing and running as root). Builds wirebench in release mode once.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchlib import Background, emit, machine_line, need, report, usable_cpus, wait_port, free_port, wirebench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sockperf(client, server, secs):
    port = free_port()
    srv = Background(["taskset", "-c", str(server), "sockperf", "server", "-i", "127.0.0.1", "-p", str(port), "--tcp"])
    try:
        wait_port(port, srv)
        out = subprocess.run(["taskset", "-c", str(client), "sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(port),
                              "--tcp", "-m", "64", "-t", str(secs), "--full-rtt"],
                             capture_output=True, text=True, check=True).stdout
    finally:
        srv.stop()
    for line in out.splitlines():
        if "percentile 50.000" in line:
            return float(line.split("=")[1])
    sys.exit("no p50 in sockperf's output:\n" + out)


def iperf3(client, server, secs):
    port = free_port()
    srv = Background(["taskset", "-c", str(server), "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)])
    try:
        wait_port(port, srv)
        # -R: the server sends, as wirebench's stream mode does.
        out = subprocess.run(["taskset", "-c", str(client), "iperf3", "-c", "127.0.0.1", "-p", str(port), "-R",
                              "-t", str(secs), "-J"], capture_output=True, text=True, check=True).stdout
    finally:
        srv.stop()
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8 / 1e9  # GB/s




def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5, help="seconds per measurement")
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    a = ap.parse_args()
    need("sockperf", "sockperf")
    need("iperf3", "iperf3")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-")
    figures = {k: [] for k in ["sockperf_p50_us", "wb_p50_us", "wb_poll_p50_us", "reactor_ops", "pool_ops",
                               "iperf3_gbs", "stream_gbs"]}
    t = a.duration
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            figures["sockperf_p50_us"].append(sockperf(client, server, t))
            figures["wb_p50_us"].append(wirebench(results, client, server, t, "--size", "64")["latency"]["p50_ns"] / 1e3)
            figures["wb_poll_p50_us"].append(
                wirebench(results, client, server, t, "--size", "64", "--poll")["latency"]["p50_ns"] / 1e3)
            for arch in ["reactor", "pool"]:
                s = wirebench(results, client, server, t, "--arch", arch, "--size", "4KiB", "--depth", "64")
                figures[f"{arch}_ops"].append(s["ops_per_s"])
            figures["iperf3_gbs"].append(iperf3(client, server, t))
            figures["stream_gbs"].append(
                wirebench(results, client, server, t, "--mode", "stream", "--size", "64KiB")["bytes_per_s_in"] / 1e9)
    finally:
        shutil.rmtree(results, ignore_errors=True)

    header = [
        machine_line(client, server),
        f"{a.rounds} interleaved rounds of {t} s per measurement; median [min .. max].",
    ]
    labels = {
        "sockperf_p50_us": ("sockperf ping-pong 64 B p50 (us, full RTT)", "{:.1f}"),
        "wb_p50_us": ("wirebench echo 64 B depth 1 p50 (us)", "{:.1f}"),
        "wb_poll_p50_us": ("wirebench echo 64 B depth 1 --poll p50 (us)", "{:.1f}"),
        "reactor_ops": ("wirebench echo 4 KiB depth 64, reactor (ops/s)", "{:,.0f}"),
        "pool_ops": ("wirebench echo 4 KiB depth 64, pool (ops/s)", "{:,.0f}"),
        "iperf3_gbs": ("iperf3 1 stream, server sending (GB/s)", "{:.2f}"),
        "stream_gbs": ("wirebench stream 64 KiB (GB/s)", "{:.2f}"),
    }
    per_round = lambda a, b: [x / y for x, y in zip(figures[a], figures[b])]
    ratios = [
        ("wirebench echo p50 / sockperf p50", per_round("wb_p50_us", "sockperf_p50_us"), "<= 1.2"),
        ("wirebench --poll p50 / sockperf p50", per_round("wb_poll_p50_us", "sockperf_p50_us"), "<= 0.5"),
        ("pool ops/s / reactor ops/s (4 KiB, depth 64)", per_round("pool_ops", "reactor_ops"), "(comparison)"),
        ("wirebench stream / iperf3", per_round("stream_gbs", "iperf3_gbs"), ">= 0.8"),
    ]
    lines = report(header, figures, labels, ratios)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
