#!/usr/bin/env python3
"""A client that speaks TLS to the proxy (its TLS listener), for the daemon tests that need what curl
cannot do: after CONNECT it sends COUNT bytes through the tunnel, then half-closes its side (a TCP FIN,
without close_notify, as a client that is done sending does), and prints everything that comes back
until the proxy ends the stream. Exit status 0 when the tunnel was established.

Usage: tls_proxy_client.py --port PORT --cafile CA --connect HOST:PORT --bytes COUNT
"""
import argparse
import socket
import ssl
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--connect", required=True)
    parser.add_argument("--bytes", type=int, required=True)
    args = parser.parse_args()

    context = ssl.create_default_context(cafile=args.cafile)
    raw = socket.create_connection(("127.0.0.1", args.port), timeout=20)
    tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
    tls.sendall(f"CONNECT {args.connect} HTTP/1.1\r\nHost: {args.connect}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = tls.recv(4096)
        if not chunk:
            print(f"proxy closed before answering: {head!r}", file=sys.stderr)
            return 1
        head += chunk
    if not head.startswith(b"HTTP/1.1 200 "):
        print(f"CONNECT answered: {head!r}", file=sys.stderr)
        return 1
    tls.sendall(b"0123456789" * (args.bytes // 10) + b"x" * (args.bytes % 10))
    # The TCP socket's own shutdown: SSLSocket.shutdown would drop the TLS state, and reading on is
    # the point.
    socket.socket.shutdown(tls, socket.SHUT_WR)
    answer = b""
    try:
        while True:
            chunk = tls.recv(65536)
            if not chunk:
                break
            answer += chunk
    except ssl.SSLError as error:
        print(f"TLS error after {len(answer)} bytes: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(answer.decode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
