#!/usr/bin/env python3
"""The agent and the live-metrics listener under attack together, for MINUTES (issue 46; not in CI).

On loopback: a `wirebench serve`; a load agent with a token, holding
credentials of its own ($REDISCLI_AUTH, AWS_*); and a long open-loop run
serving live metrics behind a token (`--metrics-listen`,
`--metrics-token-file`). For the whole time:

- the agent's port holds CONNS hostile connections (soak_agent.py's five
  kinds: drip, flood, garbage, forged proof, churn);
- the metrics port holds 40 hostile peers (drippers without a token,
  requests with a wrong token, endless headers) while a scraper with the
  token asks for the page 100 times a second;
- every EVERY seconds a coordinator holding the agent's token sends a part,
  in turn: a real run (must complete), `--ca-file /dev/zero` (https),
  `--proto-set /dev/zero` (gRPC), a Redis target that is a listener of the
  test's recording every byte (the agent's password must never arrive), an
  S3 target (refused: the agent's keys stay home).

Every second it samples both processes' RSS. It fails (exit 1) when the
agent's peak RSS reaches 64 MiB, when either process's RSS grows by more
than 16 MiB from its first minute to its last, when a real run is not
complete, a hostile part is not refused as expected, a secret reaches the
recording listener, or fewer than 99% of the token's scrapes are served.

    python3 scripts/soak_listeners.py [--minutes 15] [--conns 500] [--out FILE.md]
"""

import argparse
import json
import os
import random
import resource
import secrets
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak_agent import Hostile, fds, status  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSWORD = "soak-agents-own-redis-password"
KEY = "AKIASOAKAGENTSOWNKEY"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def secret_file(path, text):
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(text)


