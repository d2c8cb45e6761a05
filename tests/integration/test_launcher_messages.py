#!/usr/bin/env python3
"""Messages that tell the user what to do (issue 10, section 4): a grid too
small for the program's groups or shardings names the -np / --replicas /
--partitions to use, before any rank starts; counts read "1 replica",
"1 partition", "1 element"; --output-dir problems stop the job before it
runs.

Run by ctest (integration.launcher_messages), which sets HLO_LAUNCH.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

TIMEOUT_S = 60

ALL_REDUCE_4 = """HloModule ar4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=add
}
"""

PERMUTE_P3 = """HloModule cp3, num_partitions=2

ENTRY main {
  x = f32[2] parameter(0)
  ROOT r = f32[2] collective-permute(x), channel_id=1, source_target_pairs={{0,2},{2,0}}
}
"""

SHARDED_4 = """HloModule s4, num_partitions=2

ENTRY main {
  x = f32[2] parameter(0), sharding={devices=[4]<=[4]}
  ROOT n = f32[2] negate(x), sharding={devices=[4]<=[4]}
}
"""


def launch(*args):
    return hl.run([hl.HLO_LAUNCH] + [str(a) for a in args], timeout=TIMEOUT_S)


def expect_before_launch(res, *needles):
    """Exit 1 with one hlo-launch line holding every needle, from the check
    before launch (no rank named)."""
    lines = [l for l in res.stderr.splitlines() if l.startswith("hlo-launch:")]
    if res.timed_out or res.returncode != 1 or len(lines) != 1:
        return res.describe()
    if "rank" in lines[0].split(":")[1]:
        return "found by the ranks, not before launch\n" + res.describe()
    for n in needles:
        if n not in lines[0]:
            return "lacks %r\n%s" % (n, res.describe())
    return None


def test_groups_need_more_replicas():
    with hl.tempdir("groups") as d:
        prog = hl.write_text(d, "ar4.hlo", ALL_REDUCE_4)
        msg = expect_before_launch(launch("-np", 2, "--zeros", prog),
                                   "replica id 2 in replica group 0 is out of range",
                                   "has 2 replicas", "the groups need 4 replicas",
                                   "--replicas 4 (-np 4 with 1 partition)")
        if msg:
            return msg
        # One replica: singular.
        return expect_before_launch(launch("-np", 1, "--zeros", prog), "has 1 replica (grid",
                                    "--replicas 4")


def test_permute_needs_more_partitions():
    with hl.tempdir("permute") as d:
        prog = hl.write_text(d, "cp3.hlo", PERMUTE_P3)
        return expect_before_launch(launch("-np", 2, "--zeros", prog),
                                    "{0,2} is out of range: the grid has 2 partitions",
                                    "need 3 partitions: run with --partitions 3 (-np 3 with 1 "
                                    "replica)")


def test_sharding_needs_more_partitions():
    with hl.tempdir("sharding") as d:
        prog = hl.write_text(d, "s4.hlo", SHARDED_4)
        x = os.path.join(d, "x.npy")
        np.save(x, np.arange(8, dtype=np.float32))
        return expect_before_launch(launch("-np", 2, "--global-args", x, prog),
                                    "spans 4 devices, but the program runs on 2 partitions",
                                    "--partitions 4")


def test_singular_counts():
    with hl.tempdir("plural") as d:
        prog = hl.write_text(d, "c.hlo", """HloModule c

ENTRY main {
  ROOT c = f32[1,1] constant({{}})
}
""")
        res = launch("-np", 1, prog)
        if res.returncode != 1 or "expected 1 element in dimension 1 of f32[1,1] but found 0" not in res.stderr:
            return res.describe()
    return None


def test_output_dir_problems_before_running():
    with hl.tempdir("outdir") as d:
        prog = hl.write_text(d, "ar4.hlo", ALL_REDUCE_4.replace("{{0,1,2,3}}", "{}"))
        plain = hl.write_text(d, "plain", "not a directory\n")
        msg = expect_before_launch(launch("-np", 2, "--zeros", "--output-dir", plain, prog),
                                   "--output-dir", "exists and is not a directory")
        if msg:
            return msg
        below = os.path.join(plain, "sub")
        msg = expect_before_launch(launch("-np", 2, "--zeros", "--output-dir", below, prog),
                                   "cannot be created", "is not a directory")
        if msg:
            return msg
        # A new directory below a writable one is made and filled.
        out = os.path.join(d, "new", "out")
        res = launch("-np", 2, "--zeros", "--quiet", "--output-dir", out, prog)
        if res.returncode != 0 or not os.path.exists(hl.output_path(out, 1, 0, 0)):
            return res.describe()
    return None


TESTS = [
    ("groups_need_more_replicas", test_groups_need_more_replicas),
    ("permute_needs_more_partitions", test_permute_needs_more_partitions),
    ("sharding_needs_more_partitions", test_sharding_needs_more_partitions),
    ("singular_counts", test_singular_counts),
    ("output_dir_problems_before_running", test_output_dir_problems_before_running),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main(TESTS)
