#!/usr/bin/env bash
# Runs the GPU checks ON the GPU machine, from the repo root, with the build that
# scripts/gpu-pack.sh put in .carry/. Each stage logs to $OUT/<stage>.log (OUT defaults
# to /tmp/out) and has its own time limit; a summary line per stage goes to stdout.
#
#   scripts/gpu-check.sh [stage...]      default: info runtime lit tests sanitize bench
#
# Stages: info (nvidia-smi, ldd, sizes) · runtime (tests/gpu/test_runtime_gpu) · lit
# (the whole lit suite; run tests go to the GPU through --device auto) · tests
# (tests/gpu/test_programs.py and test_sizes.py) · programs / sizes (one of the two) ·
# sanitize (compute-sanitizer memcheck on a few programs) · sanitize-all (on every
# example and lit run program) · bench (bench_call, bench_runtime) · python
# (tests/gpu/python, tests/python/test_sorting.py) · sortbench (bench/sort_bench.py) · pybench (bench/python_overhead.py) · kbench (bench/gpu_bench.py)
# · p2bench (bench/part2_bench.py) · tybench (bench/types_bench.py) · shbench (bench/shapes_bench.py) · mmbench (bench/matmul_bench.py) · plbench (bench/pycuda_layout_bench.py) · pycuda (PyCUDA's tests, scripts/pycuda_suite.py)
# · gendiff (GPU against the CPU backend, tests/fuzz/gen_programs.py diff: GEN_SEED, GEN_N, GEN_JOBS at a time) · copybench (bench/host_copy_bench.py) · sgbench (bench/streams_graphs_bench.py) · cudacore (cuda.core's examples: CCEX=, CCWHEELS= at packing) · cudacoretests (cuda.core's test suite, scripts/cuda_core_tests.py: CCTESTS=, CCHELPERS=, CCWHEELS= at packing) · startup (bench/startup.py) · sanitize-par (memcheck on every runnable program and
# racecheck/synccheck on the subset, 8 processes at a time) · exp (builds each
# bench/exp/*.cu with the machine's nvcc and runs it: kernel design experiments; EXP=name
# picks one) · sanitize-suite (memcheck, racecheck and synccheck over tests/gpu: the C
# runtime tests and tests/gpu/python).
# Time limits (seconds) can be changed with T_<stage>=N, e.g. T_lit=120.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
C=$REPO/.carry
CUKC=$C/build/bin/cukc
WORK=$(mktemp -d /tmp/cukgpu.XXXXXX)
export CUKC CUK_GPU_REQUIRED=1 CUK_QUIET=1
export CUK_CACHE_DIR=${CUK_CACHE_DIR:-$WORK/cache}
export PATH=$C/tools:$PATH LD_LIBRARY_PATH=$C/tools/lib:${LD_LIBRARY_PATH:-}
PY=${PYTHON:-$(command -v python3)}
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1 || true)

