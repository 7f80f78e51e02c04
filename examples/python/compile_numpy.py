# cuk.compile from Python: a .cuk function called on NumPy arrays. Runs on the GPU when
# one is usable, else on the CPU backend (CI runs it there).
import numpy as np

import cuk

m = cuk.compile("""
fn softmax_rows(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;
""")
print("backend:", m.backend)
x = np.random.RandomState(0).randn(4, 8).astype(np.float32)
p = m.softmax_rows(x)
print(p.sum(axis=1))
assert np.allclose(p.sum(axis=1), 1, atol=1e-6)
z = m.saxpy(2.0, np.arange(5, dtype=np.float32), np.ones(5, np.float32))
print(z)
try:
    m.saxpy(2.0, np.ones(3, np.float32), np.ones(4, np.float32))
except ValueError as e:
    print("ValueError:", e)
