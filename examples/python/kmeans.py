# k-means from Python: one Lloyd step is a cuk function (nearest centroid by argmin over
# the broadcast distances, new centroids from reduce_by_index sums and bincount counts),
# called from a Python loop on NumPy arrays, and checked against the same steps in NumPy.
# Runs on the GPU when one is usable, else on the CPU backend (CI runs it there).
import numpy as np

import cuk

m = cuk.compile("""
fn nearest(px: f32[n], py: f32[n], cx: f32[k], cy: f32[k]) -> i64[n] {
    let dx = reshape(px, n, 1) - reshape(cx, 1, k);
    let dy = reshape(py, n, 1) - reshape(cy, 1, k);
    return argmin(dx * dx + dy * dy, axis=1);
}
fn step(px: f32[n], py: f32[n], cx: f32[k], cy: f32[k]) -> (f32[k], f32[k], i64[k]) {
    let a = nearest(px, py, cx, cy);
    let cnt = bincount(a, k);
    let sx = reduce_by_index(zeros(k), add, a, px);
    let sy = reduce_by_index(zeros(k), add, a, py);
    return (sx / f32(cnt), sy / f32(cnt), cnt);
}
""")
print("backend:", m.backend)

rng = np.random.default_rng(0)
centres = np.array([[0, 0], [6, 1], [2, 5], [7, 7]], np.float32)
label = np.arange(20000) % len(centres)
pts = centres[label] + rng.standard_normal((len(label), 2)).astype(np.float32)
px, py = np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1])

cx, cy = px[:4].copy(), py[:4].copy()
nx, ny = cx.copy(), cy.copy()
for it in range(10):
    cx, cy, cnt = m.step(px, py, cx, cy)
    cx, cy = np.asarray(cx), np.asarray(cy)
    # the same step in NumPy
    a = np.argmin((px[:, None] - nx[None, :]) ** 2 + (py[:, None] - ny[None, :]) ** 2, axis=1)
    ncnt = np.bincount(a, minlength=4)
    nx = np.bincount(a, weights=px, minlength=4).astype(np.float32) / ncnt
    ny = np.bincount(a, weights=py, minlength=4).astype(np.float32) / ncnt
    # a point on a boundary may go either way when the float sums round differently
    assert np.abs(np.asarray(cnt) - ncnt).max() <= 2, (it, cnt, ncnt)
    assert np.allclose(cx, nx, rtol=1e-4, atol=1e-4) and np.allclose(cy, ny, rtol=1e-4, atol=1e-4), it
order = np.lexsort((cy, cx))
print("centroids:")
print(np.stack([cx[order], cy[order]], axis=1).round(3))
print("counts:", np.asarray(cnt)[order])
found = np.stack([cx, cy], axis=1)
# each true centre has a centroid within 0.1 of it
assert all(np.min(np.hypot(*(found - c).T)) < 0.1 for c in centres)
