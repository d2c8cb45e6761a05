"""The hang watchdog and post-mortems through real multi-rank hlo-launch runs
(docs/DEBUGGING.md).

Programs that deadlock on purpose (a rank taking the other branch, mismatched
collectives, a missing send) must end with the merged hang report and exit
status 3 within a few seconds; a rank killed or crashed mid-run must be named
with its instruction. Expected places come from how the programs are built (see
their comments), not from this project's output.
"""

import os
import re
import signal
import struct
import subprocess
import time

import numpy as np

import hl_testlib as hl

DEBUG_DIR = os.path.join(hl.PROGRAMS_DIR, "debug")
STATE_HEADER = struct.Struct("<Iiiiii")  # magic, rank, pid, phase, depth, signal
PHASE_RUNNING = 1
# The watchdog reports every rank as it is when the first one has waited
# this long; a rank the machine held off the CPU as long is reported where
# it was held, not where the program leaves it. 1 s was within reach of a
# loaded 2-core machine (--hang-timeout 0.5 with one rank stopped for 1.5 s
# reports the stopped rank mid-loop); 3 s costs 2 s a case.
HANG_TIMEOUT = "3"


def program(name):
    return os.path.join(DEBUG_DIR, name)


def expect_hang(res, lines, report_dir):
    """Exit 3, the summary lines on stderr, and the full report written."""
    if res.timed_out or res.returncode != 3:
        return "expected exit 3 (hang)\n" + res.describe()
    for line in lines:
        if line not in res.stderr:
            return "missing %r\n%s" % (line, res.describe())
    path = os.path.join(report_dir, "hang-report.txt")
    if not os.path.exists(path):
        return "no %s\n%s" % (path, res.describe())
    if ("the full report (every rank's stack and last collectives): %s" % path) not in res.stderr:
        return "report path not printed\n" + res.describe()
    return None


def test_other_branch():
    # Rank 3 skips iteration 2's all-reduce, so its iterations 0, 1, 3 pair
    # with the others' 0, 1, 2 and it finishes; ranks 0-2 wait in iteration 3.
    with hl.tempdir("dbg") as d:
        res = hl.launch_np(4, program("hang_other_branch.hlo"), "--hang-timeout", HANG_TIMEOUT,
                           "--debug-dir", d)
        msg = expect_hang(res, [
            "ranks 0-2 wait in sum (all-reduce, group {0..3}, iteration 3 of loop); "
            "never arrived: rank 3",
            "rank 3 finished the run and waits for the other ranks; never arrived: ranks 0-2",
        ], d)
        if msg:
            return msg
        report = open(os.path.join(d, "hang-report.txt")).read()
        # Flight recorder: rank 0 finished iterations 0-2 and started 3;
        # rank 3 finished its all-reduces of iterations 0, 1 and 3.
        for line in ["sum (all-reduce) iteration 2: 16 bytes, peers {0..3}, took",
                     "sum (all-reduce) iteration 3: 16 bytes, peers {0..3}, started",
                     "instruction 'sum' (all-reduce) in computation 'reduce_branch' at "]:
            if line not in report:
                return "report lacks %r:\n%s" % (line, report)
        rank3 = report[report.index("\nrank 3 (replica 3, partition 0), pid"):]
        got = [l.split(":")[0].strip() for l in rank3.splitlines() if "(all-reduce) iteration" in l]
        want = ["sum (all-reduce) iteration 0", "sum (all-reduce) iteration 1",
                "sum (all-reduce) iteration 3"]
        if got != want:
            return "rank 3's events %r, expected %r\n%s" % (got, want, report)
    return None


def test_mismatched_collectives():
    with hl.tempdir("dbg") as d:
        res = hl.launch_np(4, program("hang_mismatched_collectives.hlo"),
                           "--hang-timeout", HANG_TIMEOUT, "--debug-dir", d,
                           "--no-collective-check")
        return expect_hang(res, [
            "ranks 0-2 wait in all-reduce.5 (group {0..3}); never arrived: rank 3",
            "rank 3 waits in g (all-gather, group {0..3}); never arrived: ranks 0-2",
        ], d)


def test_missing_send():
    # Rank 0 takes the branch without the send; rank 1 waits for it.
    with hl.tempdir("dbg") as d:
        # The static channel check would stop it first (test_debug_checks.py).
        res = hl.launch_np(2, program("hang_missing_send.hlo"), "--hang-timeout", HANG_TIMEOUT,
                           "--debug-dir", d, "--no-collective-check")
        return expect_hang(res, [
            "rank 0 finished the run and waits for the other ranks; never arrived: rank 1",
            "rank 1 waits in recv-done.1 (channel 1)",
        ], d)


def read_states(d, n):
    states = []
    for r in range(n):
        try:
            with open(os.path.join(d, "rank%d.state" % r), "rb") as f:
                states.append(STATE_HEADER.unpack(f.read(STATE_HEADER.size)))
        except (OSError, struct.error):
            return None
    return states


# Where rank 2 can be when the signal lands: nearly always waiting in the
# loop's all-reduce, but possibly computing another instruction of an
# iteration (a name of the body or condition, or a fusion the pass made of
# them), or between two of them (in the while itself).
RANK2_PLACE = re.compile(r"(waits in acc2 \(all-reduce, group \{0\.\.3\}, iteration \d+ of loop\)"
                         r"|computes in [\w.-]+ \([^)]*iteration \d+ of loop\)"
                         r"|computes in loop \(while\))")


def kill_rank_mid_run(sig, expected):
    with hl.tempdir("dbg") as d:
        n = os.path.join(d, "n.npy")
        np.save(n, np.array(10 ** 9, np.int32))
        argv = [hl.HLO_LAUNCH, "-np", "4", "--timeout", "50", "--debug-dir", d, "--args", n,
                "-q", os.path.join(hl.PROGRAMS_DIR, "cluster_allreduce_loop.hlo")]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            states = None
            while time.monotonic() < deadline:
                states = read_states(d, 4)
                if states and all(s[3] == PHASE_RUNNING and s[4] >= 2 for s in states):
                    break
                time.sleep(0.1)
            else:
                return "ranks never reached the loop: %r" % (states,)
            time.sleep(0.5)
            os.kill(states[2][2], sig)
            # A hang bound: past it, --timeout 50 would have ended the job
            # (exit 124, failed below).
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        err = err.decode("utf-8", "replace")
        if proc.returncode != 128 + sig:
            return "exit %s, expected %d\n%s" % (proc.returncode, 128 + sig, err)
        line = [l for l in err.splitlines() if l.startswith("hlo-launch: rank 2 (replica 2, "
                                                              "partition 0, pid %d" % states[2][2])]
        if not line or not any(e in line[0] for e in expected) or \
                not RANK2_PLACE.search(line[0]):
            return "rank 2 not named with its instruction:\n" + err
        if not os.path.exists(os.path.join(d, "postmortem.txt")):
            return "no postmortem.txt\n" + err
    return None


def test_rank_killed():
    # SIGKILL leaves no trace in the process; other ranks may end before
    # mpiexec's SIGTERM reaches them, so "ended without a trace" is allowed
    # as long as rank 2 is named.
    return kill_rank_mid_run(signal.SIGKILL, ["died without a trace", "ended without a trace"])


def test_rank_crashed():
    return kill_rank_mid_run(signal.SIGSEGV, ["died on signal 11 (Segmentation fault)"])


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("other_branch", test_other_branch),
        ("mismatched_collectives", test_mismatched_collectives),
        ("missing_send", test_missing_send),
        ("rank_killed", test_rank_killed),
        ("rank_crashed", test_rank_crashed),
    ])
