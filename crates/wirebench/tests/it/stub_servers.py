"""Servers that misbehave on purpose, for the tests of wirebench's timeouts
and of Ctrl-C: no real server hangs on demand. Standard library only.

    python3 stub_servers.py silent
        accepts TCP connections, reads what comes, never answers.
    python3 stub_servers.py s3-hang K
        an S3 endpoint (HTTP/1.1, no signature checks) that answers the
        bucket check, takes K PUTs, then never answers a PUT again; it
        answers DELETEs and prints "DELETE <path>" for each.

Each listens on a free 127.0.0.1 port and prints "listening PORT" first.
"""

import http.server
import socket
import sys
import threading
import time


def silent():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print(f"listening {srv.getsockname()[1]}", flush=True)
    held = []

    def drain(c):
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass

    while True:
        c, _ = srv.accept()
        held.append(c)
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def s3_hang(k):
    puts = [0]
    lock = threading.Lock()

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def empty(self, status):
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_HEAD(self):
            self.empty(200)

        def do_GET(self):
            body = b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult></ListBucketResult>'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self):
            n = int(self.headers.get("Content-Length", "0"))
            while n > 0:
                got = self.rfile.read(min(n, 65536))
                if not got:
                    return
                n -= len(got)
            with lock:
                puts[0] += 1
                mine = puts[0]
            if mine > k:
                time.sleep(3600)
            self.send_response(200)
            self.send_header("ETag", '"0"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self):
            print(f"DELETE {self.path.split('?')[0]}", flush=True)
            self.empty(204)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    print(f"listening {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "silent":
        silent()
    elif sys.argv[1] == "s3-hang":
        s3_hang(int(sys.argv[2]))
    else:
        sys.exit(f"unknown stub {sys.argv[1]}")
