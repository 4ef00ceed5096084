#!/usr/bin/env python3
"""A post-quantum TLS peer for the tests: pyOpenSSL on the OpenSSL the `cryptography` wheel bundles
(4.x), which offers and accepts X25519MLKEM768 by default. The system OpenSSL (3.0) cannot.

Runs from the venv scripts/install-test-tools makes (.build-venv, pinned by Tests/Fixtures/requirements-pq.txt).

  pq_peer.py server --cert CERT --key KEY [--groups LIST] [--max TLSv1_2]
      Prints "port=PORT" once listening on 127.0.0.1; serves connections concurrently, answering every
      request with 200 and the body "ok from pq_peer group=GROUP"; exits when stdin closes.
  pq_peer.py client --connect HOST:PORT [--proxy HOST:PORT] [--servername NAME] [--groups LIST]
                    [--max TLSv1_2] [--user-agent TEXT]
      One HTTPS request, through an HTTP proxy's CONNECT when --proxy is given (certificates are not
      verified: the tests judge the proxy, not the peer). Prints one JSON line: the negotiated version
      and group, the HTTP status line, or the error. Exit 0 when the request got an answer.

--groups is OpenSSL's groups list (SSL_CTX_set1_groups_list): "X25519MLKEM768:x25519" offers both
and sends a key share for the first only; "x25519:X25519MLKEM768" sends one for x25519 only, so a
server preferring the hybrid answers with a HelloRetryRequest. OpenSSL 3.5+'s tuple syntax works too.
"""
import argparse
import json
import socket
import struct
import sys
import threading

from OpenSSL import SSL
from OpenSSL._util import ffi, lib  # pyOpenSSL's own bindings: groups have no public API

VERSIONS = {"TLSv1_2": SSL.TLS1_2_VERSION, "TLSv1_3": SSL.TLS1_3_VERSION}


def context(args, server):
    ctx = SSL.Context(SSL.TLS_METHOD)
    if args.max:
        ctx.set_max_proto_version(VERSIONS[args.max])
    if server:
        ctx.use_certificate_chain_file(args.cert)  # the leaf, then any intermediates in the file
        ctx.use_privatekey_file(args.key)
    if args.groups and lib.SSL_CTX_set1_curves_list(ctx._context, args.groups.encode()) != 1:
        sys.exit(f"pq_peer: OpenSSL refused the groups list {args.groups!r}")
    return ctx


def group(conn):
    """The group the handshake used, as OpenSSL names it (X25519MLKEM768, x25519, secp256r1...)."""
    name = lib.SSL_get0_group_name(conn._ssl)
    return ffi.string(name).decode() if name != ffi.NULL else None


def bound(sock, seconds=10):
    """A blocking socket whose reads and writes give up after `seconds`: pyOpenSSL cannot use Python's
    socket timeouts, which make the socket non-blocking underneath."""
    sock.settimeout(None)
    timeval = struct.pack("ll", seconds, 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    return sock


def serve(sock, ctx):
    conn = SSL.Connection(ctx, bound(sock))
    conn.set_accept_state()
    try:
        conn.do_handshake()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        body = f"ok from pq_peer group={group(conn)}\n".encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        conn.shutdown()
    except (OSError, SSL.Error):
        pass
    finally:
        sock.close()


def run_server(args):
    ctx = context(args, server=True)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def accept():
        while True:
            sock, _ = listener.accept()
            threading.Thread(target=serve, args=(sock, ctx), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"port={listener.getsockname()[1]}", flush=True)
    sys.stdin.read()


def run_client(args):
    host, port = args.connect.rsplit(":", 1)
    result = {"version": None, "group": None, "status": None, "error": None}
    try:
        if args.proxy:
            proxy_host, proxy_port = args.proxy.rsplit(":", 1)
            sock = socket.create_connection((proxy_host, int(proxy_port)), timeout=10)
            agent = f"User-Agent: {args.user_agent}\r\n" if args.user_agent else ""
            sock.sendall(f"CONNECT {args.connect} HTTP/1.1\r\nHost: {args.connect}\r\n{agent}\r\n".encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
            if not answer.startswith(b"HTTP/1.1 200"):
                status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
                raise OSError(f"CONNECT answered {status!r}")
        else:
            sock = socket.create_connection((host, int(port)), timeout=10)
        conn = SSL.Connection(context(args, server=False), bound(sock))
        if args.servername:
            conn.set_tlsext_host_name(args.servername.encode())
        conn.set_connect_state()
        conn.do_handshake()
        result["version"] = conn.get_protocol_version_name()
        result["group"] = group(conn)
        conn.sendall(f"GET / HTTP/1.1\r\nHost: {args.servername or host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            try:
                chunk = conn.recv(4096)
            except SSL.ZeroReturnError:
                break
            except SSL.SysCallError:
                # A server that closes without close_notify (Python's ssl does): the answer is whole
                # when it is delimited, as curl takes it too.
                break
            if not chunk:
                break
            data += chunk
        result["status"] = data.split(b"\r\n", 1)[0].decode(errors="replace")
        result["body"] = data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    except (OSError, SSL.Error) as error:
        result["error"] = str(error) or type(error).__name__
    print(json.dumps(result), flush=True)
    return 0 if result["status"] else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    server = sub.add_parser("server")
    server.add_argument("--cert", required=True)
    server.add_argument("--key", required=True)
    client = sub.add_parser("client")
    client.add_argument("--connect", required=True)
    client.add_argument("--proxy")
    client.add_argument("--servername")
    client.add_argument("--user-agent", help="sent in the CONNECT request (a proxy may route by it)")
    for mode in (server, client):
        mode.add_argument("--groups")
        mode.add_argument("--max", choices=sorted(VERSIONS))
    args = parser.parse_args()
    if args.mode == "server":
        run_server(args)
        return 0
    return run_client(args)


if __name__ == "__main__":
    sys.exit(main())
