"""cuk.core (cuda.core's API, docs/core.md) where no GPU is needed: programs compiled by
NVRTC to PTX, cubin and LTO-IR, linking by nvJitLink, LaunchConfig's checks; and, against
the logging fake driver (tests/python/fake_cuda_log.c), devices, streams, launches and
graph builders. tests/gpu/python/test_gpu_core.py runs it all on a GPU."""
import pytest

import cukpath
import cuk
from cuk.core import LaunchConfig, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions

CODE = r"""
template<typename T> __global__ void axpy(T a, const T* x, T* y, size_t n) {
    size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def compiled(target, **opts):
    try:
        return Program(CODE, "c++", ProgramOptions(std="c++17", arch="sm_90", **opts)).compile(
            target, name_expressions=("axpy<float>",))
    except cuk.NoDeviceError as e:
        pytest.skip(f"no NVRTC: {e}")


def test_program_to_ptx_cubin_and_ltoir():
    ptx = compiled("ptx")
    assert ptx.code_type == "ptx" and b".entry" in ptx.code and b"sm_90" in ptx.code
    cubin = compiled("cubin")
    assert cubin.code_type == "cubin" and cubin.code[:4] == b"\x7fELF"
    assert cubin._names["axpy<float>"].startswith("_Z4axpyIfEv")
    lto = compiled("ltoir", link_time_optimization=True)
    assert lto.code_type == "ltoir" and len(lto.code) > 0
    try:
        linked = Linker(lto, options=LinkerOptions(arch="sm_90", link_time_optimization=True)).link("cubin")
    except cuk.NoDeviceError as e:
        pytest.skip(f"no nvJitLink: {e}")
    assert linked.code[:4] == b"\x7fELF" and "axpy<float>" in linked._names
    assert ObjectCode.from_cubin(cubin.code).code == cubin.code


def test_program_errors():
    with pytest.raises(RuntimeError, match="Unsupported code_type='fortran'"):
        Program(CODE, "fortran")
    p = Program(CODE, "c++", ProgramOptions(arch="sm_90"))
    with pytest.raises(ValueError, match="Unsupported target_type='exe'"):
        p.compile("exe")
    with pytest.raises(cuk.CompileError, match="error"):
        compiled_bad = Program("__global__ void f( {", "c++", ProgramOptions(arch="sm_90"))
        try:
            compiled_bad.compile("ptx")
        except cuk.NoDeviceError as e:
            pytest.skip(f"no NVRTC: {e}")
    with pytest.raises(ValueError, match="At least one ObjectCode"):
        Linker()


def test_program_options_become_nvrtc_options():
    o = ProgramOptions(std="c++17", debug=True, lineinfo=True, use_fast_math=True, max_register_count=64,
                       define_macro=("N", "4"), include_path=["/a", "/b"], ftz=False)._as_nvrtc()
    assert o == ["-G", "-lineinfo", "-maxrregcount=64", "-ftz=false", "-use_fast_math", "-DN=4", "-I/a", "-I/b",
                 "-std=c++17"]


@pytest.mark.parametrize("kw,err", [({"grid": 0, "block": 1}, "positive"), ({"grid": (1, 2, 3, 4), "block": 1}, "1 to 3"),
                                    ({"grid": 1.5, "block": 1}, "an int"), ({"grid": 1, "block": -2}, "positive"),
                                    ({"grid": 1, "block": 1, "shmem_size": -1}, "at least 0")])
def test_launch_config_checks(kw, err):
    with pytest.raises(ValueError, match=err):
        LaunchConfig(**kw)
    assert LaunchConfig(grid=4, block=(32, 2)).grid == (4, 1, 1)


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    return cukpath.build_fake_log_driver(str(tmp_path_factory.mktemp("fakecuda")))


CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
from cuk.core import Device, LaunchConfig, Program, ProgramOptions, launch, system

dev = Device()
dev.set_current()
print("device", system.num_devices, dev.arch, dev.properties.multiprocessor_count, Device(0) is dev)
try:
    mod = Program(%r, "c++", ProgramOptions(std="c++17", arch="sm_90")).compile("cubin", name_expressions=("axpy<float>",))
except cuk.NoDeviceError as e:
    print("skip", e)
    print("ok")
    sys.exit(0)
k = mod.get_kernel("axpy<float>")
s = dev.create_stream()
print("stream %%#x" %% s.handle)
x, y = dev.allocate(4096, stream=s), dev.allocate(4096, stream=s)
mark("launch")
launch(s, LaunchConfig(grid=4, block=256), k, np.float32(2), x, y, np.uint64(1024))
mark("graph")
gb = s.create_graph_builder()
gb.begin_building()
launch(gb, LaunchConfig(grid=4, block=256), k, np.float32(2), x, y, np.uint64(1024))
launch(gb, LaunchConfig(grid=4, block=256), k, np.float32(3), x, y, np.uint64(1024))
g = gb.end_building().complete()
g.launch(s)
mark("cluster")
try:
    launch(s, LaunchConfig(grid=2, cluster=2, block=32), k, np.float32(2), x, y, np.uint64(1))
    print("cluster launched")
except cuk.Error as e:
    print("cluster:", "cuLaunchKernelEx" in str(e))
mark("end")
print("ok")
""" % CODE


