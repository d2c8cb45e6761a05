#!/usr/bin/env python3
"""collective-reduce (newest XLA) across the process grid, checked against an
oracle written from XLA's semantics:

  - the operands are reduced with to_apply over each process group, which the
    op resolves as all-reduce does (its GPU thunk takes all-reduce's config:
    xla/backends/gpu/runtime/collective_reduce_thunk.cc, GetAllReduceConfigInst);
  - only the root holds the result: group position 0, or with
    has_dynamic_root the position the trailing s32 operand gives for each
    reduced operand (collective_reduce_thunk.h);
  - XLA leaves the other members' results undefined
    (collective_reduce_thunk_multigpu_test.cc); this runtime defines them as
    zeros, which the oracle expects.

The group strategies come from test_collectives.py's spec oracle
(process_groups); the mode rule (all-reduce's) is restated here. Every
program in tests/programs/collective_reduce/ builds per-process inputs as
p0 + 100 * replica + 10 * partition. Then: bad groups and bad roots fail on
every rank without a hang, --explain-groups lists the op, and the MPI
backend's unit test (tests/unit/test_mpi_reduce.c) runs on 2 and 3 ranks.
"""

import os
import re

import numpy as np

import hl_testlib as hl
import test_collectives as tc

CR_DIR = os.path.join(hl.PROGRAMS_DIR, "collective_reduce")
ERR_DIR = os.path.join(CR_DIR, "errors")

rng = np.random.default_rng(11)


def mode_of(channel_id, use_global):
    """all-reduce's rule (XLA GetCollectiveOpGroupMode)."""
    if channel_id <= 0:
        return "cross_replica"
    return "flattened_ids" if use_global else "cross_replica_and_partition"


def per_process(p0, r, p, dtype):
    return (p0.astype(np.float64) + 100 * r + 10 * p).astype(dtype)


def expected(R, P, groups, mode, values, fn, roots=None):
    """values[(r, p)] = list of operand arrays; returns {(r, p): list of results}.
    roots[k]: the group position holding operand k's result (default 0)."""
    out = {}
    for g in tc.process_groups(mode, groups, R, P):
        n = len(values[g[0]])
        res = {q: [None] * n for q in g}
        for k in range(n):
            acc = values[g[0]][k]
            for q in g[1:]:
                acc = fn(acc, values[q][k])
            root = g[roots[k] if roots else 0]
            for q in g:
                res[q][k] = acc if q == root else np.zeros_like(acc)
        out.update(res)
    return out


def run_program(name, R, P, args, env=None):
    with hl.tempdir("cr") as tmp:
        args_dir, out_dir = os.path.join(tmp, "args"), os.path.join(tmp, "out")
        hl.write_args(args_dir, args)
        argv = [hl.HLO_LAUNCH, "-np", str(R * P), "--replicas", str(R), "--partitions", str(P),
                "--timeout", "60", "--args-dir", args_dir, "--output-dir", out_dir, "--quiet",
                os.path.join(CR_DIR, name + ".hlo")]
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        res = hl.run(argv, timeout=90, env=full_env)
        if res.returncode != 0 or res.timed_out:
            return None, "launch failed\n" + res.describe()
        got = {}
        for r in range(R):
            for p in range(P):
                d = os.path.join(out_dir, "replica%d_partition%d" % (r, p))
                n = len([f for f in os.listdir(d) if f.endswith(".npy")])
                got[(r, p)] = hl.read_outputs(out_dir, r, p, n)
        return got, None


def check(name, R, P, got, want, tol=None):
    for q in sorted(want):
        if len(got[q]) != len(want[q]):
            return "%s %dx%d process %s: %d results, expected %d" % (
                name, R, P, q, len(got[q]), len(want[q]))
        for k, (g, w) in enumerate(zip(got[q], want[q])):
            msg = hl.compare("%s %dx%d process %s result %d" % (name, R, P, q, k), g, w, tol)
            if msg:
                return msg
    return None


