#!/usr/bin/env python3
"""Signed certificate timestamps for the R16 tests, signed by test CT logs with the openssl CLI.

Usage: make-scts.py OUTDIR CERT.pem N
Makes N P-256 log keys (OUTDIR/log-K.key), an SCT from each over CERT as an x509_entry (RFC 6962
section 3.2; what a server sends in its TLS extension), and:
  OUTDIR/scts.serverinfo   PEM for `openssl s_server -serverinfo`: the signed_certificate_timestamp
                           extension (type 18) holding the N SCTs
  OUTDIR/log-list.json     the N logs in Apple's log list format (operators[].logs[] with key, log_id)
  OUTDIR/log-list-short.json   the same without the last log
"""
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import time


def run(*args, data=None):
    return subprocess.run(args, input=data, capture_output=True, check=True).stdout


def main():
    out, cert_pem, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    cert = run("openssl", "x509", "-in", cert_pem, "-outform", "DER")
    timestamp = int(time.time() * 1000) - 60_000
    scts, logs = [], []
    for index in range(count):
        key = os.path.join(out, f"log-{index}.key")
        run("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
        spki = run("openssl", "pkey", "-in", key, "-pubout", "-outform", "DER")
        log_id = hashlib.sha256(spki).digest()
        # digitally-signed struct: version, signature_type certificate_timestamp, timestamp,
        # entry_type x509_entry, the certificate (24-bit length), no extensions.
        signed = (struct.pack(">BBQH", 0, 0, timestamp, 0) + len(cert).to_bytes(3, "big") + cert
                  + struct.pack(">H", 0))
        signature = run("openssl", "dgst", "-sha256", "-sign", key, data=signed)
        sct = (struct.pack(">B", 0) + log_id + struct.pack(">QH", timestamp, 0)
               + struct.pack(">BBH", 4, 3, len(signature)) + signature)
        scts.append(sct)
        logs.append({"description": f"atsgate test log {index}", "log_id": base64.b64encode(log_id).decode(),
                     "key": base64.b64encode(spki).decode(), "url": f"https://ct{index}.invalid/",
                     "mmd": 86400, "state": {"usable": {"timestamp": "2020-01-01T00:00:00Z"}}})
    body = b"".join(struct.pack(">H", len(s)) + s for s in scts)
    extension_data = struct.pack(">H", len(body)) + body
    serverinfo = struct.pack(">HH", 18, len(extension_data)) + extension_data
    with open(os.path.join(out, "scts.serverinfo"), "w") as f:
        f.write("-----BEGIN SERVERINFO FOR signed_certificate_timestamp-----\n")
        encoded = base64.b64encode(serverinfo).decode()
        f.write("\n".join(encoded[i:i + 64] for i in range(0, len(encoded), 64)) + "\n")
        f.write("-----END SERVERINFO FOR signed_certificate_timestamp-----\n")
    for name, listed in (("log-list.json", logs), ("log-list-short.json", logs[:-1])):
        with open(os.path.join(out, name), "w") as f:
            json.dump({"version": "1.0", "operators": [{"name": "atsgate test", "email": [], "logs": listed}]}, f)


if __name__ == "__main__":
    main()
