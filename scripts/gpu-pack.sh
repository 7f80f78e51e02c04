#!/usr/bin/env bash
# Packs what the GPU machine needs into .carry/ (git-ignored): the release build
# (cukc, libcuk, test and bench binaries, the Python extension) and FileCheck, not and
# lit, which that machine lacks. Run here, then carry .carry with the device tool and
# run scripts/gpu-check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s build BUILD="$BUILD"
rm -rf .carry
mkdir -p .carry/build .carry/tools/lib
for d in bin lib tests examples python bench; do
  [[ -d $BUILD/$d ]] && cp -a "$BUILD/$d" .carry/build/
done
rm -f .carry/build/lib/*.a
cp /usr/lib/llvm-14/bin/FileCheck /usr/lib/llvm-14/bin/not .carry/tools/
cp -L /lib/x86_64-linux-gnu/libz3.so.4 /lib/x86_64-linux-gnu/libtinfo.so.6 .carry/tools/lib/
cp -a /usr/lib/llvm-14/build/utils/lit .carry/tools/lit
# For the pycuda stage: PYCUDA_SRC=<a PyCUDA checkout> (its test/ and examples/),
# WHEELS=<a folder of pytools' wheels for the GPU machine's Python>, and the reference
# table (PYCUDA_REF, default ../shared/pycuda-suite-2026-11-24.txt).
if [[ -n ${PYCUDA_SRC:-} ]]; then
  mkdir -p .carry/pycuda-src
  cp -a "$PYCUDA_SRC/test" "$PYCUDA_SRC/examples" .carry/pycuda-src/
  ref=${PYCUDA_REF:-../shared/pycuda-suite-2026-11-24.txt}
  [[ -f $ref ]] && cp "$ref" .carry/pycuda-ref.txt
fi
# For the cudacore stage: CCEX=<a folder of cuda.core's example scripts> and
# CCWHEELS=<cuda-core, cuda-bindings and cuda-pathfinder wheels for the GPU machine's Python>.
if [[ -n ${CCEX:-} ]]; then
  mkdir -p .carry/ccex
  cp "$CCEX"/*.py .carry/ccex/
fi
# For the cudacoretests stage: CCTESTS=<cuda_core/tests of a cuda-python checkout> and
# CCHELPERS=<its cuda_python_test_helpers package>, with CCWHEELS.
if [[ -n ${CCTESTS:-} ]]; then
  rm -rf .carry/cctests .carry/cchelpers
  cp -a "$CCTESTS" .carry/cctests
  cp -a "$CCHELPERS" .carry/cchelpers
fi
if [[ -n ${CCWHEELS:-} ]]; then
  mkdir -p .carry/ccwheels
  cp "$CCWHEELS"/*.whl .carry/ccwheels/
fi
if [[ -n ${WHEELS:-} ]]; then
  mkdir -p .carry/wheels
  cp "$WHEELS"/*.whl .carry/wheels/
fi
du -sh .carry
