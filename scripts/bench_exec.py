#!/usr/bin/env python3
"""exec's cost (issue 17): sockperf ping-pong bare vs wrapped by wirebench.

    python3 scripts/bench_exec.py [--rounds N] [--duration SECONDS] [--out FILE]

Each round, interleaved:
1. bare: `sockperf server` pinned to the server CPU (taskset), `sockperf
   ping-pong` pinned to the client CPU, its p50 read from its own output;
2. wrapped: the same two commands run by `wirebench run --transport exec
   --server-cmd ... --client-cmd ... --parser sockperf`, which observes the
   server (per-core and per-thread CPU, sampled every 250 ms) and pins both.

Target: p50 wrapped / bare <= 1.05 (the rounds' medians). The observer's
own CPU (wirebench's process, its children excluded) is reported as a % of
one CPU over the run.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import json

from benchlib import WB, Background, emit, free_port, listening, machine_line, need, report, usable_cpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HZ = os.sysconf("SC_CLK_TCK")


def p50_us(text):
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", text)
    if not m:
        sys.exit(f"no p50 in sockperf's output:\n{text}")
    return float(m.group(1))


def bare(client, server, secs):
    port = free_port()
    srv = Background(["taskset", "-c", str(server), "sockperf", "server", "-i", "127.0.0.1",
                      "-p", str(port), "--tcp"])
    try:
        deadline = time.time() + 10
        while not listening(port):
            if time.time() > deadline:
                sys.exit("sockperf server did not listen")
            time.sleep(0.02)
        p = subprocess.run(["taskset", "-c", str(client), "sockperf", "ping-pong", "-i", "127.0.0.1",
                            "-p", str(port), "--tcp", "-m", "64", "-t", str(secs)],
                           capture_output=True, text=True, timeout=secs + 30)
    finally:
        srv.stop()
    return p50_us(p.stdout + p.stderr)


def own_cpu_s(pid):
    """utime + stime of the process itself (its children excluded)."""
    with open(f"/proc/{pid}/stat") as f:
        after = f.read().rsplit(")", 1)[1].split()
    return (int(after[11]) + int(after[12])) / HZ


def wrapped(results, client, server, secs):
    cmd = [WB, "run", "--results", results, "--format", "json", "--transport", "exec",
           "--server-cpus", str(server), "--client-cpus", str(client), "--duration", f"{secs}s",
           "--server-cmd", "exec sockperf server -i 127.0.0.1 -p {port} --tcp",
           "--client-cmd", "sockperf ping-pong -i 127.0.0.1 -p {port} --tcp -m 64 -t {duration_s}",
           "--parser", "sockperf"]
    began = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu = 0.0
    while p.poll() is None:
        try:
            cpu = own_cpu_s(p.pid)
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.05)
    wall = time.monotonic() - began
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    s = json.loads(out)["summary"]
    return s["latency"]["p50_ns"] / 1e3, 100.0 * cpu / wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    need("sockperf", "sockperf")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-exec-")
    fig = {k: [] for k in ["bare", "wrapped", "cpu"]}
    try:
        for r in range(a.rounds):
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
            # Interleaved, the order alternating round by round.
            first_bare = r % 2 == 0
            for which in (["bare", "wrapped"] if first_bare else ["wrapped", "bare"]):
                if which == "bare":
                    fig["bare"].append(bare(client, server, a.duration))
                else:
                    p50, cpu = wrapped(results, client, server, a.duration)
                    fig["wrapped"].append(p50)
                    fig["cpu"].append(cpu)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    header = [
        "# exec: sockperf bare vs wrapped by wirebench",
        "",
        f"`python3 scripts/bench_exec.py --rounds {a.rounds} --duration {a.duration}` (release build). "
        + machine_line(client, server),
        "sockperf 3.7 ping-pong over TCP loopback, 64 B, `-t` seconds; its p50 (half the round trip, "
        "as sockperf reports) from its own output (bare) and from wirebench's result (wrapped: "
        "`run --transport exec`, the server observed). Bare and wrapped interleaved, alternating "
        "which goes first. The observer's CPU is wirebench's own process (utime + stime, its "
        "children excluded) over the run's wall time, sampling the server every 250 ms.",
    ]
    labels = {
        "bare": ("p50 bare (us)", "{:.3f}"),
        "wrapped": ("p50 wrapped (us)", "{:.3f}"),
        "cpu": ("wirebench's own CPU while wrapping (% of one CPU)", "{:.2f}"),
    }
    ratios = [
        ("p50 wrapped / bare", [w / b for w, b in zip(fig["wrapped"], fig["bare"])], "<= 1.05"),
    ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
