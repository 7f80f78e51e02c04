# Kernel tuning run (device): every bench case as emitted, then edited variants of some
# (bench/exp/cuda/<variant>/<case>.cu, through CUK_BENCH_CUDA).
B=.carry/build/bench/bench_kernels
export CUK_CACHE_DIR=/tmp/cukcache
$B . 28 20 2>&1 | grep -E "CASE|error|DEVICE"
for d in bench/exp/cuda/*/; do
  for f in "$d"*.cu; do
    c=$(basename "$f" .cu)
    echo "== $(basename "$d")"
    CUK_BENCH_CUDA=$d $B . 28 20 "$c" 2>&1 | grep -E "CASE $c|error"
  done
done
