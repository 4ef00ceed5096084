#!/usr/bin/env python3
"""A trust store in the layout of Apple's security_certificates project, with its own CT logs, for the
TLSClient tests of `--trust-store DIR`, R15 on the whole chain, R16 and date-based distrust.

Usage: make-trust-store.py OUTDIR
Makes, with Python's `cryptography` (and the openssl CLI for the one SHA-1 signature it no longer makes):
  OUTDIR/store/certificates/roots/<SHA-256>.cer   root-a (RSA-2048, unconstrained), root-smime (constrained
                                                  to X.509 basic and S/MIME), root-ssl (constrained to X.509
                                                  basic and TLS server), root-distrusted (unconstrained)
  OUTDIR/store/certificates/constraints.json      those constraints, in the "system" section
  OUTDIR/store/certificate_transparency/log_list.json   the test logs (below), Apple's log list format
  OUTDIR/store/SOURCE                             tag=atsgate-test-store
  OUTDIR/ctlogs.cnf                               the same logs as an OpenSSL log store (for check-scts)
  OUTDIR/<name>.pem, <name>.der, <name>.key       every certificate below
  OUTDIR/<leaf>-chain.der                         the leaf and its intermediate, DER, concatenated
  OUTDIR/manifest.json                            hashes the tests need (root SHA-256 and SPKI SHA-256)
Logs (operator: log state): A: a1 usable, a2 qualified; B: b1 usable, b2 retired 2020-01-01 (before every
SCT here), b3 retired in 30 days (after them); C: c1 rejected, c2 pending, t1 a tiled (static-ct-api) log,
qualified.
Intermediates: int-a (root-a), int-weak-key (RSA-1024, root-a), int-sha1 (signed with SHA-1 by root-a),
int-smime (root-smime), int-ssl (root-ssl), int-distrusted (root-distrusted).
Leaves for localhost (SANs DNS:localhost, IP:127.0.0.1), valid 90 days from an hour ago, with embedded SCTs
from the logs named: leaf-good (a1, b1), leaf-same-operator (a1, a2), leaf-retired (a1, b2), leaf-once
(a1, b3), leaf-rejected (a1, c1), leaf-pending (a1, c2), leaf-tiled (a1, t1), leaf-no-sct (none),
leaf-weak-int (int-weak-key; a1, b1), leaf-sha1-int (int-sha1; a1, b1), leaf-smime (int-smime),
leaf-ssl (int-ssl), leaf-distrusted (int-distrusted).
leaf-no-sct.tls-scts, leaf-no-sct.ocsp-scts: TLS-encoded SCT lists from a1 and b1 over leaf-no-sct itself
(an x509_entry), as a server sends them in its TLS extension or a stapled OCSP response.
Every SCT is checked once with OpenSSL's CT code (check-scts.c, compiled here) before the script succeeds.

Usage: make-trust-store.py OUTDIR aia BASE-URL
Leaves issued by int-a that the server sends alone, each naming caIssuers URLs under BASE-URL (the tests'
aia_server.py), in OUTDIR/aia-leaves (.der, and .pem with its .key): aia-der (BASE/int-a.cer), aia-p7c (BASE/int-a.p7c), aia-redirect
(BASE/redirect/int-a.cer), aia-slow, aia-huge, aia-garbage, aia-loop, aia-missing (BASE/<that>), aia-two
(BASE/missing then BASE/int-a.cer), aia-none (no caIssuers). Also OUTDIR/aia-leaves/int-a.p7c, a PKCS#7
certs-only bundle of int-a.

Usage: make-trust-store.py OUTDIR sans COUNT
OUTDIR/leaf-sans.pem, .key and leaf-sans-chain.pem: a leaf of int-a for localhost and COUNT other names
(badssl's 10000-sans, whose Certificate message is larger than a device reads).
"""
import base64
import datetime
import hashlib
import json
import os
import struct
import subprocess
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID, ObjectIdentifier

