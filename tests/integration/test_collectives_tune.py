#!/usr/bin/env python3
"""hlo-launch --collectives-tune: auto's thresholds measured at start-up.

On 2 and 4 ranks, one program with every collective kind (s32, sizes from
256 B to 1 MiB per member, so the measured thresholds send some calls to
shared memory and keep others on MPI) runs with --collectives-tune
--collectives-tuning-out FILE --report-bindings, and checks:
  (a) every result equals NumPy's (the spec's semantics) and, bit for bit,
      the same program's results with --collectives=mpi;
  (b) FILE has one entry per collective kind for the node's group size, and
      --collectives-tuning FILE reads it back (same results); a second
      --collectives-tuning-out to the existing FILE is refused and FILE is
      left as it was;
  (c) every rank printed the same measurement and table (the times are
      agreed over the job before anything is decided), equal to FILE's.
No timing is asserted: which path wins depends on the machine."""

import os
import re

import numpy as np

import hl_testlib as hl

BIG, MID, SMALL = 262144, 8192, 64  # s32 elements: 1 MiB, 32 KiB, 256 B
KINDS = ["all-reduce", "reduce-scatter", "all-gather", "all-to-all", "collective-permute",
         "collective-broadcast"]


def program(n):
    ring = ",".join("{%d,%d}" % (r, (r + 1) % n) for r in range(n))
    everyone = "{%s}" % ",".join(str(r) for r in range(n))
    lines = ["HloModule tune_mix", "",
             "add {", "  a = s32[] parameter(0)", "  b = s32[] parameter(1)",
             "  ROOT s = s32[] add(a, b)", "}", "",
             "max {", "  a = s32[] parameter(0)", "  b = s32[] parameter(1)",
             "  ROOT m = s32[] maximum(a, b)", "}", "",
             "ENTRY main {",
             "  big = s32[%d] parameter(0)" % BIG,
             "  mid = s32[%d] parameter(1)" % MID,
             "  small = s32[%d] parameter(2)" % SMALL,
             "  rid = u32[] replica-id()",
             "  r = s32[] convert(rid)",
             "  one = s32[] constant(1)",
             "  r1 = s32[] add(r, one)"]
    # x_r = x * (r + 1) + r: every rank's operand differs.
    for name, count in (("big", BIG), ("mid", MID), ("small", SMALL)):
        lines += ["  %s_m = s32[%d] broadcast(r1), dimensions={}" % (name, count),
                  "  %s_a = s32[%d] broadcast(r), dimensions={}" % (name, count),
                  "  %s_p = s32[%d] multiply(%s, %s_m)" % (name, count, name, name),
                  "  %s_r = s32[%d] add(%s_p, %s_a)" % (name, count, name, name)]
    lines += [
        "  ar_big = s32[%d] all-reduce(big_r), replica_groups={}, to_apply=add" % BIG,
        "  ar_mid = s32[%d] all-reduce(mid_r), replica_groups={}, to_apply=max" % MID,
        "  ar_small = s32[%d] all-reduce(small_r), replica_groups={}, to_apply=add" % SMALL,
        "  rs = s32[%d] reduce-scatter(big_r), dimensions={0}, replica_groups={}, "
        "to_apply=add" % (BIG // n),
        "  ag = s32[%d] all-gather(mid_r), dimensions={0}, replica_groups={}" % (MID * n),
        "  a2a = s32[%d] all-to-all(big_r), dimensions={0}, replica_groups={}" % BIG,
        "  a2a_small = s32[%d] all-to-all(small_r), dimensions={0}, replica_groups={}" % SMALL,
        "  cp = s32[%d] collective-permute(big_r), source_target_pairs={%s}" % (BIG, ring),
        "  bc = s32[%d] collective-broadcast(mid_r), replica_groups={%s}" % (MID, everyone),
        "  ROOT out = (s32[%d], s32[%d], s32[%d], s32[%d], s32[%d], s32[%d], s32[%d], "
        "s32[%d], s32[%d]) tuple(ar_big, ar_mid, ar_small, rs, ag, a2a, a2a_small, cp, bc)"
        % (BIG, MID, SMALL, BIG // n, MID * n, BIG, SMALL, BIG, MID),
        "}"]
    return "\n".join(lines) + "\n"


NRESULTS = 9


def oracle(n, args):
    """Each rank's expected results (NumPy, XLA's semantics)."""
    xs = [[(a.astype(np.int64) * (r + 1) + r).astype(np.int32) for a in args] for r in range(n)]
    want = []
    for r in range(n):
        big = [x[0] for x in xs]
        blk = BIG // n
        want.append([
            np.sum(big, axis=0, dtype=np.int64).astype(np.int32),
            np.max([x[1] for x in xs], axis=0),
            np.sum([x[2] for x in xs], axis=0, dtype=np.int64).astype(np.int32),
            np.sum(big, axis=0, dtype=np.int64).astype(np.int32)[r * blk:(r + 1) * blk],
            np.concatenate([x[1] for x in xs]),
            np.concatenate([b[r * blk:(r + 1) * blk] for b in big]),
            np.concatenate([x[2][r * (SMALL // n):(r + 1) * (SMALL // n)] for x in xs]),
            big[(r - 1) % n],
            xs[0][1],
        ])
    return want


def run(d, n, tag, extra):
    out = os.path.join(d, "out-" + tag)
    r = hl.launch(os.path.join(d, "p.hlo"), replicas=n, args_dir=os.path.join(d, "args"),
                  output_dir=out, extra=extra)
    if r.returncode != 0:
        raise AssertionError("hlo-launch %s failed\n%s" % (tag, r.describe()))
    return r, [hl.read_outputs(out, rep, 0, NRESULTS) for rep in range(n)]


def table_entries(lines):
    """(collective, group size, min bytes) of a table's non-comment lines."""
    got = []
    for line in lines:
        line = line.split("#", 1)[0].split()
        if line:
            got.append(tuple(line))
    return got


def check(n):
    rng = np.random.default_rng(16 + n)
    args = [rng.integers(-10**6, 10**6, size=c, dtype=np.int32) for c in (BIG, MID, SMALL)]
    want = oracle(n, args)
    with hl.tempdir("tune%d" % n) as d:
        with open(os.path.join(d, "p.hlo"), "w") as f:
            f.write(program(n))
        hl.write_args(os.path.join(d, "args"), args)
        table = os.path.join(d, "tuning.txt")
        tuned_run, tuned = run(d, n, "tune", ("--collectives-tune", "--collectives-tuning-out",
                                              table, "--report-bindings"))
        _, mpi = run(d, n, "mpi", ("--collectives", "mpi"))
        _, reread = run(d, n, "reread", ("--collectives-tuning", table))
        # (a) results: NumPy, and bit for bit the MPI path's (and the re-read table's).
        for rep in range(n):
            for j in range(NRESULTS):
                name = "rank %d result %d" % (rep, j)
                for label, got in (("tuned", tuned), ("mpi", mpi), ("reread", reread)):
                    msg = hl.compare("%s %s" % (label, name), got[rep][j], want[rep][j])
                    if msg:
                        return msg
                if tuned[rep][j].tobytes() != mpi[rep][j].tobytes():
                    return "%s: --collectives-tune differs from --collectives=mpi" % name
        # (b) the file: every kind once, for the node's group size.
        with open(table) as f:
            text = f.read()
        entries = table_entries(text.splitlines())
        if sorted(e[0] for e in entries) != sorted(KINDS):
            return "table %s has entries %s, want one per kind %s" % (table, entries, KINDS)
        for kind, size, min_bytes in entries:
            if size != str(n) or not (min_bytes == "never" or re.fullmatch(r"\d+", min_bytes)):
                return "table entry %s %s %s: want group size %d and bytes or never" % (
                    kind, size, min_bytes, n)
        again = hl.launch(os.path.join(d, "p.hlo"), replicas=n,
                          args_dir=os.path.join(d, "args"), output_dir=os.path.join(d, "o2"),
                          extra=("--collectives-tune", "--collectives-tuning-out", table))
        if again.returncode == 0 or "refusing to overwrite" not in again.stderr:
            return "an existing --collectives-tuning-out file was not refused\n%s" % (
                again.describe())
        with open(table) as f:
            if f.read() != text:
                return "the existing tuning file was changed"
        # (c) every rank printed the same measurement and table.
        per_rank = {}
        for line in tuned_run.stderr.splitlines():
            m = re.match(r"collectives-tune rank (\d+): (.*)$", line)
            if m:
                per_rank.setdefault(int(m.group(1)), []).append(m.group(2))
        if sorted(per_rank) != list(range(n)):
            return "ranks that printed the table: %s, want 0..%d\n%s" % (
                sorted(per_rank), n - 1, tuned_run.describe())
        for rank in range(1, n):
            if per_rank[rank] != per_rank[0]:
                return "rank %d decided differently from rank 0:\n%s\nvs\n%s" % (
                    rank, "\n".join(per_rank[rank]), "\n".join(per_rank[0]))
        if table_entries(per_rank[0]) != entries:
            return "printed table %s differs from the file's %s" % (
                table_entries(per_rank[0]), entries)
    return None


def check_refusals():
    """Option combinations that cannot mean anything stop before the run."""
    with hl.tempdir("tune-opts") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(program(2))
        existing = os.path.join(d, "mine.txt")
        with open(existing, "w") as f:
            f.write("all-reduce * 0\n")
        cases = [
            (("--collectives-tune", "--collectives", "mpi"), "needs --collectives auto"),
            (("--collectives-tune", "--collectives-tuning", existing), "give one"),
            (("--collectives-tuning-out", os.path.join(d, "t.txt")), "needs --collectives-tune"),
            (("--collectives-tune", "--collectives-tuning-out", existing), "refusing to overwrite"),
        ]
        for extra, words in cases:
            r = hl.launch(path, replicas=2, extra=extra)
            if r.returncode == 0 or words not in r.stderr:
                return "%s: want an error with '%s'\n%s" % (" ".join(extra), words, r.describe())
        with open(existing) as f:
            if f.read() != "all-reduce * 0\n":
                return "the user's file was changed"
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([("refusals", check_refusals),
             ("tune_2_ranks", lambda: check(2)),
             ("tune_4_ranks", lambda: check(4))])
