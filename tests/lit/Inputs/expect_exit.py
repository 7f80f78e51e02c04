"""Runs a command and succeeds only if it exits with the given status: lit's `not`
accepts any failure, but cukc's exit codes (1 compile, 2 usage, 3 run time) are part
of its contract. Usage: expect_exit.py CODE CMD [ARGS...]; the output passes through."""
import subprocess
import sys

want = int(sys.argv[1])
got = subprocess.call(sys.argv[2:])
if got != want:
    sys.stderr.write("expect_exit: %s exited with %d, expected %d\n" % (sys.argv[2], got, want))
    sys.exit(1)
