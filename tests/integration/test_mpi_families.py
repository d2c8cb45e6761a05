#!/usr/bin/env python3
"""The starter matches the MPI hlo-launch was built with (launcher/starter.c).

A rank started by another implementation's mpiexec finds no job of its own:
N singletons. So hlo-launch takes its own family's starter and flags (Open
MPI: mpiexec --oversubscribe --bind-to none; MPICH: mpiexec.hydra -bind-to
none -hosts / -f; srun --mpi=pmix / pmi2), and a starter of the other family,
given or found, is one error naming both. The other family's starter is
used where it is installed (Debian: openmpi-bin and mpich side by side);
fake starters that answer --version as each family does cover the rest.
"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

SCALE = os.path.join(hl.PROGRAMS_DIR, "launcher_replica_scale.hlo")
VERSION_TEXT = {  # what each family's starter prints for --version
    "openmpi": "mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/",
    "mpich": "HYDRA build details:\n    Version:                                 4.0.2",
}
NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}


def own():
    return hl.mpi_family()


def other():
    return "mpich" if own() == "openmpi" else "openmpi"


def other_starter():
    """The other family's starter when it is installed, else None."""
    names = ["mpiexec.openmpi"] if other() == "openmpi" else ["mpiexec.hydra", "mpiexec.mpich"]
    for n in names:
        path = shutil.which(n)
        if path:
            return path
    return None


def launch(*args, env_extra=None, timeout=60):
    env = dict(os.environ)
    env.pop(hl_starter_env(), None)
    env.pop("SLURM_JOB_ID", None)
    env.update(env_extra or {})
    return hl.run([hl.HLO_LAUNCH] + [str(a) for a in args], env=env, timeout=timeout)


def hl_starter_env():
    return "HLO_LAUNCH_MPIEXEC"


def fake_starter(d, family):
    """A script that answers --version as `family`'s starter does."""
    path = os.path.join(d, "site-mpiexec-" + family)
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % VERSION_TEXT[family])
    os.chmod(path, 0o755)
    return path


def hl_lines(res):
    return [l for l in res.stderr.splitlines() if l.startswith("hlo-launch:")]


def expect_mismatch(res, starter_family):
    """One error line naming the starter's family, the built-with one and the fix."""
    lines = hl_lines(res)
    if res.timed_out or res.returncode != 1 or len(lines) != 1:
        return "expected one error and exit 1\n" + res.describe()
    want = [r"starts %s jobs" % NAME[starter_family],
            r"built with %s" % NAME[own()], r"--mpiexec PATH or HLO_LAUNCH_MPIEXEC=PATH"]
    for w in want:
        if not re.search(w, lines[0]):
            return "the error lacks %r\n%s" % (w, res.describe())
    if "== replica" in res.stdout:
        return "ranks ran\n" + res.describe()
    return None


def test_version_names_the_mpi():
    res = launch("--version")
    m = re.search(r"^MPI: (.+) \(family: (Open MPI|MPICH)\)$", res.stdout, re.M)
    if res.returncode != 0 or not m:
        return res.describe()
    if m.group(2) != NAME[own()]:
        return "family %s, expected %s" % (m.group(2), NAME[own()])
    return None


def test_dry_run_takes_the_familys_starter():
    with hl.tempdir("hl-fam") as d:
        hostfile = os.path.join(d, "hosts")
        with open(hostfile, "w") as f:
            f.write("a\nb\n")  # the same in both families' forms: given as is
        res = launch("-np", 4, "--dry-run", "-H", "a:2,b:2", SCALE)
        res2 = launch("-np", 4, "--dry-run", "--hostfile", hostfile, SCALE)
    for r in (res, res2):
        if r.returncode != 0:
            return r.describe()
    words, words2 = res.stdout.split(), res2.stdout.split()
    if own() == "mpich":
        if words[0] not in ("mpiexec.hydra", "mpiexec.mpich") or words[1:3] != ["-bind-to", "none"]:
            return "not Hydra's command\n" + res.stdout
        hosts, hostfile_flag = ["-hosts", "a:2,b:2"], ["-f", hostfile]
        foreign = ["--oversubscribe", "--mca", "--host", "--allow-run-as-root"]
    else:
        if words[0] != "mpiexec" or "--oversubscribe" not in words:
            return "not Open MPI's command\n" + res.stdout
        hosts, hostfile_flag = ["--host", "a:2,b:2"], ["--hostfile", hostfile]
        foreign = ["-hosts", "-bind-to", "-f"]
    joined, joined2 = " ".join(words), " ".join(words2)
    if " ".join(hosts) not in joined or " ".join(hostfile_flag) not in joined2:
        return "host flags missing\n%s\n%s" % (res.stdout, res2.stdout)
    before_worker = words[:words.index("--worker")]
    for w in foreign:
        if w in before_worker:
            return "the other family's flag %r\n%s" % (w, res.stdout)
    return None


