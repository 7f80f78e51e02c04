# lit configuration for cuk's compiler and run tests: every *.cuk below tests/lit is a test
# whose RUN lines drive cukc and whose CHECK lines FileCheck matches.
# Run: /usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv tests/lit [-Dcukc=PATH]
import os

import lit.formats

config.name = "cuk"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cuk"]
# Inputs/ holds helper files that tests read, not tests.
config.excludes = ["Inputs"]

repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
build = lit_config.params.get("build", os.path.join(repo, "build"))
# Output/ files (%t) go under the build dir, so the source tree stays clean.
config.test_exec_root = os.path.join(os.path.abspath(build), "lit-" + (
    "asan" if "asan" in lit_config.params.get("cukc", "") else "out"))

cukc = os.path.abspath(lit_config.params.get("cukc", os.path.join(repo, "build", "bin", "cukc")))
llvm_bin = "/usr/lib/llvm-14/bin"
python = "/usr/bin/python3"

if not os.path.exists(cukc):
    lit_config.warning("cukc not found at %s (build it with `make build`, or pass -Dcukc=PATH)" % cukc)

# Longest first, so that %cukc is not eaten by a shorter substitution.
config.substitutions.append(("%cukc", cukc))
# `%expect_exit N cmd...` passes only if cmd exits with status N (see Inputs/expect_exit.py).
config.substitutions.append(("%expect_exit", "%s %s" % (
    python, os.path.join(config.test_source_root, "Inputs", "expect_exit.py"))))
config.substitutions.append(("%python", python))
config.substitutions.append(("%repo", repo))
# Tool names only where they stand alone (not inside a path or a longer word).
config.substitutions.append((r"(?<![\w/.%-])FileCheck(?![\w/.-])", os.path.join(llvm_bin, "FileCheck")))
config.substitutions.append((r"(?<![\w/.%-])not(?![\w/.-])", os.path.join(llvm_bin, "not")))

# Tests may read the examples and stdlib; keep the environment small but usable.
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "CUK_CACHE_DIR", "HOME",
            "XDG_CACHE_HOME", "CUDA_VISIBLE_DEVICES", "CUK_THREADS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["CUK_SOURCE_DIR"] = repo