SCT_OID = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
SCT_TIME = int(time.time() * 1000) - 60_000


def name(common):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "atsgate test"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def der(cert):
    return cert.public_bytes(serialization.Encoding.DER)


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def save(out, label, cert, key=None):
    with open(os.path.join(out, f"{label}.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(out, f"{label}.der"), "wb") as f:
        f.write(der(cert))
    if key is not None:
        with open(os.path.join(out, f"{label}.key"), "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))


def rsa_key(bits=2048):
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def ca_builder(subject, issuer, key, days=3650, path_length=None):
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))


def root(common):
    key = rsa_key()
    cert = ca_builder(name(common), name(common), key).sign(key, hashes.SHA256())
    return cert, key


def intermediate(common, issuer, issuer_key, bits=2048):
    key = rsa_key(bits)
    builder = ca_builder(name(common), issuer.subject, key, days=1800, path_length=0).add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    return builder.sign(issuer_key, hashes.SHA256()), key


def sha1_intermediate(out, common, issuer_label):
    """The SHA-1-signed intermediate, by the openssl CLI: cryptography no longer signs with SHA-1."""
    key = rsa_key()
    key_path = os.path.join(out, "int-sha1.key")
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    csr = x509.CertificateSigningRequestBuilder().subject_name(name(common)).sign(key, hashes.SHA256())
    csr_path = os.path.join(out, "int-sha1.csr")
    with open(csr_path, "wb") as f:
        f.write(csr.public_bytes(serialization.Encoding.PEM))
    ext_path = os.path.join(out, "int-sha1.cnf")
    with open(ext_path, "w") as f:
        f.write("[ext]\nbasicConstraints = critical, CA:true, pathlen:0\nkeyUsage = critical, keyCertSign, cRLSign\n"
                "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n")
    pem_path = os.path.join(out, "int-sha1.pem")
    subprocess.run(["openssl", "x509", "-req", "-in", csr_path, "-CA", os.path.join(out, f"{issuer_label}.pem"),
                    "-CAkey", os.path.join(out, f"{issuer_label}.key"), "-CAcreateserial", "-sha1", "-days", "1800",
                    "-extfile", ext_path, "-extensions", "ext", "-out", pem_path],
                   check=True, capture_output=True)
    cert = x509.load_pem_x509_certificate(open(pem_path, "rb").read())
    os.remove(csr_path)
    os.remove(ext_path)
    return cert, key


class Log:
    def __init__(self, label, operator, state, tiled=False):
        self.label, self.operator, self.state, self.tiled = label, operator, state, tiled
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.spki = spki(self.key)
        self.log_id = hashlib.sha256(self.spki).digest()

    def sct(self, entry):
        """An SCT (RFC 6962 section 3.2) over `entry`: the entry type and its bytes, as signed."""
        signed = struct.pack(">BBQ", 0, 0, SCT_TIME) + entry + struct.pack(">H", 0)
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return (struct.pack(">B", 0) + self.log_id + struct.pack(">QH", SCT_TIME, 0)
                + struct.pack(">BBH", 4, 3, len(signature)) + signature)


def sct_list(scts):
    body = b"".join(struct.pack(">H", len(s)) + s for s in scts)
    return struct.pack(">H", len(body)) + body


def der_octet_string(data):
    length = len(data)
    if length < 128:
        return b"\x04" + bytes([length]) + data
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return b"\x04" + bytes([0x80 | len(encoded)]) + encoded + data


def leaf_builder(common, issuer, key, aia=()):
    builder = (x509.CertificateBuilder().subject_name(name(common)).issuer_name(issuer.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(NOW - datetime.timedelta(hours=1)).not_valid_after(NOW + datetime.timedelta(days=90))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                           x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]),
                              critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.public_key()), critical=False))
    if aia:
        builder = builder.add_extension(x509.AuthorityInformationAccess([
            x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS, x509.UniformResourceIdentifier(url))
            for url in aia]), critical=False)
    return builder


