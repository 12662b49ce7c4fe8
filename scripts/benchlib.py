"""What the benchmark scripts share: CPU choice, and the Markdown report
(a table of measurements, then a table of ratios against their targets)."""

import os
import platform
import statistics
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
