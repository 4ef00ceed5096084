#!/usr/bin/env python3
"""Test origin for atsgate's daemon tests, on loopback ephemeral ports.

HTTP: GET /small (100 bytes), GET /headers (the request head as received), GET /slow ("slow" after
0.3 s, a response still in flight when the client sends more), POST /echo (the body).
EOF echo: reads until the client half-closes, then answers "got N bytes" and closes; this proves a
proxy propagates half-close.
Prints "http=PORT eof=PORT" once both listen; exits when stdin closes.
"""
import http.server
import socket
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body, status=200):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/small":
            self.reply(b"a" * 100)
        elif self.path == "/slow":
            time.sleep(0.3)
            self.reply(b"slow\n")
        elif self.path.startswith("/headers"):
            head = self.requestline + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
            head += f"X-Origin-Saw-Port: {self.client_address[1]}\r\n"
            self.reply(head.encode())
        else:
            self.reply(b"not found\n", 404)

    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.reply(body)


def eof_echo(server):
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve_eof, args=(conn,), daemon=True).start()


def serve_eof(conn):
    total = 0
    with conn:
        conn.settimeout(10)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                total += len(data)
            conn.sendall(f"got {total} bytes\n".encode())
        except OSError:
            pass


def main():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    eof = socket.socket()
    eof.bind(("127.0.0.1", 0))
    eof.listen(64)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    threading.Thread(target=eof_echo, args=(eof,), daemon=True).start()
    print(f"http={httpd.server_address[1]} eof={eof.getsockname()[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