def case(name, R, P, p0s, make_values, groups, mode, fn, roots=None, extra_args=(), env=None,
         tol=None):
    """p0s: the parameters; make_values(p0s, r, p) -> the operands of process (r, p)."""
    got, err = run_program(name, R, P, list(p0s) + list(extra_args), env)
    if err:
        return err
    values = {(r, p): make_values(p0s, r, p) for r in range(R) for p in range(P)}
    want = expected(R, P, groups, mode, values, fn, roots)
    return check(name, R, P, got, want, tol)


# ------------------------------------------------------------ the programs
def sum_f32(R, P):
    p0 = rng.integers(-50, 50, (3, 4)).astype(np.float32)
    return case("sum_f32", R, P, [p0], lambda a, r, p: [per_process(a[0], r, p, np.float32)],
                [], mode_of(0, False), np.add)


def max_s32_groups(R, P):
    p0 = rng.integers(-1000, 1000, 6).astype(np.int32)
    return case("max_s32_groups", R, P, [p0],
                lambda a, r, p: [per_process(a[0], r, p, np.int32)],
                [[1, 0], [2, 3]], mode_of(0, False), np.maximum)


def custom_two_operands(R, P):
    p0 = rng.integers(-20, 20, 5).astype(np.float32)

    def values(a, r, p):
        x = per_process(a[0], r, p, np.float32)
        return [x, (-x)[:4].reshape(2, 2)]
    return case("custom_two_operands", R, P, [p0], values, [], mode_of(0, False),
                lambda u, v: np.where(u > v, u, v))


def global_ids(R, P):
    p0 = rng.integers(-9, 9, 4).astype(np.float32)
    return case("global_ids", R, P, [p0], lambda a, r, p: [per_process(a[0], r, p, np.float32)],
                [[3, 0], [1, 2]], mode_of(1, True), np.add)


def cross_replica_and_partition(R, P):
    p0 = rng.integers(-9, 9, 3).astype(np.int32)
    return case("cross_replica_and_partition", R, P, [p0],
                lambda a, r, p: [per_process(a[0], r, p, np.int32)],
                [[1, 0]], mode_of(1, False), np.add)


def dynamic_root(R, P, roots):
    p0 = rng.integers(-9, 9, 4).astype(np.float32)

    def values(a, r, p):
        x = per_process(a[0], r, p, np.float32)
        return [x, x * 2]
    return case("dynamic_root", R, P, [p0], values, [], mode_of(0, False), np.add, roots=roots,
                extra_args=[np.array(roots, np.int32)])


def to_bf16_bits(a):
    """f32 values exact in bf16 -> the '<V2' .npy form hlo-launch reads for bf16."""
    return (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16).view("V2")


def from_bf16_bits(a):
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_sum(R, P):
    p0 = rng.integers(-8, 8, 8).astype(np.float32)

    def values(a, r, p):
        return [(a[0] + 8 * r + 2 * p).astype(np.float32)]
    # Small integers: every value and partial sum is exact in bf16.
    got, err = run_program("bf16_sum", R, P, [to_bf16_bits(p0)])
    if err:
        return err
    want = expected(R, P, [], mode_of(0, False),
                    {(r, p): values([p0], r, p) for r in range(R) for p in range(P)}, np.add)
    for q in want:
        got[q] = [from_bf16_bits(g) for g in got[q]]
    return check("bf16_sum", R, P, got, want)


def chunked_f64(R, P):
    p0 = rng.integers(-1000, 1000, 1001).astype(np.float64)
    return case("chunked_f64", R, P, [p0], lambda a, r, p: [per_process(a[0], r, p, np.float64)],
                [], mode_of(0, False), np.add, env={"HL_MPI_MAX_MESSAGE_BYTES": "64"})


