"""Writes a .cukb bundle in compiler/bundle.c's format with a correct size and checksum,
for tests of damaged bundles: make_bundle.py CUKC OUT NSECTIONS IMAGE_NAME... (each image
name becomes a section holding a few bytes; the program section comes first). The
version is taken from `CUKC --version`, so that only what the test damages is wrong."""
import struct
import subprocess
import sys

cukc, out, nsec = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)
version = subprocess.run([cukc, "--version"], capture_output=True, text=True).stdout.split()[-1].encode()


def fnv1a(data, h=1469598103934665603):
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


secs = [(1, b"p.cuk", b"fn main() { print(1); }\n")] + [(3, n.encode(), b"\x7fELF") for n in sys.argv[4:]]
body = b"".join(struct.pack("<IIQ", k, len(n), len(d)) + n + d for k, n, d in secs)
size = 56 + len(body)
hdr = b"CUKB" + struct.pack("<I", 1) + version.ljust(16, b"\0") + struct.pack("<IIQQII", 13, 0, size, 0, nsec, 0)
whole = hdr + body
s = fnv1a(whole[48:], fnv1a(b"\0" * 8, fnv1a(whole[:40])))
with open(out, "wb") as f:
    f.write(whole[:40] + struct.pack("<Q", s) + whole[48:])
