#!/usr/bin/env python3
"""The screenshots of docs/reproducing.md, made again.

Runs each spec of specs/reports/ at its small scale (unless its results are
already in RESULTS), draws its report, and photographs in headless
Chromium every figure and table the page lists: a page per picture, holding
the report's own elements (figures found by their titles, tables by their
headings) or a command's terminal output, sized to what it holds.

    scripts/shots.py [--results DIR] [--out docs/images/reproducing] [NAME...]

NAME: the pictures to make (all by default). Needs a release build
(target/release/wirebench), chromium and, for the flamegraphs, perf.
"""

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
WB = os.path.join(ROOT, "target/release/wirebench")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# A picture: its file, the experiment (spec) it comes from, and its parts:
#   ("fig", TITLE)      every figure whose title starts with TITLE
#   ("table", HEADING)  the table under the heading that starts with HEADING
#   ("section", HEADING) everything under that heading, to the next one
#   ("cmd", ARGS)       the output of `wirebench ARGS` ({exp}: the results)
#   ("svg", ARGS)       `wirebench ARGS` run, the server's flamegraph it drew
SHOTS = [
    ("messenger-fig-1-1", "messenger", [("fig", "Throughput vs clients")]),
    ("messenger-table", "messenger", [("cmd", ["table", "{exp}"])]),
    ("messenger-cpu", "messenger", [("fig", "CPU busy per core")]),
    ("messenger-contention", "contention", [("table", "Instances")]),
    ("messenger-flame", None,
     [("svg", ["flame", "--merge-threads", "--duration", "3s", "--depth", "16"])]),
    ("ipc-csv", "ipc", [("cmd", ["table", "{exp}", "--format", "ipc"])]),
    ("ipc-mt-mp", "ipc", [("fig", "Throughput vs clients")]),
    ("ipc-datachannel-csv", "ipc-datachannel",
     [("cmd", ["table", "{exp}", "--format", "ipc"])]),
    ("ipc-datachannel-fig", "ipc-datachannel", [("fig", "Throughput vs clients")]),
    ("s3-summary", "s3", [("table", "Summary")]),
    ("s3-read-write", "s3", [("table", "Read and write")]),
    ("s3-ttfb-histogram", "s3", [("fig", "Time to first byte")]),
    ("timeline-table", "timeline", [("section", "Timeline of the client")]),
    ("timeline-sink", "timeline", [("fig", "2. response received")]),
    ("osd-iops", "osd", [("fig", "Throughput vs size")]),
    ("osd-latency", "osd", [("fig", "Latency-response")]),
    ("osd-server", "osd",
     [("table", "Server"), ("fig", "Ops/s per server core used")]),
]

# The contention table: two instances side by side, and each alone.
CONTENTION = """\
name = "contention"
[base]
transport = "msgr"
size = "4KiB"
depth = 16
duration = "2s"
warmup = "500ms"
clients = 2
alone = true
[matrix]
instances = [1, 2]
"""

STYLE_EXTRA = "body{margin:12px;display:inline-block}pre{margin:0}"


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def experiment(results, name):
    """The small scale of specs/reports/NAME.toml (or the contention
    study), run once, and its report."""
    if name == "contention":
        exp = contention(results)
    else:
        exp = os.path.join(results, f"{name}-small")
    if not os.path.isdir(exp):
        spec = os.path.join(ROOT, "specs/reports", f"{name}.toml")
        run([WB, "sweep", spec, "--scale", "small", "--results", results])
    page = os.path.join(results, f"{name}.html")
    run([WB, "report", exp, "-o", page, "--force"])
    return exp, open(page, encoding="utf-8").read()


def contention(results):
    exp = os.path.join(results, "contention")
    if not os.path.isdir(exp):
        spec = os.path.join(results, "contention.toml")
        with open(spec, "w") as f:
            f.write(CONTENTION)
        run([WB, "sweep", spec, "--results", results])
    return exp


def style_of(page):
    m = re.search(r"<style>(.*?)</style>", page, re.S)
    return m.group(1) if m else ""