def test_core_on_the_fake_driver(fake_driver, tmp_path):
    out, sec = cukpath.run_fake_logged(fake_driver, tmp_path, CHILD)
    assert out[0] == "device 1 90 132 True"  # the fake's answers
    if out[1].startswith("skip"):
        pytest.skip("needs NVRTC: " + out[1])
    st = "0x%x" % int(out[1].split()[1], 16)
    assert sec["launch"] == ["launch on " + st]
    g = sec["graph"]
    assert g[0] == "capture begin %s mode 2" % st and g[1:3] == ["launch on " + st] * 2, g
    assert g[3] == "capture end %s (2 launches)" % st and g[-1] == "graph launch on " + st, g
    assert "cluster: True" in out  # the fake has no cuLaunchKernelEx: said so, nothing launched
    assert not any(l.startswith("launch") for l in sec["cluster"])


MANAGED_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
from cuk.core import Device, Host, ManagedBuffer, ManagedMemoryResource, ManagedMemoryResourceOptions

dev = Device()
dev.set_current()
s = dev.create_stream()
mr = ManagedMemoryResource()
b = mr.allocate(4096, stream=s)
print("buffer", type(b).__name__, b.size, b.is_host_accessible, b.is_device_accessible, mr.is_host_accessible)
print("read_mostly", b.read_mostly, end=" ")
b.read_mostly = True
print(b.read_mostly, end=" ")
b.read_mostly = False
print(b.read_mostly)
print("preferred", b.preferred_location, end=" ")
b.preferred_location = dev
print(b.preferred_location is dev, end=" ")
b.preferred_location = Host()
print(b.preferred_location, end=" ")
b.preferred_location = None
print(b.preferred_location)
b.accessed_by.add(dev)
print("accessed_by", dev in b.accessed_by, len(b.accessed_by), end=" ")
b.accessed_by.discard(dev)
print(len(b.accessed_by))
b.prefetch(dev, stream=s)
print("prefetch", b.last_prefetch_location is dev, end=" ")
b.prefetch(-1, stream=s)
print(b.last_prefetch_location)
b.fill(7, stream=s)
print("bytes", np.from_dlpack(b)[:3].tolist())
c = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=0)).allocate(100, stream=s)
print("option", c.preferred_location is dev)
for f in (lambda: mr.allocate(1 << 40, stream=s), lambda: b.prefetch("gpu", stream=s), lambda: b.prefetch(None, stream=s),
          lambda: ManagedMemoryResourceOptions and ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location_type="host", preferred_location=0)),
          lambda: Host(numa_id=-1)):
    try:
        f()
        print("no error")
    except Exception as e:
        print("error", type(e).__name__, str(e).split(":")[0])
