"""Batch mode: several programs in one MPI job (hlo-launch P1 P2 ..., a
directory, --programs LISTFILE), each on its own grid with its own outputs,
one verdict line per program, the summary, the exit status, --fail-fast, and
isolation: a program rejected by the channel check, one that fails with a
channel message maybe left pending, or one that ends the job with a rank
blocked in a collective, does not affect the programs after it
(which use the same channel ids and collectives). Expected values are worked
out here with NumPy from the programs' text.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

PROGRAMS = {
    # 4 replicas: all-reduce of (replica_id + 1) * [1, 2, 3].
    "a_allreduce4.hlo": """HloModule allreduce4, replica_count=4
%s
ENTRY main {
  r = u32[] replica-id()
  one = u32[] constant(1)
  r1 = u32[] add(r, one)
  rf = f32[] convert(r1)
  rb = f32[3] broadcast(rf), dimensions={}
  io = f32[3] iota(), iota_dimension=0
  ones = f32[3] broadcast(f32[] constant(1)), dimensions={}
  k = f32[3] add(io, ones)
  x = f32[3] multiply(rb, k)
  ROOT s = f32[3] all-reduce(x), replica_groups={}, to_apply=add
}
""" % ADD,
    # One process.
    "b_single.hlo": """HloModule single
ENTRY main {
  c = s32[4] constant({1, -2, 3, -4})
  ROOT n = s32[4] negate(c)
}
""",
    # Not a program: fails alone, named.
    "c_broken.hlo": "HloModule broken\nENTRY main {\n  x = f32[2] bogus-op()\n}\n",
    # Sends on channel 3, which no process receives: the channel check
    # stops it before it runs.
    "d_unpaired.hlo": """HloModule unpaired
ENTRY main {
  a = f32[2] constant({1, 2})
  tok = token[] after-all()
  send = (f32[2], u32[], token[]) send(a, tok), channel_id=3
  send-done = token[] send-done(send), channel_id=3
  ROOT r = f32[2] negate(a)
}
""",
    # Replica 0 sends [7, 7] to replica 1 on channel 3; replica 1 stops at
    # a NaN (--check-nans) of its own, maybe before receiving: the message
    # may be left pending when the program fails.
    "e0_pending_channel.hlo": """HloModule pending, replica_count=2
ENTRY main {
  tok = token[] after-all()
  a = f32[2] constant({7, 7})
  send = (f32[2], u32[], token[]) send(a, tok), channel_id=3,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv = (f32[2], u32[], token[]) recv(tok), channel_id=3,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send-done = token[] send-done(send), channel_id=3
  r = u32[] replica-id()
  rf = f32[] convert(r)
  one = f32[] constant(1)
  d = f32[] subtract(one, rf)
  q = f32[] divide(d, d)
  qb = f32[2] broadcast(q), dimensions={}
  recv-done = (f32[2], token[]) recv-done(recv), channel_id=3
  got = f32[2] get-tuple-element(recv-done), index=0
  ROOT out = f32[2] add(got, qb)
}
""",
    # Channel 3 again, now paired (replica 0 -> 1): replica 1 gets [5, 6]
    # from this program, nothing from the one before.
    "e_channel.hlo": """HloModule channel, replica_count=2
ENTRY main {
  tok = token[] after-all()
  a = f32[2] constant({5, 6})
  send = (f32[2], u32[], token[]) send(a, tok), channel_id=3,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv = (f32[2], u32[], token[]) recv(tok), channel_id=3,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send-done = token[] send-done(send), channel_id=3
  recv-done = (f32[2], token[]) recv-done(recv), channel_id=3
  ROOT got = f32[2] get-tuple-element(recv-done), index=0
}
""",
    # Replica 0 makes a NaN (0 / 0) and stops there (--check-nans) while
    # replica 1 waits for it in the all-reduce: the job ends.
    "f_abandoned_collective.hlo": """HloModule abandoned, replica_count=2
%s
ENTRY main {
  r = u32[] replica-id()
  rf = f32[] convert(r)
  q = f32[] divide(rf, rf)
  x = f32[2] broadcast(q), dimensions={}
  ROOT s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
}
""" % ADD,
    # The same collective after it, on a fresh job: (r + 1) summed = 3.
    "g_allreduce2.hlo": """HloModule allreduce2, replica_count=2
