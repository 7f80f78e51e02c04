#!/usr/bin/env python3
"""Issue 14's other road: CUB's radix sort kernels compiled through NVRTC from the
toolkit's CCCL headers (what cuk's runtime would drive in place of kernels/sort.cuh).
No GPU needed: compiles the histogram, exclusive-sum and onesweep kernels for one key
type with NVRTC (the options cuk's compiler would pass), then ptxas for sm_90, and
prints the compile time and each kernel's registers and shared memory.

usage: cub_nvrtc.py [key type, default "unsigned int"]
"""
import ctypes
import re
import subprocess
import sys
import time

CUDA = "/usr/local/cuda"
key = sys.argv[1] if len(sys.argv) > 1 else "unsigned int"
SRC = r"""
#include <cub/device/dispatch/kernels/radix_sort.cuh>
#include <cub/device/dispatch/tuning/tuning_radix_sort.cuh>
namespace rs = cub::detail::radix_sort;
using K = %(key)s;
using Policy = cub::detail::radix::policy_hub<K, cub::NullType, unsigned long long>::MaxPolicy;
template __global__ void rs::DeviceRadixSortHistogramKernel<Policy, cub::SortOrder::Ascending, K, unsigned long long,
    cub::detail::identity_decomposer_t>(unsigned long long*, const K*, unsigned long long, int, int, cub::detail::identity_decomposer_t);
template __global__ void rs::DeviceRadixSortExclusiveSumKernel<Policy, unsigned long long>(unsigned long long*);
template __global__ void rs::DeviceRadixSortOnesweepKernel<Policy, cub::SortOrder::Ascending, K, cub::NullType,
    unsigned long long, int, int, cub::detail::identity_decomposer_t>(int*, int*, unsigned long long*,
    const unsigned long long*, K*, const K*,
    cub::NullType*, const cub::NullType*, int, int, int, cub::detail::identity_decomposer_t);
""" % {"key": key}


def main():
    nv = ctypes.CDLL(CUDA + "/lib64/libnvrtc.so")
    prog = ctypes.c_void_p()
    if nv.nvrtcCreateProgram(ctypes.byref(prog), SRC.encode(), b"cub_sort.cu", 0, None, None):
        sys.exit("nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=compute_90", b"-I" + CUDA.encode() + b"/include/cccl",
            b"-I" + CUDA.encode() + b"/include", b"-std=c++17", b"-default-device"]
    t0 = time.time()
    rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    dt = time.time() - t0
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, log)
    print("NVRTC: %s, %.1f s, key %s" % ("ok" if rc == 0 else "failed (%d)" % rc, dt, key))
    if rc:
        print(log.value.decode()[:4000])
        sys.exit(1)
    nv.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetPTX(prog, ptx)
    with open("/tmp/cub_nvrtc.ptx", "wb") as f:
        f.write(ptx.value)
    out = subprocess.run([CUDA + "/bin/ptxas", "-arch=sm_90", "-v", "/tmp/cub_nvrtc.ptx", "-o", "/tmp/cub_nvrtc.cubin"],
                         capture_output=True, text=True).stderr
    fn = None
    for line in out.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            fn = re.search(r"DeviceRadixSort(\w+?)Kernel", m.group(1)).group(1)
        m = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", line)
        if m and fn:
            print("%-14s %3s registers, %6s bytes of shared memory" % (fn, m.group(1), m.group(2)))


if __name__ == "__main__":
    main()
