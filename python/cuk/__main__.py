"""`python -m cuk ARGS` is `cukc ARGS` (docs/cli.md), and so is the `cukc` command that
`pip install` puts on the PATH: both run the cukc built with this package, which is
cuk/bin/cukc in a package pip installed, P/bin/cukc for one `cmake --install --prefix P`
put in P/lib/python3.X/site-packages, bin/cukc of the CMake build whose extension this is
(PYTHONPATH=build/python:python), or $CUK_BUILD_DIR/bin/cukc."""
import os
import sys


def cukc_path():
    """The cukc binary that belongs to this package, or None."""
    from cuk import _cuk
    here = os.path.dirname(os.path.abspath(_cuk.__file__))
    up = lambda k: os.path.join(here, *([os.pardir] * k), "bin", "cukc")  # noqa: E731
    cands = [up(0), up(2), up(4)]
    if os.environ.get("CUK_BUILD_DIR"):
        cands.append(os.path.join(os.environ["CUK_BUILD_DIR"], "bin", "cukc"))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.normpath(c)
    return None


def main():
    path = cukc_path()
    if path is None:
        sys.stderr.write("cuk: this installation of the cuk package has no cukc binary (looked beside the "
                         "package and in $CUK_BUILD_DIR/bin); reinstall with `pip install .` or build with CMake\n")
        return 2
    sys.stdout.flush()
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
