#!/usr/bin/env python3
"""Builds the .ipa files of the device-lab tests: a zip of Payload/NAME.app with binary Info.plists.

make_ipa.py OUT KIND [NAME]
KIND: lab (an app allowing cleartext to legacy.example.com, with a share extension that allows
cleartext everywhere), other (a second app, full ATS), full (an app with an extension, a watch app
with its own extension, and an App Clip, each allowing arbitrary loads: XML and binary plists),
appdir (the full app unpacked as a .app directory at OUT), corrupt, noapp, escape, bomb, liar.
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

FULL = [("Payload/Full.app", "com.example.full", "Full", plistlib.FMT_BINARY),
        ("Payload/Full.app/Extensions/Intents.appex", "com.example.full.intents", "Intents", plistlib.FMT_XML),
        ("Payload/Full.app/Watch/FullWatch.app", "com.example.full.watchkitapp", "FullWatch", plistlib.FMT_BINARY),
        ("Payload/Full.app/Watch/FullWatch.app/PlugIns/Complication.appex", "com.example.full.watchkitapp.complication",
         "Complication", plistlib.FMT_XML),
        ("Payload/Full.app/AppClips/Clip.app", "com.example.full.clip", "Clip", plistlib.FMT_BINARY)]

def full_plist(identifier, executable, fmt):
    return plistlib.dumps({"CFBundleIdentifier": identifier, "CFBundleExecutable": executable,
                           "NSAppTransportSecurity": {"NSAllowsArbitraryLoads": True}}, fmt=fmt)

kind, out = sys.argv[2], sys.argv[1]
if kind == "lab":
    lab(out, sys.argv[3] if len(sys.argv) > 3 else "Lab")
elif kind == "other":
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Payload/Other.app/Info.plist", info("com.example.other", "Other", "Other"))
elif kind == "full":
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, identifier, executable, fmt in FULL:
            z.writestr(f"{path}/Info.plist", full_plist(identifier, executable, fmt))
        # Frameworks have Info.plists too; they are not bundles with a policy of their own.
        z.writestr("Payload/Full.app/Frameworks/Kit.framework/Info.plist", info("com.example.kit", "Kit", "Kit"))
elif kind == "appdir":
    import os
    for path, identifier, executable, fmt in FULL:
        directory = os.path.join(out, path[len("Payload/Full.app/"):]) if path != "Payload/Full.app" else out
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "Info.plist"), "wb") as f:
            f.write(full_plist(identifier, executable, fmt))
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
