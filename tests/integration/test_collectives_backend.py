#!/usr/bin/env python3
"""Runs the MPI collectives backend's unit test (tests/unit/test_mpi_collectives.c)
as real 2- and 4-rank jobs; ctest runs it once more as a single process
(unit.mpi_collectives). Every rank must pass (the test combines the verdicts
with MPI_Allreduce), and no job may hang (prepare errors and mismatched
programs must fail on every rank)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402  (also a private Open MPI session directory)

binary_dir = os.environ.get("HL_BINARY_DIR", "")
test = os.path.join(binary_dir, "tests", "test_mpi_collectives")
if not os.access(test, os.X_OK):
    sys.exit("FAIL: %s not built (HL_BINARY_DIR=%r)" % (test, binary_dir))
failed = []
for n in (2, 4):
    argv = hl.mpi_starter(n) + [test]
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=180)
    except subprocess.TimeoutExpired:
        failed.append("%d ranks: hung" % n)
        print("FAIL %d ranks: hung" % n)
        continue
    runs = res.stdout.count("Run Summary")
    if res.returncode != 0 or runs != n:
        print(res.stdout[-3000:])
        print(res.stderr[-3000:], file=sys.stderr)
        failed.append("%d ranks: exit %d, %d of %d ranks reported" % (n, res.returncode, runs, n))
        print("FAIL %d ranks" % n)
    else:
        print("ok   %d ranks" % n)
if failed:
    sys.exit("FAIL: " + "; ".join(failed))
