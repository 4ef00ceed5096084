#!/usr/bin/env python3
"""A real QUIC client (aioquic) that tries to open a connection and gives up after --timeout seconds:
the Initial packets it sends are what atsgate's QUIC reader must read. Nothing answers them in the
tests (atsgate drops them so that the client falls back to TCP), so the attempt ends in a timeout,
which is this script's normal end (exit 0, "quic: no answer"); an answer prints "quic: connected".

--alpn-padding N adds N long made-up ALPN names, which makes the ClientHello longer than one
packet, so the client splits its CRYPTO stream across Initial packets and datagrams, as Chrome does
with a post-quantum key share.

aioquic is pinned in Tests/Fixtures/requirements-har.txt (mitmproxy's dependency), in .build/test-tools.

usage: quic_client.py --connect HOST:PORT --servername NAME [--version 1|2] [--alpn h3]
                      [--alpn-padding N] [--timeout SECONDS]
"""
import argparse
import asyncio
import ssl
import sys

from aioquic.asyncio import connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.packet import QuicProtocolVersion


async def attempt(host, port, configuration, timeout):
    try:
        async with connect(host, port, configuration=configuration, wait_connected=True):
            return "connected"
    except (asyncio.TimeoutError, ConnectionError):
        return "no answer"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--connect", required=True)
    parser.add_argument("--servername", required=True)
    parser.add_argument("--version", choices=["1", "2"], default="1")
    parser.add_argument("--alpn", action="append")
    parser.add_argument("--alpn-padding", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args()
    host, _, port = args.connect.rpartition(":")
    host = host.strip("[]")
    version = QuicProtocolVersion.VERSION_2 if args.version == "2" else QuicProtocolVersion.VERSION_1
    alpn = (args.alpn or ["h3"]) + [f"x-padding-{i:02d}-" + "p" * 48 for i in range(args.alpn_padding)]
    configuration = QuicConfiguration(is_client=True, alpn_protocols=alpn, server_name=args.servername,
                                      verify_mode=ssl.CERT_NONE, original_version=version,
                                      supported_versions=[version], idle_timeout=args.timeout)
    try:
        result = asyncio.run(asyncio.wait_for(attempt(host, int(port), configuration, args.timeout),
                                              args.timeout + 1))
    except asyncio.TimeoutError:
        result = "no answer"
    print(f"quic: {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
