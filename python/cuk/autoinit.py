"""``import cuk.autoinit``: like ``pycuda.autoinit``, selects a device ($CUK_DEVICE,
else 0) and makes its primary context current. Nothing is pushed, so nothing needs
popping at exit."""
from . import driver as cuda

cuda.init()
device = cuda.Device(cuda._cuk.device_current())
context = device.retain_primary_context()
