"""The front end is linear in the program (issue 19): a block of 200,000 lets (about
4 MB) and a chain of 50,000 dependent lets check and run. Before, each let rescanned the
rest of its block, and 100,000 lets did not finish in 11 minutes; the subprocess time
limit here is what a quadratic front end would blow, not a timing."""
import os
import subprocess

import pytest

import cukpath

CUKC = os.path.join(cukpath.BUILD, "bin", "cukc")
pytestmark = pytest.mark.skipif(not os.path.exists(CUKC), reason="cukc is not built")


def test_many_lets_in_one_block(tmp_path):
    n = 200_000
    src = tmp_path / "lets.cuk"
    src.write_text("fn main() {\n" + "".join(f"    let a{i} = {i};\n" for i in range(n)) + f"    print(a{n - 1} + a7);\n}}\n")
    r = subprocess.run([CUKC, "run", "--device", "cpu", str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == str(n - 1 + 7), r.stderr[-2000:]


def test_a_long_chain_of_lets(tmp_path):
    n = 50_000
    src = tmp_path / "chain.cuk"
    src.write_text("fn main() {\n    let a0 = iota(10);\n" + "".join(f"    let a{i} = a{i - 1} + {i};\n" for i in range(1, n))
                   + f"    print(sum(a{n - 1}));\n}}\n")
    r = subprocess.run([CUKC, "run", "--device", "cpu", str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == str(45 + 10 * (n - 1) * n // 2), r.stderr[-2000:]