def figures(page, title):
    out = []
    for fig in re.findall(r'<figure id="fig\d+" class="plot">.*?</figure>', page, re.S):
        first = re.search(r"<text[^>]*>\s*(.*?)\s*</text>", fig, re.S)
        if first and html.unescape(first.group(1)).startswith(title):
            out.append(fig)
    if not out:
        sys.exit(f"no figure titled {title!r}")
    return out


def section(page, heading, table_only):
    parts = re.split(r"(?=<h2>)", page)
    for p in parts:
        m = re.match(r"<h2>(.*?)</h2>", p, re.S)
        if m and html.unescape(m.group(1)).startswith(heading):
            if table_only:
                t = re.search(r"<table.*?</table>", p, re.S)
                if not t:
                    sys.exit(f"no table under {heading!r}")
                return m.group(0) + t.group(0)
            return p.split("<h2>Figures")[0]
    sys.exit(f"no heading {heading!r}")


def terminal(args, results):
    out = run([WB] + args)
    shown = " ".join(args).replace(results.rstrip("/") + "/", "results/")
    return f"<pre>$ wirebench {html.escape(shown)}\n{html.escape(out.stdout)}</pre>"


def chromium(url, profile, *extra):
    return run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--hide-scrollbars", "--no-first-run",
                f"--user-data-dir={profile}", *extra, url])


def photograph(body, style, png, profile):
    """A page holding `body`, photographed at the size of what it holds."""
    # The page says its size in its title, measured once laid out (the
    # script runs last, after what it measures).
    measure = ("<script>const r=document.body.getBoundingClientRect();"
               "document.title=Math.ceil(r.right+12)+'x'+Math.ceil(r.bottom+12);</script>")
    page = os.path.join(os.path.dirname(profile), os.path.basename(png)[:-4] + ".html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>?</title>"
                f"<style>{style}{STYLE_EXTRA}</style></head><body>{body}{measure}</body></html>")
    url = "file://" + page
    dom = chromium(url, profile, "--window-size=3000,3000", "--dump-dom").stdout
    size = re.search(r"<title>(\d+)x(\d+)</title>", dom)
    if not size:
        sys.exit(f"{png}: the page did not say its size")
    w, h = int(size.group(1)), int(size.group(2))
    chromium(url, profile, f"--window-size={w},{h}", f"--screenshot={png}")
    os.remove(page)
    return w, h


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "target/shots"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/images/reproducing"))
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if not os.access(WB, os.X_OK):
        sys.exit("no release build: cargo build --release")
    os.makedirs(a.results, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    wanted = [s for s in SHOTS if not a.names or s[0] in a.names]
    with tempfile.TemporaryDirectory(prefix="wirebench-shots-") as tmp:
        profile = os.path.join(tmp, "profile")
        for name, spec, parts in wanted:
            exp, page = experiment(a.results, spec) if spec else (None, "")
            style = style_of(page) or style_of(experiment(a.results, "ipc")[1])
            body = []
            for kind, what in parts:
                if kind == "fig":
                    body.extend(figures(page, what))
                elif kind in ("table", "section"):
                    body.append(section(page, what, kind == "table"))
                elif kind == "cmd":
                    args = [x.format(exp=exp) for x in what]
                    body.append(terminal(args, a.results))
                elif kind == "svg":
                    out = run([WB] + what + ["--results", a.results])
                    svg = re.search(r"flamegraph of the server: (\S+\.svg)", out.stdout + out.stderr)
                    if not svg:
                        sys.exit(f"{name}: no flamegraph: {out.stderr[-2000:]}")
                    body.append(f"<pre>$ wirebench {html.escape(' '.join(what))}\n"
                                f"flamegraph of the server: RUN/flame-server.svg</pre>")
                    # As a picture: inferno's script lays it out for a page of its own.
                    # (its size given: the page measures itself before it loads)
                    head = open(svg.group(1), encoding="utf-8").read(4000)
                    w, h = (re.search(f'<svg[^>]* {k}="(\\d+)"', head).group(1)
                            for k in ("width", "height"))
                    body.append(f'<img src="file://{svg.group(1)}" width="{w}" height="{h}">')
            png = os.path.join(a.out, f"{name}.png")
            w, h = photograph("\n".join(body), style, png, profile)
            print(f"{png}: {w}x{h}")


if __name__ == "__main__":
    main()
