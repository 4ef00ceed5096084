#!/usr/bin/env python3
"""The origin network of the transparent gate's lab (Tests/CLITests/TransparentGateTests.swift): every
service a lab device may try to reach, on the addresses given, in one process that runs until killed.

  --tls ADDRESS:PORT CERT KEY     TLS 1.2 and 1.3 (Python's ssl on the system OpenSSL), several
                                  connections at once (a proxy's certificate probe arrives while its
                                  client's handshake is open); answers any request with 200 and a body
                                  naming the Host it got and the certificate it served
  --tls10 ADDRESS:PORT CERT KEY   the same, TLS 1.0 only
  --http ADDRESS:PORT             plain HTTP/1.1: 200, the body naming the method, target and Host
  --raw ADDRESS:PORT              neither: answers each line the client sends with "raw: LINE"

ADDRESS may be IPv6 in brackets. Prints "ready" once every socket listens.
"""
import argparse
import signal
import socket
import ssl
import threading
import warnings

# TLS 1.0 is deprecated, which is the point: the lab needs an origin that speaks only that.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def listener(address):
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(64)
    return sock


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\r\n\r\n")[0].decode("latin-1")


def answer(conn, head, served):
    lines = head.split("\r\n")
    host = next((line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("host:")), "-")
    body = f"lab origin: {lines[0]} host={host} served={served}\n".encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                 % len(body) + body)


def serve_tls(conn, context, name):
    try:
        with context.wrap_socket(conn, server_side=True) as tls:
            tls.settimeout(10)
            head = read_head(tls)
            if head is not None:
                answer(tls, head, name)
    except (OSError, ssl.SSLError):
        pass


def serve_http(conn, _context, _name):
    try:
        conn.settimeout(10)
        head = read_head(conn)
        if head is not None:
            answer(conn, head, "http")
    except OSError:
        pass
    finally:
        conn.close()


def serve_raw(conn, _context, _name):
    try:
        conn.settimeout(10)
        with conn.makefile("rwb") as stream:
            for line in stream:
                stream.write(b"raw: " + line)
                stream.flush()
    except OSError:
        pass
    finally:
        conn.close()


def accept_loop(sock, handler, context, name):
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handler, args=(conn, context, name), daemon=True).start()


def tls_context(cert, key, tls10):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if tls10:
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1
        context.set_ciphers("ALL:@SECLEVEL=0")
    else:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls", nargs=3, action="append", default=[], metavar=("ADDRESS", "CERT", "KEY"))
    parser.add_argument("--tls10", nargs=3, action="append", default=[], metavar=("ADDRESS", "CERT", "KEY"))
    parser.add_argument("--http", action="append", default=[])
    parser.add_argument("--raw", action="append", default=[])
    args = parser.parse_args()
    services = []
    for (address, cert, key), tls10 in [(t, False) for t in args.tls] + [(t, True) for t in args.tls10]:
        name = cert.rsplit("/", 1)[-1].removesuffix(".pem")
        services.append((listener(address), serve_tls, tls_context(cert, key, tls10), name))
    services += [(listener(address), serve_http, None, "http") for address in args.http]
    services += [(listener(address), serve_raw, None, "raw") for address in args.raw]
    for sock, handler, context, name in services:
        threading.Thread(target=accept_loop, args=(sock, handler, context, name), daemon=True).start()
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main()
