#!/usr/bin/env python3
"""test_collectives.py's programs through the node shared-memory collectives.

Runs every program of tests/programs/collectives/ on every grid of
test_collectives.py (1x1, 2x1, 8x1, 1x8, 2x4, 4x2) with `hlo-launch
--collectives=shm`, so every collective whose group lies on this node (all of them
here) goes through collectives/shm/ at any size, and compares each process's
outputs with the same NumPy oracle (the StableHLO spec's semantics, computed
in that file). HL_SHM_SLOT_BYTES=4096 makes the larger arrays take several
rounds of the shared slots. That the layer really takes these calls is shown
by tests/unit/test_shm_collectives.c (it counts them)."""

import os
import re
import time

import hl_testlib as hl
import test_collectives as coll

os.environ["HL_SHM_SLOT_BYTES"] = "4096"
_launch = hl.launch


def launch_shm(program, replicas=1, partitions=1, args_dir=None, output_dir=None, extra=()):
    return _launch(program, replicas, partitions, args_dir=args_dir, output_dir=output_dir,
                   extra=("--collectives", "shm") + tuple(extra))


hl.launch = launch_shm

if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    only = os.environ.get("HL_COLL_ONLY")
    tests = coll.program_tests()
    if only:
        tests = [t for t in tests if re.search(only, t[0])]
    t0 = time.time()
    try:
        hl.main(tests)
    finally:
        print("elapsed %.1f s" % (time.time() - t0))
