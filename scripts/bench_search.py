#!/usr/bin/env python3
"""The search benchmark of issue 45: how stable `wirebench search`'s answer
is, how long it takes, and how it compares with a plain grid of runs.

    python3 scripts/bench_search.py [--repeats N] [--only redis|nginx] [--slo SLO]
        [--redis-depth N] [--busy] [--out FILE]

The server pinned to one CPU (taskset), the client to the other. For each
server (redis-server, GET of 64-byte values; nginx with one worker, GET of
a 1 KiB file), `wirebench search --slo SLO` (p99<1ms) with its defaults, N
times (5), the servers interleaved (redis, nginx, redis, ...). Then a grid
of `wirebench run --rate R` around the median answer (R = median x 1.1^k,
k = -3..3, each rate run twice with the search's own settings: 3 s after
1 s of warm-up, depth 1024 for redis unless --redis-depth, HTTP/1.1's one
for nginx), and the highest rate of the grid that passed twice (the
objective met within the search's headroom of 20%: p99<1ms under 0.8 ms;
the rate kept up). With --busy, one `yes >/dev/null` runs on the server's
CPU throughout (other work on the machine), and is stopped at the end.

Prints, per server, each answer, its saturation (what the server completed
while it fell behind: how far the capacity itself moved between searches)
and its time, the answer over that saturation (the search's own share of
the spread), each step in a few characters (see step_text), the spread
(highest answer over lowest), the median time, the grid's answer, and the ratio of the
median answer to it (targets: spread <= 1.10, ratio 0.85 .. 1.15, median
time <= 120 s). Needs redis-server and nginx (Debian's redis-server and
nginx-light; installed when missing, as root). Builds wirebench in release
mode once.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import WB, Background, emit, free_port, machine_line, met, need, usable_cpus, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The search's headroom (20%): what a grid rate's objective must meet.
HEADROOM = 0.2
UNITS_NS = {"us": 1e3, "ms": 1e6, "s": 1e9}


def objective(text):
    """'p99<1ms' -> ('p99', 1e6): a percentile objective, the only kind this
    benchmark's grid judges."""
    m = re.fullmatch(r"(p[0-9.]+)<([0-9.]+)(us|ms|s)", text)
    if not m:
        sys.exit(f"--slo {text!r}: give a percentile objective such as p99<1ms")
    return m.group(1), float(m.group(2)) * UNITS_NS[m.group(3)]


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


def depth_of(target, redis_depth):
    """The search's depth: `redis_depth` requests outstanding a connection
    for redis, a typed-call transport's own (HTTP/1.1: one)."""
    return ["--depth", str(redis_depth)] if target.startswith("redis://") else []


