"""Stream ordering with other CUDA libraries (docs/python.md, "Streams and other
libraries"). cuk queues its work on the legacy default stream; an array from a library
working on another stream must be written before cuk reads it, and cuk's results must be
written before the other library reads them:

- PyTorch tensors come through DLPack, with __dlpack__(stream=1) (DLPack's name for
  the legacy default stream), so that PyTorch makes that stream wait for its own;
- a __cuda_array_interface__ (version 3) naming a stream gets an event on that stream
  which the legacy stream waits for; stream 0 is an error, None or absent means nothing;
- DeviceArray.__dlpack__(stream=s) makes s wait for cuk's work, and its
  __cuda_array_interface__ names stream 1.

The driver-side half runs against bench/fake_libcuda.c with a logging layer
(fake_cuda_log.c): the log shows which event is recorded on which stream and which
stream waits for it. tests/gpu/python/test_gpu_interop_streams.py runs the same on a
GPU with PyTorch and CuPy, with the write delayed so that a missing wait shows."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = "fn total(x: f32[n]) -> f32 = sum(x);"


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu")


class Recorder:
    """A DLPack and CUDA-array-interface producer backed by a NumPy array that records
    how it was asked. kind 2 (kDLCUDA) or 1 (kDLCPU) is what __dlpack_device__ says;
    the capsule is NumPy's (a host tensor), so the call runs on the CPU backend."""

    def __init__(self, a, kind=2):
        self.a, self.kind, self.streams, self.cai_reads = a, kind, [], 0

    def __dlpack__(self, stream=None, **kw):
        self.streams.append(stream)
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (self.kind, 0)

    @property
    def __cuda_array_interface__(self):
        self.cai_reads += 1
        return {"shape": (0,), "typestr": "<f4", "data": (0, False), "version": 3}


class TorchLike(Recorder):
    """Stands for torch.Tensor: the extension knows PyTorch's types by their module."""


TorchLike.__module__ = "torch"

needs_dlpack = pytest.mark.skipif(not hasattr(np.ndarray, "__dlpack__"), reason="NumPy without __dlpack__")


@needs_dlpack
def test_torch_tensors_go_through_dlpack_with_the_legacy_stream(m):
    t = TorchLike(np.arange(5, dtype=np.float32))
    assert m.total(t) == 10
    assert t.streams == [1]  # DLPack's 1: cuk's stream, the legacy default stream
    assert t.cai_reads == 0  # PyTorch's CAI names no stream: not used


@needs_dlpack
def test_host_tensors_get_no_stream(m):
    t = TorchLike(np.arange(5, dtype=np.float32), kind=1)
    assert m.total(t) == 10
    assert t.streams == [None]  # a CPU producer accepts only stream=None


@needs_dlpack
def test_other_dlpack_producers_get_the_legacy_stream(m):
    class DL:
        def __init__(self, a):
            self.a, self.streams = a, []

        def __dlpack__(self, stream=None):
            self.streams.append(stream)
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return (2, 0)

    d = DL(np.ones(3, np.float32))
    assert m.total(d) == 3 and d.streams == [1]


def test_cai_preferred_for_other_libraries(m):
    # CuPy and Numba: version 3 names the stream, so their CAI is used (and costs less)
    r = Recorder(np.ones(3, np.float32))
    try:
        m.total(r)  # an empty device array: needs a driver for the device result
    except cuk.Error:
        pass
    assert r.cai_reads == 1 and r.streams == []


class CAI:
    def __init__(self, **extra):
        self.__cuda_array_interface__ = dict({"shape": (0,), "typestr": "<f4", "data": (0, False), "version": 3}, **extra)


@pytest.mark.parametrize("stream,what", [(0, "ambiguous"), (-3, "not a CUDA stream handle"), ("1", "must be an int")])
def test_cai_bad_streams_are_rejected(m, stream, what):
    with pytest.raises(cuk.ArgumentError) as e:
        m.total(CAI(stream=stream))
    msg = str(e.value)
    assert msg.startswith("total(): parameter 'x': __cuda_array_interface__ has stream")
    assert what in msg


def test_device_array_exports_its_stream():
    d = cuk._cuk.device_wrap(0x1000, (3,), "float32", None)  # never read
    assert d.__cuda_array_interface__["stream"] == 1
    assert d.__cuda_array_interface__["version"] == 3
    for s in (None, -1, 1):  # nothing to order: no driver needed
        cap = d.__dlpack__(stream=s)
        assert type(cap).__name__ == "PyCapsule"
    assert type(d.__dlpack__()).__name__ == "PyCapsule"
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        d.__dlpack__(stream=0)
    with pytest.raises(ValueError, match="not a CUDA stream handle"):
        d.__dlpack__(stream=-2)
    with pytest.raises(TypeError, match="must be an int"):
        d.__dlpack__(stream="1")
    with pytest.raises(ValueError, match="ambiguous"):
        cuk._cuk.stream_wait_cuk(0)
    cuk._cuk.stream_wait_cuk(None)
    cuk._cuk.stream_wait_cuk(1)


