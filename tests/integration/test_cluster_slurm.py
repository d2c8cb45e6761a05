#!/usr/bin/env python3
"""hlo-launch under a real Slurm on localhost, started by this test (a
private munged, slurmctld and slurmd with CPUs=8 declared, on free ports, all
under a temporary directory): srun starting the ranks directly, hlo-launch
inside salloc (it starts srun -K itself) and in an sbatch script, each with
8 ranks of a collective program (the all-reduce loop when the build runs
all-reduce). Skipped with the reason printed where it cannot run (not root,
Slurm or munge missing).

Run by ctest (integration.cluster_slurm).
"""

import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_lib as cl  # noqa: E402
import hl_testlib  # noqa: E402

HLO_LAUNCH = cl.HLO_LAUNCH
WORK = ENV = SLURM = None
PROGRAM = COUNT = None
SRUN_MPI = None  # srun's PMI plugin for the MPI built with (pmix: Open MPI, pmi2: MPICH)
COLLECTIVE = False

BINDING_RE = re.compile(r"^hlo-launch: binding: host=(\S+) rank=(\d+) .*local_rank=(\d+)/(\d+)",
                        re.M)
RESULT_RE = re.compile(r"^== replica (\d+), partition 0 \(rank (\d+)\) ==", re.M)


def check_job(text, res_describe, values=True):
    """8 ranks reported their binding, and 8 results were printed in rank order."""
    ranks = [int(r) for _, r, _, _ in BINDING_RE.findall(text)]
    if ranks != list(range(8)):
        return "expected 8 binding lines in rank order, got %s\n%s" % (ranks, res_describe)
    locals_ = sorted((int(l), int(n)) for _, _, l, n in BINDING_RE.findall(text))
    if locals_ != [(i, 8) for i in range(8)]:
        return "local ranks from MPI should be 0..7 of 8: %s\n%s" % (locals_, res_describe)
    results = [int(r) for _, r in RESULT_RE.findall(text)]
    if results != list(range(8)):
        return "expected results of ranks 0..7, got %s\n%s" % (results, res_describe)
    if COLLECTIVE and values:
        # acc = sum over 8 ranks of (acc / 8 + 1): 8, 16, 24 after 3 steps
        if not re.search(r"\(\s*s32\[\] 3,\s*f32\[256\] \{\s*24, 24", text):
            return "the all-reduce loop should give 24 after 3 steps\n" + res_describe
    return None


def test_srun_direct():
    res = cl.run_env(["srun", "-K", SRUN_MPI, "-n", "8", HLO_LAUNCH, "--report-bindings",
                      "--args", COUNT, PROGRAM], ENV, 60)
    if res.returncode != 0 or res.timed_out:
        return res.describe() + "\n" + SLURM.logs()
    return check_job(res.stdout + res.stderr, res.describe())


def test_srun_stablehlo():
    """A StableHLO (.mlir) program with an all-reduce on 8 ranks started by srun."""
    import numpy as np
    src = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    program = os.path.join(src, "tests", "stablehlo", "psum_8.mlir")
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 3
    y = np.array([2.0, -0.5, 1.0], np.float32)
    args = os.path.join(WORK, "shlo-args")
    out = os.path.join(WORK, "shlo-out")
    hl_testlib.write_args(args, [x, y])
    res = cl.run_env(["srun", "-K", SRUN_MPI, "-n", "8", HLO_LAUNCH, "--args-dir", args,
                      "--output-dir", out, "--quiet", program], ENV, 60)
    if res.returncode != 0 or res.timed_out:
        return res.describe() + "\n" + SLURM.logs()
    want = (x * y[None, :]).astype(np.float32) * np.float32(8)
    for r in range(8):
        msg = hl_testlib.compare("rank %d" % r, hl_testlib.read_outputs(out, r, 0, 1)[0], want,
                                 tol=(1e-5, 1e-5))
        if msg:
            return msg
    return None


def test_srun_stablehlo_collectives():
    """The pmap-style StableHLO program with every collective (check ops baked in) on 8
    ranks started by srun; its results against NumPy (test_stablehlo_jax.py's oracle)."""
    import test_stablehlo_jax as jax_programs
    out = os.path.join(WORK, "shlo-coll-out")
    res = cl.run_env(["srun", "-K", SRUN_MPI, "-n", "8", HLO_LAUNCH, "--output-dir", out,
                      "--quiet", jax_programs.COLLECTIVES], ENV, 60)
    if res.returncode != 0 or res.timed_out:
        return res.describe() + "\n" + SLURM.logs()
    return jax_programs.check_collective_outputs(out)