def test_srun_gets_the_familys_pmi_plugin():
    res = launch("-np", 2, "--dry-run", SCALE, env_extra={"SLURM_JOB_ID": "42"})
    want = "--mpi=pmi2" if own() == "mpich" else "--mpi=pmix"
    if res.returncode != 0 or res.stdout.split()[:3] != ["srun", "-K", want]:
        return "expected srun -K %s\n%s" % (want, res.describe())
    res = launch("-np", 2, "--dry-run", SCALE,
                 env_extra={"SLURM_JOB_ID": "42", "SLURM_MPI_TYPE": "pmix_v4"})
    if res.returncode != 0 or "--mpi=" in res.stdout:
        return "SLURM_MPI_TYPE should win\n" + res.describe()
    return None


def test_wrong_family_starter_is_an_error():
    with hl.tempdir("hl-fam") as d:
        fake_other = fake_starter(d, other())
        for args, env in [(("--mpiexec", fake_other), {}), ((), {hl_starter_env(): fake_other})]:
            for dry in ([], ["--dry-run"]):
                res = launch("-np", 2, *args, *dry, "--zeros", SCALE, env_extra=env)
                msg = expect_mismatch(res, other())
                if msg:
                    return msg
        # The family's own (a site's wrapper script answering as it) is taken.
        fake_own = fake_starter(d, own())
        res = launch("-np", 2, "--mpiexec", fake_own, "--dry-run", SCALE)
        if res.returncode != 0 or res.stdout.split()[0] != fake_own:
            return "own family's starter refused\n" + res.describe()
        if (own() == "mpich") != (res.stdout.split()[1] == "-bind-to"):
            return "not the family's flags\n" + res.stdout
    real = other_starter()
    if not real:
        return None
    res = launch("-np", 2, "--mpiexec", real, "--zeros", SCALE)
    return expect_mismatch(res, other())


def test_other_familys_mpiexec_started_by_the_user():
    """The user's own mpiexec of the other family: one error, not N singletons."""
    real = other_starter()
    if not real:
        return "SKIP: no starter of %s installed" % NAME[other()]
    argv = [real, "-n", "3"]
    if other() == "openmpi":
        argv[1:1] = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    res = hl.run(argv + [hl.HLO_LAUNCH, "--zeros", SCALE], timeout=60)
    lines = hl_lines(res)
    if res.timed_out or res.returncode == 0 or len(lines) != 1:
        return "expected one error\n" + res.describe()
    for w in ["started 3 processes", "MPI sees a job of 1 process", "built with %s" % NAME[own()]]:
        if w not in lines[0]:
            return "the error lacks %r\n%s" % (w, res.describe())
    if "== replica" in res.stdout:
        return "singletons ran\n" + res.describe()
    return None


def test_own_mpiexec_started_by_the_user():
    """The family's own starter, as a user types it: one job of 3 ranks."""
    res = hl.run(hl.mpi_starter(3, bind_none=False) + [hl.HLO_LAUNCH, "--zeros", SCALE],
                 timeout=60)
    if res.returncode != 0 or res.stdout.count("== replica") != 3:
        return res.describe()
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([(n[5:], f) for n, f in sorted(globals().items())
             if n.startswith("test_") and callable(f)])
