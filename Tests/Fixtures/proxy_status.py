#!/usr/bin/env python3
"""Parses Proxy-Status field values (RFC 9209) with a real Structured Field Values parser (http-sf,
pinned in Tests/Fixtures/requirements-sf.txt) and prints them as JSON, one line per value given.

Usage: proxy_status.py VALUE...

Each line: [{"member": NAME, "member_type": "token"|"string", "params": {KEY: [TYPE, VALUE]}}], one
object per list member, TYPE one of token, string, integer, decimal, boolean, bytes. A value that does
not parse prints {"error": MESSAGE}: the test then fails and shows it.
"""
import json
import sys

import http_sf
from http_sf.types import Token


def typed(value):
    if isinstance(value, Token):
        return ["token", str(value)]
    if isinstance(value, bool):
        return ["boolean", value]
    if isinstance(value, int):
        return ["integer", value]
    if isinstance(value, float):
        return ["decimal", value]
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    if isinstance(value, str):
        return ["string", value]
    return [type(value).__name__, str(value)]


def main():
    for value in sys.argv[1:]:
        try:
            members = http_sf.parse(value.encode("ascii"), tltype="list")
        except Exception as error:  # the parser's own message, for the test's failure
            print(json.dumps({"error": f"{type(error).__name__}: {error}", "value": value}))
            continue
        out = []
        for item, params in members:
            kind, name = typed(item)
            out.append({"member": name, "member_type": kind,
                        "params": {key: typed(param) for key, param in params.items()}})
        print(json.dumps(out))


if __name__ == "__main__":
    main()