# ---- the driver calls, against a logging fake driver ------------------------------------------


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    return cukpath.build_fake_log_driver(str(tmp_path_factory.mktemp("fakecuda")))


CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
m = cuk.compile("fn total(x: f32[n]) -> f32 = sum(x);", device="cpu")
a = cuk.to_device(np.arange(4, dtype=np.float32))

class C:
    def __init__(self, **st):
        self.__cuda_array_interface__ = dict({"shape": (4,), "typestr": "<f4", "data": (a.ptr, False), "version": 3}, **st)

for s in (0x55, 1, 2, None):
    mark("cai %r" % (s,))
    assert float(m.total(C(stream=s)).get()) == 6.0
mark("cai absent")
assert float(m.total(C()).get()) == 6.0
for s in (0x77, 2, 1, None, -1):
    mark("dlpack %r" % (s,))
    a.__dlpack__(stream=s)
mark("wait_cuk 0x99")
cuk._cuk.stream_wait_cuk(0x99)
mark("context")
ctx = drv.Device(0).make_context()
ctx.pop()
mark("end")
try:  # needs NVRTC (the fake driver loads any image); the fake gives every global 64 KiB
    from cuk.compiler import SourceModule
    g = SourceModule('__device__ float c[4]; extern "C" __global__ void k(float *x) { x[0] = c[0]; }').get_global("c")
    print("global", g[0] != 0, g[1])
except cuk.NoDeviceError as e:
    print("global: no NVRTC:", e)
print("ok")
"""


def run_fake(lib, tmp_path):
    logf = tmp_path / "driver.log"
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=os.path.join(cukpath.ROOT, "tests", "python"), capture_output=True,
                       text=True, timeout=300,
                       env=cukpath.python_child_env(CUK_LIBCUDA=lib, CUK_FAKE_LOG=str(logf), CUK_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "ok", r.stderr[-3000:]
    out = r.stdout.splitlines()[0]
    assert out == "global True 65536" or out.startswith("global: no NVRTC"), r.stdout
    sections, cur = {}, None
    for line in logf.read_text().splitlines():
        if line.startswith("# "):
            cur = sections.setdefault(line[2:], [])
        elif cur is not None and line.split()[0] in ("record", "wait", "push", "pop", "sync", "ctxsync"):
            cur.append(line)
    return sections


def test_fake_driver_event_waits(fake_driver, tmp_path):
    s = run_fake(fake_driver, tmp_path)
    # a producer's stream: an event recorded on it, and cuk's legacy stream (0x1) waits
    rec = s["cai 85"]
    assert len(rec) == 2 and rec[0].startswith("record e") and rec[0].endswith(" on 0x55")
    ev = rec[0].split()[1]
    assert rec[1] == "wait 0x1 for " + ev
    # the per-thread default stream is another stream
    assert [x.split()[0] for x in s["cai 2"]] == ["record", "wait"] and s["cai 2"][0].endswith(" on 0x2")
    # the legacy stream itself, None or no key: nothing to order, and never a synchronisation
    assert s["cai 1"] == [] and s["cai None"] == [] and s["cai absent"] == []
    # DeviceArray.__dlpack__(stream=s): s waits for an event on the legacy stream
    rec = s["dlpack 119"]
    assert len(rec) == 2 and rec[0].endswith(" on 0x1") and rec[1] == "wait 0x77 for " + rec[0].split()[1]
    assert s["dlpack 2"][1].startswith("wait 0x2 for ")
    assert s["dlpack 1"] == [] and s["dlpack None"] == [] and s["dlpack -1"] == []
    rec = s["wait_cuk 0x99"]
    assert rec[0].endswith(" on 0x1") and rec[1].startswith("wait 0x99 for ")
    # the context stack through the runtime (no second dlopen of the driver; the
    # module's globals too, checked in run_fake)
    assert s["context"] == ["push", "pop"]


# ---- calls on streams and graphs of calls, against the logging fake driver ------------------

STREAMS_CHILD = cukpath.FAKE_CHILD_PRELUDE + r"""
try:
    m = cuk.compile('''
fn scale(x: f32[n], a: f32) -> f32[n] = x * a;
fn total(x: f32[n]) -> f32 = sum(x * 2.0);
fn steps(u: f32[n], k: i64) -> f32[n] {
    var x = u;
    for i in 0..k {
        x = x * 0.5 + 1.0;
    }
    return x;
}
fn keep(x: f32[n]) -> f32[?] = x[x > 0.5];
''', device="gpu")
except cuk.NoDeviceError as e:
    print("skip", e)
    print("ok")
    sys.exit(0)
