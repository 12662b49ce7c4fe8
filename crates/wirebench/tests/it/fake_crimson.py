"""A stand-in for perf-crimson-msgr's client in the exec tests: it burns
CPU for SECONDS seconds, printing a per-second line as the real one does
(IOPS, MB/s, latency, then each client reactor's utilisation after '--'),
then its summary line. Standard library only.

usage: fake_crimson.py SECONDS
"""

import sys
import time

seconds = int(sys.argv[1])
print("    sec  depth      IOPS     MB/s  lat(ms) -- client reactor utilisation %,...", flush=True)
for k in range(seconds):
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        pass
    print(f"    1.00000  512 {1000 * (k + 1)}  {3.90625 * (k + 1)}  1.5 -- {50 + k},{60 + k},", flush=True)
print("    -------------- summary --------------")
print(f"    {seconds}.0     -{1000 * seconds} {3.90625 * seconds} 1.5", flush=True)
