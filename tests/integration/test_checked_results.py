"""Checked results through real multi-rank hlo-launch runs (docs/DEBUGGING.md):
--record writes what a replay needs, --expect compares (exit 4 on a mismatch,
with the worst element per rank), --atol / --ulp loosen it, and an HloSnapshot's
recorded result is the expectation of its replay. Expected values come from NumPy.

The program is tests/programs/cluster_allreduce_loop.hlo: n iterations of
acc = all-reduce-sum(acc * 0.125 + 1) over every rank, result (n, acc).
"""

import os

import numpy as np

import hl_testlib as hl

PROGRAM = os.path.join(hl.PROGRAMS_DIR, "cluster_allreduce_loop.hlo")
N = 5


def oracle(ranks, n=N):
    acc = np.zeros(256, np.float32)
    for _ in range(n):
        local = acc * np.float32(0.125) + np.float32(1)
        total = np.zeros(256, np.float32)
        for _ in range(ranks):
            total = total + local
        acc = total
    return acc


def launch(np_, *extra):
    argv = [hl.HLO_LAUNCH, "-np", str(np_), "--timeout", "50", "-q"] + list(extra) + [PROGRAM]
    return hl.run(argv, timeout=60)


def record(d):
    n = os.path.join(d, "n.npy")
    np.save(n, np.array(N, np.int32))
    rec = os.path.join(d, "rec")
    res = launch(4, "--args", n, "--record", rec)
    return rec, res


def test_record_and_replay():
    with hl.tempdir("rec") as d:
        rec, res = record(d)
        if res.returncode != 0:
            return res.describe()
        for r in range(4):
            sub = os.path.join(rec, "replica%d_partition0" % r)
            if np.load(os.path.join(sub, "arg0.npy")) != N:
                return "arg0 of rank %d" % r
            msg = hl.compare("rank %d acc" % r, np.load(os.path.join(sub, "result1.npy")),
                             oracle(4))
            if msg:
                return msg
            if not os.path.getsize(os.path.join(sub, "snapshot.pb")):
                return "empty snapshot.pb"
        res = launch(4, "--args-dir", rec, "--expect", rec)
        want = "hlo-launch: --expect: rank 3 (replica 3, partition 0): matches (257 elements)"
        if res.returncode != 0 or want not in res.stderr:
            return res.describe()
    return None


def test_mismatch_exit_4():
    with hl.tempdir("rec") as d:
        rec, res = record(d)
        if res.returncode != 0:
            return res.describe()
        path = os.path.join(rec, "replica2_partition0", "result1.npy")
        a = np.load(path)
        a[7] += np.float32(0.5)
        a[9] = np.nextafter(a[9], np.float32(np.inf))  # one ulp
        np.save(path, a)
        res = launch(4, "--args-dir", rec, "--expect", rec)
        got = "%.9g" % float(oracle(4)[7])
        line = ("hlo-launch: --expect: rank 2 (replica 2, partition 0): 2 of 257 elements differ; "
                "worst: result1[7] = %s, expected %.9g (|difference| 0.5)" % (got, float(a[7])))
        if res.returncode != 4 or line not in res.stderr or \
                "--expect: 1 of 4 processes differ" not in res.stderr:
            return "expected %r and exit 4\n%s" % (line, res.describe())
        # The 0.5 stays out of --atol 0.25 and --ulp 1; together with the one
        # ulp, only element 7 differs.
        res = launch(4, "--args-dir", rec, "--expect", rec, "--ulp", "1")
        if res.returncode != 4 or "1 of 257 elements differ; worst: result1[7]" not in res.stderr:
            return res.describe()
        res = launch(4, "--args-dir", rec, "--expect", rec, "--atol", "0.6")
        if res.returncode != 0:
            return res.describe()
    return None


