#!/usr/bin/env bash
# Kernel tuning on the GPU machine (docs/performance.md, "Design experiments"): every
# bench case as cuk emits it, then each edited variant under bench/exp/cuda/<variant>/
# <case>.cu (start from `cukc emit-cuda bench/cases/<case>.cuk`, keep the kernel names
# and parameter words), timed by the same harness through CUK_BENCH_CUDA.
#   bash bench/exp/tune.sh            (from the repo root, with the build in .carry/)
B=${BENCH_KERNELS:-.carry/build/bench/bench_kernels}
export CUK_CACHE_DIR=${CUK_CACHE_DIR:-/tmp/cuk-tune-cache}
"$B" . 28 20 2>&1 | grep -E "CASE|error|DEVICE"
for d in bench/exp/cuda/*/; do
  [[ -d $d ]] || continue
  for f in "$d"*.cu; do
    c=$(basename "$f" .cu)
    echo "== $(basename "$d")"
    CUK_BENCH_CUDA=$d "$B" . 28 20 "$c" 2>&1 | grep -E "CASE $c|error"
  done
done