def test_salloc():
    # Inside the allocation hlo-launch picks srun -K itself.
    res = cl.run_env(["salloc", "-n", "8", "-t", "5", HLO_LAUNCH, "--dry-run", "-np", "8",
                      PROGRAM], ENV, 60)
    if res.returncode != 0 or not re.search(r"^srun -K %s .* -n 8 " % SRUN_MPI, res.stdout, re.M):
        return "inside salloc hlo-launch should start srun -K\n" + res.describe()
    res = cl.run_env(["salloc", "-n", "8", "-t", "5", HLO_LAUNCH, "-np", "8", "--report-bindings",
                      "--timeout", "50", "--args", COUNT, PROGRAM], ENV, 60)
    if res.returncode != 0 or res.timed_out:
        return res.describe() + "\n" + SLURM.logs()
    return check_job(res.stdout + res.stderr, res.describe())


def test_sbatch():
    out = os.path.join(WORK, "sbatch-%j.out")
    script = os.path.join(WORK, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n#SBATCH -n 8\n#SBATCH -t 5\n"
                "exec %s -np 8 --report-bindings --timeout 50 --args %s %s\n"
                % (HLO_LAUNCH, COUNT, PROGRAM))
    res = cl.run_env(["sbatch", "--parsable", "-o", out, script], ENV, 30)
    if res.returncode != 0:
        return res.describe()
    job = res.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        q = cl.run_env(["squeue", "-h", "-j", job], ENV, 10)
        if not q.stdout.strip():
            break
        time.sleep(0.3)
    else:
        cl.run_env(["scancel", job], ENV, 10)
        return "sbatch job %s did not finish within 60 s" % job
    path = out.replace("%j", job)
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        return "no output file: %s\n%s" % (e, SLURM.logs())
    state = cl.run_env(["scontrol", "show", "job", job], ENV, 10).stdout
    if "JobState=COMPLETED" not in state and "ExitCode=0:0" not in state:
        return "job %s did not complete:\n%s\n%s" % (job, state, text[-3000:])
    return check_job(text, "--- %s ---\n%s" % (path, text[-3000:]))


def wait_job(job, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        q = cl.run_env(["squeue", "-h", "-j", job], ENV, 10)
        if not q.stdout.strip():
            return True
        time.sleep(0.3)
    cl.run_env(["scancel", job], ENV, 10)
    return False


def test_sbatch_example():
    """examples/slurm/run.sbatch as a user would submit it (one node here)."""
    script = os.path.join(cl.hl_testlib.EXAMPLES_DIR, "slurm", "run.sbatch")
    out = os.path.join(WORK, "example-%j.out")
    env = dict(ENV, PROGRAM=PROGRAM,
               PATH=os.path.dirname(HLO_LAUNCH) + os.pathsep + ENV.get("PATH", ""))
    res = cl.run_env(["sbatch", "--parsable", "-N", "1", "--ntasks-per-node", "8", "-o", out,
                      script], env, 30, cwd=WORK)
    if res.returncode != 0:
        return res.describe()
    job = res.stdout.strip().split(";")[0]
    if not wait_job(job):
        return "the example job %s did not finish within 60 s" % job
    try:
        with open(out.replace("%j", job), errors="replace") as f:
            text = f.read()
    except OSError as e:
        return "no output file: %s\n%s" % (e, SLURM.logs())
    msg = check_job(text, text[-3000:], values=False)
    if msg:
        return msg
    for r in range(8):
        path = os.path.join(WORK, "results-%s" % job, "replica%d_partition0" % r, "result0.npy")
        if not os.path.exists(path):
            return "the example should write %s\n%s" % (path, text[-2000:])
    return None


def main():
    global WORK, ENV, SLURM, PROGRAM, COUNT, COLLECTIVE, SRUN_MPI
    hl_testlib.require_binaries("hlo-launch")
    SRUN_MPI = "--mpi=pmi2" if hl_testlib.mpi_family() == "mpich" else "--mpi=pmix"
    why = cl.skip_reason(["slurmctld", "slurmd", "srun", "salloc", "sbatch", "munged",
                          "mungekey"])
    if why:
        print(why)
        return
    WORK = cl.workdir("cluster-slurm")
    os.chmod(WORK, 0o755)
    SLURM = cl.Slurm(WORK)
    try:
        PROGRAM, COLLECTIVE = cl.collective_program(cl.mpi_env(WORK), WORK)
        print("program: %s" % os.path.basename(PROGRAM), flush=True)
        COUNT = cl.write_count(WORK, 3)
        SLURM.start()
        ENV = dict(cl.mpi_env(WORK))
        ENV.update(SLURM.env)
        for k in list(ENV):
            if k.startswith("SLURM_") and k != "SLURM_CONF":
                del ENV[k]
        hl_testlib.main([
            ("srun_direct", test_srun_direct),
            ("srun_stablehlo", test_srun_stablehlo),
            ("srun_stablehlo_collectives", test_srun_stablehlo_collectives),
            ("salloc", test_salloc),
            ("sbatch", test_sbatch),
            ("sbatch_example", test_sbatch_example),
        ])
    finally:
        SLURM.stop()
        err = cl.wait_no_processes(WORK, 5) if WORK else None
        if err:
            print(err)
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
