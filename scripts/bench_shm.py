#!/usr/bin/env python3
"""Shared-memory IPC benchmark of issue 5: wirebench shm against the machine's floors.

    python3 scripts/bench_shm.py [--rounds N] [--duration SECONDS] [--out FILE]

Runs, interleaved and repeated (round 1: every measurement, round 2: every
measurement, ...), with the client on one CPU and the server on another:

  1. floor: two pinned threads ping-ponging a cache line (round trip)
  2. wirebench's rings alone: two pinned threads of one process doing the
     same round trips through a request ring and a response ring
     (diagnosis: the ring's own cost, without the engine and processes)
  3. wirebench shm sync 64 B, --wait spin: p50 round trip and messages/s
                                           (target: p50 <= 3 x the floor)
  4. wirebench shm sync 64 B over a Unix socket pair: messages/s
                                           (target: shm spin >= 10 x)
  5. floor: rtrb (an in-process SPSC ring), 64 KiB chunks, the reader
     copying each chunk out: GB/s
  6. wirebench shm stream 64 KiB, the client reading every byte: GB/s
                                           (target: >= 0.7 x rtrb)
  7. memcpy 64 KiB, one thread: GB/s       (both streams against it)
  8. wirebench shm stream 1 KiB: messages/s

Ratios are computed per round (floor and measurement taken back to back:
the floor of this VM moves between 0.06 and 0.6 us as the host places its
vCPUs) and reported as the median over the rounds, with min and max.
Builds wirebench and the floor program (crates/transports/examples/shm_floor.rs)
in release mode once.
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
FLOOR = os.path.join(ROOT, "target", "release", "examples", "shm_floor")


def floor(what, client, server):
    out = subprocess.run([FLOOR, what, str(client), str(server)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)




def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=3, help="seconds per wirebench measurement")
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench-transports", "--example", "shm_floor"],
                   cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-shm-")
    keys = ["floor_rtt_ns", "ring_rtt_ns", "spin_p50_ns", "spin_msgs", "unix_msgs", "rtrb_gbs", "stream_gbs", "memcpy_gbs",
            "stream_1k_msgs", "r_p50_floor", "r_spin_unix", "r_stream_rtrb"]
    fig = {k: [] for k in keys}
    t = a.duration
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            fl = floor("pingpong", client, server)["pingpong_rtt_ns"]
            s = wirebench(results, client, server, t, "--transport", "shm", "--mode", "sync", "--size", "64", "--wait", "spin")
            fig["floor_rtt_ns"].append(fl)
            fig["ring_rtt_ns"].append(floor("ring", client, server)["ring_rtt_ns"])
            fig["spin_p50_ns"].append(s["latency"]["p50_ns"])
            fig["spin_msgs"].append(2 * s["ops_per_s"])
            fig["r_p50_floor"].append(s["latency"]["p50_ns"] / fl)
            u = wirebench(results, client, server, t, "--transport", "shm", "--mode", "sync", "--size", "64", "--channel", "unix")
            fig["unix_msgs"].append(2 * u["ops_per_s"])
            fig["r_spin_unix"].append(s["ops_per_s"] / u["ops_per_s"])
            rt = floor("rtrb", client, server)["rtrb_stream_gbps"]
            st = wirebench(results, client, server, t, "--transport", "shm", "--mode", "stream", "--size", "64KiB", "--wait", "spin")
            gbs = st["bytes_per_s_in"] / 1e9
            fig["rtrb_gbs"].append(rt)
            fig["stream_gbs"].append(gbs)
            fig["r_stream_rtrb"].append(gbs / rt)
            fig["memcpy_gbs"].append(floor("memcpy", client, server)["memcpy_gbps"])
            k = wirebench(results, client, server, t, "--transport", "shm", "--mode", "stream", "--size", "1KiB", "--wait", "spin")
            fig["stream_1k_msgs"].append(k["ops_per_s"])
    finally:
        shutil.rmtree(results, ignore_errors=True)

    header = [
        machine_line(client, server),
        f"{a.rounds} interleaved rounds of {t} s per wirebench measurement (after 1 s of warm-up); median [min .. max].",
    ]
    labels = {
        "floor_rtt_ns": ("floor: cache-line ping-pong round trip (ns)", "{:.0f}"),
        "ring_rtt_ns": ("wirebench's rings alone, two threads in one process, round trip (ns)", "{:.0f}"),
        "spin_p50_ns": ("shm sync 64 B --wait spin, p50 round trip (ns)", "{:.0f}"),
        "spin_msgs": ("shm sync 64 B --wait spin (messages/s, a round trip is 2)", "{:,.0f}"),
        "unix_msgs": ("same over a Unix socket pair (messages/s)", "{:,.0f}"),
        "rtrb_gbs": ("floor: rtrb 64 KiB chunks, reader copying out (GB/s)", "{:.2f}"),
        "stream_gbs": ("shm stream 64 KiB --wait spin, client reading every byte (GB/s)", "{:.2f}"),
        "memcpy_gbs": ("memcpy 64 KiB, one thread (GB/s)", "{:.2f}"),
        "stream_1k_msgs": ("shm stream 1 KiB --wait spin (messages/s)", "{:,.0f}"),
    }
    ratios = [
        ("shm spin p50 / floor round trip (per round)", fig["r_p50_floor"], "<= 3"),
        ("rings alone / floor round trip (per round)", [r / f for r, f in zip(fig["ring_rtt_ns"], fig["floor_rtt_ns"])],
         "(diagnosis)"),
        ("shm spin messages/s / Unix socket messages/s (per round)", fig["r_spin_unix"], ">= 10"),
        ("shm stream 64 KiB / rtrb (per round)", fig["r_stream_rtrb"], ">= 0.7"),
        ("rtrb / memcpy 64 KiB (per round)", [r / m for r, m in zip(fig["rtrb_gbs"], fig["memcpy_gbs"])], "(floor)"),
        ("shm stream / memcpy 64 KiB (per round)", [s / m for s, m in zip(fig["stream_gbs"], fig["memcpy_gbs"])],
         "(comparison)"),
    ]
    lines = report(header, fig, labels, ratios)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
