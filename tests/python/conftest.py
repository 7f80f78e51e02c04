"""Environment of the programs the tests start, under scripts/check.sh's
"pytest (ASan+UBSan)" stage.

That stage runs the interpreter with clang's shared ASan runtime in LD_PRELOAD (the
ASan+UBSan extension leaves the runtime's symbols to the process) and ASAN_OPTIONS with
detect_leaks=0. The programs the tests start (cukc, the C examples) come from the same
ASan+UBSan build and carry their own, static, runtime: with a second one preloaded they
abort at once ("Your application is linked against incompatible ASan runtimes"). So,
when CUK_CHILD_ASAN_OPTIONS is set, children get the environment without LD_PRELOAD and
with CUK_CHILD_ASAN_OPTIONS as their ASAN_OPTIONS (scripts/check.sh says why leak
checking is off for them; the lit ASan+UBSan stage checks the same programs for leaks).
Python children, which load the extension and so need the preloaded runtime, get it back
through cukpath.python_child_env(). The interpreter read its own ASAN_OPTIONS at
start-up; changing os.environ here does not affect it. Without CUK_CHILD_ASAN_OPTIONS
this does nothing.
"""
import os

_child = os.environ.pop("CUK_CHILD_ASAN_OPTIONS", None)
if _child is not None:
    # Python children (cukpath.python_child_env) import the ASan+UBSan extension and need
    # the preloaded runtime back.
    os.environ["CUK_PYTHON_CHILD_PRELOAD"] = os.environ.pop("LD_PRELOAD", "")
    os.environ["ASAN_OPTIONS"] = _child
