"""Streams and graphs (issue 17) on a GPU: concurrency of calls on two streams, the cost of
launching a captured graph, and 100 Jacobi iterations as one graph launch against the sum
of their kernel times. Prints one line per measurement; run on the GPU machine:
PYTHONPATH=build/python:python python3 bench/streams_graphs_bench.py"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build"), "python"),
                os.path.join(ROOT, "python")]
import cuk  # noqa: E402
import cuk.driver as drv  # noqa: E402

SRC = r"""
fn burn(v: f32) -> f32 {
    var x = v;
    var k: i32 = 0;
    while k < 200000 {
        x = x * 0.9999 + 0.0001;
        k = k + 1;
    }
    return x;
}
fn work(x: f32[n]) -> f32[n] = burn(x);
fn jstep(u: f32[n, m]) -> f32[n, m] {
    let inner = 0.25 * (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]);
    let mid = concat(u[1:-1, 0:1], inner, u[1:-1, -1:], axis=1);
    return concat(u[0:1, :], mid, u[-1:, :], axis=0);
}
fn jacobi100(u: f32[n, m]) -> f32[n, m] {
    var x = u;
    for it in 0..100 {
        x = jstep(x);
    }
    return x;
}
fn chain10(x: f32[n]) -> f32[n] {
    var y = x;
    for it in 0..10 {
        y = y * 1.0001 + 0.5;
    }
    return y;
}
"""


def timed(fn, reps, sync):
    fn()
    sync()
    best = 1e30
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main():
    dev = drv.Device(0) if hasattr(drv, "Device") else None
    print("device:", dev.name() if dev is not None else "?", "date:", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    m = cuk.compile(SRC, device="gpu")
    s1, s2 = drv.Stream(), drv.Stream()
    sms = dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT) if dev is not None else 132

    def sync():
        s1.synchronize()
        s2.synchronize()
        drv.Context.synchronize()

    # 1. two calls on two streams against the same two on one stream
    for per_sm in (32, 64, 128, 256, 512):
        n = sms * per_sm
        x = cuk.to_device(np.ones(n, np.float32))
        serial = timed(lambda: (m.work(x, stream=s1), m.work(x, stream=s1)), 3, sync)
        both = timed(lambda: (m.work(x, stream=s1), m.work(x, stream=s2)), 3, sync)
        print(f"two streams: work n={n} ({per_sm}/SM): serial {serial * 1e3:.3f} ms, two streams "
              f"{both * 1e3:.3f} ms, ratio {both / serial:.3f}")

    # 2. a captured 10-kernel program: launch cost
    x = cuk.to_device(np.ones(1 << 10, np.float32))
    g = m.chain10.capture(x)
    print(f"chain10 graph: {g.nodes} nodes")
    reps = 2000
    s1.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        g(stream=s1)
    t_launch = (time.perf_counter() - t0) / reps
    s1.synchronize()
    t_total = timed(lambda: g(stream=s1), 200, sync)
    t_direct = timed(lambda: m.chain10(x, stream=s1), 50, sync)
    print(f"chain10: graph launch (host) {t_launch * 1e6:.2f} us/launch, graph end to end {t_total * 1e6:.2f} us, "
          f"uncaptured call {t_direct * 1e6:.2f} us")
    ok = np.allclose(np.asarray(g().get()), np.asarray(m.chain10(x).get()), rtol=1e-6)
    print("chain10 graph result equals the call:", ok)

    # 3. 100 Jacobi iterations on 4096^2 f32 as one graph launch
    u = cuk.to_device(np.random.default_rng(1).random((4096, 4096), dtype=np.float32))
    gj = m.jacobi100.capture(u)
    ev0, ev1 = drv.Event(), drv.Event()
    gj(stream=s1)
    s1.synchronize()
    best_g = 1e30
    for _ in range(5):
        ev0.record(s1)
        gj(stream=s1)
        ev1.record(s1)
        ev1.synchronize()
        best_g = min(best_g, ev1.time_since(ev0))
    # the kernels alone: one step, timed on the device, times 100
    best_k = 1e30
    m.jstep(u, stream=s1)
    for _ in range(5):
        ev0.record(s1)
        for _ in range(100):
            m.jstep(u, stream=s1)  # each result freed at once: the pool hands its block back on s1
        ev1.record(s1)
        ev1.synchronize()
        best_k = min(best_k, ev1.time_since(ev0))
    direct = timed(lambda: m.jacobi100(u, stream=s1), 1, sync) * 1e3
    print(f"jacobi100 4096^2: graph {best_g:.3f} ms ({gj.nodes} nodes), 100 queued steps {best_k:.3f} ms "
          f"(graph/steps {best_g / best_k:.3f}), uncaptured call {direct:.3f} ms")
    ref = m.jacobi100(u).get()
    print("jacobi100 graph result equals the call:", bool(np.array_equal(np.asarray(gj().get()), ref)))

    # 4. the same with PyTorch's CUDA graphs, in the same run
    try:
        import torch
    except ImportError:
        print("torch: not installed")
        return
    t = torch.from_numpy(np.asarray(u.get())).cuda()

    def tstep(x):
        inner = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
        mid = torch.cat((x[1:-1, 0:1], inner, x[1:-1, -1:]), dim=1)
        return torch.cat((x[0:1, :], mid, x[-1:, :]), dim=0)

    def t100(x):
        for _ in range(100):
            x = tstep(x)
        return x

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            t100(t)
    torch.cuda.current_stream().wait_stream(side)
    tg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(tg):
        tout = t100(t)
    tg.replay()
    torch.cuda.synchronize()
    best_t = 1e30
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        tg.replay()
        b.record()
        b.synchronize()
        best_t = min(best_t, a.elapsed_time(b))
    print(f"torch jacobi100 CUDA graph: {best_t:.3f} ms (cuk graph / torch graph {best_g / best_t:.3f}); "
          f"same result: {bool(np.allclose(tout.cpu().numpy(), ref, rtol=1e-5, atol=1e-6))}")
    xs = torch.ones(1 << 10, device="cuda")

    def tchain(y):
        for _ in range(10):
            y = y * 1.0001 + 0.5
        return y

    tc = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        tchain(xs)
    torch.cuda.synchronize()
    with torch.cuda.graph(tc):
        tchain(xs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        tc.replay()
    t_tl = (time.perf_counter() - t0) / reps
    torch.cuda.synchronize()
    print(f"torch chain10 CUDA graph replay (host) {t_tl * 1e6:.2f} us/launch")


if __name__ == "__main__":
    main()