b.preferred_location = Host(numa_id=1)
b.prefetch(Host.numa_current(), stream=s)
print("numa", b.preferred_location, b.last_prefetch_location, b.preferred_location is Host(numa_id=1))
b.close()
try:
    b.read_mostly
except RuntimeError as e:
    print("closed", e)
print("ok")
"""


def test_managed_memory_on_the_fake_driver(fake_driver, tmp_path):
    out = cukpath.run_fake_logged(fake_driver, tmp_path, MANAGED_CHILD)[0]
    assert out[:9] == [
        "buffer ManagedBuffer 4096 True True True",
        "read_mostly False True False",
        "preferred None True Host() None",
        "accessed_by True 1 0",
        "prefetch True Host()",
        "bytes [7, 7, 7]",
        "option True",
        # more than the device has free: refused, not oversubscribed
        "error MemoryError managed memory of 1099511627776 bytes is more than device 0 has free (85899345920 of "
        "85899345920 bytes)",
        "error TypeError ManagedBuffer.prefetch",
    ], out
    assert out[9:12] == ["error ValueError ManagedBuffer.prefetch", "error ValueError preferred_location_type='host' takes "
                         "preferred_location=None", "error ValueError numa_id must be a non-negative int, got -1"], out
    # NUMA nodes as locations: advice and prefetches name them, the range reports them back
    assert out[12] == "numa Host(numa_id=1) Host.numa_current() True", out
    assert out[13] == "closed ManagedBuffer.advice: the buffer is closed"


def test_the_managed_memory_example_of_docs_core_md(fake_driver, tmp_path):
    import os
    import re

    text = open(os.path.join(cukpath.ROOT, "docs", "core.md")).read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "ManagedMemoryResource()" in b]
    assert len(blocks) == 1
    child = cukpath.FAKE_CHILD_PRELUDE + blocks[0] + "\nprint(b.read_mostly, b.preferred_location is dev, b.last_prefetch_location)\nprint('ok')\n"
    out = cukpath.run_fake_logged(fake_driver, tmp_path, child)[0]
    assert out[-2] == "True True Host()"


STREAMS_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
from cuk.core import Device, StreamOptions

dev = Device()
dev.set_current()
print("uuid", dev.uuid)
for o in (None, StreamOptions(priority=-5), StreamOptions(nonblocking=False, priority=-2)):
    s = dev.create_stream(options=o)
    print("stream", s.priority, s.is_nonblocking)
from cuk.core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM
for d in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM):
    mark("default %d" % d.handle)
    d.record().sync()
    dev.allocate(64, stream=d).fill(1, stream=d)
    print("default", d.handle, d.is_nonblocking, d.device is dev)
for o in (StreamOptions(priority=-6), StreamOptions(priority=1), StreamOptions(priority=1.5)):
    try:
        dev.create_stream(options=o)
        print("no error")
    except Exception as e:
        print("error", type(e).__name__, e)
print("ok")
"""


def test_stream_priorities_and_uuid_on_the_fake_driver(fake_driver, tmp_path):
    out, sec = cukpath.run_fake_logged(fake_driver, tmp_path, STREAMS_CHILD)
    assert out[0] == "uuid 00010203-0405-0607-0809-0a0b0c0d0e0f"  # the fake's bytes 0..15
    assert out[1:4] == ["stream 0 True", "stream -5 True", "stream -2 False"]
    assert out[4:6] == ["default 1 False True", "default 2 False True"]
    # the default streams' work goes to the legacy stream (the driver's NULL handle) and to
    # handle 2 (CU_STREAM_PER_THREAD)
    assert "fill on 0x0" in sec["default 1"] and "fill on 0x2" in sec["default 2"], sec
    out = out[:4] + out[6:]
    rng = "is outside this device's range: 0 (lowest) to -5 (highest; lower numbers are higher priorities)"
    assert out[4] == "error ArgumentError stream priority -6 " + rng, out
    assert out[5] == "error ArgumentError stream priority 1 " + rng, out
    assert out[6] == "error TypeError StreamOptions.priority must be an int, not float", out


