#!/usr/bin/env python3
"""A DNS server of the tests' own, on a loopback port (UDP and TCP on the same port), answering from a
zone file the test writes (JSON) and re-reads whenever the file changes, so a test can make a name fail
after its first answer.

Usage: dns_server.py ZONE.json [--address 127.0.0.1]

The zone: {"name": {"A": ["198.18.0.2"], "AAAA": ["fd00::2"], "ttl": 300, "delay": 0.0, "mode": "answer"}}
A key "*.zone.test" answers every name under zone.test. Unknown names are NXDOMAIN. Modes:
  answer       the records (an empty list: NOERROR with no answer, i.e. NODATA)
  nxdomain     NXDOMAIN
  servfail     SERVFAIL
  never        no answer at all
  garbage      a header and question that match the query, then an answer section that is not one
  noise        bytes that are no DNS message (a resolver must ignore them)
  truncate     UDP: an empty answer with the TC bit; TCP: the records (the resolver must retry on TCP)
  truncate-garbage   UDP: TC; TCP: a length prefix and half a message, then the connection closes
"delay" (seconds) holds each answer back, without holding up the others. "AAAA-delay" and "A-delay"
hold back one type only.

Prints "dns=PORT" once it listens, then one line per query: "query NAME TYPE udp|tcp". Exits when
stdin closes.
"""
import asyncio
import json
import os
import socket
import struct
import sys

TYPES = {1: "A", 28: "AAAA"}


class Zone:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.records = {}

    def lookup(self, name):
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime != self.mtime:
                with open(self.path) as f:
                    self.records = {k.lower().rstrip("."): v for k, v in json.load(f).items()}
                self.mtime = mtime
        except (OSError, ValueError):
            pass
        name = name.lower().rstrip(".")
        if name in self.records:
            return self.records[name]
        parts = name.split(".")
        for i in range(1, len(parts)):
            wildcard = "*." + ".".join(parts[i:])
            if wildcard in self.records:
                return self.records[wildcard]
        return {"mode": "nxdomain"}


def parse_query(data):
    """(id, flags, name, qtype, question bytes) or None."""
    if len(data) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", data[:6])
    if qdcount < 1:
        return None
    labels = []
    i = 12
    while i < len(data):
        length = data[i]
        if length == 0:
            i += 1
            break
        labels.append(data[i + 1:i + 1 + length].decode("ascii", "replace"))
        i += 1 + length
    if i + 4 > len(data):
        return None
    qtype = struct.unpack("!H", data[i:i + 2])[0]
    return qid, flags, ".".join(labels), qtype, data[12:i + 4]


def header(qid, flags, rcode, ancount, tc=False):
    out_flags = 0x8000 | (flags & 0x0100) | 0x0080 | rcode  # QR, RD copied, RA
    if tc:
        out_flags |= 0x0200
    return struct.pack("!HHHHHH", qid, out_flags, 1, ancount, 0, 0)


def records(entry, qtype, ttl):
    import ipaddress
    out = []
    for text in entry.get(TYPES.get(qtype, "?"), []):
        address = ipaddress.ip_address(text).packed
        out.append(struct.pack("!HHHIH", 0xC00C, qtype, 1, ttl, len(address)) + address)
    return out


def answer(zone, data, transport):
    """The reply bytes (None: no reply) and the delay before it."""
    parsed = parse_query(data)
    if parsed is None:
        return None, 0
    qid, flags, name, qtype, question = parsed
    print(f"query {name} {TYPES.get(qtype, qtype)} {transport}", flush=True)
    entry = zone.lookup(name)
    mode = entry.get("mode", "answer")
    delay = float(entry.get(f"{TYPES.get(qtype, '?')}-delay", entry.get("delay", 0)))
    ttl = int(entry.get("ttl", 300))
    if mode == "never":
        return None, 0
    if mode == "nxdomain":
        return header(qid, flags, 3, 0) + question, delay
    if mode == "servfail":
        return header(qid, flags, 2, 0) + question, delay
    if mode == "noise":
        return bytes([0xFF, 0x00, 0x13, 0x37]) * 5, delay
    if mode == "garbage":
        return header(qid, flags, 0, 1) + question + b"\xc0\x0c\x00\x01\x00\x01\xff", delay
    if mode in ("truncate", "truncate-garbage") and transport == "udp":
        return header(qid, flags, 0, 0, tc=True) + question, delay
    if mode == "truncate-garbage":
        full = header(qid, flags, 0, 1) + question + b"".join(records(entry, qtype, ttl) or [b"\x00" * 16])
        return struct.pack("!H", len(full)) + full[:len(full) // 2], delay
    answers = records(entry, qtype, ttl)
    return header(qid, flags, 0, len(answers)) + question + b"".join(answers), delay


class UDP(asyncio.DatagramProtocol):
    def __init__(self, zone):
        self.zone = zone

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, peer):
        reply, delay = answer(self.zone, data, "udp")
        if reply is not None:
            asyncio.get_running_loop().call_later(delay, self.transport.sendto, reply, peer)


async def tcp_client(zone, reader, writer):
    try:
        while True:
            length = struct.unpack("!H", await reader.readexactly(2))[0]
            data = await reader.readexactly(length)
            reply, delay = answer(zone, data, "tcp")
            if reply is None:
                continue
            if delay:
                await asyncio.sleep(delay)
            if zone.lookup(parse_query(data)[2]).get("mode") == "truncate-garbage":
                writer.write(reply)  # already length-prefixed, and cut short
                await writer.drain()
                break
            writer.write(struct.pack("!H", len(reply)) + reply)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    zone = Zone(sys.argv[1])
    address = sys.argv[sys.argv.index("--address") + 1] if "--address" in sys.argv else "127.0.0.1"
    loop = asyncio.get_running_loop()
    for _ in range(20):
        udp, _ = await loop.create_datagram_endpoint(lambda: UDP(zone), local_addr=(address, 0))
        # A burst of a few thousand queries (the benchmark's) must not overflow the default buffer.
        sock = udp.get_extra_info("socket")
        for option in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
            try:
                if option is not None:
                    sock.setsockopt(socket.SOL_SOCKET, option, 8 << 20)
                    break
            except OSError:
                continue
        port = udp.get_extra_info("sockname")[1]
        try:
            server = await asyncio.start_server(lambda r, w: tcp_client(zone, r, w), address, port)
            break
        except OSError:
            udp.close()
    else:
        sys.exit("dns_server: no port free for both UDP and TCP")
    print(f"dns={port}", flush=True)
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while await stdin.read(1024):
        pass
    server.close()


asyncio.run(main())
