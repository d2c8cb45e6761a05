#!/usr/bin/env python3
"""Runs the MPI communicator's unit test (tests/unit/test_mpi_comm.c) and the
polite MPI wrappers' (tests/unit/test_mpi_polite.c) as real 3-rank jobs;
ctest runs each once more as a single process (unit.mpi_comm,
unit.mpi_polite). Every rank must pass (the tests combine the verdicts with
MPI_Allreduce)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402  (also a private Open MPI session directory)

binary_dir = os.environ.get("HL_BINARY_DIR", "")
for name in ("test_mpi_comm", "test_mpi_polite"):
    test = os.path.join(binary_dir, "tests", name)
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
        sys.exit("FAIL: %s: exit %d, %d of 3 ranks reported" % (name, res.returncode, runs))
    print("ok   %s: 3 ranks" % name)
