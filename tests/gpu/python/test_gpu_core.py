"""cuk.core (cuda.core's API over libcuk) on a GPU: devices, streams, events, programs,
kernels, launch configurations, buffers, graph builders, linking."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

import cuk  # noqa: E402

if not cuk.gpu_available():
    pytest.skip("needs a GPU", allow_module_level=True)

from cuk.core import (Buffer, Device, EventOptions, LaunchConfig, Linker, LinkerOptions, ObjectCode,  # noqa: E402
                      Program, ProgramOptions, launch, system)

CODE = r"""
template<typename T>
__global__ void axpy(T a, const T* x, T* y, size_t n) {
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
extern "C" __global__ void cluster_ids(unsigned* out) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    out[blockIdx.x] = r;
}
"""


@pytest.fixture(scope="module")
def dev():
    d = Device()
    d.set_current()
    return d


@pytest.fixture(scope="module")
def mod(dev):
    return Program(CODE, "c++", ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")).compile(
        "cubin", name_expressions=("axpy<float>", "axpy<double>"))


def upload(dev, host, stream):
    b = dev.allocate(host.nbytes, stream=stream)
    cuk.driver.memcpy_htod_async(b.handle, host, stream.handle)
    return b


def download(buf, like, stream):
    out = np.empty_like(like)
    stream.sync()
    cuk.driver.memcpy_dtoh(out, buf.handle)
    return out


def test_device_and_system(dev):
    assert system.num_devices >= 1
    assert Device(0) is Device(0)
    assert dev.compute_capability.major >= 7
    assert dev.arch == "".join(str(i) for i in dev.compute_capability)
    assert dev.properties.max_threads_per_block == 1024
    assert dev.properties.multiprocessor_count > 0
    with pytest.raises(ValueError):
        Device(system.num_devices)


def test_launch_with_buffers_and_numpy_scalars(dev, mod):
    s = dev.create_stream()
    n = 100_000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    bx, by = upload(dev, x, s), upload(dev, y, s)
    k = mod.get_kernel("axpy<float>")
    launch(s, LaunchConfig(grid=(n + 255) // 256, block=256), k, np.float32(2), bx, by, np.uint64(n))
    assert np.array_equal(download(by, y, s), 2 * x + 1)
    bx.close(s)
    by.close(s)
    s.close()


def test_events_time_and_order(dev, mod):
    s = dev.create_stream()
    e0 = s.record(options=EventOptions(enable_timing=True))
    n = 1 << 20
    by = upload(dev, np.zeros(n, np.float64), s)
    launch(s, LaunchConfig(grid=256, block=256), mod.get_kernel("axpy<double>"), 1.0, by, by, np.uint64(n))
    e1 = s.record(options=EventOptions(enable_timing=True))
    e1.sync()
    assert e1.is_done
    assert e1 - e0 >= 0.0
    with pytest.raises(RuntimeError, match="timing"):
        s.record() - e0
    s2 = dev.create_stream()
    s2.wait(e1)
    s2.wait(s)
    s2.sync()


def test_graph_builder(dev, mod):
    s = dev.create_stream()
    n = 4096
    x = np.arange(n, dtype=np.float32)
    bx, by = upload(dev, x, s), upload(dev, np.zeros(n, np.float32), s)
    s.sync()
    k = mod.get_kernel("axpy<float>")
    gb = s.create_graph_builder()
    gb.begin_building()
    for _ in range(3):
        launch(gb, LaunchConfig(grid=16, block=256), k, np.float32(1), bx, by, np.uint64(n))
    g = gb.end_building().complete()
    g.upload(s)
    g.launch(s)
    g.launch(s)
    assert np.array_equal(download(by, x, s), 6 * x)


def test_cluster_launch(dev):
    if dev.compute_capability.major < 9:
        pytest.skip("clusters need compute capability 9.0")
    o = Program(CODE, "c++", ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")).compile("cubin")
    s = dev.create_stream()
    b = dev.allocate(8 * 4, stream=s)
    launch(s, LaunchConfig(grid=2, cluster=4, block=32), o.get_kernel("cluster_ids"), b)  # 2 clusters of 4
    assert download(b, np.zeros(8, np.uint32), s).tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_ptx_cubin_ltoir_and_linker(dev):
    opts = ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")
    ptx = Program(CODE, "c++", opts).compile("ptx", name_expressions=("axpy<float>",))
    k = ptx.get_kernel("axpy<float>")
    assert k.attributes.max_threads_per_block() > 0
    assert k.occupancy.max_active_blocks_per_multiprocessor(256, 0) > 0
    lto = Program(CODE, "c++", ProgramOptions(std="c++17", arch=f"sm_{dev.arch}", link_time_optimization=True)).compile(
        "ltoir", name_expressions=("axpy<float>",))
    linked = Linker(lto, options=LinkerOptions(arch=f"sm_{dev.arch}", link_time_optimization=True)).link("cubin")
    s = dev.create_stream()
    x = np.arange(64, dtype=np.float32)
    by = upload(dev, x, s)
    launch(s, LaunchConfig(grid=1, block=64), linked.get_kernel("axpy<float>"), np.float32(3), by, by, np.uint64(64))
    assert np.array_equal(download(by, x, s), 4 * x)
    cub = ObjectCode.from_cubin(Program(CODE, "c++", opts).compile("cubin").code)
    assert cub.get_kernel("cluster_ids") is not None


def test_buffer_copies(dev):
    s = dev.create_stream()
    h = np.arange(1000, dtype=np.int32)
    a = upload(dev, h, s)
    b = a.copy_to(stream=s)
    c = dev.allocate(h.nbytes, stream=s)
    c.copy_from(b, stream=s)
    assert np.array_equal(download(c, h, s), h)
    with pytest.raises(ValueError, match="sizes differ"):
        c.copy_from(dev.allocate(4, stream=s), stream=s)
    assert Buffer.from_handle(a.handle, a.size).handle == a.handle


def test_foreign_stream_and_cuk_calls(dev):
    """A cuk.core stream is a stream= for compiled functions."""
    s = dev.create_stream()
    m = cuk.compile("fn f(x: f32[n]) -> f32 = sum(x);", device="gpu")
    x = cuk.to_device(np.ones(1000, np.float32))
    assert float(m.f(x, stream=s)) == 1000.0


def test_managed_memory(dev, mod):
    import ctypes

    from cuk.core import Host, ManagedMemoryResource

    s = dev.create_stream()
    n = 1 << 20
    mr = ManagedMemoryResource()
    x, y = mr.allocate(4 * n, stream=s), mr.allocate(4 * n, stream=s)
    # the host writes managed memory directly, a kernel reads and writes it, the host reads it back
    xs = np.ctypeslib.as_array((ctypes.c_float * n).from_address(x.handle))
    ys = np.ctypeslib.as_array((ctypes.c_float * n).from_address(y.handle))
    xs[:] = np.arange(n, dtype=np.float32)
    ys[:] = 1
    x.read_mostly = True
    y.preferred_location = dev
    y.accessed_by.add(Host())
    assert x.read_mostly and y.preferred_location is dev and Host() in y.accessed_by
    x.prefetch(dev, stream=s)
    y.prefetch(dev, stream=s)
    launch(s, LaunchConfig(grid=256, block=256), mod.get_kernel("axpy<float>"), np.float32(2), x, y, np.uint64(n))
    y.prefetch(Host(), stream=s)
    s.sync()
    assert x.last_prefetch_location is dev and y.last_prefetch_location == Host()
    np.testing.assert_array_equal(ys, 2 * np.arange(n, dtype=np.float32) + 1)
    free = cuk.driver.mem_get_info()[0]
    with pytest.raises(MemoryError, match="does not oversubscribe"):
        mr.allocate(free + (1 << 30), stream=s)
    x.close()
    y.close()


def test_uuid_and_stream_priorities(dev, mod):
    import re
    import subprocess

    from cuk.core import StreamOptions

    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", dev.uuid)
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i", str(dev.device_id)],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        smi = ""
    if smi:
        assert smi == "GPU-" + dev.uuid
    least, greatest = cuk._cuk.stream_priority_range()
    assert least == 0 and greatest < 0
    hi = dev.create_stream(options=StreamOptions(priority=greatest))
    blocking = dev.create_stream(options=StreamOptions(nonblocking=False))
    assert hi.priority == greatest and hi.is_nonblocking and not blocking.is_nonblocking
    n = 1 << 16
    x = upload(dev, np.ones(n, np.float32), hi)
    y = upload(dev, np.zeros(n, np.float32), hi)
    launch(hi, LaunchConfig(grid=64, block=256), mod.get_kernel("axpy<float>"), np.float32(3), x, y, np.uint64(n))
    np.testing.assert_array_equal(download(y, np.zeros(n, np.float32), hi), 3)


def test_cuda_core_1x_kernel_and_event_api(dev, mod):
    from cuk.core import EventOptions

    k = mod.get_kernel("axpy<float>")
    # axpy(float a, const float* x, float* y, size_t n): cuFuncGetParamInfo's layout
    assert k.num_arguments == 4
    assert [(p.offset, p.size) for p in k.arguments_info] == [(0, 4), (8, 8), (16, 8), (24, 8)]
    assert isinstance(k.attributes.num_regs, int) and k.attributes.num_regs == k.attributes.num_regs()
    smem = k.occupancy.available_dynamic_shared_memory_per_block(2, 256)
    assert 0 < smem <= dev.properties.max_shared_memory_per_block_optin
    assert k.attributes[dev].num_regs == k.attributes[dev.device_id].num_regs == k.attributes.num_regs
    r = k.occupancy.max_potential_block_size(lambda b: 4 * b, 512)
    assert r.max_block_size % 32 == 0 and 32 <= r.max_block_size <= 512 and r.min_grid_size > 0
    s = dev.create_stream()
    e0 = s.record(options=EventOptions(timing_enabled=True))
    x = upload(dev, np.ones(1 << 20, np.float32), s)
    y = upload(dev, np.zeros(1 << 20, np.float32), s)
    launch(s, LaunchConfig(grid=1024, block=256), k, np.float32(2), x, y, np.uint64(1 << 20))
    e1 = s.record(options=EventOptions(timing_enabled=True))
    e1.sync()
    assert isinstance(e1 - e0, float) and e1 - e0 >= 0
    assert e0.context == dev.context == s.context
