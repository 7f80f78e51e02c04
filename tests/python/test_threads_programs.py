"""Every program the suites run on the CPU backend (examples/*.cuk and the lit run and
fusion programs that run without arguments) prints the same bytes with CUK_THREADS=1,
2 and 3 (issue 18: results independent of the thread count). The lit tests check each
output against its expected text with the default threads; this checks that the
thread count changes nothing, printed digits included."""
import glob
import os
import re
import subprocess

import pytest

import cukpath

RUNS = re.compile(r"RUN: %cukc run %s( \||$)", re.M)


def programs():
    out = sorted(glob.glob(os.path.join(cukpath.ROOT, "examples", "*.cuk")))
    for d in ("run", "fusion"):
        for f in sorted(glob.glob(os.path.join(cukpath.ROOT, "tests", "lit", d, "*.cuk"))):
            with open(f) as fh:
                if RUNS.search(fh.read()):
                    out.append(f)
    return out


PROGS = programs()


def test_the_list_is_the_suites():
    # the glob and the RUN line pattern still find the suites' programs
    assert len(PROGS) > 150, len(PROGS)


@pytest.mark.parametrize("prog", PROGS, ids=[os.path.relpath(p, cukpath.ROOT) for p in PROGS])
def test_same_output_with_1_2_and_3_threads(prog, tmp_path):
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    outs = []
    for t in ("1", "2", "3"):
        # programs that save files write them under the working directory: one each
        wd = tmp_path / t
        wd.mkdir()
        r = subprocess.run([cukc, "run", "--device", "cpu", prog], capture_output=True, cwd=wd, timeout=300,
                           env=dict(os.environ, CUK_THREADS=t))
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        files = {p.name: p.read_bytes() for p in sorted(wd.rglob("*")) if p.is_file()}
        outs.append((r.stdout, files))
    assert outs[0][0] or outs[0][1], "the program printed and saved nothing"
    assert outs[0] == outs[1], "CUK_THREADS=1 and 2 differ"
    assert outs[0] == outs[2], "CUK_THREADS=1 and 3 differ"