%s
ENTRY main {
  r = u32[] replica-id()
  one = u32[] constant(1)
  r1 = u32[] add(r, one)
  rf = f32[] convert(r1)
  x = f32[2] broadcast(rf), dimensions={}
  ROOT s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
}
""" % ADD,
}

EXPECTED = {
    "a_allreduce4.hlo": {(r, 0): np.array([1, 2, 3], np.float32) * 10 for r in range(4)},
    "b_single.hlo": {(0, 0): np.array([-1, 2, -3, 4], np.int32)},
    "e_channel.hlo": {(1, 0): np.array([5, 6], np.float32)},
    "g_allreduce2.hlo": {(r, 0): np.array([3, 3], np.float32) for r in range(2)},
}
FAILING = {"c_broken.hlo": "bogus-op", "d_unpaired.hlo": "channel 3",
           "e0_pending_channel.hlo": "produced NaN",
           "f_abandoned_collective.hlo": "the job ended while it ran"}

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name, flush=True)
    if not ok:
        failures.append(name)
        if detail:
            print(detail, flush=True)


def verdicts(stdout):
    """{path: 'passed' | 'FAILED: reason'} and the summary line, in order."""
    out, order = {}, []
    for line in stdout.splitlines():
        if line.startswith("hlo-launch: program "):
            path, verdict = line[len("hlo-launch: program "):].split(": ", 1)
            out[path] = verdict
            order.append(path)
    summary = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return out, order, summary


def launch(args):
    return hl.run([hl.HLO_LAUNCH, "--timeout", "100", "--hang-timeout", "60"] + args)


def main():
    hl.require_binaries("hlo-launch")
    with hl.tempdir("batch") as d:
        paths = []
        for name in sorted(PROGRAMS):
            p = os.path.join(d, name)
            with open(p, "w") as f:
                f.write(PROGRAMS[name])
            paths.append(p)
        out = os.path.join(d, "out")
        os.makedirs(out)
        r = launch(["--check-nans", "--quiet", "--output-dir", out] + paths)
        got, order, summary = verdicts(r.stdout)
        check("one line per program, in order", order == paths, r.describe())
        for name in sorted(PROGRAMS):
            v = got.get(os.path.join(d, name), "")
            if name in FAILING:
                check("%s: FAILED, with its reason" % name,
                      v.startswith("FAILED: ") and FAILING[name] in v, r.describe())
            else:
                check("%s: passed" % name, v == "passed", r.describe())
        check("summary", summary == "4 passed, 4 failed", r.describe())
        check("exit status 1 when any failed", r.returncode == 1, r.describe())
        check("errors on stderr name the program",
              "hlo-launch: program %s: " % os.path.join(d, "c_broken.hlo") in r.stderr,
              r.describe())
        for name, ranks in EXPECTED.items():
            for (rep, part), want in ranks.items():
                path = hl.output_path(os.path.join(out, name), rep, part, 0)
                ok = os.path.exists(path) and np.array_equal(np.load(path), want)
                check("%s replica %d: result" % (name, rep), ok,
                      "%s: %s, expected %s" % (path, np.load(path) if os.path.exists(path)
                                               else "missing", want))

        # A directory (its program files, sorted; notes left out) and a list file.
        good = os.path.join(d, "good")
        os.makedirs(good)
        for name in ("b_single.hlo", "a_allreduce4.hlo"):
            with open(os.path.join(good, name), "w") as f:
                f.write(PROGRAMS[name])
        with open(os.path.join(good, "README.md"), "w") as f:
            f.write("not a program\n")
        r = launch(["--quiet", good])
        got, order, summary = verdicts(r.stdout)
        check("a directory: its programs, sorted",
              order == [os.path.join(good, "a_allreduce4.hlo"), os.path.join(good, "b_single.hlo")]
              and summary == "2 passed, 0 failed" and r.returncode == 0, r.describe())
        listfile = os.path.join(d, "list.txt")
        with open(listfile, "w") as f:
            f.write("# a comment\n%s\n\n%s\n%s\n" % (os.path.join(d, "b_single.hlo"),
                                                    os.path.join(d, "c_broken.hlo"),
                                                    os.path.join(d, "g_allreduce2.hlo")))
        r = launch(["--quiet", "--programs", listfile])
        got, order, summary = verdicts(r.stdout)
        check("--programs: every program, a failure does not stop the others",
              len(order) == 3 and summary == "2 passed, 1 failed" and r.returncode == 1,
              r.describe())
        r = launch(["--quiet", "--fail-fast", "--programs", listfile])
        got, order, summary = verdicts(r.stdout)
        check("--fail-fast stops at the first failure",
              len(order) == 2 and summary == "1 passed, 1 failed" and r.returncode == 1,
              r.describe())
    if failures:
        sys.exit("FAIL: %d checks failed: %s" % (len(failures), ", ".join(failures)))
    print("PASS")


if __name__ == "__main__":
    main()