def leaf(common, issuer, issuer_key, logs=()):
    """A leaf with SCTs embedded from `logs`, each over the precertificate: the final TBS without the SCT
    extension, and the issuer's key hash (RFC 6962 section 3.2)."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = leaf_builder(common, issuer, key)
    if not logs:
        return builder.sign(issuer_key, hashes.SHA256()), key
    precert = builder.sign(issuer_key, hashes.SHA256())
    tbs = precert.tbs_certificate_bytes
    issuer_key_hash = hashlib.sha256(issuer.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).digest()
    entry = struct.pack(">H", 1) + issuer_key_hash + len(tbs).to_bytes(3, "big") + tbs
    scts = [log.sct(entry) for log in logs]
    extension = x509.UnrecognizedExtension(SCT_OID, der_octet_string(sct_list(scts)))
    return builder.add_extension(extension, critical=False).sign(issuer_key, hashes.SHA256()), key


def x509_entry_scts(cert, logs):
    data = der(cert)
    entry = struct.pack(">H", 0) + len(data).to_bytes(3, "big") + data
    return sct_list([log.sct(entry) for log in logs])


def check_scts(out, label, issuer_label, list_file=None, source=None, expect_valid=True):
    checker = os.path.join(out, "check-scts")
    if not os.path.exists(checker):
        source_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-scts.c")
        subprocess.run(["cc", "-o", checker, source_file, "-lcrypto"], check=True, capture_output=True)
    args = [checker, os.path.join(out, "ctlogs.cnf"), os.path.join(out, f"{label}.pem"),
            os.path.join(out, f"{issuer_label}.pem")]
    if list_file:
        args += [list_file, source]
    run = subprocess.run(args, capture_output=True, text=True)
    if (run.returncode == 0) != expect_valid:
        sys.exit(f"make-trust-store: OpenSSL's CT check of {label} {list_file or ''}: {run.stdout}{run.stderr}")


def make_store(out):
    os.makedirs(out, exist_ok=True)
    store = os.path.join(out, "store")
    roots_dir = os.path.join(store, "certificates", "roots")
    os.makedirs(roots_dir, exist_ok=True)
    os.makedirs(os.path.join(store, "certificate_transparency"), exist_ok=True)
    roots = {label: root(f"atsgate {common}") for label, common in [
        ("root-a", "Apple-layout Root A"), ("root-smime", "S/MIME-only Root"),
        ("root-ssl", "TLS-constrained Root"), ("root-distrusted", "Distrusted Root")]}
    for label, (cert, key) in roots.items():
        save(out, label, cert, key)
        with open(os.path.join(roots_dir, hashlib.sha256(der(cert)).hexdigest().upper() + ".cer"), "wb") as f:
            f.write(der(cert))
    hash_of = {label: hashlib.sha256(der(cert)).hexdigest().upper() for label, (cert, _) in roots.items()}
    constraints = {"custom": {}, "platform": {}, "system": {
        hash_of["root-smime"]: ["1.2.840.113635.100.1.2", "1.2.840.113635.100.1.8"],
        hash_of["root-ssl"]: ["1.2.840.113635.100.1.2", "1.2.840.113635.100.1.3.1"],
    }}
    with open(os.path.join(store, "certificates", "constraints.json"), "w") as f:
        json.dump(constraints, f, indent=4, sort_keys=True)
    with open(os.path.join(store, "SOURCE"), "w") as f:
        f.write("tag=atsgate-test-store\n")

    def stamp(moment):
        return {"timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
    logs = {label: Log(label, operator, state, tiled) for label, operator, state, tiled in [
        ("a1", "Test Operator A", {"usable": stamp(NOW - datetime.timedelta(days=400))}, False),
        ("a2", "Test Operator A", {"qualified": stamp(NOW - datetime.timedelta(days=40))}, False),
        ("b1", "Test Operator B", {"usable": stamp(NOW - datetime.timedelta(days=400))}, False),
        ("b2", "Test Operator B", {"retired": stamp(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))}, False),
        ("b3", "Test Operator B", {"retired": stamp(NOW + datetime.timedelta(days=30))}, False),
        ("c1", "Test Operator C", {"rejected": stamp(NOW - datetime.timedelta(days=10))}, False),
        ("c2", "Test Operator C", {"pending": stamp(NOW - datetime.timedelta(days=10))}, False),
        ("t1", "Test Operator C", {"qualified": stamp(NOW - datetime.timedelta(days=10))}, True),
    ]}
    operators = {}
    for log in logs.values():
        entry = {"description": f"atsgate test log {log.label}", "log_id": base64.b64encode(log.log_id).decode(),
                 "key": base64.b64encode(log.spki).decode(), "mmd": 86400, "state": log.state}
        if log.tiled:
            entry.update({"submission_url": f"https://{log.label}.invalid/", "monitoring_url": f"https://{log.label}.invalid/"})
        else:
            entry["url"] = f"https://{log.label}.invalid/"
        group = operators.setdefault(log.operator, {"name": log.operator, "email": [], "logs": [], "tiled_logs": []})
        group["tiled_logs" if log.tiled else "logs"].append(entry)
    with open(os.path.join(store, "certificate_transparency", "log_list.json"), "w") as f:
        json.dump({"version": "7", "operators": list(operators.values())}, f, indent=2)
    with open(os.path.join(out, "ctlogs.cnf"), "w") as f:
        f.write("enabled_logs = " + ",".join(logs) + "\n")
        for log in logs.values():
            f.write(f"[{log.label}]\ndescription = {log.label}\nkey = {base64.b64encode(log.spki).decode()}\n")

    root_a, root_a_key = roots["root-a"]
    intermediates = {
        "int-a": intermediate("atsgate Test Intermediate A", root_a, root_a_key),
        "int-weak-key": intermediate("atsgate Weak-Key Intermediate", root_a, root_a_key, bits=1024),
        "int-smime": intermediate("atsgate S/MIME-root Intermediate", *roots["root-smime"]),
        "int-ssl": intermediate("atsgate TLS-root Intermediate", *roots["root-ssl"]),
        "int-distrusted": intermediate("atsgate Distrusted-root Intermediate", *roots["root-distrusted"]),
    }
    for label, (cert, key) in intermediates.items():
        save(out, label, cert, key)
    intermediates["int-sha1"] = sha1_intermediate(out, "atsgate SHA-1 Intermediate", "root-a")
    save(out, "int-sha1", *intermediates["int-sha1"])

    leaves = [
        ("leaf-good", "int-a", ["a1", "b1"]), ("leaf-same-operator", "int-a", ["a1", "a2"]),
        ("leaf-retired", "int-a", ["a1", "b2"]), ("leaf-once", "int-a", ["a1", "b3"]),
        ("leaf-rejected", "int-a", ["a1", "c1"]), ("leaf-pending", "int-a", ["a1", "c2"]),
        ("leaf-tiled", "int-a", ["a1", "t1"]), ("leaf-no-sct", "int-a", []),
        ("leaf-weak-int", "int-weak-key", ["a1", "b1"]), ("leaf-sha1-int", "int-sha1", ["a1", "b1"]),
        ("leaf-smime", "int-smime", []), ("leaf-ssl", "int-ssl", []), ("leaf-distrusted", "int-distrusted", []),
    ]
    for label, issuer_label, log_labels in leaves:
        issuer, issuer_key = intermediates[issuer_label]
        cert, key = leaf(f"localhost {label}", issuer, issuer_key, [logs[l] for l in log_labels])
        save(out, label, cert, key)
        with open(os.path.join(out, f"{label}-chain.der"), "wb") as f:
            f.write(der(cert) + der(issuer))
        if log_labels:
            check_scts(out, label, issuer_label)
    no_sct = x509.load_pem_x509_certificate(open(os.path.join(out, "leaf-no-sct.pem"), "rb").read())
    for source in ("tls", "ocsp"):
        path = os.path.join(out, f"leaf-no-sct.{source}-scts")
        with open(path, "wb") as f:
            f.write(x509_entry_scts(no_sct, [logs["a1"], logs["b1"]]))
        check_scts(out, "leaf-no-sct", "int-a", path, source)
    # The checker must refuse a damaged SCT, or its approval above means nothing.
    damaged = bytearray(open(os.path.join(out, "leaf-no-sct.tls-scts"), "rb").read())
    damaged[-1] ^= 0x01
    with open(os.path.join(out, "damaged.tls-scts"), "wb") as f:
        f.write(bytes(damaged))
    check_scts(out, "leaf-no-sct", "int-a", os.path.join(out, "damaged.tls-scts"), "tls", expect_valid=False)

    manifest = {label: {"sha256": hashlib.sha256(der(cert)).hexdigest().upper(),
                        "spki_sha256": hashlib.sha256(spki(key)).hexdigest().upper(), "subject": cert.subject.rfc4514_string()}
                for label, (cert, key) in list(roots.items()) + list(intermediates.items())}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def make_aia_leaves(out, base):
    directory = os.path.join(out, "aia-leaves")
    os.makedirs(directory, exist_ok=True)
    issuer = x509.load_pem_x509_certificate(open(os.path.join(out, "int-a.pem"), "rb").read())
    issuer_key = serialization.load_pem_private_key(open(os.path.join(out, "int-a.key"), "rb").read(), None)
    base = base.rstrip("/")
    for label, paths in [("aia-der", ["int-a.cer"]), ("aia-p7c", ["int-a.p7c"]), ("aia-redirect", ["redirect/int-a.cer"]),
                         ("aia-slow", ["slow"]), ("aia-huge", ["huge"]), ("aia-garbage", ["garbage"]),
                         ("aia-loop", ["loop"]), ("aia-missing", ["missing"]), ("aia-two", ["missing", "int-a.cer"]),
                         ("aia-none", [])]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = leaf_builder(f"localhost {label}", issuer, key, aia=[f"{base}/{path}" for path in paths]).sign(
            issuer_key, hashes.SHA256())
        # DER for the TLSClient tests; PEM and key for a TLS origin that serves the leaf alone.
        save(directory, label, cert, key)
    with open(os.path.join(directory, "int-a.p7c"), "wb") as f:
        f.write(pkcs7.serialize_certificates([issuer], serialization.Encoding.DER))


def make_many_sans(out, count):
    """leaf-sans: a leaf of int-a for localhost and `count` more names (badssl's 10000-sans), in
    OUTDIR/leaf-sans.pem (with int-a after it, as the server sends them) and leaf-sans.key."""
    issuer = x509.load_pem_x509_certificate(open(os.path.join(out, "int-a.pem"), "rb").read())
    issuer_key = serialization.load_pem_private_key(open(os.path.join(out, "int-a.key"), "rb").read(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost")] + [x509.DNSName(f"san{index:05d}.atsgate-test.example") for index in range(count)]
    cert = (x509.CertificateBuilder().subject_name(name("localhost leaf-sans")).issuer_name(issuer.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(hours=1)).not_valid_after(NOW + datetime.timedelta(days=90))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(issuer_key, hashes.SHA256()))
    save(out, "leaf-sans", cert, key)
    with open(os.path.join(out, "leaf-sans-chain.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM) + issuer.public_bytes(serialization.Encoding.PEM))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "aia":
        make_aia_leaves(sys.argv[1], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[2] == "sans":
        make_many_sans(sys.argv[1], int(sys.argv[3]))
    elif len(sys.argv) == 2:
        make_store(sys.argv[1])
    else:
        sys.exit(__doc__)
