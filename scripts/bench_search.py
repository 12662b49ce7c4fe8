#!/usr/bin/env python3
"""The search benchmark of issue 45: how stable `wirebench search`'s answer
is, how long it takes, and how it compares with a plain grid of runs.

    python3 scripts/bench_search.py [--repeats N] [--only redis|nginx] [--out FILE]

The server pinned to one CPU (taskset), the client to the other. For each
server (redis-server, GET of 64-byte values; nginx with one worker, GET of
a 1 KiB file), `wirebench search --slo 'p99<1ms'` with its defaults, N
times (5), the servers interleaved (redis, nginx, redis, ...). Then a grid
of `wirebench run --rate R` around the median answer (R = median x 1.1^k,
k = -3..3, each rate run twice with the search's own settings: 3 s after
1 s of warm-up, depth 1024 for redis, HTTP/1.1's one for nginx), and the highest rate of the grid that passed
twice (p99 within the search's headroom: under 0.8 ms; the rate kept up).

Prints, per server, each answer and its time, the spread (highest answer
over lowest), the median time, the grid's answer, and the ratio of the
median answer to it (targets: spread <= 1.10, ratio 0.85 .. 1.15, median
time <= 120 s). Needs redis-server and nginx (Debian's redis-server and
nginx-light; installed when missing, as root). Builds wirebench in release
mode once.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import WB, Background, emit, free_port, machine_line, met, need, usable_cpus, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLO = "p99<1ms"
# The search's headroom (20%): what a grid rate must meet to pass.
LIMIT_NS = 0.8e6


def redis(cpu, tmp):
    port = free_port()
    p = Background(["taskset", "-c", str(cpu), "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", tmp])
    wait_port(port, p)
    return p, f"redis://127.0.0.1:{port}"


def nginx(cpu, tmp):
    port = free_port()
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "1k.bin"), "wb") as f:
        f.write(b"x" * 1024)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
master_process off;
worker_processes 1;
user root;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 1024; }}
http {{
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  access_log off;
  server {{ listen 127.0.0.1:{port}; root {www}; }}
}}
""")
    p = Background(["taskset", "-c", str(cpu), "nginx", "-c", conf, "-e", f"{tmp}/error.log"])
    wait_port(port, p)
    return p, f"http://127.0.0.1:{port}/1k.bin"


def search(target, client, results):
    """One search with its defaults: (answer, seconds, steps, limit)."""
    t0 = time.time()
    cmd = [WB, "search", "--target", target, "--slo", SLO, "--client-cpus", str(client),
           "--results", results, "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.time() - t0
    if p.returncode not in (0, 3, 5):
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    r = json.loads(p.stdout)
    return r.get("best_rate_per_s") or 0.0, secs, len(r["steps"]), r.get("limit") or "-"


def grid_passes(target, client, results, rate):
    """Whether `run --rate` at `rate` held p99 within the headroom and kept up.
    The search's depth: 1024 requests outstanding a connection, but a
    typed-call transport's own (HTTP/1.1: one)."""
    depth = ["--depth", "1024"] if target.startswith("redis://") else []
    cmd = [WB, "run", "--target", target, "--rate", f"{rate:.0f}/s", *depth, "--duration", "3s",
           "--warmup", "1s", "--client-cpus", str(client), "--results", results, "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    s = json.loads(p.stdout)["summary"]
    return s["ops_per_s"] >= 0.95 * rate and s["latency"]["p99_ns"] < LIMIT_NS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=["redis", "nginx"])
    ap.add_argument("--out")
    a = ap.parse_args()
    need("redis-server", "redis-server")
    need("nginx", "nginx-light")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    names = [a.only] if a.only else ["redis", "nginx"]
    starts = {"redis": redis, "nginx": nginx}
    answers = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        for n in names:
            d = os.path.join(tmp, n)
            os.makedirs(d)
            servers[n] = starts[n](server, d)
        results = os.path.join(tmp, "results")
        try:
            for i in range(a.repeats):
                for n in names:
                    best, secs, steps, limit = search(servers[n][1], client, results)
                    answers[n].append((best, secs, steps, limit))
                    print(f"{n} search {i + 1}: {best:.0f}/s in {secs:.0f} s, {steps} steps; limit: {limit}",
                          file=sys.stderr)
            grids = {}
            for n in names:
                mid = statistics.median(b for b, *_ in answers[n])
                rates = [mid * 1.1 ** k for k in range(-3, 4)]
                held = [r for r in rates if all(grid_passes(servers[n][1], client, results, r) for _ in range(2))]
                grids[n] = (rates, max(held) if held else 0.0)
                print(f"{n} grid {[round(r) for r in rates]}: passed twice {[round(r) for r in held]}",
                      file=sys.stderr)
        finally:
            for p, _ in servers.values():
                p.stop()
    lines = [f"# `wirebench search --slo '{SLO}'`: {a.repeats} repeats against a grid", "",
             machine_line(client, server) + " Release build; servers pinned with taskset.", ""]
    for n in names:
        bs = [b for b, *_ in answers[n]]
        ts = [t for _, t, *_ in answers[n]]
        rates, g = grids[n]
        spread = max(bs) / min(bs) if min(bs) > 0 else float("inf")
        ratio = statistics.median(bs) / g if g > 0 else float("inf")
        lines += [f"## {n}", "", "| search | answer (ops/s) | time (s) | steps | what ran out |",
                  "| --- | --- | --- | --- | --- |"]
        for i, (b, t, s, lim) in enumerate(answers[n]):
            lines.append(f"| {i + 1} | {b:.0f} | {t:.0f} | {s} | {lim} |")
        lines += ["", f"Grid (each rate twice): {', '.join(f'{r:.0f}' for r in rates)}; "
                      f"the highest that passed twice: {g:.0f}/s.", "",
                  "| figure | value | target | met |", "| --- | --- | --- | --- |",
                  f"| spread (highest answer / lowest) | {spread:.2f} | <= 1.10 | {met(spread, '<= 1.10')} |",
                  f"| median answer / grid | {ratio:.2f} | 0.85 .. 1.15 | {met(ratio, '0.85 .. 1.15')} |",
                  f"| median time (s) | {statistics.median(ts):.0f} | <= 120 | {met(statistics.median(ts), '<= 120')} |",
                  ""]
    emit(lines, a.out)


if __name__ == "__main__":
    main()
