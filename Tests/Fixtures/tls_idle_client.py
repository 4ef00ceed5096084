#!/usr/bin/env python3
"""A client that speaks TLS to the proxy (its TLS listener) and keeps its connection alive between
requests, for the upgrade test: one GET of URL, then it waits for a line on stdin (the test upgrades
the daemon meanwhile), then sends its next request on the same connection and says what became of
it, then one GET on a fresh connection. Prints one line per step:
  first STATUS | second STATUS | second closed | fresh STATUS

Usage: tls_idle_client.py --port PORT --cafile CA --url URL
"""
import argparse
import socket
import ssl
import sys


def exchange(tls, url):
    """One GET of url (absolute form, kept alive); the status, or None when the connection ended."""
    tls.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(4096)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = tls.recv(4096)
        if not chunk:
            return None
        body += chunk
    return head.split(b" ")[1].decode()


def connect(port, context):
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(cafile=args.cafile)
    tls = connect(args.port, context)
    print(f"first {exchange(tls, args.url)}", flush=True)
    sys.stdin.readline()
    try:
        status = exchange(tls, args.url)
    except (ssl.SSLError, OSError):
        status = None
    print(f"second {status or 'closed'}", flush=True)
    print(f"fresh {exchange(connect(args.port, context), args.url)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
