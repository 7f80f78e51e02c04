#!/usr/bin/python3
"""Writes the fuzzers' seed corpora: every .cuk under tests/lit, examples and stdlib
(for fuzz_compile) and a set of small .npy files of every dtype and rank (fuzz_npy).
Usage: make_seeds.py OUT_DIR   (writes OUT_DIR/compile and OUT_DIR/npy)"""
import io
import os
import shutil
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
print("seeds: %d .cuk files, %d .npy files" % (n, len(os.listdir(npyd))))
