#!/usr/bin/env python3
"""Builds the .ipa files of the device-lab tests: a zip of Payload/NAME.app with binary Info.plists.

make_ipa.py OUT KIND [NAME]
KIND: lab (an app allowing cleartext to legacy.example.com, with a share extension that allows
cleartext everywhere), other (a second app, full ATS), corrupt, noapp, escape, bomb, liar.
"""
import io, plistlib, struct, sys, zipfile, zlib

def info(identifier, executable, name, ats=None, extension=False):
    plist = {"CFBundleIdentifier": identifier, "CFBundleExecutable": executable, "CFBundleName": name,
             "CFBundlePackageType": "XPC!" if extension else "APPL"}
    if ats is not None:
        plist["NSAppTransportSecurity"] = ats
    return plistlib.dumps(plist, fmt=plistlib.FMT_BINARY)

def lab(out, app="Lab"):
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"Payload/{app}.app/Info.plist", info(f"com.example.{app.lower()}", app, f"{app} App",
            {"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": True}}}))
        z.writestr(f"Payload/{app}.app/{app}", b"\x7fELF not really")
        z.writestr(f"Payload/{app}.app/PlugIns/Share.appex/Info.plist",
                   info(f"com.example.{app.lower()}.share", "Share", "Share",
                        {"NSAllowsArbitraryLoads": True}, extension=True))

kind, out = sys.argv[2], sys.argv[1]
if kind == "lab":
    lab(out, sys.argv[3] if len(sys.argv) > 3 else "Lab")
elif kind == "other":
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Payload/Other.app/Info.plist", info("com.example.other", "Other", "Other"))
elif kind == "corrupt":
    buffer = io.BytesIO()
    lab(buffer)
    data = buffer.getvalue()
    open(out, "wb").write(b"PK\x03\x04" + data[200:260])
elif kind == "noapp":
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("README.txt", "no app here")
elif kind == "escape":
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Payload/Lab.app/Info.plist", info("com.example.lab", "Lab", "Lab"))
        z.writestr("Payload/../../evil.sh", "#!/bin/sh\n")
elif kind == "bomb":
    # An Info.plist declaring (and inflating to) 4 MiB of zeros: a few KiB compressed.
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("Payload/Lab.app/Info.plist", b"\0" * (4 << 20))
elif kind == "liar":
    # Declares 100 bytes in both headers but inflates to 4 MiB.
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("Payload/Lab.app/Info.plist", b"\0" * (4 << 20))
    data = bytearray(open(out, "rb").read())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        struct.pack_into("<I", data, at + offset, 100)
    open(out, "wb").write(data)
else:
    sys.exit(f"unknown kind {kind}")