COMPAT_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
from cuk.core import Context, Device, Event, EventOptions, Stream

dev = Device()
dev.set_current()
print("devices", Device.get_all_devices() == (dev,))
p = dev.properties
print("props", p.gpu_overlap is True, p.multicast_supported is True, type(p.multiprocessor_count).__name__)
s1, s2 = dev.create_stream(), dev.create_stream()
print("context", s1.context == s2.context == dev.context, isinstance(dev.context, Context), dev.context.handle != 0,
      hash(s1.context) == hash(dev.context), dev.context != "x")
print("from_handle", Stream.from_handle(0).handle, Stream.from_handle(int(s1.handle)) == s1)
for cls in (Stream, Event, Context):
    try:
        cls()
    except RuntimeError as e:
        print("direct", str(e).split(".")[0] + ".")
t = EventOptions(timing_enabled=True)
e0, e1 = s1.record(options=t), s1.record(options=EventOptions(enable_timing=True))
print("timed", e0.is_timing_enabled, e1.is_timing_enabled, isinstance(e1 - e0, float), e0 == e0, e0 != e1,
      e0.__rsub__(1) is NotImplemented, e0.context == dev.context)
b = s1.record(options=EventOptions(blocking_sync=True))
print("blocking", b.is_blocking_sync, b.is_timing_enabled)
for f in (lambda: e1 - b, lambda: dev.create_event(options=t) - e0):
    try:
        f()
    except RuntimeError as e:
        print("error", str(e).split(":")[0])
from cuk.core import Program, ProgramOptions
try:
    k = Program('extern "C" __global__ void k(int a) {}', "c++", ProgramOptions(arch="sm_90")).compile("cubin").get_kernel("k")
    print("kernel", k.num_arguments, k.occupancy.available_dynamic_shared_memory_per_block(4, 128),
          k.attributes[dev] is k.attributes[0] or k.attributes[dev].num_regs == k.attributes.num_regs,
          isinstance(k.handle, int))
except cuk.NoDeviceError:
    print("kernel skipped: no NVRTC")
print("ok")
"""


def test_cuda_core_1x_compatibility_on_the_fake_driver(fake_driver, tmp_path):
    out, sec = cukpath.run_fake_logged(fake_driver, tmp_path, COMPAT_CHILD)
    assert out[:11] == [
        "devices True",
        "props True True int",  # flags as bools, counts as ints (the fake answers 1 to both kinds)
        "context True True True True True",
        "from_handle 1 True",  # 0 names the legacy default stream (handle 1 in cuk)
        "direct Stream objects cannot be instantiated directly.",
        "direct Event objects cannot be instantiated directly.",
        "direct Context objects cannot be instantiated directly.",
        "timed True True True True True True True",
        "blocking True False",
        "error Both Events must be created with timing enabled",
        "error Both Events must be recorded on a stream (Stream.record) before their time is taken",
    ], out
    if not out[11].startswith("kernel skipped"):
        # the fake's kernels have no parameters and 228 KiB of shared memory an SM
        assert out[11] == "kernel 0 %d True True" % ((228 << 10) // 4), out


FILL_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
import ctypes
from cuk.core import Device, PinnedMemoryResource

dev = Device()
dev.set_current()
s = dev.create_stream()
b = PinnedMemoryResource().allocate(8)
for v in (0x42, b"\x34\x12", np.uint32(0xDEADBEEF), np.float32(1.0), np.int8(-1)):
    b.fill(v, stream=s)
    print("fill", ctypes.string_at(b.handle, 8).hex())
for v in (256, -1, "x", b"", b"\x01\x02\x03", np.uint64(0)):
    try:
        b.fill(v, stream=s)
        print("no error")
    except Exception as e:
        print("error", type(e).__name__)
try:
    PinnedMemoryResource().allocate(6).fill(np.uint32(1), stream=s)
except ValueError as e:
    print("error", e)
print("ipc", PinnedMemoryResource().is_ipc_enabled, dev.memory_resource.is_ipc_enabled)
print("ok")
"""