class Recorder:
    """A listener that answers every read as a Redis server wanting a
    password, and keeps every byte it got."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.got = bytearray()
        self.conns = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns += 1
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        c.settimeout(10)
        try:
            while True:
                d = c.recv(4096)
                if not d:
                    break
                self.got += d
                c.sendall(b"-NOAUTH Authentication required.\r\n")
        except OSError:
            pass
        c.close()


class MetricsPeers:
    """Hostile peers of the metrics port (from 127.0.0.2: another host, as
    attackers are; at most 200 new a second), and a scraper with the token
    (from 127.0.0.1)."""

    KINDS = ["drip", "wrong", "headers"]

    def __init__(self, port, token, n=40, rate=100):
        self.addr = ("127.0.0.1", port)
        self.token = token
        self.n, self.rate = n, rate
        self.ok = self.failed = 0
        self.hostile = {k: 0 for k in self.KINDS}
        self.stop = False
        self.threads = [threading.Thread(target=self.scrape, daemon=True),
                        threading.Thread(target=self.attack, daemon=True)]
        for t in self.threads:
            t.start()

    def get(self, token):
        s = socket.create_connection(self.addr, timeout=5)
        try:
            s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                      "Connection: close\r\n\r\n".encode())
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
            return data.split(b" ", 2)[1] if data.startswith(b"HTTP/1.1 ") else b"?"
        finally:
            s.close()

    def scrape(self):
        next_at = time.monotonic()
        while not self.stop:
            try:
                code = self.get(self.token)
                if code == b"200":
                    self.ok += 1
                else:
                    self.failed += 1
            except OSError:
                self.failed += 1
            next_at += 1 / self.rate
            time.sleep(max(0, next_at - time.monotonic()))

    def attack(self):
        sel = selectors.DefaultSelector()
        live = 0
        window, opened = time.monotonic(), 0
        while not self.stop:
            if time.monotonic() - window >= 1:
                window, opened = time.monotonic(), 0
            while live < self.n and opened < 200:
                opened += 1
                kind = self.KINDS[sum(self.hostile.values()) % len(self.KINDS)]
                s = socket.socket()
                s.bind(("127.0.0.2", 0))
                s.setblocking(False)
                try:
                    s.connect(self.addr)
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    break
                self.hostile[kind] += 1
                live += 1
                sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ,
                             {"kind": kind, "next": 0.0, "sent": False})
            now = time.monotonic()
            for key, ev in sel.select(0.2):
                s, st = key.fileobj, key.data
                try:
                    if ev & selectors.EVENT_READ:
                        if not s.recv(65536):
                            raise OSError("closed")
                    if ev & selectors.EVENT_WRITE:
                        if st["kind"] == "wrong" and not st["sent"]:
                            st["sent"] = True
                            s.send(b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer " + secrets.token_hex(16).encode()
                                   + b"\r\n\r\n")
                        elif st["kind"] == "headers":
                            s.send(b"X-" + os.urandom(8).hex().encode() + b": y\r\n")
                        elif st["kind"] == "drip" and now >= st["next"]:
                            s.send(b"G")
                            st["next"] = now + 4
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    sel.unregister(s)
                    s.close()
                    live -= 1
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--conns", type=int, default=500)
    ap.add_argument("--every", type=float, default=10, help="seconds between coordinators")
    ap.add_argument("--out", help="a Markdown report here")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/wirebench"))
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, a.conns * 2 + 512)), hard))
    work = tempfile.mkdtemp(prefix="wb-soak-listeners.")
    token, mtoken = os.path.join(work, "token"), os.path.join(work, "mtoken")
    secret_file(token, secrets.token_hex(32))
    mtok = secrets.token_hex(32)
    secret_file(mtoken, mtok)
    procs = []
    recorder = Recorder()
    try:
        srv = subprocess.Popen([a.bin, "serve", "--listen", "tcp://127.0.0.1:0", "--cpus", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(srv)
        endpoint = json.loads(srv.stdout.readline())["endpoint"]
        env = dict(os.environ, REDISCLI_AUTH=PASSWORD, AWS_ACCESS_KEY_ID=KEY,
                   AWS_SECRET_ACCESS_KEY="soak-agents-own-s3-secret")
        agent = subprocess.Popen([a.bin, "agent", "--listen", "tcp://127.0.0.1:0", "--token-file", token,
                                  "--results", os.path.join(work, "agent-results")],
                                 stdout=subprocess.PIPE, stderr=open(os.path.join(work, "agent.log"), "w"),
                                 text=True, env=env)
        procs.append(agent)
        addr = agent.stdout.readline().strip().split("tcp://")[1]
        host, port = addr.rsplit(":", 1)
        mport = free_port()
        seconds = int(a.minutes * 60) + 60
        live = subprocess.Popen([a.bin, "run", "--target", endpoint, "--rate", "1000",
                                 "--duration", f"{seconds}s", "--warmup", "0s",
                                 "--metrics-listen", f"127.0.0.1:{mport}", "--metrics-token-file", mtoken,
                                 "--results", os.path.join(work, "live-results")],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "live.log"), "w"))
        procs.append(live)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", mport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        hostile = Hostile((host, int(port)), a.conns)
        peers = MetricsPeers(mport, mtok)
        kinds = [
            ("real", ["--target", endpoint], None),
            ("ca_file /dev/zero", ["--target", "https://127.0.0.1:9/", "--ca-file", "/dev/zero"],
             "reads no file a coordinator names"),
            ("proto_set /dev/zero", ["--target", "grpc://127.0.0.1:9", "--call", "a.B/C", "--proto-set", "/dev/zero"],
             "reads no file a coordinator names"),
            ("redis at a recorder", ["--target", f"redis://127.0.0.1:{recorder.port}"],
             "$REDISCLI_AUTH was not sent"),
            ("s3 at a recorder", ["--target", f"s3://127.0.0.1:{recorder.port}/bucket"],
             "S3 credentials go only to the targets its operator listed"),
        ]
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        parts, samples = [], []
        next_part, next_sample, k = t0 + 5, t0, 0
        run = None
        while time.monotonic() < end or run is not None:
            now = time.monotonic()
            if now < end:
                hostile.fill(200)
                hostile.step(0.05)
            else:
                time.sleep(0.05)
            if now >= next_sample and now < end:
                samples.append((now - t0, status(agent.pid, "VmRSS:"), status(live.pid, "VmRSS:"),
                                status(agent.pid, "Threads:"), fds(agent.pid), hostile.live))
                next_sample += 1
            if run is None and now >= next_part and now < end:
                name, args, want = kinds[k % len(kinds)]
                k += 1
                run = (now, name, want, subprocess.Popen(
                    [a.bin, "run", "--agents", addr, "--token-file", token, "--duration", "2s",
                     "--warmup", "0s", "--format", "json", "--results", os.path.join(work, "results")] + args,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            if run is not None and run[3].poll() is not None:
                out, err = run[3].communicate()
                at, name, want, p = run
                if want is None:
                    try:
                        r = json.loads(out)
                        good = p.returncode == 0 and r["status"]["state"] == "complete" and r["summary"]["ops"] > 0
                    except (ValueError, KeyError):
                        good = False
                else:
                    good = p.returncode != 0 and want in err
                parts.append((at - t0, name, p.returncode, good, (err.strip().splitlines() or [""])[-1]))
                run = None
                next_part = time.monotonic() + a.every * random.uniform(0.8, 1.2)
        peers.stop = True
        agent_hwm, live_hwm = status(agent.pid, "VmHWM:"), status(live.pid, "VmHWM:")
        alive = agent.poll() is None and live.poll() is None
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
        recorder.sock.close()
    subprocess.run(["rm", "-rf", work])
    got = bytes(recorder.got)
    leaked = PASSWORD.encode() in got or KEY.encode() in got
    minute = [s for s in samples if s[0] < 60]
    last = [s for s in samples if s[0] >= samples[-1][0] - 60]
    grow_agent = max(s[1] for s in last) - max(s[1] for s in minute)
    grow_live = max(s[2] for s in last) - max(s[2] for s in minute)
    bad = [p for p in parts if not p[3]]
    scrapes = peers.ok + peers.failed
    served = peers.ok / scrapes if scrapes else 0
    ok = (alive and agent_hwm < 64 * 1024 and grow_agent < 16 * 1024 and grow_live < 16 * 1024
          and not bad and parts and not leaked and served >= 0.99)
    by_kind = {}
    for p in parts:
        by_kind.setdefault(p[1], [0, 0])
        by_kind[p[1]][0] += 1
        by_kind[p[1]][1] += p[3]
    lines = [
        f"# Agent and metrics listener soak: {a.minutes:g} min",
        "",
        f"- agent: {sum(hostile.opened.values()):,} hostile connections opened "
        + "(" + ", ".join(f"{k} {v:,}" for k, v in hostile.opened.items()) + f"), {hostile.closed_by_agent:,} closed by it",
        f"- agent RSS: first minute max {max(s[1] for s in minute) / 1024:.1f} MiB, last minute max "
        f"{max(s[1] for s in last) / 1024:.1f} MiB, peak (VmHWM) {agent_hwm / 1024:.1f} MiB (limit 64 MiB)",
        f"- agent threads: max {max(s[3] for s in samples)}; descriptors: max {max(s[4] for s in samples)}",
        f"- metrics listener: {sum(peers.hostile.values()):,} hostile peers "
        + "(" + ", ".join(f"{k} {v:,}" for k, v in peers.hostile.items()) + f"); scrapes with the token: "
        f"{peers.ok:,} served, {peers.failed:,} not ({served * 100:.2f}% served)",
        f"- the live run's RSS (its listener's process): first minute max {max(s[2] for s in minute) / 1024:.1f} MiB, "
        f"last minute max {max(s[2] for s in last) / 1024:.1f} MiB, peak {live_hwm / 1024:.1f} MiB",
        f"- token-holding coordinators: {len(parts)}, as expected: {len(parts) - len(bad)} ("
        + ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in by_kind.items()) + ")",
        f"- the recording listener: {recorder.conns} connections, {len(got):,} bytes; "
        f"the agent's password or key among them: {'YES' if leaked else 'no'}",
        "",
        "| t s | agent RSS MiB | live run RSS MiB | agent threads | agent fds | hostile live |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ] + [f"| {t:.0f} | {ra / 1024:.1f} | {rl / 1024:.1f} | {th} | {fd} | {hl} |"
         for t, ra, rl, th, fd, hl in samples[:: max(1, len(samples) // 30)]]
    lines += ["", f"**{'PASS' if ok else 'FAIL'}**"]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    for p in bad:
        print(f"coordinator at {p[0]:.0f} s ({p[1]}): exit {p[2]}: {p[4]}", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