x = cuk.to_device(np.arange(1 << 16, dtype=np.float32))
s, s2 = drv.Stream(), drv.Stream()
print("streams %#x %#x" % (s.handle, s2.handle))
m.scale(x, 1.0)  # compiled and warm
mark("stream=")
y = m.scale(x, 2.0, stream=s)
mark("free then reuse on another stream")
del y
z = m.scale(x, 3.0, stream=s2)
mark("with")
with s:
    m.scale(x, 4.0)
mark("foreign")
other = 0x4321  # another library's stream: cuk may name it only while it queues work there
f = m.scale(x, 5.0, stream=other)
mark("foreign gone")
fh = f.get()
del f
r = m.scale(x, 6.0)  # may take f's block: after all the work, as the old stream cannot be named
mark("scalar")
m.total(np.arange(1 << 16, dtype=np.float32), stream=s)  # a host argument: the sum comes to the host
mark("capture")
g = m.steps.capture(x, 3)
print("nodes", g.nodes)
mark("replay")
g()
mark("replay new data on s2")
g(cuk.to_device(np.ones(1 << 16, np.float32)), 3, stream=s2)
mark("refused")
try:
    m.keep.capture(x)
    print("keep captured?!")
except cuk.Error as e:
    print("refused", "cannot record" in str(e))
mark("end")
print("ok")
"""


def test_fake_driver_calls_on_streams_and_graphs(fake_driver, tmp_path):
    out, sec = cukpath.run_fake_logged(fake_driver, tmp_path, STREAMS_CHILD, CUK_FAKE_GPU="1")
    if out[0].startswith("skip"):
        pytest.skip("needs NVRTC: " + out[0])
    s1, s2 = out[0].split()[1:]
    s1, s2 = "0x%x" % int(s1, 16), "0x%x" % int(s2, 16)
    # stream=: the kernel goes on that stream, nothing on the legacy one
    assert [l for l in sec["stream="] if l.startswith("launch")] == ["launch on " + s1]
    # a block freed in s1's order and taken by s2: s2 waits for an event recorded on s1
    rec = [l for l in sec["free then reuse on another stream"] if l.startswith(("record", "wait"))]
    assert rec[0].startswith("record e") and rec[0].endswith(" on " + s1), rec
    assert "wait %s for %s" % (s2, rec[0].split()[1]) in rec, rec
    assert "launch on " + s2 in sec["free then reuse on another stream"]
    # `with stream:` is the current stream
    assert [l for l in sec["with"] if l.startswith("launch")] == ["launch on " + s1]
    # another library's stream: the result's event is recorded while the call runs there;
    # afterwards (its read-back, its free, its block's reuse) that stream is never named
    fs = sec["foreign"]
    assert "launch on 0x4321" in fs and any(l.startswith("record") and l.endswith(" on 0x4321") for l in fs), fs
    gone = sec["foreign gone"]
    assert not any("0x4321" in l for l in gone), gone
    assert any(l.startswith("wait 0x1 for e") for l in gone) and "ctxsync" in gone, gone
    # a host argument and a scalar coming back: the upload, the kernel and the copy back on
    # the call's stream, and a wait for that stream alone, not the device
    sc = sec["scalar"]
    assert "htod on " + s1 in sc and "launch on " + s1 in sc, sc
    assert "dtoh on " + s1 in sc and "sync " + s1 in sc and "ctxsync" not in sc, sc
    # capture: one run, then the same launches recorded on the private stream
    cap = sec["capture"]
    begin = [i for i, l in enumerate(cap) if l.startswith("capture begin")]
    assert len(begin) == 1 and cap[begin[0]].endswith("mode 2"), cap  # relaxed
    c = cap[begin[0]].split()[2]
    recorded = cap[begin[0] + 1:]
    assert [l for l in recorded if l.startswith("launch")] == ["launch on " + c] * 3, cap
    assert recorded[-1].startswith("capture end %s (3 launches)" % c)
    assert "nodes 3" in out
    # a replay: one graph launch, after the capture stream's earlier work
    rep = sec["replay"]
    assert rep[-1] == "graph launch on 0x0" and not any(l.startswith("launch") for l in rep), rep
    assert rep[0].startswith("record") and rep[0].endswith(" on " + c)
    # new data on s2: the copy into the graph's input, then the graph, both on s2, after the last replay
    new = [l for l in sec["replay new data on s2"] if not l.startswith(("fill", "destroy"))]
    assert new[-2:] == ["dtod on " + s2, "graph launch on " + s2], new
    assert any(l.startswith("wait %s for" % s2) for l in new), new
    assert "refused True" in out
