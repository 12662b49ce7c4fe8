#!/usr/bin/env python3
"""The agent under attack for MINUTES (issue 35; not in CI).

A load agent (with a token) and a `wirebench serve` on loopback; 1,000
hostile connections held against the agent the whole time, each opened
again as soon as the agent closes it, of five kinds:

  drip     a byte every 4 s, never a whole handshake line
  flood    64 KiB writes without a newline, as fast as the agent reads
  garbage  an HTTP request, then silence
  forged   the handshake with a forged token proof
  churn    connect and close at once

Meanwhile a real coordinator makes a 5 s run on the agent every ~30 s.
Every second it samples the agent's RSS, threads and descriptors. It fails
(exit 1) when the agent's RSS reaches 64 MiB, or a real run is not
complete with operations.

    python3 scripts/soak_agent.py [--minutes 15] [--conns 1000] [--out FILE.md]
"""

import argparse
import json
import os
import resource
import secrets
import selectors
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ["drip", "flood", "garbage", "forged", "churn"]


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Hostile:
    """The hostile connections, driven by one selector."""

    def __init__(self, addr, n):
        self.addr = addr
        self.sel = selectors.DefaultSelector()
        self.n = n
        self.opened = {k: 0 for k in KINDS}
        self.closed_by_agent = 0
        self.live = 0
        self.chunk = b"x" * 65536

    def open(self, kind):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(self.addr)
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return
        self.opened[kind] += 1
        self.live += 1
        if kind == "churn":
            s.close()
            self.live -= 1
            return
        st = {"kind": kind, "next": time.monotonic(), "hello": b""}
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)

    def drop(self, s):
        self.sel.unregister(s)
        s.close()
        self.live -= 1
        self.closed_by_agent += 1

    def fill(self, budget):
        """Opens connections up to n, at most `budget` now."""
        k = 0
        while self.live < self.n and k < budget:
            self.open(KINDS[(sum(self.opened.values())) % len(KINDS)])
            k += 1

    def step(self, timeout):
        now = time.monotonic()
        for key, ev in self.sel.select(timeout):
            s, st = key.fileobj, key.data
            try:
                if ev & selectors.EVENT_READ:
                    data = s.recv(65536)
                    if not data:
                        self.drop(s)
                        continue
                    st["hello"] += data
                    if st["kind"] == "forged" and b"\n" in st["hello"] and not st.get("sent"):
                        st["sent"] = True
                        auth = {"auth": {"protocol": 1, "proof": secrets.token_hex(32),
                                         "nonce": "00", "build": {"version": "0", "git_revision": "x", "sha256": "0"}}}
                        s.send((json.dumps(auth) + "\n").encode())
                if ev & selectors.EVENT_WRITE:
                    kind = st["kind"]
                    if kind == "flood":
                        s.send(self.chunk)
                    elif kind == "drip" and now >= st["next"]:
                        s.send(b"{")
                        st["next"] = now + 4
                    elif kind == "garbage" and not st.get("sent"):
                        st["sent"] = True
                        s.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    if kind != "flood":
                        # Only readable from now on (and the drip's timer).
                        self.sel.modify(s, selectors.EVENT_READ, st)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self.drop(s)
        # Drippers: write when their time comes.
        for key in list(self.sel.get_map().values()):
            st = key.data
            if st["kind"] == "drip" and now >= st["next"]:
                try:
                    key.fileobj.send(b"{")
                    st["next"] = now + 4
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self.drop(key.fileobj)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--every", type=float, default=30, help="seconds between real runs")
    ap.add_argument("--out", help="a Markdown report here")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/wirebench"))
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, a.conns * 2 + 256)), hard))
    work = tempfile.mkdtemp(prefix="wb-soak-agent.")
    token = os.path.join(work, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    procs = []
    try:
        srv = subprocess.Popen([a.bin, "serve", "--listen", "tcp://127.0.0.1:0", "--cpus", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(srv)
        endpoint = json.loads(srv.stdout.readline())["endpoint"]
        agent_log = open(os.path.join(work, "agent.log"), "w")
        agent = subprocess.Popen([a.bin, "agent", "--listen", "tcp://127.0.0.1:0", "--token-file", token,
                                  "--results", os.path.join(work, "agent-results")],
                                 stdout=subprocess.PIPE, stderr=agent_log, text=True)
        procs.append(agent)
        addr = agent.stdout.readline().strip().split("tcp://")[1]
        host, port = addr.rsplit(":", 1)
        hostile = Hostile((host, int(port)), a.conns)
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        runs, samples = [], []
        next_run, next_sample = t0 + 10, t0
        run = None
        while time.monotonic() < end or run is not None:
            now = time.monotonic()
            if now < end:
                hostile.fill(200)
                hostile.step(0.05)
            else:
                time.sleep(0.05)
            if now >= next_sample:
                samples.append((now - t0, status(agent.pid, "VmRSS:"), status(agent.pid, "Threads:"),
                                fds(agent.pid), hostile.live))
                next_sample += 1
            if run is None and now >= next_run and now < end:
                res = os.path.join(work, "results")
                run = (now, subprocess.Popen(
                    [a.bin, "run", "--target", endpoint, "--agents", addr, "--token-file", token,
                     "--duration", "5s", "--warmup", "1s", "--format", "json", "--results", res],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            if run is not None and run[1].poll() is not None:
                out, err = run[1].communicate()
                try:
                    r = json.loads(out)
                    state, ops = r["status"]["state"], r["summary"]["ops"]
                except (ValueError, KeyError):
                    state, ops = "no result", 0
                runs.append((run[0] - t0, run[1].returncode, state, ops, err.strip().splitlines()[-1:] or [""]))
                run = None
                next_run = time.monotonic() + a.every
        hwm = status(agent.pid, "VmHWM:")
        alive = agent.poll() is None
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
    log_bytes = os.path.getsize(os.path.join(work, "agent.log"))
    subprocess.run(["rm", "-rf", work])
    bad_runs = [r for r in runs if r[1] != 0 or r[2] != "complete" or r[3] == 0]
    max_rss = max(s[1] for s in samples)
    ok = alive and hwm < 64 * 1024 and not bad_runs and runs
    lines = [
        f"# Agent soak: {a.minutes:g} min, {a.conns} hostile connections",
        "",
        f"- hostile connections opened: {sum(hostile.opened.values()):,} "
        + "(" + ", ".join(f"{k} {v:,}" for k, v in hostile.opened.items()) + ")",
        f"- closed by the agent: {hostile.closed_by_agent:,}",
        f"- agent RSS: max sampled {max_rss / 1024:.1f} MiB, peak (VmHWM) {hwm / 1024:.1f} MiB (limit 64 MiB)",
        f"- agent threads: max {max(s[2] for s in samples)}; descriptors: max {max(s[3] for s in samples)}",
        f"- agent log: {log_bytes:,} bytes",
        f"- real runs: {len(runs)}, not complete: {len(bad_runs)}",
        "",
        "| at s | exit | status | ops |",
        "| ---: | ---: | --- | ---: |",
    ] + [f"| {t:.0f} | {rc} | {st} | {ops:,} |" for t, rc, st, ops, _ in runs] + [
        "",
        "| t s | agent RSS MiB | threads | fds | hostile live |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ] + [f"| {t:.0f} | {rss / 1024:.1f} | {th} | {fd} | {live} |"
         for t, rss, th, fd, live in samples[:: max(1, len(samples) // 30)]]
    lines += ["", f"**{'PASS' if ok else 'FAIL'}**"]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    for r in bad_runs:
        print(f"run at {r[0]:.0f} s: exit {r[1]}, {r[2]}: {r[4][0]}", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
