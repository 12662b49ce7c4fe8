#!/usr/bin/env python3
"""Load agents (issue 18): 1, 2 and 3 agents on hosts made of network
namespaces, against one msgr reactor server.

    sudo python3 scripts/bench_agents.py [--rounds N] [--duration SECONDS] [--rate PER_AGENT] [--out FILE]

The script makes a hub namespace with a bridge and four "hosts" joined to
it (10.78.0.1-4): the server and the coordinator in host 0, an agent in each
of hosts 1-3. Each round runs, in a rotated order: each agent alone at the
per-agent rate, agents 1+2 at twice it, and agents 1+2+3 at three times it
(an open loop: the same per-agent load in every variant, whatever the
others do). An open loop rather than a closed one because this VM has two
vCPUs for the server and every agent: a closed loop would measure their
contention for the CPUs, not what splitting and merging cost.

Target: aggregate ops/s of k agents >= 0.95 x the sum of the same agents
alone (rounds' medians). Reported too: the coordinator's CPU (its own
process, from wait4), as a % of one CPU over its run and per merged op.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import WB, emit, machine_line, report

TAG = f"wbbench{os.getpid()}"
TOKEN = "bench-agents-token-0123456789abcdef"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Net:
    def __init__(self, hosts):
        self.hub = f"{TAG}-hub"
        self.hosts = [f"{TAG}-h{i}" for i in range(hosts)]
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "link", "set", "br0", "up")
        for i, h in enumerate(self.hosts):
            ip("netns", "add", h)
            ip("-n", self.hub, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", h)
            ip("-n", self.hub, "link", "set", f"v{i}", "master", "br0", "up")
            ip("-n", h, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            ip("-n", h, "link", "set", "eth0", "up")
            ip("-n", h, "link", "set", "lo", "up")

    def addr(self, i):
        return f"10.78.0.{i + 1}"

    def cmd(self, i, *args):
        return ["ip", "netns", "exec", self.hosts[i], WB, *args]

    def close(self):
        for h in self.hosts + [self.hub]:
            subprocess.run(["ip", "netns", "del", h], capture_output=True)


def first_line(p):
    line = p.stdout.readline()
    if not line:
        sys.exit(f"{p.args} printed nothing: {p.stderr.read() if p.stderr else ''}")
    return line.strip()


def coordinate(net, results, endpoint, agents, rate, secs, token):
    """One coordinated run: its summary, and the coordinator's CPU seconds."""
    cmd = net.cmd(0, "run", "--results", results, "--format", "json", "--target", endpoint,
                  "--agents", ",".join(agents), "--token-file", token, "--clients", str(len(agents)),
                  "--rate", str(rate * len(agents)), "--duration", f"{secs}s", "--warmup", "1s")
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, stdout=out, stderr=err)
    t0 = time.time()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.time() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err.read().decode()}")
    r = json.loads(out.read())
    return r, ru.ru_utime + ru.ru_stime, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rate", type=int, default=3000, help="requests/s per agent")
    ap.add_argument("--out")
    a = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("ip"):
        sys.exit("this benchmark makes network namespaces: run it as root, with iproute2")
    if not os.path.exists(WB):
        sys.exit("build first: cargo build --release")
    net = Net(4)
    procs = []
    tmp = tempfile.mkdtemp(prefix="wb-bench-agents-")
    try:
        token = os.path.join(tmp, "token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(TOKEN)
        srv = subprocess.Popen(net.cmd(0, "serve", "--listen", f"tcp://{net.addr(0)}:0", "--cpus", "1"),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(srv)
        endpoint = json.loads(first_line(srv))["endpoint"]
        agents = []
        for h in (1, 2, 3):
            listen = f"tcp://{net.addr(h)}:7460"
            p = subprocess.Popen(net.cmd(h, "agent", "--listen", listen, "--token-file", token,
                                         "--results", os.path.join(tmp, f"agent{h}")),
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs.append(p)
            line = first_line(p)
            if line != f"listening on {listen}":
                sys.exit(f"agent {h}: {line}")
            agents.append(f"{net.addr(h)}:7460")
        variants = {
            "alone1": [agents[0]], "alone2": [agents[1]], "alone3": [agents[2]],
            "two": agents[:2], "three": agents,
        }
        figures = {k: [] for k in ["two", "three", "ratio2", "ratio3", "coord_pct", "coord_us_op",
                                   "p99_three", "p99_alone"]}
        results = os.path.join(tmp, "results")
        for rnd in range(a.rounds):
            names = list(variants)
            names = names[rnd % len(names):] + names[:rnd % len(names)]
            got = {}
            for name in names:
                r, cpu, wall = coordinate(net, results, endpoint, variants[name], a.rate, a.duration, token)
                got[name] = (r, cpu, wall)
            ops = {k: v[0]["summary"]["ops_per_s"] for k, v in got.items()}
            figures["two"].append(ops["two"])
            figures["three"].append(ops["three"])
            figures["ratio2"].append(ops["two"] / (ops["alone1"] + ops["alone2"]))
            figures["ratio3"].append(ops["three"] / (ops["alone1"] + ops["alone2"] + ops["alone3"]))
            r3, cpu3, wall3 = got["three"]
            figures["coord_pct"].append(100.0 * cpu3 / wall3)
            figures["coord_us_op"].append(cpu3 * 1e6 / max(1, r3["summary"]["ops"]))
            figures["p99_three"].append(r3["summary"]["latency"]["p99_ns"] / 1e3)
            figures["p99_alone"].append(statistics.median(
                got[k][0]["summary"]["latency"]["p99_ns"] / 1e3 for k in ("alone1", "alone2", "alone3")))
            print(f"round {rnd + 1}: " + ", ".join(f"{k} {v:.0f}/s" for k, v in ops.items()), file=sys.stderr)
        header = [
            "# Load agents: 1, 2 and 3 agents against one server (scripts/bench_agents.py)",
            "",
            machine_line(0, 1),
            f"Hosts: network namespaces on a bridge; server (msgr reactor, CPU 1) and coordinator in host 0, "
            f"one agent in each of hosts 1-3, unpinned. Open loop at {a.rate}/s per agent, 1 client each, "
            f"{a.duration} s measured after 1 s of warm-up; {a.rounds} rounds, variants in a rotated order.",
        ]
        labels = {
            "two": ("2 agents, ops/s", "{:.0f}"),
            "three": ("3 agents, ops/s", "{:.0f}"),
            "p99_alone": ("p99 of one agent alone (median of the 3), us", "{:.1f}"),
            "p99_three": ("p99 of 3 agents merged, us", "{:.1f}"),
            "coord_pct": ("coordinator CPU, % of one CPU (3 agents)", "{:.2f}"),
            "coord_us_op": ("coordinator CPU per merged op, us (3 agents)", "{:.3f}"),
        }
        ratios = [
            ("2 agents / (agent 1 alone + agent 2 alone), ops/s", figures["ratio2"], ">= 0.95"),
            ("3 agents / (sum of each alone), ops/s", figures["ratio3"], ">= 0.95"),
        ]
        emit(report(header, figures, labels, ratios), a.out)
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        net.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