stages=("$@")
[[ ${#stages[@]} -eq 0 ]] && stages=(info runtime lit tests sanitize bench)

declare -A T=([info]=30 [runtime]=120 [lit]=240 [tests]=330 [programs]=240 [sizes]=240 [sanitize]=150
              [sanitize-all]=480 [bench]=90 [python]=480 [pybench]=60 [kbench]=240 [p2bench]=300 [tybench]=240 [shbench]=300 [mmbench]=240 [plbench]=180 [startup]=60 [sanitize-par]=300 [exp]=300 [sanitize-suite]=540 [sgbench]=240 [gendiff]=540 [copybench]=240 [cudacore]=300 [cudacoretests]=540 [pycuda]=480)
summary=()
fails=0

# stage NAME CMD...: runs CMD with NAME's time limit, output to $OUT/NAME.log.
stage() {
  local name=$1
  shift
  local var="T_${name//-/_}" lim=${T[$name]:-120}
  lim=${!var:-$lim}
  local t0=$SECONDS
  # the stage functions are exported, so that timeout can run them in a child bash
  timeout --kill-after=10 "$lim" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$((SECONDS - t0)) st=PASS
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then st="TIMEOUT(${lim}s)"; elif [[ $rc -ne 0 ]]; then st="FAIL(rc=$rc)"; fi
  [[ $st != PASS ]] && fails=$((fails + 1))
  local tail
  tail=$(grep -E "$TAILRE" "$OUT/$name.log" | tail -n 3 | tr '\n' ' ' | cut -c1-300)
  summary+=("$(printf '%-13s %-14s %4ss  %s' "$name" "$st" "$dt" "$tail")")
  echo "${summary[-1]}"
}
TAILRE='passed|failed|Passed|Failed|PASS |FAIL|error|ERROR|us/call|us/launch|ratio|Testing Time|Total|=='

s_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "== ldd $CUKC"
  ldd "$CUKC"
  if ldd "$CUKC" | grep -q "not found"; then echo "ERROR: missing libraries"; return 1; fi
  "$CUKC" --version
  du -sh "$C"
  "$PY" -c "import sys, numpy; print('python', sys.version.split()[0], 'numpy', numpy.__version__)"
  "$PY" -c "import pytest; print('pytest', pytest.__version__)" || echo "ERROR: no pytest"
  echo "compute-sanitizer: ${SAN:-none}"
}

s_runtime() {
  local ok=0
  for t in "$C"/build/tests/gpu/*; do
    [[ -x $t && -f $t ]] || continue
    echo "== $t"
    # each program on its own clock, so one that hangs does not hide the others
    timeout --kill-after=5 "${T_each:-40}" "$t" || { echo "FAIL: $t (rc=$?)"; ok=1; }
  done
  return $ok
}

# The Python package on the GPU (tests/gpu/python), with the carried extension.
s_python() {
  PYTHONPATH=$C/build/python:$REPO/python "$PY" -m pytest -q -p no:cacheprovider tests/gpu/python \
    tests/python/test_sorting.py
}

# cuda.core's examples on cuda.core itself (the carried wheels) and on cuk.core.
s_cudacore() {
  local lib=$WORK/cclib
  if ls "$C"/ccwheels/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-deps --no-index --target "$lib" "$C"/ccwheels/*.whl || echo "cuda.core wheels did not install"
  fi
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} PYTHONPATH=$lib:$C/build/python:$REPO/python \
    "$PY" scripts/cuda_core_examples.py "$C/ccex"
}

# cuda.core's own test suite on cuda.core (the carried wheels) and on cuk.core, per file
# (scripts/cuda_core_tests.py; CCTESTS= and CCHELPERS= at packing).
s_cudacoretests() {
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} PYTHONPATH=$C/build/python:$REPO/python \
    "$PY" scripts/cuda_core_tests.py "$C/cctests" --helpers "$C/cchelpers" --wheels "$C/ccwheels" \
    --jobs "${CCT_JOBS:-8}" --timeout "${CCT_TIMEOUT:-240}" ${CCT_ONLY:+--only "$CCT_ONLY"}
}

# GPU against the CPU backend over random programs (tests/fuzz/gen_programs.py diff;
# GEN_SEED, GEN_N): issue 19's differential run; docs/reliability.md has the counts.
# GEN_JOBS seeds (GEN_SEED, GEN_SEED+1, ...) run side by side, GEN_N programs in all.
s_gendiff() {
  local jobs=${GEN_JOBS:-8} n=${GEN_N:-2000} seed=${GEN_SEED:-1} j bad=0 pids=()
  for ((j = 0; j < jobs; j++)); do
    # each generator's lines reach the stage log as they come (a cut-off stage keeps them);
    # each stops 100 s before the limit: one program's GPU compile on a busy machine took 40+ s
    (set -o pipefail
     GEN_SECONDS=${GEN_SECONDS:-$((${T_gendiff:-540} - 100))} \
       "$PY" -u tests/fuzz/gen_programs.py diff "$CUKC" $((seed + j)) $(((n + jobs - 1) / jobs)) "$OUT" \
       2>&1 | tee "$WORK/gendiff-$j.txt") &
    pids+=($!)
  done
  for j in "${!pids[@]}"; do wait "${pids[$j]}" || bad=1; done
  awk '/^[0-9]+ passed, [0-9]+ failed$/ { p += $1; f += $3 } END { print p " passed, " f " failed" }' "$WORK"/gendiff-*.txt
  return $bad
}

# Streams and graphs (bench/streams_graphs_bench.py): two streams, graph launch cost, Jacobi as one graph.
s_sgbench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/streams_graphs_bench.py
}

# Copies between the GPU and pageable host memory against CuPy and PyTorch (COPY_MIB: sizes).
s_copybench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/host_copy_bench.py ${COPY_MIB:-}
}

# Sorting against CuPy (CUB) and PyTorch (bench/sort_bench.py; SORT_ARGS: --only a,b, --logn).
s_sortbench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/sort_bench.py ${SORT_ARGS:-}
}

# PyCUDA's own tests and examples with the imports changed (scripts/pycuda_suite.py):
# needs a PyCUDA checkout at $PYCUDA_SRC (default .carry/pycuda-src, test/ and
# examples/), the reference table at .carry/pycuda-ref.txt and pytools' wheels in
# .carry/wheels (the machine has no network).
s_pycuda() {
  local src=${PYCUDA_SRC:-$C/pycuda-src} lib=$WORK/pylib
  "$PY" -m pip install -q --no-index --target "$lib" "$C"/wheels/*.whl
  # PYCUDA_K: pytest's -k (spaces allowed); two files at once fit the suite in one call
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python:$lib "$PY" scripts/pycuda_suite.py "$src" \
    --out "$WORK/pycuda-suite" --ref "${PYCUDA_REF:-$C/pycuda-ref.txt}" --jobs "${PYCUDA_JOBS:-2}" \
    ${PYCUDA_K:+-k "$PYCUDA_K"} ${PYCUDA_ARGS:-}
}

# Call overhead from Python against a bare launch loop, CuPy and PyTorch.
s_pybench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/python_overhead.py
}

# cuk against CuPy and PyTorch on the issue-4 cases (torch.compile left out for time
# unless KBENCH_ARGS says otherwise).
s_kbench() {
  "$PY" bench/gpu_bench.py "$C/build" ${KBENCH_ARGS:---no-compile}
}

# The part-2 jobs (bench/part2_bench.py) against PyTorch and CuPy; P2_ARGS picks cases
# (--only a,b) and whether torch.compile runs (default: not, for time).
# The narrow types (bench/types_bench.py) against PyTorch and CuPy; TY_ARGS as P2_ARGS
s_tybench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/types_bench.py ${TY_ARGS:-}
}
s_p2bench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/part2_bench.py ${P2_ARGS:---no-compile}
}

# The PyCUDA-layout API against CuPy and PyTorch (PL_ARGS).
s_plbench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/pycuda_layout_bench.py ${PL_ARGS:-}
}

# Matrix products against cuBLAS through torch and CuPy (MM_ARGS).
s_mmbench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/matmul_bench.py ${MM_ARGS:-}
}

# The issue-13 benchmark: jobs of every shape (SH_ARGS, e.g. "--compile").
s_shbench() {
  CUK_BUILD_DIR=$C/build PYTHONPATH=$C/build/python:$REPO/python "$PY" bench/shapes_bench.py ${SH_ARGS:-}
}

# Start-up: bundle without NVRTC, source with a cold and a warm cache.
s_startup() {
  "$PY" bench/startup.py "$CUKC" 5
}

# lit.cfg.py names FileCheck and not under /usr/lib/llvm-14/bin and python as
# /usr/bin/python3; where those are missing, run a copy of tests/lit whose config points
# at the carried tools and this repo.
s_lit() {
  local dir=$REPO/tests/lit
  if [[ ! -x /usr/lib/llvm-14/bin/FileCheck || ${CUK_LIT_COPY:-0} == 1 ]]; then
    rm -rf "$WORK/lit" && cp -r "$dir" "$WORK/lit"
    sed -i -e "s|^repo = .*|repo = \"$REPO\"|" -e "s|^llvm_bin = .*|llvm_bin = \"$C/tools\"|" \
      -e "s|^python = .*|python = \"$PY\"|" "$WORK/lit/lit.cfg.py"
    dir=$WORK/lit
  fi
  "$PY" "$C/tools/lit/lit.py" -sv -j "$(nproc)" "$dir" -Dcukc="$CUKC" -Dbuild="$WORK/litbuild"
}

s_pytest() {
  "$PY" -m pytest -q -p no:cacheprovider "$@"
}

# A few programs that cover maps, reductions, scans, row kernels and gathers.
SAN_SUBSET=(examples/saxpy.cuk examples/softmax.cuk examples/prefix_sums.cuk examples/statistics.cuk
            tests/lit/run/gather.cuk tests/lit/fusion/horizontal_meanvar.cuk tests/lit/fusion/scan_lambda.cuk
            tests/lit/run/segments_tiles.cuk tests/lit/run/segments_edges.cuk tests/lit/run/histogram_bins.cuk
            tests/lit/run/scatter_hist.cuk tests/lit/run/pad_roll_stack.cuk examples/compaction.cuk tests/lit/run/slice_fixed.cuk
            tests/lit/run/types_narrow_int.cuk tests/lit/run/types_half.cuk tests/lit/run/types_complex.cuk tests/lit/run/matmul_half.cuk
            tests/lit/run/shapes_forms.cuk tests/lit/fusion/index_ew_chain.cuk tests/lit/fusion/index_rows_cols.cuk
            tests/lit/run/top_k.cuk tests/lit/run/top_k_select.cuk tests/lit/run/elem_loops_lambda.cuk tests/lit/run/matmul_epilogue.cuk tests/lit/run/rows_cluster.cuk
            tests/lit/run/transpose_perm.cuk tests/lit/run/rows_online.cuk tests/lit/run/rows_centred.cuk
            tests/lit/run/sort.cuk tests/lit/run/sort_unique.cuk tests/lit/run/sort_long.cuk
            tests/lit/run/searchsorted_plans.cuk)

s_sanitize() {
  [[ -n $SAN ]] || { echo "ERROR: compute-sanitizer not found"; return 1; }
  local bad=0 files=("$@")
  for f in "${files[@]}"; do
    [[ -f $f ]] || continue
    # only programs that run without arguments
    if [[ $f == tests/lit/* ]] && ! grep -qE "RUN: %cukc run %s( \||$)" "$f"; then continue; fi
    local d
    d=$(mktemp -d "$WORK/san.XXXX")
    echo "== $f"
    (cd "$d" && "$SAN" --tool memcheck --error-exitcode 99 --print-limit 20 "$CUKC" run --device gpu "$REPO/$f" >out.txt 2>&1)
    local rc=$?
    tail -n 4 "$d/out.txt"
    # 3 is a run-time error the program expects; 99 is memcheck finding something
    if [[ $rc -eq 99 ]] || grep -q "ERROR SUMMARY: [1-9]" "$d/out.txt"; then
      echo "FAIL memcheck: $f"
      cat "$d/out.txt" | head -60
      bad=1
    fi
  done
  return $bad
}

# compute-sanitizer over every program that runs without arguments (examples, lit run
# and fusion tests), 8 at a time: memcheck on all of them, racecheck and synccheck on
# the representative subset. One line per program; a summary count at the end.
san_one() {
  local tool=$1 f=$2 d
  d=$(mktemp -d "$WORK/san.XXXX")
  (cd "$d" && "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 10 "$CUKC" run --device gpu "$REPO/$f" >out.txt 2>&1)
  local rc=$?
  if [[ $rc -eq 99 ]] || grep -q "ERROR SUMMARY: [1-9]" "$d/out.txt"; then
    echo "FAIL $tool $f"; head -40 "$d/out.txt"
  else
    echo "PASS $tool $f ($(grep -o 'ERROR SUMMARY: [0-9]* errors' "$d/out.txt" | tail -1))"
  fi
}
s_sanitize_par() {
  [[ -n $SAN ]] || { echo "ERROR: compute-sanitizer not found"; return 1; }
  cd "$REPO" || return 1
  local files=()
  for f in examples/*.cuk tests/lit/run/*.cuk tests/lit/fusion/*.cuk; do
    if [[ $f == tests/lit/* ]] && ! grep -qE "RUN: %cukc run %s( \||$)" "$f"; then continue; fi
    files+=("$f")
  done
  {
    printf 'memcheck %s\n' "${files[@]}"
    # racecheck and synccheck: the subset, or every program with SAN_ALL_TOOLS=1
    if [[ ${SAN_ALL_TOOLS:-0} == 1 ]]; then
      printf 'racecheck %s\n' "${files[@]}"
      printf 'synccheck %s\n' "${files[@]}"
    else
      printf 'racecheck %s\n' "$@"
      printf 'synccheck %s\n' "$@"
    fi
  } | xargs -P "${SAN_JOBS:-8}" -L 1 bash -c 'san_one "$0" "$1"' 2>&1 | tee "$WORK/san.txt"
  local pass fail
  pass=$(grep -c '^PASS' "$WORK/san.txt")
  fail=$(grep -c '^FAIL' "$WORK/san.txt")
  echo "compute-sanitizer: $pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}

# compute-sanitizer (memcheck, racecheck, synccheck) over the rest of the GPU suite: the
# C runtime tests (tests/gpu/*.c) and the Python GPU tests (tests/gpu/python: raw
# SourceModule, ElementwiseKernel, ReductionKernel and scan kernels, gpuarray, interop).
# SAN_TOOLS picks the tools, SAN_PYTESTS the Python test files (default: all of tests/gpu/python).
s_sanitize_suite() {
  [[ -n $SAN ]] || { echo "ERROR: compute-sanitizer not found"; return 1; }
  local bad=0 tool t
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    for t in "$C"/build/tests/gpu/*; do
      [[ -x $t && -f $t ]] || continue
      # These tests provoke driver errors on purpose (a launch with a bad shape, a missing
      # function, twice the device memory, injected faults) and run a kernel that writes
      # to address 0x10 in a child process, to see the fault reported: API errors are not
      # reported here and children run unchecked. Kernel memory errors of the parent are.
      if "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 10 --report-api-errors no \
          --target-processes application-only "$t" >"$WORK/st.txt" 2>&1; then
        echo "PASS $tool $(basename "$t") ($(grep -oE '(ERROR|RACECHECK) SUMMARY: .*' "$WORK/st.txt" | tail -1))"
      else
        echo "FAIL $tool $(basename "$t")"; tail -40 "$WORK/st.txt"; bad=1
      fi
    done
    if PYTHONPATH=$C/build/python:$REPO/python "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 10 \
        "$PY" -m pytest -q -p no:cacheprovider ${SAN_PYTESTS:-tests/gpu/python} >"$WORK/sp.txt" 2>&1; then
      echo "PASS $tool ${SAN_PYTESTS:-tests/gpu/python} ($(grep -E 'passed|failed' "$WORK/sp.txt" | tail -1); $(grep -oE '(ERROR|RACECHECK) SUMMARY: .*' "$WORK/sp.txt" | tail -1))"
    else
      echo "FAIL $tool ${SAN_PYTESTS:-tests/gpu/python}"; grep -E "=====|Error|error|passed|failed" "$WORK/sp.txt" | head -60; bad=1
    fi
  done
  return $bad
}

# Kernel design experiments: standalone CUDA programs, built here with nvcc.
s_exp() {
  local nvcc ok=0
  nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
  [[ -n $nvcc ]] || { echo "ERROR: nvcc not found"; return 1; }
  for f in bench/exp/${EXP:-*}.cu; do
    local b
    b=$WORK/$(basename "$f" .cu)
    echo "== $f"
    "$nvcc" -O3 -arch=sm_90 -o "$b" "$f" || { echo "FAIL: build $f"; ok=1; continue; }
    "$b" || { echo "FAIL: $f (rc=$?)"; ok=1; }
  done
  return $ok
}

s_bench() {
  local ok=0
  if [[ -x $C/build/bench/bench_call ]]; then
    "$C/build/bench/bench_call" 4096 20000 || ok=1
    "$C/build/bench/bench_call" 1048576 5000 || ok=1
  else
    echo "ERROR: no bench_call in the carried build"
    ok=1
  fi
  [[ -x $C/build/bench/bench_runtime ]] && "$C/build/bench/bench_runtime"
  return $ok
}

export REPO OUT C WORK PY SAN CUKC
export -f s_copybench s_cudacore s_cudacoretests s_sgbench s_gendiff s_sanitize_suite s_exp san_one s_sanitize_par s_info s_runtime s_lit s_pytest s_sanitize s_bench s_python s_pybench s_pycuda s_kbench s_p2bench s_tybench s_sortbench s_shbench s_mmbench s_plbench s_startup
echo "gpu-check: stages ${stages[*]}; logs in $OUT"
for s in "${stages[@]}"; do
  case $s in
    info) stage info s_info ;;
    runtime) stage runtime s_runtime ;;
    lit) stage lit s_lit ;;
    tests) stage tests s_pytest tests/gpu/test_programs.py tests/gpu/test_sizes.py ;;
    programs) stage programs s_pytest tests/gpu/test_programs.py ;;
    sizes) stage sizes s_pytest tests/gpu/test_sizes.py ;;
    sanitize) stage sanitize s_sanitize "${SAN_SUBSET[@]}" ;;
    sanitize-par) stage sanitize-par s_sanitize_par "${SAN_SUBSET[@]}" ;;
    sanitize-all) stage sanitize-all s_sanitize examples/*.cuk tests/lit/run/*.cuk tests/lit/fusion/*.cuk ;;
    bench) stage bench s_bench ;;
    python) stage python s_python ;;
    pybench) stage pybench s_pybench ;;
    pycuda) stage pycuda s_pycuda ;;
    kbench) stage kbench s_kbench ;;
    startup) stage startup s_startup ;;
    sortbench) stage sortbench s_sortbench ;;
    sgbench) stage sgbench s_sgbench ;;
    gendiff) stage gendiff s_gendiff ;;
    copybench) stage copybench s_copybench ;;
    cudacore) stage cudacore s_cudacore ;;
    cudacoretests) stage cudacoretests s_cudacoretests ;;
    p2bench) stage p2bench s_p2bench ;;
    tybench) stage tybench s_tybench ;;
    shbench) stage shbench s_shbench ;;
    mmbench) stage mmbench s_mmbench ;;
    plbench) stage plbench s_plbench ;;
    exp) stage exp s_exp ;;
    sanitize-suite) stage sanitize-suite s_sanitize_suite ;;
    *) echo "gpu-check: unknown stage '$s'"; fails=$((fails + 1)) ;;
  esac
done
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
rm -rf "$WORK"
exit $((fails > 0))
