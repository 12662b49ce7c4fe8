#!/usr/bin/env python3
"""The open loop's timers: this build against a baseline build (another
wirebench binary, e.g. one built before a timer change), interleaved, the
same open loop against the same pinned msgr server. Reports how well each
keeps its timetable (sent / asked, latency from the intended send), its
client CPU per operation and the descriptors the client held.

    python3 scripts/bench_timer.py --baseline /tmp/wb-old [--rounds 3] [--out FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

RATE = 20000
CLIENTS = 2
CONNS = 100
SECS = 4


def most_fds(pid, stop, out):
    """The most descriptors process `pid` held while `stop` is not set."""
    while not stop.is_set():
        try:
            out[0] = max(out[0], len(os.listdir(f"/proc/{pid}/fd")))
        except OSError:
            pass
        time.sleep(0.05)


def one(binary, results, client, endpoint):
    cmd = [binary, "run", "--results", results, "--format", "json", "--client-cpus", str(client),
           "--target", endpoint, "--clients", str(CLIENTS), "--conns-per-client", str(CONNS),
           "--rate", str(RATE), "--duration", f"{SECS}s", "--warmup", "1s"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop, fds = threading.Event(), [0]
    t = threading.Thread(target=most_fds, args=(p.pid, stop, fds))
    t.start()
    out, err = p.communicate()
    stop.set()
    t.join()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    s = json.loads(out)["summary"]
    return {
        "sent": s["sent_per_s"] / RATE,
        "p50": s["latency"]["p50_ns"] / 1e3,
        "p99": s["latency"]["p99_ns"] / 1e3,
        "cpu": s["client_cpu_us_per_op"],
        "fds": fds[0],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="the other wirebench binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(benchlib.WB):
        sys.exit("build it first: cargo build --release")
    client, server = benchlib.usable_cpus()
    port = benchlib.free_port()
    srv = benchlib.Background([benchlib.WB, "serve", "--listen", f"tcp://127.0.0.1:{port}",
                               "--cpus", str(server)])
    benchlib.wait_port(port, srv)
    endpoint = f"tcp://127.0.0.1:{port}"
    figures = {}
    try:
        with tempfile.TemporaryDirectory(prefix="wb-bench-timer-") as results:
            for r in range(a.rounds):
                # Interleaved, the order turned each round.
                builds = [("this", benchlib.WB), ("base", a.baseline)]
                for name, binary in (builds if r % 2 == 0 else builds[::-1]):
                    for k, v in one(binary, results, client, endpoint).items():
                        figures.setdefault(f"{name}_{k}", []).append(v)
    finally:
        srv.stop()
    labels = {}
    for name, what in (("this", "this build"), ("base", "baseline")):
        labels[f"{name}_sent"] = (f"{what}: sent / asked", "{:.3f}")
        labels[f"{name}_p50"] = (f"{what}: p50 from the intended send (us)", "{:.1f}")
        labels[f"{name}_p99"] = (f"{what}: p99 from the intended send (us)", "{:.1f}")
        labels[f"{name}_cpu"] = (f"{what}: client CPU (us/op)", "{:.2f}")
        labels[f"{name}_fds"] = (f"{what}: most descriptors held by the client", "{:.0f}")
    ratio = lambda k: [x / y for x, y in zip(figures[f"this_{k}"], figures[f"base_{k}"])]
    header = [
        f"# Open-loop timers: this build against {a.baseline}",
        "",
        benchlib.machine_line(client, server),
        f"Open loop, {RATE}/s uniform over {CLIENTS} clients x {CONNS} connections, "
        f"{SECS} s measured after 1 s of warm-up, against `wirebench serve` (msgr echo, 64 B); "
        f"{a.rounds} rounds, the builds interleaved; release builds.",
    ]
    lines = benchlib.report(header, figures, labels, [
        ("sent / asked, this / baseline", ratio("sent"), ">= 0.99"),
        ("p99 from the intended send, this / baseline", ratio("p99"), "<= 1.1"),
        ("client CPU per op, this / baseline", ratio("cpu"), "<= 1.05"),
        ("descriptors held, this / baseline", ratio("fds"), "(comparison)"),
    ])
    benchlib.emit(lines, a.out)


if __name__ == "__main__":
    main()
