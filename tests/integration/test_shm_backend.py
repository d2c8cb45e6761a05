#!/usr/bin/env python3
"""Runs the shared-memory collectives' unit test (tests/unit/test_shm_collectives.c)
as real 2-, 4- and 8-rank jobs, on one node and on nodes of 2 ranks
(HL_SHM_NODE_RANKS=2: the hierarchical all-reduce across them): every collective, element type and reduction through
collectives/shm/ compared with the MPI backend on the same data, on four group shapes
(all ranks, reversed order, pairs, strided) and many rounds per call. Each setup runs
on the direct (single-copy, process_vm_readv) path where this machine allows it, and
on the window path (HL_SHM_DIRECT=0).

The MPI reference runs with Open MPI's AVX reduction component off (OMPI_MCA_op=^avx):
in Open MPI 4.1 that component adds 8- and 16-bit integers with saturation
(e.g. 127 + 1 = 127), which is not MPI_SUM's (nor XLA's) wrapping sum; the shm path
wraps, and the test pins that against the corrected reference."""

import ctypes
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402  (also a private Open MPI session directory)

binary_dir = os.environ.get("HL_BINARY_DIR", "")
test = os.path.join(binary_dir, "tests", "test_shm_collectives")
if not os.access(test, os.X_OK):
    sys.exit("FAIL: %s not built (HL_BINARY_DIR=%r)" % (test, binary_dir))


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def can_read_other_processes():
    """Whether process_vm_readv works here (the layer's direct path needs it;
    containers without ptrace rights refuse it): reads a word of a child."""
    word = ctypes.c_uint64(0x5EED)
    pid = os.fork()
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        got = ctypes.c_uint64(0)
        local = IoVec(ctypes.cast(ctypes.byref(got), ctypes.c_void_p), 8)
        remote = IoVec(ctypes.cast(ctypes.byref(word), ctypes.c_void_p), 8)
        n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        return n == 8 and got.value == 0x5EED
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


env = dict(os.environ, OMPI_MCA_op="^avx")
failed = []
# HL_SHM_DIRECT: 1 = the direct (single-copy) path, required (the test fails
# if the layer does not take it), 0 = the window path.
paths = ["1", "0"] if can_read_other_processes() else ["0"]
if paths == ["0"]:
    print("note: process_vm_readv is refused here: only the window path is tested")
# (ranks, HL_SHM_NODE_RANKS): one node, then nodes of 2 ranks cut out of this
# machine, so groups spanning them take the hierarchical all-reduce
# (collectives/shm/shm_hier.c) and the rest the MPI path.
# The window path (the fallback where the direct one is refused) on fewer
# shapes when both run, to bound the test's time on a loaded machine.
ALL = ((2, ""), (4, ""), (8, ""), (4, "2"), (6, "2"), (8, "2"))
if hl.mpi_family() == "mpich":
    # MPICH busy-polls with no yield when ranks outnumber cores (Open MPI
    # yields under --oversubscribe): fewer shapes, each kind once, to bound
    # the time on 2 cores (scripts/test.sh --mpich).
    ALL = ((2, ""), (8, ""), (4, "2"))
for direct, n, node_ranks in [(d, n, k) for d in paths for n, k in
                              (ALL if d == paths[0] else ((2, ""), (4, "2")))]:
    env["HL_SHM_NODE_RANKS"] = node_ranks
    env["HL_SHM_DIRECT"] = direct
    argv = hl.mpi_starter(n, env=[("HL_SHM_NODE_RANKS", node_ranks),
                                  ("HL_SHM_DIRECT", direct)]) + [test]
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=300, env=env)
    except subprocess.TimeoutExpired:
        failed.append("%d ranks (nodes of %s, direct %s): hung"
                      % (n, node_ranks or "all", direct))
        print("FAIL %d ranks, direct %s: hung" % (n, direct))
        continue
    runs = res.stdout.count("Run Summary")
    if res.returncode != 0 or runs != n:
        print(res.stdout[-3000:])
        print(res.stderr[-3000:], file=sys.stderr)
        failed.append("%d ranks (nodes of %s, direct %s): exit %d, %d of %d ranks reported"
                      % (n, node_ranks or "all", direct, res.returncode, runs, n))
        print("FAIL %d ranks, nodes of %s, direct %s" % (n, node_ranks or "all", direct))
    else:
        print("ok   %d ranks, nodes of %s, direct %s" % (n, node_ranks or "all", direct))
if failed:
    sys.exit("FAIL: " + "; ".join(failed))