def test_snapshot_result_is_the_default_expectation():
    # Rank 0's recording replayed on one process: its all-reduce now sums one
    # rank instead of four, so every acc element differs from the recording.
    with hl.tempdir("rec") as d:
        rec, res = record(d)
        if res.returncode != 0:
            return res.describe()
        snap = os.path.join(rec, "replica0_partition0", "snapshot.pb")
        argv = [hl.HLO_LAUNCH, "-np", "1", "--timeout", "50", "-q", snap]
        res = hl.run(argv, timeout=60)
        line = ("256 of 257 elements differ; worst: result1[0] = %.9g, expected %.9g"
                % (float(oracle(1)[0]), float(oracle(4)[0])))
        if res.returncode != 4 or line not in res.stderr:
            return "expected %r, exit 4\n%s" % (line, res.describe())
    return None


def test_wrong_shape_is_an_error():
    with hl.tempdir("rec") as d:
        rec, res = record(d)
        if res.returncode != 0:
            return res.describe()
        np.save(os.path.join(rec, "replica1_partition0", "result1.npy"), np.zeros(3, np.float32))
        res = launch(4, "--args-dir", rec, "--expect", rec)
        if res.returncode != 1 or "result1.npy: expected f32[256] for result 1" not in res.stderr:
            return res.describe()
    return None


SCATTER = os.path.join(hl.PROGRAMS_DIR, "sharded_contract_scatter_4.hlo")


def test_expect_global_4_partitions():
    # Four partitions each hold two columns of lhs and two rows of rhs; the
    # assembled global result is tanh(lhs @ rhs), which NumPy computes.
    rng = np.random.default_rng(14)
    lhs = rng.standard_normal((8, 8)).astype(np.float32)
    rhs = rng.standard_normal((8, 3)).astype(np.float32)
    want = np.tanh(lhs.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32)
    with hl.tempdir("global") as d:
        a, b, y = (os.path.join(d, n) for n in ("lhs.npy", "rhs.npy", "y.npy"))
        np.save(a, lhs)
        np.save(b, rhs)
        np.save(y, want)
        args = ["--global-args", "%s,%s" % (a, b), "--expect-global", y, "--atol", "1e-5"]
        res = hl.run([hl.HLO_LAUNCH, "-np", "4", "--timeout", "50", "-q"] + args + [SCATTER],
                     timeout=60)
        if res.returncode != 0 or "--expect-global: matches (24 elements)" not in res.stderr:
            return res.describe()
        bad = want.copy()
        bad[5, 2] += np.float32(0.5)
        np.save(y, bad)
        res = hl.run([hl.HLO_LAUNCH, "-np", "4", "--timeout", "50", "-q"] + args + [SCATTER],
                     timeout=60)
        line = ("--expect-global: 1 of 24 elements differ; worst: global[5,2] = %.9g, expected "
                "%.9g" % (float(want[5, 2]), float(bad[5, 2])))
        # The launcher's value is within 1e-5 of NumPy's; compare the message
        # up to the value it printed.
        head = line.split(" = ")[0] + " = "
        if res.returncode != 4 or head not in res.stderr or \
                "expected %.9g" % float(bad[5, 2]) not in res.stderr:
            return "expected %r, exit 4\n%s" % (line, res.describe())
        np.save(y, want[:4])
        res = hl.run([hl.HLO_LAUNCH, "-np", "4", "--timeout", "50", "-q"] + args + [SCATTER],
                     timeout=60)
        if res.returncode != 1 or \
                "expected f32[8,3] for the assembled global result, file has float32 (4, 3)" \
                not in res.stderr:
            return "a wrong global shape is an error\n" + res.describe()
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("record_and_replay", test_record_and_replay),
        ("mismatch_exit_4", test_mismatch_exit_4),
        ("snapshot_result_is_the_default_expectation",
         test_snapshot_result_is_the_default_expectation),
        ("wrong_shape_is_an_error", test_wrong_shape_is_an_error),
        ("expect_global_4_partitions", test_expect_global_4_partitions),
    ])