def test_buffer_fill_patterns_on_the_fake_driver(fake_driver, tmp_path):
    out = cukpath.run_fake_logged(fake_driver, tmp_path, FILL_CHILD)[0]
    assert out[:5] == ["fill 4242424242424242", "fill 3412341234123412", "fill efbeaddeefbeadde",
                       "fill 0000803f0000803f", "fill ffffffffffffffff"], out
    assert out[5:11] == ["error OverflowError", "error OverflowError", "error TypeError", "error ValueError",
                         "error ValueError", "error ValueError"], out
    assert out[11] == "error Buffer.fill: the buffer's 6 bytes are not a whole number of 4-byte patterns"
    assert out[12] == "ipc False False"


PROTOCOLS_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
import pickle, re, weakref
from cuk.core import Device, Program, ProgramOptions

dev = Device()
dev.set_current()
s = dev.create_stream()
e = s.record()
objs = {"device": dev, "stream": s, "event": e, "context": s.context, "buffer": dev.allocate(64, stream=s)}
for k, o in objs.items():
    print(k, repr(o), hash(o) == hash(o), weakref.ref(o)() is o, o == o, o != "x")
print("pickle", pickle.loads(pickle.dumps(dev)) is dev)
print("program", repr(Program('extern "C" __global__ void k() {}', "c++", ProgramOptions(arch="sm_90"))))
print("ok")
"""


def test_object_protocols_on_the_fake_driver(fake_driver, tmp_path):
    import re

    out = cukpath.run_fake_logged(fake_driver, tmp_path, PROTOCOLS_CHILD)[0]
    pats = {"device": r"<Device \d+ \(.+\)>", "stream": r"<Stream handle=0x[0-9a-f]+ context=0x[0-9a-f]+>",
            "event": r"<Event handle=0x[0-9a-f]+>", "context": r"<Context handle=0x[0-9a-f]+ device=\d+>",
            "buffer": r"<Buffer ptr=0x[0-9a-f]+ size=\d+>"}
    for line, (k, pat) in zip(out, pats.items()):
        name, rest = line.split(" ", 1)
        r, flags = rest.rsplit(" ", 4)[0], rest.rsplit(" ", 4)[1:]
        assert name == k and re.fullmatch(pat, r), line
        assert flags == ["True"] * 4, line
    assert out[5] == "pickle True"
    assert out[6] == "program <Program backend='NVRTC'>"


def test_program_and_linker_options_forms():
    from cuk.core import LinkerOptions

    o = ProgramOptions(pch=True, create_pch="a.pch", pch_verbose=False, frandom_seed="12", no_cache=True,
                       ofast_compile="min")._as_nvrtc()
    assert o == ["-no-cache", "-frandom-seed=12", "-Ofast-compile=min", "-pch", "--create-pch=a.pch",
                 "--pch-verbose=false"], o
    b = LinkerOptions(arch="sm_80", debug=True, ftz=True, max_register_count=32, optimization_level=3,
                      fma=False).as_bytes("nvjitlink")
    assert b == [b"-arch=sm_80", b"-maxrregcount=32", b"-O3", b"-g", b"-ftz=true", b"-fma=false"], b
    with pytest.raises(ValueError, match="only supports 'nvjitlink' backend"):
        LinkerOptions(arch="sm_80").as_bytes("driver")
    with pytest.raises(NotImplementedError, match="extra_sources"):
        ProgramOptions(extra_sources=["x"])._as_nvrtc()
