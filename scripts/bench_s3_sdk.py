#!/usr/bin/env python3
"""S3 benchmark of issue 35: what each of wirebench's requests costs the
server, against what the AWS SDK's cost it.

MinIO pinned to one CPU; one 4 KiB object; GETs at one fixed rate, on one
keep-alive connection, from each client in turn, pinned to another CPU:

  - boto3 (the AWS SDK for Python): get_object in a paced loop, its body
    read whole; signs in the Authorization header;
  - wirebench --sign header (the default): the same rate (--rate), GETs
    signed in the Authorization header;
  - wirebench --sign query: presigned URLs (what wirebench sent before).

MinIO's CPU time (utime + stime of its process, /proc) over each
client's measured seconds, divided by the GETs it answered, is the
server's CPU per GET: read by this script around boto3's measured
seconds, and by wirebench itself (--server-pid) around its own. The
clients are interleaved, ROUNDS rounds; medians with min and max, then the
ratios to boto3 (target: wirebench --sign header within 5% of boto3's).

    python3 scripts/bench_s3_sdk.py [--rate 300] [--duration 20] [--rounds 5] [--out FILE.md]

Needs MinIO (~/.cache/wirebench/bin/minio or $WIREBENCH_MINIO_BIN) and a
Python with boto3 (target/pyvenv, as .ci/run makes it).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import WB, Background, emit, free_port, machine_line, report, usable_cpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
USER, PASSWORD = "wbbench", "wirebench-bench-secret"
PY = os.path.join(ROOT, "target", "pyvenv", "bin", "python")

BOTO3 = r"""
import sys, time, boto3
from botocore.config import Config
endpoint, user, secret, rate, secs, warm = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=user, aws_secret_access_key=secret,
                  region_name="us-east-1", config=Config(max_pool_connections=1, retries={"max_attempts": 1}))
gap = 1.0 / rate
t0 = time.monotonic()
n, k = 0, 0
start = t0 + warm
end = start + secs
while True:
    due = t0 + k * gap
    now = time.monotonic()
    if due >= end:
        break
    if due > now:
        time.sleep(due - now)
    if k == int(warm * rate):
        print("measure", flush=True)
    s3.get_object(Bucket="bench", Key="obj")["Body"].read()
    if due >= start:
        n += 1
    k += 1
print(f"done {n}", flush=True)
"""


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def minio_cpu_per_get(pid, run):
    """Runs `run()` -> (gets answered in the measured seconds, a callable
    that waits for the measured seconds to begin and end); MinIO's CPU
    seconds per GET over them."""
    hz = os.sysconf("SC_CLK_TCK")
    begin, finish = run()
    begin()
    c0 = cpu_ticks(pid)
    gets = finish()
    c1 = cpu_ticks(pid)
    return (c1 - c0) / hz / gets * 1e6, gets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=300, help="GETs per second")
    ap.add_argument("--duration", type=int, default=20, help="measured seconds per client")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(PY) or subprocess.run([PY, "-c", "import boto3"]).returncode != 0:
        sys.exit(f"no Python with boto3 at {PY}: python3 -m venv target/pyvenv && target/pyvenv/bin/pip install boto3")
    binary = os.environ.get("WIREBENCH_MINIO_BIN", os.path.expanduser("~/.cache/wirebench/bin/minio"))
    if not os.path.exists(binary):
        sys.exit(f"no MinIO binary at {binary}")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "wirebench"], cwd=ROOT, check=True)
    client, server = usable_cpus()
    data = tempfile.mkdtemp(prefix="wb-minio-sdk-")
    results = tempfile.mkdtemp(prefix="wb-bench-sdk-")
    port, console = free_port(), free_port()
    env = dict(os.environ, MINIO_ROOT_USER=USER, MINIO_ROOT_PASSWORD=PASSWORD, MINIO_BROWSER="off")
    minio = Background(["taskset", "-c", str(server), binary, "server", data, "--quiet", "--address",
                        f"127.0.0.1:{port}", "--console-address", f"127.0.0.1:{console}"], env=env)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                import socket
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(2)
        endpoint = f"http://127.0.0.1:{port}"
        target = f"s3://127.0.0.1:{port}/bench"
        cenv = dict(os.environ, AWS_ACCESS_KEY_ID=USER, AWS_SECRET_ACCESS_KEY=PASSWORD)
        # The bucket and its one object.
        subprocess.run([PY, "-c", (
            "import boto3,sys;s3=boto3.client('s3',endpoint_url=sys.argv[1],aws_access_key_id=sys.argv[2],"
            "aws_secret_access_key=sys.argv[3],region_name='us-east-1');"
            "s3.create_bucket(Bucket='bench');s3.put_object(Bucket='bench',Key='obj',Body=b'x'*4096)"),
            endpoint, USER, PASSWORD], check=True)

        def boto3_run():
            p = subprocess.Popen(["taskset", "-c", str(client), PY, "-c", BOTO3, endpoint, USER, PASSWORD,
                                  str(a.rate), str(a.duration), "2"], stdout=subprocess.PIPE, text=True)

            def begin():
                assert p.stdout.readline().strip() == "measure"

            def finish():
                line = p.stdout.readline().split()
                p.wait()
                return int(line[1])
            return begin, finish

        def wirebench_run(sign):
            """wirebench observes MinIO itself (--server-pid): its CPU over
            the measured seconds, per GET, from run.json."""
            p = subprocess.run([WB, "run", "--transport", "s3", "--target", target, "--workload", "get",
                                "--objects", "1", "--size", "4KiB", "--sign", sign, "--rate", str(a.rate),
                                "--duration", f"{a.duration}s", "--warmup", "2s", "--client-cpus", str(client),
                                "--server-pid", str(minio.p.pid), "--server-cpus", str(server),
                                "--results", results, "--format", "json"],
                               capture_output=True, text=True, env=cenv)
            if p.returncode != 0:
                sys.exit(f"wirebench failed: {p.stderr}")
            import json
            s = json.loads(p.stdout)["summary"]
            return s["server_cpu_us_per_op"], s["ops"]

        fig = {"boto3": [], "header": [], "query": []}
        for r in range(a.rounds):
            for name in ["boto3", "header", "query"]:
                if name == "boto3":
                    us, gets = minio_cpu_per_get(minio.p.pid, boto3_run)
                else:
                    us, gets = wirebench_run(name)
                fig[name].append(us)
                print(f"round {r + 1} {name}: {us:.1f} us of MinIO CPU per GET ({gets} GETs)", file=sys.stderr)
        ratios = [
            ("wirebench --sign header / boto3, MinIO CPU per GET",
             [h / b for h, b in zip(fig["header"], fig["boto3"])], "<= 1.05"),
            ("wirebench --sign query / boto3, MinIO CPU per GET",
             [q / b for q, b in zip(fig["query"], fig["boto3"])], ""),
        ]
        lines = report(
            [f"# S3: MinIO's CPU per 4 KiB GET, wirebench against the AWS SDK (boto3)", "",
             machine_line(client, server),
             f"{a.rate} GETs/s on one connection, {a.duration} s measured per client, {a.rounds} interleaved rounds; "
             "MinIO's CPU from /proc over each client's measured seconds."],
            fig,
            {"boto3": ("boto3 get_object, MinIO CPU us/GET", "{:.1f}"),
             "header": ("wirebench --sign header, MinIO CPU us/GET", "{:.1f}"),
             "query": ("wirebench --sign query, MinIO CPU us/GET", "{:.1f}")},
            ratios)
        emit(lines, a.out)
    finally:
        minio.stop()
        subprocess.run(["rm", "-rf", data, results])


if __name__ == "__main__":
    main()
