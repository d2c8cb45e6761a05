#!/usr/bin/env python3
"""Runs the MPI communicator's unit test (tests/unit/test_mpi_comm.c) as a
real 3-rank job; ctest runs it once more as a single process (unit.mpi_comm).
Every rank must pass (the test combines the verdicts with MPI_Allreduce)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402  (also a private Open MPI session directory)

binary_dir = os.environ.get("HL_BINARY_DIR", "")
test = os.path.join(binary_dir, "tests", "test_mpi_comm")
if not os.access(test, os.X_OK):
    sys.exit("FAIL: %s not built (HL_BINARY_DIR=%r)" % (test, binary_dir))
argv = hl.mpi_starter(3) + [test]
try:
    res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=120)
except subprocess.TimeoutExpired:
    sys.exit("FAIL: %s hung" % " ".join(argv))
print(res.stdout[-3000:])
print(res.stderr[-3000:], file=sys.stderr)
runs = res.stdout.count("Run Summary")
if res.returncode != 0 or runs != 3:
    sys.exit("FAIL: exit %d, %d of 3 ranks reported" % (res.returncode, runs))
print("ok   3 ranks")
