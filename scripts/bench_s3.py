#!/usr/bin/env python3
"""S3 benchmark of issue 6: wirebench's S3 client and fake server against
wrk and MinIO, in one go.

    python3 scripts/bench_s3.py [--rounds N] [--duration SECONDS] [--out FILE]

With the client pinned to one CPU and the server to another, 8 clients as
wrk runs them (one thread, 8 connections: wirebench --clients 1
--conns-per-client 8), interleaved and repeated (round 1: every variant,
round 2: every variant, ...):

  - wrk: plain GETs of one 4 KiB / 1 MiB object from the fake server
    (started without credentials, so it serves unsigned requests)
  - wirebench GET 4 KiB / 1 MiB against the same fake server, unsigned
    (the same requests as wrk; target: ops/s >= 0.7 x wrk's)
  - wirebench GET and PUT 4 KiB / 1 MiB against the fake server with
    SigV4 (the default embedded target: random credentials, signatures
    checked by the server; 100 objects, so a GET mostly takes again the
    signature its object got earlier in the same second)
  - wirebench GET 4 KiB over MANY objects, the same server: each GET
    signed anew (an object comes back less than once a second)
  - wrk GET 4 KiB of one presigned URL (valid for an hour) from a fake
    server that checks signatures, against wirebench's signed GETs of the
    same server: the client's cost with the server's work the same
  - wirebench GET 4 KiB, unsigned and signed, at the same open-loop rate
    (RATE, below what the signing fake server does): the client's cost of
    SigV4 alone
  - wirebench GET and PUT 4 KiB / 1 MiB against MinIO
    (target: fake server GET ops/s >= 3 x MinIO's)

and prints ops/s, p99, TTFB p99 and client CPU per operation (median of
the rounds, with min and max), then the ratios. Needs wrk (Debian; installed
when missing, as root) and a MinIO binary ($WIREBENCH_MINIO_BIN, or
~/.cache/wirebench/bin/minio as .ci/run builds it). Builds wirebench in
release mode once.
"""

import argparse
import hashlib
import hmac
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from benchlib import WB, Background, emit, free_port, machine_line, need, report, usable_cpus, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENTS = 8
USER, PASSWORD = "wirebench", "wirebench-bench-secret"
SIZES = {"4k": "4KiB", "1m": "1MiB"}
# The open-loop rate at which signed and unsigned GETs are compared (below
# what the fake server does when it checks signatures).
RATE = 20000
# Objects enough that a GET seldom finds its object signed in the same second.
MANY = 100_000


def run(results, client, secs, *args):
    """One `wirebench run` pinned to the client CPU; its result."""
    stop = ["--duration", f"{secs}s", "--warmup", "2s"] if secs else ["--count", "1", "--warmup", "0s"]
    cmd = [WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client),
           "--clients", "1", "--conns-per-client", str(CLIENTS), "--transport", "s3", *stop, *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    r = json.loads(p.stdout)
    if r["summary"]["errors"]:
        sys.exit(f"{' '.join(cmd)}: {r['summary']['failures']}")
    return r


def figures_of(r, op):
    s = r["summary"]
    o = s["by_op"][op]
    return {"ops": o["ops_per_s"], "p99": o["latency"]["p99_ns"] / 1e3,
            "ttfb99": o["ttfb"]["p99_ns"] / 1e3, "cpu": s["client_cpu_us_per_op"]}


