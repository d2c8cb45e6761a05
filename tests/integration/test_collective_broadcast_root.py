#!/usr/bin/env python3
"""collective-broadcast with has_dynamic_root (newest XLA) on real ranks,
checked against an oracle written from XLA's semantics
(xla/backends/gpu/runtime/collective_broadcast_thunk.cc, RunCollectiveBroadcast):
the last operand holds one s32 root per data operand, and operand k of every
member of a group becomes the operand k of the group's member at position
roots[k]; processes in no group get zeros (the StableHLO spec's rule for
collective_broadcast). Runs on the MPI and the shared-memory backends; bad
roots fail on every rank without a hang."""

import os

import numpy as np

import hl_testlib as hl
import test_collectives as tc

DIR = os.path.join(hl.PROGRAMS_DIR, "collective_broadcast_root")
ERR_DIR = os.path.join(DIR, "errors")
GROUPS = [[1, 0], [2, 3]]


def values(p0, r):
    return [p0 + np.float32(100 * r), np.full((2, 3), r, np.int32)]


def dynamic_root(R, roots, backend):
    p0 = np.arange(4, dtype=np.float32) - 1.5
    with hl.tempdir("cbroot") as tmp:
        args_dir, out_dir = os.path.join(tmp, "args"), os.path.join(tmp, "out")
        hl.write_args(args_dir, [p0, np.array(roots, np.int32)])
        argv = [hl.HLO_LAUNCH, "-np", str(R), "--replicas", str(R), "--timeout", "60",
                "--collectives", backend, "--args-dir", args_dir, "--output-dir", out_dir,
                "--quiet", os.path.join(DIR, "dynamic_root.hlo")]
        res = hl.run(argv, timeout=90)
        if res.returncode != 0 or res.timed_out:
            return "launch failed\n" + res.describe()
        for r in range(R):
            group = next((g for g in GROUPS if r in g), None)
            want = ([values(p0, group[roots[k]])[k] for k in range(2)] if group else
                    [np.zeros_like(v) for v in values(p0, r)])
            got = hl.read_outputs(out_dir, r, 0, 2)
            for k in range(2):
                msg = hl.compare("replica %d result %d" % (r, k), got[k], want[k])
                if msg:
                    return msg
    return None


ERROR_CASES = [
    ("roots_disagree", 2, 1, [r"bad_cb_roots", r"disagree"]),
    ("root_out_of_range", 2, 1, [r"bad_cb_root", r"out of range"]),
    ("roots_shape", 2, 1, [r"bad_cb_roots_shape", r"s32\[1\]"]),
]


def main():
    hl.require_binaries("hlo-launch")
    tests = []
    for backend in ("mpi", "shm"):
        for R, roots in [(4, (1, 0)), (4, (0, 1)), (6, (1, 1))]:
            tests.append(("dynamic_root roots=%s %d replicas (%s)" % (list(roots), R, backend),
                          lambda R=R, roots=roots, b=backend: dynamic_root(R, roots, b)))
    tests += [("error: %s %dx%d" % (n, r, p),
               lambda n=n, r=r, p=p, pat=pat: tc.error_test(n, r, p, pat, ERR_DIR))
              for n, r, p, pat in ERROR_CASES]
    hl.main(tests)


if __name__ == "__main__":
    main()
