"""Checks before and during a run, through real multi-rank hlo-launch runs
(docs/DEBUGGING.md): the static collective check, --check-nans / --check-infs
stopping at the instruction that made the first NaN / Inf on the rank where it
happened, and the debug directory's life cycle. Expected places and values come
from how the programs are built (see their comments) and from NumPy.
"""

import os

import numpy as np

import hl_testlib as hl

DEBUG_DIR = os.path.join(hl.PROGRAMS_DIR, "debug")


def program(name):
    return os.path.join(DEBUG_DIR, name)


def test_mismatched_collectives_static():
    # Decided per rank from replica-id before any rank starts.
    res = hl.launch_np(4, program("hang_mismatched_collectives.hlo"))
    want = ("hlo-launch: collective check: the ranks would deadlock: rank 0's collective #1 is "
            "instruction 'all-reduce.5' (all-reduce) in computation 'reduce_branch' at ")
    also = ("shape f32[4], group {0,1,2,3}, but rank 3's collective #1 is instruction 'g' "
            "(all-gather) in computation 'gather_branch' at ")
    # The line has no rank prefix ("all 4 ranks: ..." when the ranks find
    # it): the check stopped the job before it started. (Not timed: a 10 s
    # limit here only measured the machine.)
    if res.returncode != 1 or want not in res.stderr or also not in res.stderr:
        return "expected the static check's error\n" + res.describe()
    return None


def test_missing_send_static():
    # Rank 0 takes the branch without the send (decided from replica-id), so
    # rank 1's recv on channel 1 from rank 0 (pairs {{0,1}}) never completes.
    res = hl.launch_np(2, program("hang_missing_send.hlo"), "--zeros")
    want = ("hlo-launch: channel check: the ranks would deadlock: rank 1 receives 1 message on "
            "channel 1 from rank 0 (instruction 'recv.1' (recv) in computation 'recv_branch' at ")
    also = "but rank 0 sends it 0 (grid 2 x 1; --no-collective-check runs it anyway)"
    if res.returncode != 1 or want not in res.stderr or also not in res.stderr:
        return "expected the channel check's error\n" + res.describe()
    return None


def test_loop_trip_counts_static():
    # The loop's trip count is 2 + replica-id, known before the run: rank 0
    # sends 2 messages on channel 1, rank 1 receives 3.
    res = hl.launch_np(2, program("hang_loop_trips.hlo"), "--zeros")
    want = ("hlo-launch: channel check: the ranks would deadlock: rank 0 sends 2 messages on "
            "channel 1 to rank 1 (instruction 'send.1' (send) in computation 'body' at ")
    also = "but rank 1 receives from it 3 (grid 2 x 1; --no-collective-check runs it anyway)"
    if res.returncode != 1 or want not in res.stderr or also not in res.stderr:
        return "expected the channel check's error\n" + res.describe()
    # Run anyway, the job does hang where the check said: rank 1 in its third trip.
    with hl.tempdir("dbg") as d:
        # 3 s, not 1: rank 0 must have ended its run by then (test_debug_hangs.py).
        res = hl.launch_np(2, program("hang_loop_trips.hlo"), "--zeros", "--no-collective-check",
                           "--hang-timeout", "3", "--debug-dir", d)
        want = "rank 1 waits in recv-done.1 (channel 1, iteration 2 of loop)"
        if res.returncode != 3 or want not in res.stderr:
            return "expected the hang the check predicted\n" + res.describe()
    return None


def test_send_without_recv_static():
    # Nobody receives channel 3 (no recv in the program): stopped before the
    # ranks start, with the channel setup's words and the instruction.
    res = hl.launch_np(2, os.path.join(hl.PROGRAMS_DIR, "channels", "unpaired.hlo"))
    want = ("hlo-launch: channel check: channel 3 has a sender (process 0) but no receiver: "
            "instruction 'send' (send) in computation 'main' at ")
    if res.returncode != 1 or want not in res.stderr or "grid 2 x 1" not in res.stderr:
        return "expected the channel check's error\n" + res.describe()
    return None


def test_mismatched_collectives_under_users_mpiexec():
    # Ranks started by the user's own mpiexec check the program themselves.
    argv = hl.mpi_starter(4, bind_none=False)
    res = hl.run(argv + [hl.HLO_LAUNCH, program("hang_mismatched_collectives.hlo")], timeout=60)
    want = ("hlo-launch: all 4 ranks: collective check: the ranks would deadlock: rank 0's "
            "collective #1 is instruction 'all-reduce.5'")
    if res.returncode == 0 or res.timed_out or want not in res.stderr:
        return "expected the static check's error\n" + res.describe()
    return None