def wrk(client, url, secs):
    """wrk, one thread pinned to the client CPU, CLIENTS connections: ops/s,
    p99 (us) and CPU us per request (from the children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", str(client), "wrk", "-t", "1", "-c", str(CLIENTS), "-d", f"{secs}s",
                          "--latency", url], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ops = p99 = total = None
    for line in out.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            ops = float(f[1])
        elif len(f) == 2 and f[0] == "99%":
            p99 = unit_us(f[1])
        elif "requests in" in line:
            total = int(f[0])
        elif "Non-2xx" in line:
            sys.exit(f"wrk got errors from {url}:\n{out}")
    if ops is None or p99 is None or not total:
        sys.exit(f"cannot read wrk's output:\n{out}")
    return {"ops": ops, "p99": p99, "ttfb99": float("nan"), "cpu": cpu * 1e6 / total}


def unit_us(text):
    for suffix, mult in (("us", 1), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * mult
    return float(text)


def serve_fake(server, creds=()):
    """The fake server, pinned: without credentials it serves unsigned
    requests; with them it checks signatures."""
    port = free_port()
    args = [WB, "serve", "--transport", "s3", "--cpus", str(server), "--listen", f"tcp://127.0.0.1:{port}",
            "--bucket", "bench"]
    env = None
    if creds:
        # The server takes its secret from the environment only.
        args += ["--access-key", creds[1]]
        env = dict(os.environ, AWS_SECRET_ACCESS_KEY=creds[3])
    p = Background(args, env=env)
    wait_port(port, p)
    return p, f"127.0.0.1:{port}"


def presign_get(host, path, key, secret, region="us-east-1", expires=3600):
    """A GET URL presigned with SigV4 (query string, payload unsigned, host
    the only signed header), as the SDKs make them."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    q = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": f"{key}/{scope}", "X-Amz-Date": stamp,
         "X-Amz-Expires": str(expires), "X-Amz-SignedHeaders": "host"}
    enc = lambda t: urllib.parse.quote(t, safe="-_.~")
    query = "&".join(f"{enc(k)}={enc(v)}" for k, v in sorted(q.items()))
    canonical = f"GET\n{path}\n{query}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    k = ("AWS4" + secret).encode()
    for part in (stamp[:8], region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"http://{host}{path}?{query}&X-Amz-Signature={sig}"


def serve_minio(server, data):
    binary = os.environ.get("WIREBENCH_MINIO_BIN", os.path.expanduser("~/.cache/wirebench/bin/minio"))
    if not os.path.exists(binary):
        sys.exit(f"no MinIO binary at {binary}: GOBIN=~/.cache/wirebench/bin go install github.com/minio/minio@latest")
    port, console = free_port(), free_port()
    env = dict(os.environ, MINIO_ROOT_USER=USER, MINIO_ROOT_PASSWORD=PASSWORD, MINIO_BROWSER="off")
    p = Background(["taskset", "-c", str(server), binary, "server", data, "--quiet", "--address",
                    f"127.0.0.1:{port}", "--console-address", f"127.0.0.1:{console}"], env=env)
    wait_port(port, p, limit=60)
    time.sleep(2)  # MinIO listens before it serves
    return p, f"127.0.0.1:{port}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20, help="seconds per measurement")
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    a = ap.parse_args()
    need("wrk", "wrk")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    results = tempfile.mkdtemp(prefix="wb-bench-")
    data = tempfile.mkdtemp(prefix="wb-minio-")
    creds = ["--access-key", USER, "--secret-key", PASSWORD]
    fake, fake_addr = serve_fake(server)
    signing, signing_addr = serve_fake(server, creds)
    minio, minio_addr = serve_minio(server, data)
    fig = {}

    def add(key, f):
        for k, v in f.items():
            fig.setdefault(f"{key}_{k}", []).append(v)

    t = a.duration
    try:
        # One object per size for wrk's plain GETs, kept on the fake server.
        urls = {}
        for tag, size in SIZES.items():
            r = run(results, client, 0, "--target", f"s3://{fake_addr}/bench", "--workload", "put", "--objects", "1",
                    "--size", size, "--keep")
            urls[tag] = f"http://{fake_addr}/bench/{r['spec']['transport']['prefix']}0000000000"
        r = run(results, client, 0, "--target", f"s3://{signing_addr}/bench", "--workload", "put", "--objects", "1",
                "--size", SIZES["4k"], "--keep", *creds)
        presigned = presign_get(signing_addr, f"/bench/{r['spec']['transport']['prefix']}0000000000", *creds[1::2])
        run(results, client, 0, "--target", f"s3://{minio_addr}/bench", "--create-bucket", "--workload", "put",
            "--objects", "1", *creds)
        for rnd in range(a.rounds):
            print(f"round {rnd + 1}/{a.rounds}", file=sys.stderr)
            for tag, size in SIZES.items():
                add(f"wrk_{tag}", wrk(client, urls[tag], t))
                r = run(results, client, t, "--target", f"s3://{fake_addr}/bench", "--size", size, "--objects", "1")
                add(f"anon_get_{tag}", figures_of(r, "get"))
                if tag == "4k":
                    # The client's cost of signing, apart from the server's: signed and unsigned GETs
                    # at the same open-loop rate, below what the signing server can do (the
                    # closed-loop figures differ by the server's speed as well, and a client waiting
                    # on a slower server spends more on each wake-up).
                    r = run(results, client, t, "--target", f"s3://{fake_addr}/bench", "--size", size,
                            "--objects", "1", "--rate", str(RATE))
                    add("anon_rate_4k", figures_of(r, "get"))
                    r = run(results, client, t, "--server-cpus", str(server), "--size", size, "--rate", str(RATE))
                    add("fake_rate_4k", figures_of(r, "get"))
                    # The same signing server for both: one presigned URL (wrk) and a
                    # signature per request (wirebench).
                    add("wrk_signed_4k", wrk(client, presigned, t))
                    r = run(results, client, t, "--target", f"s3://{signing_addr}/bench", "--size", size,
                            "--objects", "1", *creds)
                    add("ext_get_4k", figures_of(r, "get"))
                    r = run(results, client, t, "--server-cpus", str(server), "--size", size,
                            "--objects", str(MANY))
                    add("many_get_4k", figures_of(r, "get"))
                for op in ("get", "put"):
                    r = run(results, client, t, "--server-cpus", str(server), "--workload", op, "--size", size)
                    add(f"fake_{op}_{tag}", figures_of(r, op))
                    r = run(results, client, t, "--target", f"s3://{minio_addr}/bench", "--workload", op,
                            "--size", size, *creds)
                    add(f"minio_{op}_{tag}", figures_of(r, op))
    finally:
        fake.stop()
        signing.stop()
        minio.stop()
        shutil.rmtree(results, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)

    header = [
        machine_line(client, server),
        f"{a.rounds} interleaved rounds of {t} s per measurement (after 2 s of warm-up), {CLIENTS} clients "
        f"as connections of one pinned thread (wrk -t 1 -c {CLIENTS}; wirebench --clients 1 --conns-per-client "
        f"{CLIENTS}); median [min .. max]. Reads: GETs of objects created "
        "beforehand; the fake server answers zeroes. TTFB: GET, to the first byte of the body; PUT, to the "
        "response headers after the body was sent. Client CPU: us per operation.",
    ]
    labels = {}
    names = {"wrk": "wrk GET, fake server, unsigned", "anon_get": "wirebench GET, fake server, unsigned",
             "fake_get": "wirebench GET, fake server, SigV4", "fake_put": "wirebench PUT, fake server, SigV4",
             "minio_get": "wirebench GET, MinIO", "minio_put": "wirebench PUT, MinIO"}
    for tag, size in SIZES.items():
        for k, name in names.items():
            base = f"{k}_{tag}"
            labels[f"{base}_ops"] = (f"{name} {size}: ops/s", "{:,.0f}")
            labels[f"{base}_p99"] = (f"{name} {size}: p99 (us)", "{:,.0f}")
            if k != "wrk":
                labels[f"{base}_ttfb99"] = (f"{name} {size}: TTFB p99 (us)", "{:,.0f}")
            labels[f"{base}_cpu"] = (f"{name} {size}: client CPU (us/op)", "{:.1f}")
    for k, name in (("wrk_signed_4k", "wrk GET, signing fake server, one presigned URL 4KiB"),
                    ("ext_get_4k", "wirebench GET, signing fake server, SigV4 4KiB")):
        labels[f"{k}_ops"] = (f"{name}: ops/s", "{:,.0f}")
        labels[f"{k}_p99"] = (f"{name}: p99 (us)", "{:,.0f}")
        labels[f"{k}_cpu"] = (f"{name}: client CPU (us/op)", "{:.1f}")
    name = f"wirebench GET, fake server, SigV4 4KiB, {MANY:,} objects (each GET signed anew)"
    labels["many_get_4k_ops"] = (f"{name}: ops/s", "{:,.0f}")
    labels["many_get_4k_p99"] = (f"{name}: p99 (us)", "{:,.0f}")
    labels["many_get_4k_cpu"] = (f"{name}: client CPU (us/op)", "{:.1f}")
    labels["anon_rate_4k_cpu"] = (f"wirebench GET, fake server, unsigned 4KiB at {RATE}/s: client CPU (us/op)", "{:.1f}")
    labels["fake_rate_4k_cpu"] = (f"wirebench GET, fake server, SigV4 4KiB at {RATE}/s: client CPU (us/op)", "{:.1f}")
    per_round = lambda x, y: [p / q for p, q in zip(fig[x], fig[y])]
    ratios = [
        (f"signed / unsigned client CPU per GET at the same rate ({RATE}/s), 4KiB",
         per_round("fake_rate_4k_cpu", "anon_rate_4k_cpu"), "(cost of SigV4)"),
        ("wirebench client CPU per signed GET / wrk's presigned GET, same signing server, 4KiB",
         per_round("ext_get_4k_cpu", "wrk_signed_4k_cpu"), "(comparison)"),
        # wrk signs nothing here; what it pays more is the slower server's (more wake-ups per GET).
        ("wrk's client CPU per GET, signing server (one presigned URL) / unsigned server, 4KiB",
         per_round("wrk_signed_4k_cpu", "wrk_4k_cpu"), "(comparison)"),
        (f"client CPU per signed GET, 100 objects / {MANY:,} objects (signatures taken again / signed anew), 4KiB",
         per_round("fake_get_4k_cpu", "many_get_4k_cpu"), "(cost of SigV4)"),
        (f"wirebench client CPU per GET signed anew ({MANY:,} objects) / wrk's unsigned, 4KiB",
         per_round("many_get_4k_cpu", "wrk_4k_cpu"), "(comparison)"),
    ]
    for tag, size in SIZES.items():
        ratios += [
            (f"wirebench GET ops/s / wrk, fake server, {size}", per_round(f"anon_get_{tag}_ops", f"wrk_{tag}_ops"),
             ">= 0.7"),
            (f"wirebench client CPU per GET / wrk's, {size}", per_round(f"anon_get_{tag}_cpu", f"wrk_{tag}_cpu"),
             "(comparison)"),
            (f"signed / unsigned client CPU per GET, {size}", per_round(f"fake_get_{tag}_cpu", f"anon_get_{tag}_cpu"),
             "(cost of SigV4)"),
            (f"wirebench client CPU per signed GET / wrk's unsigned, {size}",
             per_round(f"fake_get_{tag}_cpu", f"wrk_{tag}_cpu"), "<= 1.0" if tag == "4k" else "(comparison)"),
            (f"fake server GET ops/s / MinIO's, {size}", per_round(f"fake_get_{tag}_ops", f"minio_get_{tag}_ops"),
             ">= 3"),
            (f"fake server PUT ops/s / MinIO's, {size}", per_round(f"fake_put_{tag}_ops", f"minio_put_{tag}_ops"),
             "(comparison)"),
        ]
    emit(report(header, fig, labels, ratios), a.out)


if __name__ == "__main__":
    main()