def search(target, client, results, slo, redis_depth):
    """One search with its defaults: (answer, seconds, steps, limit, not sharp,
    saturation, its steps in one line)."""
    t0 = time.time()
    cmd = [WB, "search", "--target", target, "--slo", slo, *depth_of(target, redis_depth),
           "--client-cpus", str(client), "--results", results, "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.time() - t0
    if p.returncode not in (0, 3, 5):
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    r = json.loads(p.stdout)
    return (r.get("best_rate_per_s") or 0.0, secs, len(r["steps"]), r.get("limit") or "-",
            "yes" if r.get("not_sharp") else "no", r.get("saturation_ops_per_s") or 0.0,
            " ".join(step_text(s) for s in r["steps"]))


def step_text(s):
    """A step in a few characters: its rate, + held or - not (B: the server
    fell behind, ?: undecided), v voted / p pooled with its tries, r
    measured again (does not count)."""
    verdict = "+" if s["pass"] else ("B" if not s["kept_up"] else ("?" if s.get("undecided") else "-"))
    tries = s.get("tries", 1)
    how = (f"v{tries}" if s.get("voted") else f"p{tries}") if tries > 1 else ""
    again = "r" if s.get("remeasured") or s.get("measured_again") else ""
    return f"{s['rate_per_s'] / 1000:.1f}k{verdict}{how}{again}"


def grid_passes(target, client, results, rate, slo, redis_depth):
    """Whether `run --rate` at `rate` met the objective within the headroom and kept up."""
    name, limit_ns = objective(slo)
    cmd = [WB, "run", "--target", target, "--rate", f"{rate:.0f}/s", *depth_of(target, redis_depth), "--duration", "3s",
           "--warmup", "1s", "--client-cpus", str(client), "--results", results, "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    s = json.loads(p.stdout)["summary"]
    return s["ops_per_s"] >= 0.95 * rate and s["latency"][f"{name}_ns"] < (1 - HEADROOM) * limit_ns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=["redis", "nginx"])
    ap.add_argument("--slo", default="p99<1ms")
    ap.add_argument("--redis-depth", type=int, default=1024)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    objective(a.slo)
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
        hog = Background(["taskset", "-c", str(server), "yes"]) if a.busy else None
        try:
            for i in range(a.repeats):
                for n in names:
                    found = search(servers[n][1], client, results, a.slo, a.redis_depth)
                    answers[n].append(found)
                    best, secs, steps, limit = found[:4]
                    print(f"{n} search {i + 1}: {best:.0f}/s in {secs:.0f} s, {steps} steps; limit: {limit}",
                          file=sys.stderr)
            grids = {}
            for n in names:
                mid = statistics.median(b for b, *_ in answers[n])
                rates = [mid * 1.1 ** k for k in range(-3, 4)]
                held = [r for r in rates
                        if all(grid_passes(servers[n][1], client, results, r, a.slo, a.redis_depth)
                               for _ in range(2))]
                grids[n] = (rates, max(held) if held else 0.0)
                print(f"{n} grid {[round(r) for r in rates]}: passed twice {[round(r) for r in held]}",
                      file=sys.stderr)
        finally:
            for p, _ in servers.values():
                p.stop()
            if hog:
                hog.stop()
    depth = f", redis at depth {a.redis_depth}" if a.redis_depth != 1024 else ""
    busy = "; one `yes` on the server's CPU throughout" if a.busy else ""
    lines = [f"# `wirebench search --slo '{a.slo}'`{depth}: {a.repeats} repeats against a grid", "",
             machine_line(client, server) + f" Release build; servers pinned with taskset{busy}.", ""]
    for n in names:
        bs = [b for b, *_ in answers[n]]
        ts = [t for _, t, *_ in answers[n]]
        rates, g = grids[n]
        spread = max(bs) / min(bs) if min(bs) > 0 else float("inf")
        ratio = statistics.median(bs) / g if g > 0 else float("inf")
        lo_ratio = min(bs) / g if g > 0 else float("inf")
        hi_ratio = max(bs) / g if g > 0 else float("inf")
        sats = [x[5] for x in answers[n]]
        moved = max(sats) / min(sats) if min(sats) > 0 else float("inf")
        own = [x[0] / x[5] for x in answers[n] if x[5] > 0]
        lines += [f"## {n}", "", "| search | answer (ops/s) | saturation (ops/s) | answer / saturation | time (s) | not sharp | steps |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for i, (b, t, s, lim, blurred, sat, trace) in enumerate(answers[n]):
            share = f"{b / sat:.3f}" if sat > 0 else "-"
            lines.append(f"| {i + 1} | {b:.0f} | {sat:.0f} | {share} | {t:.0f} | {blurred} | {trace} |")
        lines += ["", f"Grid (each rate twice): {', '.join(f'{r:.0f}' for r in rates)}; "
                      f"the highest that passed twice: {g:.0f}/s.", "",
                  "| figure | value | target | met |", "| --- | --- | --- | --- |",
                  f"| spread (highest answer / lowest) | {spread:.2f} | <= 1.10 | {met(spread, '<= 1.10')} |",
                  f"| the server's capacity moved (highest saturation / lowest) | {moved:.2f} | - | |",
                  f"| the search's own share (answer / its saturation: highest / lowest) | {max(own) / min(own):.2f} | - | |" if own else "",
                  f"| median answer / grid | {ratio:.2f} | 0.85 .. 1.15 | {met(ratio, '0.85 .. 1.15')} |",
                  f"| lowest answer / grid | {lo_ratio:.2f} | 0.85 .. 1.15 | {met(lo_ratio, '0.85 .. 1.15')} |",
                  f"| highest answer / grid | {hi_ratio:.2f} | 0.85 .. 1.15 | {met(hi_ratio, '0.85 .. 1.15')} |",
                  f"| median time (s) | {statistics.median(ts):.0f} | <= 120 | {met(statistics.median(ts), '<= 120')} |",
                  ""]
    emit(lines, a.out)


if __name__ == "__main__":
    main()
