#!/usr/bin/env bash
# Makes sure every tool the build and the tests need is installed (Debian 12), installing
# only what is missing; silent when everything is already there. Safe to run repeatedly.
set -euo pipefail

LLVM=/usr/lib/llvm-14
PY=/usr/bin/python3

missing=()   # Debian packages to install
need() {     # need PACKAGE CHECK-COMMAND...: queue PACKAGE unless the check succeeds
    local pkg=$1
    shift
    if ! "$@" >/dev/null 2>&1; then
        case " ${missing[*]-} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
    fi
}
have() { command -v "$1"; }
asan_rt() { compgen -G "$LLVM/lib/clang/14*/lib/linux/libclang_rt.asan-x86_64.a"; }
pyhas() { "$PY" -c "import $1"; }
pyvenv() { # a venv with pip can be made (Debian's python3-venv)
    local d r
    d=$(mktemp -d) && "$PY" -m venv "$d/v" >/dev/null 2>&1
    r=$?
    rm -rf "$d"
    return $r
}
pyhdr() { "$PY" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; }

check_all() {
    missing=()
    need make have make
    need gcc have gcc
    need libc6-dev test -e /usr/include/stdio.h
    need cmake have cmake
    need re2c have re2c
    need lemon test -e /usr/share/lemon/lempar.c
    need lemon have lemon
    need clang-14 have clang-14
    need libclang-rt-14-dev asan_rt
    need llvm-14-tools test -x "$LLVM/bin/FileCheck"
    need llvm-14-tools test -x "$LLVM/bin/not"
    need llvm-14-tools test -e "$LLVM/build/utils/lit/lit.py"
    need python3 test -x "$PY"
    if [ -x "$PY" ]; then
        need python3-numpy pyhas numpy
        need python3-pytest pyhas pytest
        need python3-dev pyhdr
        need python3-venv pyvenv
        need python3-setuptools pyhas setuptools
        need python3-wheel pyhas wheel
    else
        missing+=(python3-numpy python3-pytest python3-dev python3-venv python3-setuptools python3-wheel)
    fi
    need pkg-config have pkg-config
    need graphviz have dot
    need valgrind have valgrind
}

check_all
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing missing packages: ${missing[*]}"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "setup: not root and no sudo; as root, run:" >&2
        echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    SUDO=(sudo)
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get not found (cuk's setup targets Debian 12); install the equivalents of:" >&2
    echo "  ${missing[*]}" >&2
    exit 1
fi
if ! "${SUDO[@]}" apt-get update -qq ||
    ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    echo "setup: installing failed; please install these Debian packages yourself:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
fi

check_all
if [ ${#missing[@]} -ne 0 ]; then
    echo "setup: still missing after installing: ${missing[*]}" >&2
    echo "  install them with: apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "setup: done"
