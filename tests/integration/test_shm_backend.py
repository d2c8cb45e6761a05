#!/usr/bin/env python3
"""Runs the shared-memory collectives' unit test (tests/unit/test_shm_collectives.c)
as real 2-, 4- and 8-rank jobs, on one node and on nodes of 2 ranks
(HL_SHM_NODE_RANKS=2: the hierarchical all-reduce across them): every collective, element type and reduction through
collectives/shm/ compared with the MPI backend on the same data, on four group shapes
(all ranks, reversed order, pairs, strided) and many rounds per call.

The MPI reference runs with Open MPI's AVX reduction component off (OMPI_MCA_op=^avx):
in Open MPI 4.1 that component adds 8- and 16-bit integers with saturation
(e.g. 127 + 1 = 127), which is not MPI_SUM's (nor XLA's) wrapping sum; the shm path
wraps, and the test pins that against the corrected reference."""

import os
import subprocess
import sys

binary_dir = os.environ.get("HL_BINARY_DIR", "")
test = os.path.join(binary_dir, "tests", "test_shm_collectives")
if not os.access(test, os.X_OK):
    sys.exit("FAIL: %s not built (HL_BINARY_DIR=%r)" % (test, binary_dir))
env = dict(os.environ, OMPI_MCA_op="^avx")
failed = []
# (ranks, HL_SHM_NODE_RANKS): one node, then nodes of 2 ranks cut out of this
# machine, so groups spanning them take the hierarchical all-reduce
# (collectives/shm/shm_hier.c) and the rest the MPI path.
for n, node_ranks in ((2, ""), (4, ""), (8, ""), (4, "2"), (6, "2"), (8, "2")):
    env["HL_SHM_NODE_RANKS"] = node_ranks
    argv = ["mpiexec", "--oversubscribe", "--bind-to", "none", "-x", "HL_SHM_NODE_RANKS",
            "-n", str(n), test]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=300, env=env)
    except subprocess.TimeoutExpired:
        failed.append("%d ranks (nodes of %s): hung" % (n, node_ranks or "all"))
        print("FAIL %d ranks: hung" % n)
        continue
    runs = res.stdout.count("Run Summary")
    if res.returncode != 0 or runs != n:
        print(res.stdout[-3000:])
        print(res.stderr[-3000:], file=sys.stderr)
        failed.append("%d ranks (nodes of %s): exit %d, %d of %d ranks reported"
                      % (n, node_ranks or "all", res.returncode, runs, n))
        print("FAIL %d ranks, nodes of %s" % (n, node_ranks or "all"))
    else:
        print("ok   %d ranks, nodes of %s" % (n, node_ranks or "all"))
if failed:
    sys.exit("FAIL: " + "; ".join(failed))
