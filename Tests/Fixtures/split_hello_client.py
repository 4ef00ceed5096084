#!/usr/bin/env python3
"""A TLS client that sends its ClientHello one byte per TCP segment (TCP_NODELAY, a pause between
sends), then finishes the handshake and a GET as any client would: what a transparent proxy must put
together before it can read the server name.

usage: split_hello_client.py HOST PORT SERVERNAME CAFILE
Prints the response's first line, or "failed: WHY" (exit 1).
"""
import socket
import ssl
import sys
import time


def main():
    host, port, name, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    context = ssl.create_default_context(cafile=cafile)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    sock = socket.create_connection((host, port), timeout=8)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def receive():
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the connection closed")
        incoming.write(chunk)

    first = True
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            data = outgoing.read()
            if first:
                for byte in data:
                    sock.send(bytes([byte]))
                    time.sleep(0.001)
                first = False
            elif data:
                sock.sendall(data)
            receive()
    tls.write(b"GET /split HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name.encode())
    sock.sendall(outgoing.read())
    response = b""
    while b"\r\n" not in response:
        try:
            response += tls.read(65536)
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
            receive()
    print(response.split(b"\r\n")[0].decode(), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the test prints what went wrong
        print(f"failed: {error}", flush=True)
        sys.exit(1)