def runs():
    out = []
    for R, P in [(1, 1), (2, 1), (4, 1), (1, 4), (2, 2)]:
        out.append(("sum_f32 %dx%d" % (R, P), lambda R=R, P=P: sum_f32(R, P)))
    for R, P in [(4, 1), (4, 2)]:
        out.append(("max_s32_groups (root = replica 1) %dx%d" % (R, P),
                    lambda R=R, P=P: max_s32_groups(R, P)))
    for R, P in [(2, 1), (3, 1), (2, 2)]:
        out.append(("custom_two_operands %dx%d" % (R, P),
                    lambda R=R, P=P: custom_two_operands(R, P)))
    out.append(("global_ids (flattened_ids, root id 3) 2x2", lambda: global_ids(2, 2)))
    out.append(("cross_replica_and_partition 2x2", lambda: cross_replica_and_partition(2, 2)))
    for R, P, roots in [(1, 1, (0, 0)), (2, 1, (1, 0)), (4, 1, (3, 1)), (2, 2, (0, 1))]:
        out.append(("dynamic_root roots=%s %dx%d" % (list(roots), R, P),
                    lambda R=R, P=P, roots=roots: dynamic_root(R, P, roots)))
    out.append(("bf16_sum 2x1", lambda: bf16_sum(2, 1)))
    out.append(("chunked_f64 (64-byte messages) 3x1", lambda: chunked_f64(3, 1)))
    return out


# ------------------------------------------------------------ errors
ERROR_CASES = [
    # file, replicas, partitions, patterns the message must match
    ("bad_range", 2, 1, [r"bad_cr_range", r"\b5\b", r"out of range"]),
    ("not_covering", 2, 1, [r"bad_cr_cover", r"cover|in no group"]),
    ("roots_disagree", 2, 1, [r"bad_cr_roots", r"disagree"]),
    ("root_out_of_range", 2, 1, [r"bad_cr_root", r"out of range"]),
    ("roots_shape", 2, 1, [r"bad_cr_roots_shape", r"s32\[1\]"]),
    ("no_reducer", 2, 1, [r"bad_cr_reducer", r"to_apply"]),
]


def explain_groups():
    res = hl.run([hl.HLO_LAUNCH, "-np", "4", "--explain-groups",
                  os.path.join(CR_DIR, "global_ids.hlo")])
    if res.returncode != 0:
        return "--explain-groups failed\n" + res.describe()
    text = res.stdout
    want = [r"cr \(collective-reduce\)", r"mode flattened_ids, 2 groups",
            r"group 0: \[\(1,1\), \(0,0\)\]\s+ranks \[3, 0\]",
            r"group 1: \[\(0,1\), \(1,0\)\]\s+ranks \[1, 2\]", r"root"]
    for pat in want:
        if not re.search(pat, text):
            return "--explain-groups output lacks %r:\n%s" % (pat, text)
    return None


def backend_unit_test(n):
    """tests/unit/test_mpi_reduce.c as a real n-rank job (ctest runs it as one)."""
    test = os.path.join(os.environ.get("HL_BINARY_DIR", ""), "tests", "test_mpi_reduce")
    if not os.access(test, os.X_OK):
        return "SKIP: %s not built (HL_BINARY_DIR unset?)" % test
    argv = hl.mpi_starter(n) + [test]
    res = hl.run(argv, timeout=90)
    if res.timed_out or res.returncode != 0 or res.stdout.count("Run Summary") != n:
        return "backend unit test failed on %d ranks\n%s" % (n, res.describe())
    return None


def main():
    hl.require_binaries("hlo-launch")
    tests = runs()
    tests += [("error: %s %dx%d" % (n, r, p),
               lambda n=n, r=r, p=p, pat=pat: tc.error_test(n, r, p, pat, ERR_DIR))
              for n, r, p, pat in ERROR_CASES]
    tests.append(("--explain-groups lists collective-reduce and its roots", explain_groups))
    tests += [("backend: test_mpi_reduce on %d ranks" % n, lambda n=n: backend_unit_test(n))
              for n in (2, 3)]
    hl.main(tests)


if __name__ == "__main__":
    main()
