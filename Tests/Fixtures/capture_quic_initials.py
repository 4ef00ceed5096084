#!/usr/bin/env python3
"""Captures real QUIC clients' first flights of Initial packets on 127.0.0.1 and writes them, as hex,
to Tests/TestSupport/CapturedQUICInitials.swift. Nothing answers the clients, so each sends its
Initial datagrams (and later retransmissions, which are not kept): a flight is the datagrams up to the
one that completes the ClientHello, which this script finds by decrypting them with aioquic.

Clients: aioquic (Tests/Fixtures/quic_client.py) with QUIC version 1, version 2, and a ClientHello
long enough to be split over datagrams; Debian's headless Chromium with QUIC forced on for one origin
(--origin-to-force-quic-on, --host-resolver-rules to send it to the capture port), whose post-quantum
ClientHello is cut into shuffled CRYPTO frames over two datagrams.

usage: .build/test-tools/bin/python Tests/Fixtures/capture_quic_initials.py
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from aioquic.buffer import Buffer
from aioquic.quic.crypto import CryptoPair
from aioquic.quic.packet import pull_quic_header

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTPUT = os.path.join(ROOT, "Tests", "TestSupport", "CapturedQUICInitials.swift")


def listen():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.5)
    return sock


def receive(sock, datagrams, stop):
    while not stop.is_set():
        try:
            data, _ = sock.recvfrom(65535)
        except socket.timeout:
            continue
        datagrams.append(data)


def crypto_ranges(datagram):
    """The CRYPTO frames' (offset, end) of the datagram's first Initial packet, decrypted with aioquic."""
    buf = Buffer(data=datagram)
    header = pull_quic_header(buf, host_cid_length=8)
    pair = CryptoPair()
    pair.setup_initial(cid=header.destination_cid, is_client=False, version=header.version)
    _, payload, _ = pair.decrypt_packet(datagram[:header.packet_length], buf.tell(), 0)
    frames = Buffer(data=payload)
    ranges = []
    while not frames.eof():
        kind = frames.pull_uint_var()
        if kind == 0x06:
            offset = frames.pull_uint_var()
            length = frames.pull_uint_var()
            ranges.append((offset, offset + length, payload[frames.tell():frames.tell() + length]))
            frames.seek(frames.tell() + length)
        elif kind in (0x00, 0x01):
            continue
        else:
            break
    return header, ranges


def first_flight(datagrams):
    """The datagrams up to the one that makes the ClientHello whole."""
    stream = {}
    for count, datagram in enumerate(datagrams, 1):
        header, ranges = crypto_ranges(datagram)
        for start, end, data in ranges:
            for index, byte in enumerate(data):
                stream[start + index] = byte
        have = 0
        while have in stream:
            have += 1
        if have >= 4:
            length = 4 + (stream[1] << 16 | stream[2] << 8 | stream[3])
            if have >= length:
                return header, datagrams[:count]
    raise SystemExit("capture-quic: no whole ClientHello in %d datagrams" % len(datagrams))


def capture(name, command_for_port, wait=4.0):
    sock = listen()
    port = sock.getsockname()[1]
    datagrams, stop = [], threading.Event()
    thread = threading.Thread(target=receive, args=(sock, datagrams, stop))
    thread.start()
    subprocess.run(command_for_port(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    deadline = time.time() + wait
    while not datagrams and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    stop.set()
    thread.join()
    sock.close()
    if not datagrams:
        raise SystemExit(f"capture-quic: {name}: nothing arrived")
    header, flight = first_flight(datagrams)
    print(f"capture-quic: {name}: {len(flight)} datagram(s) of {len(datagrams)}", file=sys.stderr)
    return header, flight


def aioquic_client(server_name, version="1", padding=0):
    client = os.path.join(ROOT, "Tests", "Fixtures", "quic_client.py")
    return lambda port: [sys.executable, client, "--connect", f"127.0.0.1:{port}", "--servername", server_name,
                         "--version", version, "--alpn-padding", str(padding), "--timeout", "1"]


def chromium(profile):
    return lambda port: ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                         "--enable-quic", "--origin-to-force-quic-on=www.example.com:443",
                         f"--host-resolver-rules=MAP www.example.com 127.0.0.1:{port}",
                         "--dump-dom", "https://www.example.com/"]


def hex_lines(data, indent="        "):
    text = data.hex()
    return "\n".join(indent + text[i:i + 96] for i in range(0, len(text), 96))


def chromium_version():
    try:
        return subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "chromium (version unknown)"


def main():
    from aioquic import __version__ as aioquic_version
    profile = tempfile.mkdtemp(prefix="capture-quic-")
    try:
        captures = [
            ("aioquicVersion1", "aioquic, QUIC version 1, SNI api.example.com, ALPN h3",
             "quic_client.py --servername api.example.com --version 1", "api.example.com",
             capture("aioquicVersion1", aioquic_client("api.example.com", "1"))),
            ("aioquicVersion2", "aioquic, QUIC version 2, SNI api.example.com, ALPN h3",
             "quic_client.py --servername api.example.com --version 2", "api.example.com",
             capture("aioquicVersion2", aioquic_client("api.example.com", "2"))),
            ("aioquicSplit", "aioquic, a ClientHello of about 2.3 KB (30 made-up ALPN names) in three Initial "
             "packets, one a datagram", "quic_client.py --servername split.example.com --alpn-padding 30",
             "split.example.com", capture("aioquicSplit", aioquic_client("split.example.com", "1", 30))),
            ("chromium", "headless Chromium, its post-quantum ClientHello in shuffled CRYPTO frames with "
             "PING and PADDING between them, over two datagrams",
             "chromium --headless=new --enable-quic --origin-to-force-quic-on=www.example.com:443 "
             "--host-resolver-rules='MAP www.example.com 127.0.0.1:PORT' https://www.example.com/",
             "www.example.com", capture("chromium", chromium(profile), wait=10)),
        ]
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    out = [
        "// Generated by Tests/Fixtures/capture_quic_initials.py; do not edit by hand, run the script again.",
        "//",
        "// Real QUIC clients' first flights of Initial packets, captured on 127.0.0.1 by a UDP socket that",
        "// never answers. Tools: aioquic %s (Python), %s." % (aioquic_version, chromium_version()),
        "",
        "/// One client's first flight: the UDP datagrams up to the one that completes its ClientHello.",
        "public struct CapturedQUICInitial: Sendable, CustomStringConvertible {",
        "    public let name: String",
        "    public let datagrams: [[UInt8]]",
        "    /// The QUIC version of its long headers.",
        "    public let version: UInt32",
        "    public let destinationConnectionID: [UInt8]",
        "    /// The server_name its ClientHello carries.",
        "    public let serverName: String",
        "    public var description: String { name }",
        "}",
        "",
        "public enum CapturedQUICInitials {",
    ]
    names = []
    for name, summary, how, server_name, (header, flight) in captures:
        names.append(name)
        out.append(f"    /// {summary}.")
        out.append(f"    /// client: `{how}`")
        out.append(f"    public static let {name} = CapturedQUICInitial(name: \"{name}\", datagrams: [")
        for datagram in flight:
            out.append('        hexBytes("""')
            out.append(hex_lines(datagram, "            "))
            out.append('            """),')
        out.append(f"    ], version: 0x{header.version:08x}, destinationConnectionID: hexBytes(\"{header.destination_cid.hex()}\"),")
        out.append(f"       serverName: \"{server_name}\")")
        out.append("")
    out.append(f"    public static let all = [{', '.join(names)}]")
    out.append("}")
    with open(OUTPUT, "w") as file:
        file.write("\n".join(out) + "\n")
    print(f"capture-quic: wrote {os.path.relpath(OUTPUT, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
