#!/usr/bin/python3
"""Writes the fuzzers' seed corpora: every .cuk under tests/lit, examples and stdlib
(for fuzz_compile) and a set of small .npy files of every dtype and rank (fuzz_npy).
and small .cukb bundles written here in the format of compiler/bundle.c (fuzz_bundle).
Usage: make_seeds.py OUT_DIR   (writes OUT_DIR/compile, OUT_DIR/npy and OUT_DIR/bundle)"""
import io
import os
import shutil
import struct
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = sys.argv[1]
comp = os.path.join(out, "compile")
npyd = os.path.join(out, "npy")
os.makedirs(comp, exist_ok=True)
os.makedirs(npyd, exist_ok=True)

n = 0
for top in ("tests/lit", "examples", "stdlib", "tests/fuzz/corpus/compile"):
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(".cuk") or top.endswith("compile"):
                rel = os.path.relpath(os.path.join(dirpath, f), root).replace("/", "_")
                shutil.copyfile(os.path.join(dirpath, f), os.path.join(comp, rel))
                n += 1

arrays = {
    "bool1": np.array([True, False, True]),
    "i32_2": np.arange(6, dtype=np.int32).reshape(2, 3),
    "i64_1": np.arange(5, dtype=np.int64),
    "u32_1": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "u64_3": np.arange(8, dtype=np.uint64).reshape(2, 2, 2),
    "f32_1": np.array([0.5, -1.0, np.nan, np.inf], dtype=np.float32),
    "f64_2": np.linspace(0, 1, 6).reshape(3, 2),
    "f64_0": np.float64(3.25),
    "f32_empty": np.zeros((0, 4), dtype=np.float32),
    "i64_fortran": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    "f32_big_endian": np.arange(4, dtype=">f4"),
}
for name, a in arrays.items():
    np.save(os.path.join(npyd, name + ".npy"), a)
# Format versions 2.0 and 3.0 (longer header length field; 3.0 is UTF-8).
for ver in ((2, 0), (3, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(3, dtype=np.float32), version=ver)
    with open(os.path.join(npyd, "v%d.npy" % ver[0]), "wb") as f:
        f.write(buf.getvalue())
for dirpath, _, files in os.walk(os.path.join(root, "tests/fuzz/corpus/npy")):
    for f in files:
        shutil.copyfile(os.path.join(dirpath, f), os.path.join(npyd, f))


def fnv1a(data, h=1469598103934665603):
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def bundle(sections, version=b"0.1.0"):
    """Header (56 bytes) + sections (kind, name, data), checksum over the file with its
    own 8 bytes read as zero."""
    body = b"".join(struct.pack("<IIQ", k, len(nm), len(d)) + nm + d for k, nm, d in sections)
    size = 56 + len(body)
    hdr = b"CUKB" + struct.pack("<I", 1) + version.ljust(16, b"\0") + struct.pack("<IIQQII", 13, 0, size, 0, len(sections), 0)
    whole = hdr + body
    s = fnv1a(whole[:40])
    s = fnv1a(b"\0" * 8, s)
    s = fnv1a(whole[48:], s)
    return whole[:40] + struct.pack("<Q", s) + whole[48:]


bund = os.path.join(out, "bundle")
os.makedirs(bund, exist_ok=True)
src = b"fn sq(x: f32[n]) -> f32[n] = x * x;\nfn main() { print(sum(sq(iota(4, dtype=f32)))); }\n"
ptx = b"//\n.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry cuk_sq_k0() { ret; }\n\0"
base = [(1, b"p.cuk", src), (2, b"entries", b"sq(x: f32[_]) -> f32[..]\nmain() -> void\n"),
        (4, b"plan", b"plan sq: 1 kernel\n  kernel k0 map: mul  inputs: %x  outputs: %2\n")]
seeds = {
    "minimal": [(1, b"p.cuk", b"fn main() { print(1); }\n")],
    "ptx": base + [(3, b"sq/compute_80/ptx", ptx)],
    "cubin": base + [(3, b"sq/sm_90/cubin", b"\x7fELF" + bytes(60)), (3, b"sq/compute_80/ptx", ptx)],
    "many": base + [(3, ("sq/sm_%d/cubin" % c).encode(), b"\x7fELF" + bytes(8)) for c in (50, 70, 80, 86, 90, 100, 120)],
}
for name, secs in seeds.items():
    with open(os.path.join(bund, name + ".cukb"), "wb") as f:
        f.write(bundle(secs))
print("seeds: %d .cuk files, %d .npy files, %d bundles" % (n, len(os.listdir(npyd)), len(seeds)))
