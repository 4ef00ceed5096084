#!/usr/bin/env python3
"""An origin that witnesses every connection it accepts, for the destination ACL's tests.

Usage: witness_origin.py HOST:PORT [HOST:PORT ...]   (an IPv6 host in brackets; [::] takes IPv4 too)
Prints "listening" once every address is bound, then one line per accepted connection:
"accepted LOCAL from PEER" (flushed at once), and answers each HTTP request with 200 "witness".
The test reads these lines: a denied destination must leave none. Exits when stdin closes.
"""
import socket
import sys
import threading


def serve(conn, local, peer):
    print(f"accepted {local} from {peer}", flush=True)
    with conn:
        conn.settimeout(10)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n"
                         b"Connection: close\r\n\r\nwitness\n")
        except OSError:
            pass


def accept_loop(server):
    while True:
        conn, peer = server.accept()
        local = conn.getsockname()
        threading.Thread(target=serve, args=(conn, f"{local[0]}:{local[1]}", f"{peer[0]}:{peer[1]}"),
                         daemon=True).start()


def listen(spec):
    host, _, port = spec.rpartition(":")
    if host.startswith("["):
        server = socket.socket(socket.AF_INET6)
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        host = host[1:-1]
    else:
        server = socket.socket(socket.AF_INET)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen(64)
    return server


def main():
    servers = [listen(spec) for spec in sys.argv[1:]]
    for server in servers:
        threading.Thread(target=accept_loop, args=(server,), daemon=True).start()
    print("listening", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
