"""The GPU benchmarks' timing rule (docs/performance.md): 3 warm-up calls, then CUDA
events around each of iters calls on PyTorch's current stream, the median in ms."""
import argparse
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


def time_case(rows, timed, name, nbytes, cuk_fn, peers, check):
    """One benchmark row group: check() (raises when cuk's result is wrong: the row says
    so and nothing is timed), then cuk and each (name, fn) peer (None: skipped; a peer
    that fails is reported and left out), appended to rows as (case, who, ms, bytes)."""
    try:
        check()
    except Exception as e:  # noqa: BLE001
        print("%s: cuk's result differs from the peer's: %s" % (name, str(e)[:300]))
        rows.append((name, "cuk (WRONG)", float("nan"), nbytes))
        return
    rows.append((name, "cuk", timed(cuk_fn), nbytes))
    for pname, pfn in peers:
        if pfn is None:
            continue
        try:
            rows.append((name, pname, timed(pfn), nbytes))
        except Exception as e:  # noqa: BLE001
            print("%s / %s failed: %s" % (name, pname, str(e).splitlines()[0][:200]))


def import_peers():
    """(torch, cupy or None): the peers the GPU benchmarks time; prints the device line
    (the GPU's name and the peers' versions) every results file starts with."""
    import torch
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001
        print("no cupy:", e)
        cp = None
    print("device:", torch.cuda.get_device_name(0), " torch", torch.__version__, " cupy", cp.__version__ if cp else "-")
    return torch, cp


def torch_compiled(fn, on):
    """torch.compile(fn) when on (None when off or when it fails: that peer is left out)."""
    if not on:
        return None
    import torch
    try:
        return torch.compile(fn)
    except Exception as e:  # noqa: BLE001
        print("torch.compile failed:", e)
        return None


def job_args(iters, no_compile=False):
    """The part-2 style benchmarks' options: --logn, --iters, --only a,b, --check-cpu (the
    programs on the CPU backend against NumPy, no GPU), and --no-compile where a peer
    is torch.compile."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--logn", type=int, default=28)
    ap.add_argument("--iters", type=int, default=iters)
    if no_compile:
        ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--check-cpu", action="store_true")
    return ap.parse_args()


def job_setup(a, src, name, cases):
    """What such a benchmark starts from (a from job_args): the cases to run, the peers
    (torch, cupy or None), src compiled for the GPU, the device, n = 2^logn and a seeded
    torch generator."""
    import cuk
    only = set(a.only.split(",")) if a.only else set(cases)
    torch, cp = import_peers()
    m = cuk.compile(src, device="gpu", name=name)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    return only, torch, cp, m, dev, 1 << a.logn, g


def gbs_cases(a, only, rows):
    """What a GB/s benchmark's main times with (a from job_args, only from job_setup):
    compiled(fn) (torch.compile unless --no-compile) and case(name, bytes, cuk_fn, peers,
    check), which appends to rows what time_case measures for the cases asked for."""
    def timed(fn, iters=a.iters):
        return torch_median_ms(fn, iters)

    def compiled(fn):
        return torch_compiled(fn, not getattr(a, "no_compile", False))

    def case(name, nbytes, cuk_fn, peers, check):
        if name in only:
            time_case(rows, timed, name, nbytes, cuk_fn, peers, check)
    return compiled, case
