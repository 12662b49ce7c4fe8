#!/usr/bin/env python3
"""The protocols benchmark of issue 19, wirebench against each protocol's own
tool, in one go.

    python3 scripts/bench_protocols.py [--rounds N] [--duration SECONDS]
        [--only redis|http] [--out FILE]

The server pinned to one CPU, the client to the other, the same
connections (one client thread, 8 connections), interleaved and repeated
(round 1: every variant, round 2: every variant, ...):

  - Redis: redis-benchmark -t get -P 1 and -P 16 (GETs of 64-byte values of
    10000 keys, written beforehand with redis-benchmark -t set; each tool
    against a fresh redis-server holding only its own keys) against
    wirebench --target redis:// --mode get --depth 1 and 16 (its own keys,
    written by its prepare phase);
  - HTTP/1.1: wrk -t1 -c8 against wirebench --target http://, GET of a
    1 KiB file from nginx (one worker, keep-alive);
  - HTTP/2 (h2c): h2load -t1 -c2 -m8 against wirebench --http 2
    --conns-per-client 2 --depth 8, the same file.

and prints ops/s, p99 and client CPU per operation (median of the rounds,
with min and max), then the ratios (targets: wirebench's ops/s >= 0.95 x
redis-benchmark's and wrk's; client CPU per request <= 1.0 x wrk's; HTTP/2
reported). Needs redis-server, redis-benchmark, nginx, wrk and h2load
(Debian's redis-server, redis-tools, nginx-light, wrk, nghttp2-client;
installed when missing, as root). Builds wirebench in release mode once.
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


def run(results, client, secs, *args, conns=CONNS):
    """One `wirebench run` pinned to the client CPU (`conns` connections
    unless the arguments say); its result."""
    cmd = [WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client), "--clients", "1",
           "--duration", f"{secs}s", "--warmup", "2s", *args]
    if conns is not None:
        cmd += ["--conns-per-client", str(conns)]
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


def wrk(client, url, secs):
    """wrk, one thread pinned to the client CPU, 8 connections: ops/s, p99
    (us) and CPU us per request (from the children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", str(client), "wrk", "-t1", f"-c{CONNS}", f"-d{secs}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    reqs = rate = p99 = None
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and f[1] == "requests" and f[0].isdigit():
            reqs = int(f[0])
        elif line.startswith("Requests/sec:"):
            rate = float(f[1])
        elif len(f) == 2 and f[0] == "99%":
            p99 = duration_us(f[1])
    if reqs is None or rate is None or p99 is None:
        sys.exit(f"cannot read wrk's output:\n{out}")
    if "Non-2xx" in out or "Socket errors" in out:
        sys.exit(f"wrk saw errors:\n{out}")
    return {"ops": rate, "p99": p99, "cpu": cpu * 1e6 / reqs}


def duration_us(text):
    """wrk's and h2load's durations ("512.00us", "1.20ms", "2.1s") in us."""
    for unit, k in (("us", 1.0), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * k
    sys.exit(f"not a duration: {text}")


def h2load(client, url, secs, conns, streams):
    """h2load (h2c, prior knowledge), one thread pinned to the client CPU:
    ops/s, p99 unknown (h2load gives no percentiles: None) and CPU us per
    request."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", str(client), "h2load", "-t1", f"-c{conns}", f"-m{streams}",
                          f"-D{secs}", url], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    done = rate = None
    for line in out.splitlines():
        f = line.replace(",", "").split()
        if line.startswith("finished in"):
            rate = float(f[3])
        elif line.startswith("requests:"):
            # "requests: N total, N started, N done, N succeeded, N failed, ...": with -D the
            # streams still open when the time is up count as failed, at most c x m of them.
            done, failed = int(f[7]), int(f[9])
            if failed > conns * streams:
                sys.exit(f"h2load saw failures:\n{out}")
    if done is None or rate is None:
        sys.exit(f"cannot read h2load's output:\n{out}")
    return {"ops": rate, "cpu": cpu * 1e6 / max(done, 1)}


NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
user root;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  keepalive_requests 1000000;
  http2_max_requests 1000000;
  server {{ listen 127.0.0.1:{h1}; listen 127.0.0.1:{h2} http2; root {d}/www; }}
}}
"""


class Nginx:
    """nginx (one worker) pinned to the server CPU, serving a 1 KiB file over
    HTTP/1.1 (`url_h1`) and h2c (`url_h2`) from a folder of its own; `stop`
    stops it by its PID and removes the folder."""

    def __init__(self, server):
        self.dir = tempfile.mkdtemp(prefix="wb-bench-nginx-")
        d = self.dir
        os.makedirs(f"{d}/www")
        with open(f"{d}/www/1k.bin", "wb") as f:
            f.write(b"x" * 1024)
        h1, h2 = free_port(), free_port()
        with open(f"{d}/nginx.conf", "w") as f:
            f.write(NGINX_CONF.format(d=d, h1=h1, h2=h2))
        self.proc = Background(["taskset", "-c", str(server), "nginx", "-c", f"{d}/nginx.conf", "-e",
                                f"{d}/error.log"])
        try:
            wait_port(h1, self.proc)
            wait_port(h2, self.proc)
        except SystemExit:
            self.stop()
            raise
        self.url_h1, self.url_h2 = f"http://127.0.0.1:{h1}/1k.bin", f"http://127.0.0.1:{h2}/1k.bin"

    def stop(self):
        self.proc.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def bench_http(a, client, server, results, add):
    need("nginx", "nginx-light")
    need("wrk", "wrk")
    need("h2load", "nghttp2-client")
    ng = Nginx(server)
    u1, u2 = ng.url_h1, ng.url_h2
    try:
        t = a.duration
        for rnd in range(a.rounds):
            print(f"http round {rnd + 1}/{a.rounds}", file=sys.stderr)
            add("wrk_h1", wrk(client, u1, t))
            add("wb_h1", run(results, client, t, "--target", u1))
            add("h2load_h2", h2load(client, u2, t, 2, 8))
            add("wb_h2", run(results, client, t, "--target", u2, "--http", "2", "--conns-per-client", "2",
                             "--depth", "8", conns=None))
    finally:
        ng.stop()


def bench_redis(a, client, server, results, add):
    need("redis-server", "redis-server")
    need("redis-benchmark", "redis-tools")
    t = a.duration

    def fresh(measure):
        """`measure(port)` against a redis-server of its own, stopped after.
        Each tool reads a server that holds only the keys it wrote itself:
        which of two key sets was written first changes how fast the server
        serves it (by 5-10% at pipeline 16 on this VM, either way round)."""
        port = free_port()
        redis = Background(["taskset", "-c", str(server), "redis-server", "--port", str(port), "--bind",
                            "127.0.0.1", "--save", "", "--appendonly", "no"])
        try:
            wait_port(port, redis)
            return measure(port)
        finally:
            redis.stop()

    def rb(p):
        def measure(port):
            # redis-benchmark's keys (key:__rand_int__), written first.
            redis_benchmark(client, port, 16, 1, test="set")
            return redis_benchmark(client, port, p, t)
        return measure

    def wb(p):
        # wirebench writes its keys itself (the prepare phase) before it reads.
        return lambda port: run(results, client, t, "--target", f"redis://127.0.0.1:{port}", "--mode", "get",
                                "--depth", str(p), "--keys", str(KEYS), "--size", f"{SIZE}B")

    for rnd in range(a.rounds):
        print(f"redis round {rnd + 1}/{a.rounds}", file=sys.stderr)
        for p in PIPELINES:
            add(f"rb_get_p{p}", fresh(rb(p)))
            add(f"wb_get_p{p}", fresh(wb(p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    ap.add_argument("--only", choices=["redis", "http"], help="one protocol's part only")
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-")
    fig = {}

    def add(key, f):
        for k, v in f.items():
            fig.setdefault(f"{key}_{k}", []).append(v)

    try:
        if a.only in (None, "redis"):
            bench_redis(a, client, server, results, add)
        if a.only in (None, "http"):
            bench_http(a, client, server, results, add)
    finally:
        shutil.rmtree(results, ignore_errors=True)

    t = a.duration
    header = [
        machine_line(client, server),
        f"{a.rounds} interleaved rounds of about {t} s per measurement, one pinned client thread; median "
        "[min .. max]. Client CPU: us per operation.",
    ]
    labels = {}
    per_round = lambda x, y: [p / q for p, q in zip(fig[x], fig[y])]
    ratios = []
    if "rb_get_p1_ops" in fig:
        header.append(
            f"Redis: {CONNS} connections (redis-benchmark -c {CONNS}; wirebench --conns-per-client {CONNS}); GETs of "
            f"{SIZE}-byte values of {KEYS} keys written beforehand, keys uniform, each tool against a fresh "
            "redis-server holding only the keys it wrote; pipeline P: redis-benchmark -P P, "
            "wirebench --depth P.")
        for p in PIPELINES:
            for k, name in (("rb", "redis-benchmark"), ("wb", "wirebench")):
                base = f"{k}_get_p{p}"
                labels[f"{base}_ops"] = (f"{name} GET, pipeline {p}: ops/s", "{:,.0f}")
                labels[f"{base}_p99"] = (f"{name} GET, pipeline {p}: p99 (us)", "{:,.0f}")
                labels[f"{base}_cpu"] = (f"{name} GET, pipeline {p}: client CPU (us/op)", "{:.2f}")
            ratios += [
                (f"wirebench GET ops/s / redis-benchmark's, pipeline {p}",
                 per_round(f"wb_get_p{p}_ops", f"rb_get_p{p}_ops"), ">= 0.95"),
                (f"wirebench client CPU per GET / redis-benchmark's, pipeline {p}",
                 per_round(f"wb_get_p{p}_cpu", f"rb_get_p{p}_cpu"), "(comparison)"),
            ]
    if "wrk_h1_ops" in fig:
        header.append(
            f"HTTP: GET of a 1 KiB file from nginx (one worker, keep-alive, no access log). HTTP/1.1: {CONNS} "
            f"connections (wrk -t1 -c{CONNS}; wirebench --conns-per-client {CONNS}). HTTP/2 (h2c): 2 connections of "
            "8 streams (h2load -t1 -c2 -m8; wirebench --http 2 --conns-per-client 2 --depth 8); h2load gives no p99.")
        for key, name in (("wrk_h1", "wrk, HTTP/1.1"), ("wb_h1", "wirebench, HTTP/1.1"),
                          ("h2load_h2", "h2load, HTTP/2"), ("wb_h2", "wirebench, HTTP/2")):
            labels[f"{key}_ops"] = (f"{name}: ops/s", "{:,.0f}")
            if f"{key}_p99" in fig:
                labels[f"{key}_p99"] = (f"{name}: p99 (us)", "{:,.0f}")
            labels[f"{key}_cpu"] = (f"{name}: client CPU (us/op)", "{:.2f}")
        ratios += [
            ("wirebench HTTP/1.1 GET ops/s / wrk's", per_round("wb_h1_ops", "wrk_h1_ops"), ">= 0.95"),
            ("wirebench client CPU per HTTP/1.1 GET / wrk's", per_round("wb_h1_cpu", "wrk_h1_cpu"), "<= 1.0"),
            ("wirebench HTTP/2 GET ops/s / h2load's", per_round("wb_h2_ops", "h2load_h2_ops"), "(reported)"),
            ("wirebench client CPU per HTTP/2 GET / h2load's", per_round("wb_h2_cpu", "h2load_h2_cpu"), "(reported)"),
        ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