def nan_oracle(replicas, iterations=4):
    """The program's result per NumPy (identical on every rank)."""
    acc = np.zeros(4, np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(iterations):
            total = np.zeros(4, np.float32)
            for r in range(replicas):
                d = np.float32((r - 1) ** 2 + (i - 2) ** 2)
                zeros = acc - acc
                local = acc + (zeros / d + np.float32(1) / d)
                total = total + local
            acc = total.astype(np.float32)
    return acc


def test_check_nans():
    res = hl.launch_np(4, program("nan_on_one_rank.hlo"), "--zeros", "--check-nans")
    want = ("hlo-launch: rank 1 (replica 1, partition 0): --check-nans: instruction 'nan.q' "
            "(divide) in computation 'body' at ")
    if res.returncode != 1 or want not in res.stderr:
        return "expected %r and exit 1\n%s" % (want, res.describe())
    for part in ["produced NaN (iteration 2 of loop): first at index [0]; result f32[4] has 4 "
                 "NaN and 0 Inf of 4 elements",
                 "operand 0 ('zeros') f32[4] min 0 max 0, 0 NaN, 0 Inf",
                 "operand 1 ('db') f32[4] min 0 max 0, 0 NaN, 0 Inf"]:
        if part not in res.stderr:
            return "missing %r\n%s" % (part, res.describe())
    if "rank 0 " in res.stderr or "rank 2 " in res.stderr:
        return "other ranks reported\n" + res.describe()
    return None


def test_check_infs():
    res = hl.launch_np(4, program("nan_on_one_rank.hlo"), "--zeros", "--check-infs")
    want = "rank 1 (replica 1, partition 0): --check-infs: instruction 'inf.q' (divide)"
    if res.returncode != 1 or want not in res.stderr or \
            "produced Inf (iteration 2 of loop): first at index [0]" not in res.stderr:
        return "expected %r and exit 1\n%s" % (want, res.describe())
    return None


def test_unchecked_run_matches_oracle():
    # Without the checks the same program runs to the end, NaNs included.
    with hl.tempdir("dbg") as out:
        res = hl.launch_np(4, program("nan_on_one_rank.hlo"), "--zeros", "--output-dir", out, "-q")
        if res.returncode != 0:
            return res.describe()
        want = nan_oracle(4)
        for r in range(4):
            got = hl.read_outputs(out, r, 0, 1)[0]
            msg = hl.compare("replica %d" % r, got, want)
            if msg:
                return msg
    return None


def test_clean_run_leaves_nothing():
    # The watchdog is on by default; a clean run removes its directory, and
    # a stale hang file in a reused --debug-dir does not end the next job.
    # A watchdog sees the hang file within its 50 ms poll whatever its
    # timeout, so the timeout here is long: with a short one (it was 0.5 s)
    # the rank that ends first and waits for the other at the end of the run
    # is itself a hang when a loaded machine holds the other off the CPU
    # that long.
    with hl.tempdir("tmp") as tmp, hl.tempdir("dbg") as d:
        open(os.path.join(d, "hang"), "w").write("rank 0\n")
        env = dict(os.environ, TMPDIR=tmp)
        prog = os.path.join(hl.PROGRAMS_DIR, "cluster_allreduce_loop.hlo")
        res = hl.launch_np(2, prog, "--zeros", "-q", env=env)
        if res.returncode != 0:
            return res.describe()
        if os.listdir(tmp):
            return "left in TMPDIR: %r" % os.listdir(tmp)
        res = hl.launch_np(2, prog, "--zeros", "-q", "--debug-dir", d, "--hang-timeout", "30",
                           env=env)
        if res.returncode != 0:
            return "stale hang file: " + res.describe()
        res = hl.launch_np(2, prog, "--zeros", "-q", "--hang-timeout", "0", env=env)
        if res.returncode != 0:
            return res.describe()
    return None


def test_bad_options():
    for extra, want in [(["--hang-timeout", "-1"], "--hang-timeout needs a number of seconds"),
                        (["--debug-dir", ""], "--debug-dir is empty")]:
        res = hl.launch_np(2, program("hang_other_branch.hlo"), *extra)
        if res.returncode != 2 or want not in res.stderr:
            return "%r: expected %r, exit 2\n%s" % (extra, want, res.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("mismatched_collectives_static", test_mismatched_collectives_static),
        ("missing_send_static", test_missing_send_static),
        ("loop_trip_counts_static", test_loop_trip_counts_static),
        ("send_without_recv_static", test_send_without_recv_static),
        ("mismatched_collectives_under_users_mpiexec",
         test_mismatched_collectives_under_users_mpiexec),
        ("check_nans", test_check_nans),
        ("check_infs", test_check_infs),
        ("unchecked_run_matches_oracle", test_unchecked_run_matches_oracle),
        ("clean_run_leaves_nothing", test_clean_run_leaves_nothing),
        ("bad_options", test_bad_options),
    ])
