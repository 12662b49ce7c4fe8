#!/usr/bin/env python3
"""Reads a wirebench --hlog file with HdrHistogram_py (an implementation
independent of wirebench's) and prints the measured phase's count, p50, p99
and max in nanoseconds, as JSON. Warm-up intervals (tagged) are skipped.

    python3 scripts/hlog_summary.py FILE      (needs: pip install hdrhistogram)
"""

import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

HIGHEST_NS = 3_600_000_000_000


def main():
    reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, HIGHEST_NS, 3))
    total = HdrHistogram(1, HIGHEST_NS, 3)
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        if h.get_tag():
            continue
        total.add(h)
    print(json.dumps({
        "count": total.get_total_count(),
        "p50_ns": total.get_value_at_percentile(50),
        "p99_ns": total.get_value_at_percentile(99),
        "max_ns": total.get_max_value(),
    }))


if __name__ == "__main__":
    main()
