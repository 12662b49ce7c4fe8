"""What the benchmark scripts share: CPU choice, and the Markdown report
(a table of measurements, then a table of ratios against their targets)."""

import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time


def usable_cpus():
    """The first two CPUs this process may use: client, server."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("this benchmark needs two CPUs (client and server on different cores)")
    return cpus[0], cpus[1]


def machine_line(client, server):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
    return (f"Machine: {os.cpu_count()} CPUs ({cpu}), kernel {platform.release()}; "
            f"client on CPU {client}, server on CPU {server}.")


def met(value, target):
    """'yes' or 'NO' for a target such as '<= 1.2', '>= 0.8' or '0.97 .. 1.03'; '' for any
    other text."""
    if " .. " in target:
        lo, hi = (float(x) for x in target.split(" .. "))
        return "yes" if lo <= value <= hi else "NO"
    if target.startswith("<="):
        return "yes" if value <= float(target[2:]) else "NO"
    if target.startswith(">="):
        return "yes" if value >= float(target[2:]) else "NO"
    return ""


def report(header, figures, labels, ratios):
    """header: lines; figures: key -> values per round; labels: key -> (label, format);
    ratios: (label, values per round, target). Medians with min .. max."""
    lines = list(header) + ["", "| measurement | median | min .. max |", "| --- | --- | --- |"]
    for k, (label, fmt) in labels.items():
        v = figures[k]
        lines.append(f"| {label} | {fmt.format(statistics.median(v))} | {fmt.format(min(v))} .. {fmt.format(max(v))} |")
    lines += ["", "| ratio | median | min .. max | target | met |", "| --- | --- | --- | --- | --- |"]
    for label, v, target in ratios:
        m = statistics.median(v)
        lines.append(f"| {label} | {m:.2f} | {min(v):.2f} .. {max(v):.2f} | {target} | {met(m, target)} |")
    return lines


WB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "release", "wirebench")


def wirebench(results, client, server, secs, *args):
    """One `wirebench run` (release build), pinned, 1 s of warm-up; its summary."""
    cmd = [WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client),
           "--server-cpus", str(server), "--duration", f"{secs}s", "--warmup", "1s", *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads(p.stdout)["summary"]


def emit(lines, out):
    """Prints the report, and writes it to `out` if given."""
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need(tool, package):
    if shutil.which(tool):
        return
    if os.geteuid() != 0:
        sys.exit(f"{tool} is missing: apt-get install {package}")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


class Background:
    """A server process, stopped by its PID."""

    def __init__(self, args, env=None):
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def listening(port):
    """Whether something listens on the TCP port (read from /proc, without
    connecting: a probe connection would be taken by iperf3 -1 as its client)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def wait_port(port, proc, limit=10.0):
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc.p.poll() is not None:
            sys.exit(f"server exited early: {proc.p.args}")
        if listening(port):
            return
        time.sleep(0.05)
    sys.exit(f"server did not listen on port {port}")
