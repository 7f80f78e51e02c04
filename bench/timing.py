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
