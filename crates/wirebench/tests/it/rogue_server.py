"""A small echo server for the observation tests (`--mode rr`: every
request of SIZE bytes is answered with the same bytes), with one thread
named `rogue` that moves itself to CPU 0 and burns CPU there: whatever
cpuset the server was given, that thread runs outside it.

usage: rogue_server.py PORT SIZE
Prints "ready on PORT" once it listens, and which allocator library its
process has mapped (to check an LD_PRELOAD given as --server-env).

With ROGUE_BURST=S in its environment, S seconds after its first
connection a thread named `burst` burns CPU for 0.3 s and ends: a thread
that begins and ends between two of the run's once-a-second looks."""

import os
import socket
import sys
import threading
import time

port, size = int(sys.argv[1]), int(sys.argv[2])


def name_thread(name):
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write(name)


def rogue():
    name_thread("rogue")
    os.sched_setaffinity(0, {0})
    # About a third of CPU 0, until the process is stopped.
    while True:
        end = time.monotonic() + 0.01
        while time.monotonic() < end:
            pass
        time.sleep(0.02)


def burst(after):
    time.sleep(after)

    def burn():
        name_thread("burst")
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass

    threading.Thread(target=burn, daemon=True).start()


def serve(conn):
    name_thread("echo-conn")
    with conn:
        while True:
            buf = b""
            while len(buf) < size:
                chunk = conn.recv(size - len(buf))
                if not chunk:
                    return
                buf += chunk
            conn.sendall(buf)


threading.Thread(target=rogue, daemon=True).start()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
with open("/proc/self/maps") as f:
    libs = sorted({l.split()[-1].rsplit("/", 1)[-1] for l in f if "malloc" in l})
print("allocators mapped:", " ".join(libs) or "none", flush=True)
print(f"ready on {port}", flush=True)
first = True
while True:
    conn, _ = srv.accept()
    if first and os.environ.get("ROGUE_BURST"):
        threading.Thread(target=burst, args=(float(os.environ["ROGUE_BURST"]),), daemon=True).start()
    first = False
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
