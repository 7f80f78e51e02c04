"""Ctrl-C stops a long call on the CPU backend (issue 19): SIGINT raises KeyboardInterrupt
out of a host loop, out of a long array operation and out of per-element loops that
never end (run on every core), and the module stays usable."""
import subprocess
import sys

import cukpath

# The child puts Python's own Ctrl-C handler back: started from a background job (`make
# check &` in a non-interactive shell) it inherits SIGINT ignored, Python then leaves it
# so, and the kill below would be lost (the call runs for hours: a timeout, not a
# finding about cuk).
CHILD = r"""
import os, signal, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import cukpath, cuk
m = cuk.compile('''
fn spin(n: i64) -> f64 {
    var t = f64(0.0);
    for i in 0..n {
        t = t + sqrt(f64(i));
    }
    return t;
}
fn big(x: f32[n]) -> f32 = sum(sin(x) * cos(x) + exp(-x * x));
fn forever(x: f32) -> f32 {
    var y = x;
    while y > -1.0 { y = y + 0.0 * x; }
    return y;
}
fn each(x: f32[n]) -> f32[n] = forever(x);
fn each_sum(x: f32[n]) -> f32 = sum(forever(x));
''', device="cpu")
for what in ("loop", "arrays", "elements", "element sum"):
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.time()
    try:
        if what == "loop":
            m.spin(10 ** 13)  # hours
        elif what.startswith("element"):  # a per-element loop that never ends, on every core
            x = np.ones(1 << 22, np.float32)
            m.each(x) if what == "elements" else m.each_sum(x)
        else:
            x = np.ones(1 << 22, np.float32)
            for _ in range(100000):
                m.big(x)
        print(what, "finished")
    except KeyboardInterrupt:
        print(what, "interrupted", time.time() - t0 < 30)
print(m.spin(4), m.big(np.zeros(3, np.float32)), m.each(np.full(3, -2, np.float32)).tolist())
print("ok")
"""


def test_ctrl_c_stops_a_long_call():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                       cwd=cukpath.ROOT + "/tests/python", env=cukpath.python_child_env())
    out = r.stdout.split("\n")
    assert r.returncode == 0 and out[:4] == ["loop interrupted True", "arrays interrupted True",
                                             "elements interrupted True", "element sum interrupted True"], \
        r.stdout + r.stderr[-3000:]
    assert out[4] == "%s 3.0 [-2.0, -2.0, -2.0]" % (0.0 + 1.0 + 2 ** 0.5 + 3 ** 0.5), r.stdout  # usable after
    assert out[5] == "ok"
