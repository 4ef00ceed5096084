#!/usr/bin/env python3
"""Counts allocation calls per forwarded request and per tunnel of an atsgate binary (LD_PRELOAD
malloccount.so): runs the daemon twice per workload, with N and 2N units, and prints the difference
per unit, which start-up and shutdown cancel out of."""
import os, socket, subprocess, sys, threading, time, http.server, socketserver
BIN = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
HERE = os.path.dirname(os.path.abspath(__file__))
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = b"x" * 100
        self.send_response(200); self.send_header("Content-Length", "100"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer): daemon_threads = True
origin = S(("127.0.0.1", 0), H); oport = origin.server_address[1]
threading.Thread(target=origin.serve_forever, daemon=True).start()
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def read_response(f):
    status = f.readline(); length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""): break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    f.read(length); return status
def forward(port, n):
    s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")
    req = f"GET http://127.0.0.1:{oport}/small HTTP/1.1\r\nHost: 127.0.0.1:{oport}\r\n\r\n".encode()
    for _ in range(n):
        s.sendall(req); assert read_response(f).startswith(b"HTTP/1.1 200"), "forward failed"
    s.close()
def tunnels(port, n):
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")
        s.sendall(f"CONNECT 127.0.0.1:{oport} HTTP/1.1\r\nHost: 127.0.0.1:{oport}\r\n\r\n".encode())
        assert read_response(f).startswith(b"HTTP/1.1 200")
        s.sendall(f"GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        read_response(f); s.close()
def run(work, n):
    port = free_port(); out = f"/tmp/malloccount.{os.getpid()}.{port}"
    env = dict(os.environ, LD_PRELOAD=os.environ["MALLOCCOUNT_SO"], MALLOCCOUNT_OUT=out)
    args = [BIN, "run", "--listen", f"127.0.0.1:{port}", "--connect-port", str(oport), "--loops", "1",
            "--log-file", "/dev/null",
            "--policy", HERE + "/arbitrary.plist"]
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(100):
        try: socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.05)
    work(port, n); time.sleep(0.3); p.terminate(); p.wait(10)
    line = open(out).read().split(); os.unlink(out)
    return sum(int(line[i]) for i in (3, 5, 7, 9))
for name, work in (("forwarded request", forward), ("tunnel", tunnels)):
    a = run(work, N); b = run(work, 2 * N)
    print(f"{os.path.basename(BIN)}: allocations per {name}: {(b - a) / N:.2f}")
