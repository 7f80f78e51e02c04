"""The stream and graph API of compiled functions where no GPU is needed (the CPU
backend): stream= is accepted and checked, the current stream starts as the legacy one,
capture says it needs the GPU. tests/gpu/python/test_gpu_streams_graphs.py covers the GPU."""
import numpy as np
import pytest

import cukpath  # noqa: F401  (puts the built package on sys.path)
import cuk

SRC = "fn scale(x: f32[n], a: f32) -> f32[n] = x * a;\n"


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu")


def test_current_stream_starts_as_the_legacy_one():
    assert cuk.get_current_stream() == 1


def test_stream_keyword_on_the_cpu_backend(m):
    x = np.arange(4, dtype=np.float32)
    assert np.array_equal(m.scale(x, 2.0, stream=None), x * 2)
    assert np.array_equal(m.scale(x, 2.0, stream=1), x * 2)  # a raw handle: nothing to order on the CPU
    with pytest.raises(TypeError, match="stream must be a cuk.driver.Stream"):
        m.scale(x, 2.0, stream="fast")
    with pytest.raises(TypeError, match="out= and stream= only, not streams="):
        m.scale(x, 2.0, streams=1)


def test_capture_needs_the_gpu(m):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(cuk.ArgumentError, match="a CUDA graph needs the GPU backend"):
        m.scale.capture(x, 2.0)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        m.scale.capture(x)
