#!/usr/bin/env python3
"""A raw proxy client that sends request targets exactly as written, for spellings curl would
normalise before sending (2130706433, 0x7f.1, [::ffff:127.0.0.1]).

Usage: proxy_client.py [--source ADDRESS] PROXY_HOST:PORT REQUEST...   where REQUEST is "GET http://HOST:PORT/PATH" or
"CONNECT HOST:PORT". Each request goes on its own connection; a CONNECT answered 200 then carries
"GET / HTTP/1.1" through the tunnel. Prints one JSON object per request:
{"request": ..., "status": N, "reason": X-ATS-Reason or null, "body": the answer's body (first 400 bytes)}.
"""
import json
import socket
import sys


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def read_body(sock, head, rest):
    length = None
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while length is not None and len(rest) < length:
        chunk = sock.recv(4096)
        if not chunk:
            break
        rest += chunk
    return rest.decode("utf-8", "replace")[:400]


def one(proxy, request, source):
    host, _, port = proxy.rpartition(":")
    method, target = request.split(" ", 1)
    authority = target.split("/")[2] if method != "CONNECT" else target
    sock = socket.create_connection((host, int(port)), timeout=10, source_address=(source, 0) if source else None)
    with sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
        head, rest = read_head(sock)
        status = int(head.split(" ")[1]) if head.startswith("HTTP/1.1 ") else 0
        reason = None
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "x-ats-reason":
                reason = value.strip()
        if method == "CONNECT" and status == 200:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: tunnel\r\n\r\n")
            inner, rest = read_head(sock)
            return {"request": request, "status": status, "reason": reason, "body": read_body(sock, inner, rest)}
        return {"request": request, "status": status, "reason": reason, "body": read_body(sock, head, rest)}


def main():
    arguments = sys.argv[1:]
    source = None
    if arguments[0] == "--source":
        source, arguments = arguments[1], arguments[2:]
    proxy = arguments[0]
    for request in arguments[1:]:
        try:
            result = one(proxy, request, source)
        except OSError as error:
            result = {"request": request, "status": 0, "reason": None, "body": str(error)}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
