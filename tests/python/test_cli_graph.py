"""`cukc graph F -o OUT` draws the kernels with Graphviz's dot (scripts/setup.sh installs
graphviz): an SVG with one box per kernel, labelled with its kind; a PNG. Without dot on
the PATH it is an error that says so (tests/lit/fusion/dot_graph.cuk)."""
import os
import shutil
import subprocess

import pytest

import cukpath

CUKC = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
pytestmark = pytest.mark.skipif(not shutil.which("dot") or not os.path.exists(CUKC),
                                reason="needs Graphviz's dot and cukc")


def test_graph_svg_and_png(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text("fn centre(x: f32[n]) -> f32[n] = x - sum(x) / f32(n);\n"
                   "fn norm(x: f32[r, c]) -> f32[r, c] = x / sum(x, axis=1, keepdims=true);\n")
    svg = tmp_path / "p.svg"
    r = subprocess.run([CUKC, "graph", str(src), "-o", str(svg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = svg.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    for label in ("fn centre: 2 kernels", "k0 reduce", "k1 map", "fn norm: 1 kernel", "k0 row"):
        assert label in text, label
    png = tmp_path / "p.png"
    r = subprocess.run([CUKC, "graph", str(src), "-o", str(png)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
