#!/usr/bin/env python3
"""A caIssuers server for the AIA tests, on a loopback ephemeral port, serving OUTDIR (make-trust-store.py's).

GET /int-a.cer           int-a in DER                 GET /int-a.p7c    int-a as a PKCS#7 certs-only bundle
GET /chunked/int-a.cer   the same, chunked            GET /redirect/X   302 to /X
GET /slow                answers after 10 s           GET /huge         Content-Length: 10 MB (sends 1 MB)
GET /huge-stream         1 MB without a length        GET /garbage      200 with text that is no certificate
GET /loop                302 to itself                anything else     404
An absolute-form target (GET http://HOST:PORT/PATH) is answered the same, as a parent proxy would.
Prints "PORT N" once it listens, then "GET TARGET [Proxy-Authorization: ...]" for each request; exits when
stdin closes.
Usage: aia_server.py OUTDIR
"""
import http.server
import os
import sys
import threading
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    directory = "."

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if not any(name == "Content-Length" for name, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        line = f"GET {self.path}"
        if self.headers.get("Proxy-Authorization"):
            line += f" Proxy-Authorization: {self.headers['Proxy-Authorization']}"
        print(line, flush=True)
        path = urllib.parse.urlsplit(self.path).path
        certificate = os.path.join(self.directory, "int-a.der")
        if path == "/int-a.cer":
            self.answer(200, open(certificate, "rb").read(), [("Content-Type", "application/pkix-cert")])
        elif path == "/int-a.p7c":
            self.answer(200, open(os.path.join(self.directory, "aia-leaves", "int-a.p7c"), "rb").read(),
                        [("Content-Type", "application/pkcs7-mime")])
        elif path == "/chunked/int-a.cer":
            body = open(certificate, "rb").read()
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for start in range(0, len(body), 300):
                chunk = body[start:start + 300]
                self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path.startswith("/redirect/"):
            self.answer(302, headers=[("Location", path[len("/redirect"):])])
        elif path == "/loop":
            self.answer(302, headers=[("Location", "/loop")])
        elif path == "/slow":
            time.sleep(10)
            self.answer(200, open(certificate, "rb").read())
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10 * 1024 * 1024))
            self.end_headers()
            self.wfile.write(b"\x00" * (1024 * 1024))
        elif path == "/huge-stream":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"\x30" * (1024 * 1024))
        elif path == "/garbage":
            self.answer(200, b"this is not a certificate\n")
        else:
            self.answer(404, b"not found\n")


def main():
    Handler.directory = sys.argv[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
