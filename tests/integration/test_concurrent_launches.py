"""Launches are independent: many hlo-launch jobs started at once, each an
all-reduce over its ranks checked against NumPy, and none fails.

Open MPI 4.1's per-user session directory used to make one job's start or end
break another's ("A call to mkdir was unable to create the desired
directory ... File exists", orte_init failed: 1 of 30 launches with 6 at a
time). Each launch now gets a session directory of its own
(launcher/ompi_session.h); this test starts the jobs without any base set by
the caller (as a user's shell would) and checks that every one passed and that
no session directory is left behind.

ctest runs a small storm; the figure of issue 26 is

    HLO_LAUNCH=build/launcher/hlo-launch /usr/bin/python3 tests/integration/test_concurrent_launches.py \\
        --launches 200 --parallel 12 --np 4
"""

import argparse
import concurrent.futures
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

PROGRAM = """HloModule storm

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8]{0} parameter(0)
  ROOT r = f32[8]{0} all-reduce(x), replica_groups={}, to_apply=add
}
"""


# A starter that fails the first time with Open MPI's session-directory race
# message (before any rank ran) and runs the real mpiexec the second time;
# it records the session base each attempt was given. Asked for its version
# (hlo-launch checks a starter's MPI family, launcher/starter.h), it answers
# as the real one.
FLAKY_STARTER = """#!/bin/sh
[ "$1" = --version ] && exec mpiexec --version
echo "$OMPI_MCA_orte_tmpdir_base" >> "%(log)s"
if [ ! -e "%(flag)s" ]; then
  : > "%(flag)s"
  cat >&2 <<'MSG'
A call to mkdir was unable to create the desired directory:

  Directory: /tmp/ompi.vm.0
  Error:     File exists

Please check to ensure you have adequate permissions to perform
the desired operation.
[vm:01234] [[INVALID],INVALID] ORTE_ERROR_LOG: Error in file util/session_dir.c at line 107
It looks like orte_init failed for some reason
MSG
  exit 1
fi
exec mpiexec "$@"
"""


def check_retry(work, env):
    """The transient startup failure is retried once, said so, and each
    attempt had a fresh private session base, removed afterwards."""
    log, flag = os.path.join(work, "bases.log"), os.path.join(work, "failed-once")
    starter = os.path.join(work, "flaky-mpiexec")
    with open(starter, "w") as f:
        f.write(FLAKY_STARTER % {"log": log, "flag": flag})
    os.chmod(starter, 0o755)
    program = os.path.join(work, "storm.hlo")
    r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--zeros", "--quiet", "--mpiexec", starter, program],
               env=env)
    assert r.returncode == 0, r.describe()
    assert "no rank ran); starting the job once more" in r.stderr, r.describe()
    bases = open(log).read().split()
    assert len(bases) == 2 and bases[0] != bases[1], bases
    for b in bases:
        assert b.startswith(env["TMPDIR"] + "/hlmpi-") and not os.path.exists(b), (b, bases)
    # Not transient: a starter failing for another reason is not retried.
    os.remove(log)
    with open(starter, "w") as f:
        f.write('#!/bin/sh\n[ "$1" = --version ] && exec mpiexec --version\n'
                'echo "$OMPI_MCA_orte_tmpdir_base" >> "%s"\n'
                'echo "mpiexec: something else broke" >&2\nexit 3\n' % log)
    r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--zeros", "--quiet", "--mpiexec", starter, program],
               env=env)
    assert r.returncode != 0 and "once more" not in r.stderr, r.describe()
    assert "something else broke" in r.stderr, r.describe()
    assert len(open(log).read().split()) == 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=24)
    parser.add_argument("--parallel", type=int, default=6)
    parser.add_argument("--np", type=int, default=2)
    opts = parser.parse_args()
    hl.require_binaries("hlo-launch")

    # A short path: the session bases go under it only while they stay short
    # enough for Open MPI's Unix sockets (launcher/ompi_session.h).
    work = tempfile.mkdtemp(prefix="hls", dir="/tmp")
    # The launches' temporary files (status files, session bases) go here, so
    # what they leave behind can be seen.
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ)
    env.pop("OMPI_MCA_orte_tmpdir_base", None)
    env["TMPDIR"] = tmp
    program = os.path.join(work, "storm.hlo")
    with open(program, "w") as f:
        f.write(PROGRAM)
    x = np.arange(8, dtype=np.float32) - 2.5
    hl.write_args(os.path.join(work, "args"), [x])
    expected = x * opts.np

    if hl.mpi_family() == "openmpi":
        check_retry(work, env)
        print("a transient startup failure is retried once, each attempt in its own session base")
    else:
        print("note: built with MPICH: no Open MPI session directories, nothing to retry")

    def one(i):
        out = os.path.join(work, "out%d" % i)
        r = hl.run([hl.HLO_LAUNCH, "-np", str(opts.np), "--timeout", "100",
                    "--args", os.path.join(work, "args", "arg0.npy"),
                    "--output-dir", out, "--quiet", program], env=env)
        if r.returncode != 0:
            return "launch %d failed:\n%s" % (i, r.describe())
        for rank in range(opts.np):
            got = np.load(hl.output_path(out, rank, 0, 0))
            if not np.array_equal(got, expected):
                return "launch %d rank %d: %s, expected %s" % (i, rank, got, expected)
        retried = "starting the job once more" in r.stderr
        shutil.rmtree(out, ignore_errors=True)
        return "retried" if retried else None

    failures, retries = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.parallel) as pool:
        for outcome in pool.map(one, range(opts.launches)):
            if outcome == "retried":
                retries += 1
            elif outcome:
                failures.append(outcome)
    left = sorted(os.listdir(tmp))
    shutil.rmtree(work, ignore_errors=True)
    print("%d launches of -np %d, %d at a time: %d failed, %d retried after a startup race" %
          (opts.launches, opts.np, opts.parallel, len(failures), retries))
    for f in failures[:3]:
        print(f)
    if failures:
        sys.exit("FAIL: %d of %d launches failed" % (len(failures), opts.launches))
    if left:
        sys.exit("FAIL: the launches left %s in their TMPDIR" % left[:10])
    print("PASS")


if __name__ == "__main__":
    main()
