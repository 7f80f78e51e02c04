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
du -sh .carry
