#!/usr/bin/env python3
"""The protocols benchmark of issue 19 (so far: Redis), wirebench against the
protocol's own tool, in one go.

    python3 scripts/bench_protocols.py [--rounds N] [--duration SECONDS] [--out FILE]

redis-server pinned to one CPU, the client to the other, the same
connections (one client thread, 8 connections), interleaved and repeated
(round 1: every variant, round 2: every variant, ...):

  - redis-benchmark -t get -P 1 and -P 16 (GETs of 64-byte values of 10000
    keys, written beforehand with redis-benchmark -t set)
  - wirebench --target redis:// --mode get --depth 1 and 16, on the same
    keys' numbers (wirebench's own keys, written by its prepare phase)

and prints ops/s, p99 and client CPU per operation (median of the rounds,
with min and max), then the ratios (target: wirebench's ops/s >= 0.95 x
redis-benchmark's). Needs redis-server and redis-benchmark (Debian's
redis-server and redis-tools; installed when missing, as root). Builds
wirebench in release mode once.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

from benchlib import WB, Background, emit, free_port, machine_line, need, report, usable_cpus, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONNS = 8
KEYS = 10000
SIZE = 64
PIPELINES = (1, 16)


def run(results, client, secs, *args):
    """One `wirebench run` pinned to the client CPU; its result."""
    cmd = [WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client), "--clients", "1",
           "--conns-per-client", str(CONNS), "--duration", f"{secs}s", "--warmup", "2s", *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    r = json.loads(p.stdout)
    if r["summary"]["errors"]:
        sys.exit(f"{' '.join(cmd)}: {r['summary']['failures']}")
    s = r["summary"]
    return {"ops": s["ops_per_s"], "p99": s["latency"]["p99_ns"] / 1e3, "cpu": s["client_cpu_us_per_op"]}


def redis_benchmark(client, port, pipeline, secs, test="get"):
    """redis-benchmark, one thread pinned to the client CPU: ops/s, p99 (us)
    and CPU us per request (from the children's rusage). It runs a request
    count, sized from a first guess of its rate so that it lasts about `secs`."""
    n = max(200_000, int(secs * (60_000 if pipeline == 1 else 400_000)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", str(client), "redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                          "-t", test, "-P", str(pipeline), "-c", str(CONNS), "-n", str(n), "-d", str(SIZE),
                          "-r", str(KEYS), "--csv"], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = [l.replace('"', "").split(",") for l in out.splitlines() if l.strip()]
    head = rows[0]
    row = next((r for r in rows[1:] if r[0].lower() == test), None)
    if row is None or "rps" not in head:
        sys.exit(f"cannot read redis-benchmark's output:\n{out}")
    rec = dict(zip(head, row))
    return {"ops": float(rec["rps"]), "p99": float(rec["p99_latency_ms"]) * 1e3, "cpu": cpu * 1e6 / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    a = ap.parse_args()
    need("redis-server", "redis-server")
    need("redis-benchmark", "redis-tools")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-")
    port = free_port()
    redis = Background(["taskset", "-c", str(server), "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no"])
    wait_port(port, redis)
    fig = {}

    def add(key, f):
        for k, v in f.items():
            fig.setdefault(f"{key}_{k}", []).append(v)

    t = a.duration
    target = f"redis://127.0.0.1:{port}"
    try:
        # redis-benchmark's keys (key:__rand_int__), written once.
        redis_benchmark(client, port, 16, 1, test="set")
        for rnd in range(a.rounds):
            print(f"round {rnd + 1}/{a.rounds}", file=sys.stderr)
            for p in PIPELINES:
                add(f"rb_get_p{p}", redis_benchmark(client, port, p, t))
                add(f"wb_get_p{p}", run(results, client, t, "--target", target, "--mode", "get", "--depth", str(p),
                                        "--keys", str(KEYS), "--size", f"{SIZE}B"))
    finally:
        redis.stop()
        shutil.rmtree(results, ignore_errors=True)

    header = [
        machine_line(client, server),
        f"{a.rounds} interleaved rounds of about {t} s per measurement, {CONNS} connections of one pinned client "
        f"thread (redis-benchmark -c {CONNS}; wirebench --clients 1 --conns-per-client {CONNS}); median "
        f"[min .. max]. GETs of {SIZE}-byte values of {KEYS} keys written beforehand, keys uniform; "
        "pipeline P: redis-benchmark -P P, wirebench --depth P. Client CPU: us per operation.",
    ]
    labels = {}
    for p in PIPELINES:
        for k, name in (("rb", "redis-benchmark"), ("wb", "wirebench")):
            base = f"{k}_get_p{p}"
            labels[f"{base}_ops"] = (f"{name} GET, pipeline {p}: ops/s", "{:,.0f}")
            labels[f"{base}_p99"] = (f"{name} GET, pipeline {p}: p99 (us)", "{:,.0f}")
            labels[f"{base}_cpu"] = (f"{name} GET, pipeline {p}: client CPU (us/op)", "{:.2f}")
    per_round = lambda x, y: [p / q for p, q in zip(fig[x], fig[y])]
    ratios = []
    for p in PIPELINES:
        ratios += [
            (f"wirebench GET ops/s / redis-benchmark's, pipeline {p}",
             per_round(f"wb_get_p{p}_ops", f"rb_get_p{p}_ops"), ">= 0.95"),
            (f"wirebench client CPU per GET / redis-benchmark's, pipeline {p}",
             per_round(f"wb_get_p{p}_cpu", f"rb_get_p{p}_cpu"), "(comparison)"),
        ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
