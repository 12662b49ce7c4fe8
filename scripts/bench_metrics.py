#!/usr/bin/env python3
"""What live metrics cost the run they observe (issue 46).

A closed loop (the default msgr echo, release build, client and server on
CPUs of their own) with `--metrics-listen`, in rounds of two variants in
turn: nobody scrapes, and a scraper asks for the page 100 times a second
on one kept-alive connection. The ratio of their medians (ops/s scraped /
not) is the cost; the target is 0.98 or more (issue 46: within 2%). The
scraper's own CPU (this Python process) counts against the scraped
variant: the figure is an upper bound of wirebench's cost.

    python3 scripts/bench_metrics.py [--rounds 8] [--secs 5] [--out FILE.md]
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


class Scraper:
    """GET /metrics every 10 ms on one kept-alive connection (a new one
    when the listener closes it)."""

    def __init__(self, port, rate=100):
        self.port, self.rate = port, rate
        self.ok = self.failed = 0
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def one(self, s):
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(65536)
            if not d:
                raise OSError("closed")
            head += d
        top, rest = head.split(b"\r\n\r\n", 1)
        length = next(int(l.split(b":")[1]) for l in top.split(b"\r\n") if l.lower().startswith(b"content-length"))
        while len(rest) < length:
            d = s.recv(65536)
            if not d:
                raise OSError("closed")
            rest += d
        return top.split(b" ")[1] == b"200"

    def run(self):
        s, next_at = None, time.monotonic()
        while not self.stop:
            try:
                if s is None:
                    s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                if self.one(s):
                    self.ok += 1
                else:
                    self.failed += 1
            except (OSError, StopIteration, ValueError):
                self.failed += 1
                if s is not None:
                    s.close()
                s = None
            next_at += 1 / self.rate
            time.sleep(max(0, next_at - time.monotonic()))
        if s is not None:
            s.close()


def one_run(results, client, server, secs, scraped):
    port = benchlib.free_port()
    cmd = [benchlib.WB, "run", "--results", results, "--format", "json", "--client-cpus", str(client),
           "--server-cpus", str(server), "--duration", f"{secs}s", "--warmup", "1s",
           "--metrics-listen", f"127.0.0.1:{port}"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    scraper = None
    if scraped:
        deadline = time.monotonic() + 20
        while not benchlib.listening(port):
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{' '.join(cmd)}: no listener on {port}:\n{p.stderr.read()}")
            time.sleep(0.05)
        scraper = Scraper(port)
    out, err = p.communicate()
    if scraper:
        scraper.stop = True
        scraper.t.join()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    ops = json.loads(out)["summary"]["ops_per_s"]
    return ops, (scraper.ok, scraper.failed) if scraper else (0, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    client, server = benchlib.usable_cpus()
    figures = {"quiet": [], "scraped": [], "scrapes": []}
    ratios = []
    with tempfile.TemporaryDirectory(prefix="wb-bench-metrics.") as results:
        for r in range(a.rounds):
            # Interleaved, the order swapped each round.
            order = [False, True] if r % 2 == 0 else [True, False]
            got = {}
            for scraped in order:
                ops, (ok, failed) = one_run(results, client, server, a.secs, scraped)
                got[scraped] = ops
                if scraped:
                    figures["scrapes"].append(ok / (a.secs + 1))
                    if failed:
                        print(f"round {r + 1}: {failed} scrapes failed", file=sys.stderr)
            figures["quiet"].append(got[False])
            figures["scraped"].append(got[True])
            ratios.append(got[True] / got[False])
            print(f"round {r + 1}: quiet {got[False]:,.0f} ops/s, scraped {got[True]:,.0f} ops/s, "
                  f"ratio {ratios[-1]:.3f}", file=sys.stderr)
    lines = benchlib.report(
        ["# Live metrics: what 100 scrapes a second cost a closed loop", "",
         benchlib.machine_line(client, server),
         f"{a.rounds} rounds of two {a.secs} s runs (1 s warm-up), in turn; the metrics thread runs off "
         "the client's CPU. The scraper (Python, on this host) counts against the scraped variant.",
         "", "    python3 scripts/bench_metrics.py" + (f" --rounds {a.rounds}" if a.rounds != 8 else "")],
        figures,
        {"quiet": ("ops/s, nobody scrapes", "{:,.0f}"),
         "scraped": ("ops/s, 100 scrapes/s", "{:,.0f}"),
         "scrapes": ("scrapes served per second", "{:.0f}")},
        [("ops/s scraped / quiet (per round)", ratios, ">= 0.98"),
         ("median scraped / median quiet", [statistics.median(figures["scraped"]) / statistics.median(figures["quiet"])],
          ">= 0.98")],
    )
    benchlib.emit(lines, a.out)


if __name__ == "__main__":
    main()
