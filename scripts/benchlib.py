"""What the benchmark scripts share: CPU choice, and the Markdown report
(a table of measurements, then a table of ratios against their targets)."""

import json
import os
import platform
import statistics
import subprocess
import sys


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
    """'yes' or 'NO' for a target such as '<= 1.2' or '>= 0.8'; '' for any other text."""
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
