#!/usr/bin/env python3
"""A concurrent TLS origin for the daemon tests (Python's ssl module over the system OpenSSL).

openssl s_server serves one connection at a time; a proxy that probes the server while its client's
own handshake is open needs a server that accepts a second connection meanwhile, as real ones do.

Usage: tls_origin.py --cert CERT --key KEY [--chain FILE] [--min TLSv1|TLSv1_1|TLSv1_2|TLSv1_3]
                     [--max ...] [--ciphers OPENSSL-CIPHER-LIST] [--curve GROUP] [--no-ems]
Prints "port=PORT" once listening on 127.0.0.1; answers every request with 200 "ok from tls_origin";
exits when stdin closes.
"""
import argparse
import socket
import ssl
import sys
import threading
import warnings

# TLS 1.0 and 1.1 are deprecated, which is the point: the tests need servers that speak them.
warnings.filterwarnings("ignore", category=DeprecationWarning)

VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1_1": ssl.TLSVersion.TLSv1_1,
    "TLSv1_2": ssl.TLSVersion.TLSv1_2,
    "TLSv1_3": ssl.TLSVersion.TLSv1_3,
}


def serve(conn, context):
    try:
        with context.wrap_socket(conn, server_side=True) as tls:
            tls.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = tls.recv(4096)
                if not chunk:
                    return
                data += chunk
            body = b"ok from tls_origin\n"
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    except (OSError, ssl.SSLError):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--chain")
    parser.add_argument("--min", default="TLSv1")
    parser.add_argument("--max", default="TLSv1_3")
    parser.add_argument("--ciphers", default="ALL:@SECLEVEL=0")
    parser.add_argument("--curve", help="the only key-exchange group, e.g. secp384r1 (forces a TLS 1.3 "
                        "HelloRetryRequest from clients that offer another key share first)")
    parser.add_argument("--no-ems", action="store_true", help="leave the extended master secret "
                        "extension (RFC 7627) out of TLS 1.2 ServerHellos: SSL_OP_NO_EXTENDED_MASTER_SECRET, "
                        "0x1 on OpenSSL 3.0, which Python's ssl module does not name")
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = VERSIONS[args.min]
    context.maximum_version = VERSIONS[args.max]
    context.set_ciphers(args.ciphers)
    if args.no_ems:
        context.options |= 0x1
    if args.curve:
        context.set_ecdh_curve(args.curve)
    if args.chain:
        # The leaf followed by its intermediates, as the server sends them.
        with open(args.cert) as leaf, open(args.chain) as chain, open(args.cert + ".full", "w") as full:
            full.write(leaf.read() + chain.read())
        context.load_cert_chain(args.cert + ".full", args.key)
    else:
        context.load_cert_chain(args.cert, args.key)

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def accept():
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve, args=(conn, context), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"port={listener.getsockname()[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
