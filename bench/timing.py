"""The GPU benchmarks' timing rule (docs/performance.md): 3 warm-up calls, then CUDA
events around each of iters calls on PyTorch's current stream, the median in ms."""
import statistics


def torch_median_ms(fn, iters):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts)


def print_gbs_table(rows, copy_bytes):
    """rows: (case, who, ms, bytes moved); "vs copy" divides by the "copy" case's GB/s
    (copy_bytes moved)."""
    copy_ms = [t for c, _, t, _ in rows if c == "copy"]
    copy_gbs = copy_bytes / copy_ms[0] / 1e6 if copy_ms else float("nan")
    print("\n| case | who | ms | GB/s | vs copy |")
    print("| --- | --- | ---: | ---: | ---: |")
    for c, who, t, nb in rows:
        gbs = nb / t / 1e6
        print("| %s | %s | %.4f | %.0f | %.1f%% |" % (c, who, t, gbs, 100 * gbs / copy_gbs))
