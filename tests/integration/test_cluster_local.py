#!/usr/bin/env python3
"""hlo-launch on localhost as a cluster tool: placement (--bind-to,
--report-bindings) with 1, 2 and 8 ranks, the command lines it would start
(--dry-run: -H, --hostfile, Slurm allocations, --launcher), global inputs and
outputs by sharding (numpy is the oracle), and a rank killed mid-run.

Run by ctest (integration.cluster_local). Every command has a timeout; the
work directory is removed in a finally block.
"""

import os
import re
import shutil
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_lib as cl  # noqa: E402
import hl_testlib  # noqa: E402

HLO_LAUNCH = cl.HLO_LAUNCH
SPIN = os.path.join(cl.PROGRAMS_DIR, "cluster_spin.hlo")
MATMUL = os.path.join(cl.PROGRAMS_DIR, "cluster_sharded_matmul.hlo")
WORK = None
ENV = None
PROGRAM = SPIN

BINDING_RE = re.compile(
    r"^hlo-launch: binding: host=(\S+) rank=(\d+) replica=(\d+) partition=(\d+) "
    r"local_rank=(\d+)/(\d+) cpuset=(\S+) threads=(\S+) policy=(\w+)", re.M)


def parse_cpus(text):
    cpus = set()
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.update(range(int(a), int(b) + 1))
        else:
            cpus.add(int(part))
    return cpus


def machine_cores():
    """Physical cores among the CPUs this process may use (hwloc's cores)."""
    cores = set()
    for cpu in os.sched_getaffinity(0):
        base = "/sys/devices/system/cpu/cpu%d/topology/" % cpu
        try:
            with open(base + "core_id") as f:
                core = f.read().strip()
            with open(base + "physical_package_id") as f:
                pkg = f.read().strip()
        except OSError:
            core, pkg = str(cpu), "0"
        cores.add((pkg, core))
    return len(cores)


def launch(*args, timeout=60):
    return cl.run_env([HLO_LAUNCH] + [str(a) for a in args], ENV, timeout)


def bindings(res):
    return [dict(zip(("host", "rank", "replica", "partition", "local", "local_size", "cpuset",
                      "threads", "policy"), m)) for m in BINDING_RE.findall(res.stderr)]


def check_bindings(np_, extra=(), policy="core"):
    count = cl.write_count(WORK, 100)
    res = launch("-np", np_, "--report-bindings", "--quiet", "--args", count, *extra, SPIN)
    if res.returncode != 0 or res.timed_out:
        return None, "launch failed\n" + res.describe()
    lines = bindings(res)
    if [int(b["rank"]) for b in lines] != list(range(np_)):
        return None, "expected one binding line per rank in rank order\n" + res.describe()
    for b in lines:
        if b["policy"] != policy or int(b["local_size"]) != np_:
            return None, "bad binding line %r\n%s" % (b, res.describe())
    return lines, None


def test_one_rank_gets_every_core():
    lines, err = check_bindings(1)
    if err:
        return err
    allowed = os.sched_getaffinity(0)
    if parse_cpus(lines[0]["cpuset"]) != allowed:
        return "1 rank: cpuset %s, expected all of %s" % (lines[0]["cpuset"], sorted(allowed))
    if lines[0]["threads"] != str(len(allowed)):
        return "1 rank: BLAS threads %s, expected the cpuset size %d" % (
            lines[0]["threads"], len(allowed))
    return None


def test_two_ranks_disjoint():
    lines, err = check_bindings(2)
    if err:
        return err
    a, b = (parse_cpus(l["cpuset"]) for l in lines)
    if machine_cores() >= 2 and (a & b or not a or not b):
        return "2 ranks on %d cores should get disjoint cpusets: %s / %s" % (
            machine_cores(), lines[0]["cpuset"], lines[1]["cpuset"])
    for l in lines:
        if l["threads"] != str(len(parse_cpus(l["cpuset"]))):
            return "threads %s for cpuset %s" % (l["threads"], l["cpuset"])
    return None


def test_eight_ranks_share_without_failing():
    lines, err = check_bindings(8)
    if err:
        return err
    allowed = os.sched_getaffinity(0)
    sets = [parse_cpus(l["cpuset"]) for l in lines]
    if any(not s or not s <= allowed for s in sets):
        return "cpusets outside the machine: %s" % [l["cpuset"] for l in lines]
    if set().union(*sets) != allowed and machine_cores() <= 8:
        return "8 ranks should cover every core: %s" % [l["cpuset"] for l in lines]
    if machine_cores() >= 8 and any(sets[i] & sets[j] for i in range(8) for j in range(i)):
        return "8 ranks on %d cores overlap: %s" % (machine_cores(), [l["cpuset"] for l in lines])
    if sorted(int(l["local"]) for l in lines) != list(range(8)):
        return "local ranks %s" % [l["local"] for l in lines]
    return None


def test_bind_none_and_numa():
    lines, err = check_bindings(2, ("--bind-to", "none"), policy="none")
    if err:
        return err
    allowed = os.sched_getaffinity(0)
    if any(parse_cpus(l["cpuset"]) != allowed for l in lines):
        return "--bind-to none should leave every CPU: %s" % [l["cpuset"] for l in lines]
    lines, err = check_bindings(2, ("--bind-to", "numa"), policy="numa")
    if err:
        return err
    nodes = [d for d in os.listdir("/sys/devices/system/node") if re.match(r"node\d+$", d)] \
        if os.path.isdir("/sys/devices/system/node") else []
    if len(nodes) == 1 and any(parse_cpus(l["cpuset"]) != allowed for l in lines):
        return "one NUMA node: --bind-to numa gives the node: %s" % [l["cpuset"] for l in lines]
    res = launch("-np", 1, "--bind-to", "socket", SPIN)
    if res.returncode != 2 or "core, numa or none" not in res.stderr:
        return "bad --bind-to should be a usage error\n" + res.describe()
    return None


def test_grid_in_report():
    count = cl.write_count(WORK, 10)
    res = launch("-np", 4, "--replicas", 2, "--partitions", 2, "--report-bindings", "--quiet",
                 "--args", count, SPIN)
    if res.returncode != 0:
        return res.describe()
    got = [(int(b["rank"]), int(b["replica"]), int(b["partition"])) for b in bindings(res)]
    if got != [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]:
        return "rank/replica/partition in the report: %s\n%s" % (got, res.describe())
    return None


def dry(*args, env_extra=None):
    env = dict(ENV)
    for k in list(env):
        if k.startswith("SLURM_"):
            del env[k]
    env.update(env_extra or {})
    return cl.run_env([HLO_LAUNCH, "--dry-run"] + [str(a) for a in args], env, 30)


def test_dry_run_command_lines():
    # A hostfile in each family's form: the starter's own is given as is,
    # the other one's becomes the starter's host list.
    ompi_file, hydra_file = os.path.join(WORK, "hosts.ompi"), os.path.join(WORK, "hosts.hydra")
    with open(ompi_file, "w") as f:
        f.write("# two hosts\na slots=2 max_slots=4\nb slots=2\n")
    with open(hydra_file, "w") as f:
        f.write("a:2  # first\n\nb:2\n")
    # The starter and flags of the MPI built with (test_mpi_families.py has more).
    mpich = hl_testlib.mpi_family() == "mpich"
    if mpich:
        starter, hosts, pmi = "mpiexec.", " -hosts a:2,b:2 ", "--mpi=pmi2"
        hostfile, hostfile_flag, other_file = hydra_file, " -f %s " % hydra_file, ompi_file
    else:
        starter, hosts, pmi = "mpiexec ", " --host a:2,b:2 ", "--mpi=pmix"
        hostfile, hostfile_flag, other_file = ompi_file, " --hostfile %s " % ompi_file, hydra_file
    res = dry("-np", 4, "-H", "a:2,b:2", SPIN)
    line = res.stdout.strip()
    if res.returncode != 0 or not line.startswith(starter) or hosts not in line \
            or (not mpich and "--mca oob_tcp_keepalive_time" not in line) or " -n 4 " not in line \
            or " --worker " not in line:
        return "-H\n" + res.describe()
    res = dry("-np", 4, "--hostfile", hostfile, SPIN)
    if res.returncode != 0 or hostfile_flag not in res.stdout:
        return "--hostfile\n" + res.describe()
    res = dry("-np", 4, "--hostfile", other_file, SPIN)
    if res.returncode != 0 or hosts not in res.stdout or other_file in res.stdout.split(" --worker")[0]:
        return "--hostfile in the other family's form: expected%s\n%s" % (hosts, res.describe())
    bad = os.path.join(WORK, "hosts.bad")
    with open(bad, "w") as f:
        f.write("a slots=2\nb cpus=2\n")
    res = dry("-np", 4, "--hostfile", bad, SPIN)
    if res.returncode == 0 or "%s:2: 'cpus=2'" % bad not in res.stderr:
        return "a hostfile line in neither form\n" + res.describe()
    # Inside a Slurm allocation: srun -K with the library's PMI; the rank binds itself.
    res = dry("-np", 8, SPIN, env_extra={"SLURM_JOB_ID": "42"})
    line = res.stdout.strip()
    if res.returncode != 0 or not line.startswith("srun -K %s --cpu-bind=none " % pmi) \
            or " -n 8 " not in line:
        return "inside an allocation\n" + res.describe()
    res = dry("-np", 8, "--launcher", "mpirun", SPIN, env_extra={"SLURM_JOB_ID": "42"})
    if res.returncode != 0 or not res.stdout.startswith(starter):
        return "--launcher mpirun\n" + res.describe()
    res = dry("-np", 8, "--launcher", "srun", "--bind-to", "none", SPIN)
    if res.returncode != 0 or not res.stdout.startswith("srun -K %s " % pmi) \
            or "--cpu-bind" in res.stdout:
        return "--launcher srun\n" + res.describe()
    res = dry("-np", 8, SPIN, env_extra={"SLURM_JOB_ID": "42", "SLURM_MPI_TYPE": "pmix_v4"})
    if res.returncode != 0 or "--mpi=" in res.stdout:
        return "SLURM_MPI_TYPE should be left to srun\n" + res.describe()
    res = dry("-np", 2, "-H", "a:2", "--hostfile", hostfile, SPIN)
    if res.returncode != 2 or "give one" not in res.stderr:
        return "-H with --hostfile\n" + res.describe()
    res = dry("-np", 2, "--launcher", "pbs", SPIN)
    if res.returncode != 2 or "mpirun or srun" not in res.stderr:
        return "--launcher pbs\n" + res.describe()
    return None


def test_global_matmul_8_partitions():
    rng = np.random.default_rng(6)
    lhs = rng.standard_normal((16, 4)).astype(np.float32)
    rhs = rng.standard_normal((4, 3)).astype(np.float32)
    a, b = os.path.join(WORK, "lhs.npy"), os.path.join(WORK, "rhs.npy")
    out = os.path.join(WORK, "product.npy")
    np.save(a, lhs)
    np.save(b, rhs)
    res = launch("-np", 8, "--quiet", "--global-args", "%s,%s" % (a, b), "--global-output", out,
                 MATMUL)
    if res.returncode != 0:
        return res.describe()
    got = np.load(out)
    want = (lhs.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32)
    msg = hl_testlib.compare("global product", got, want, (1e-5, 1e-5))
    if msg:
        return msg
    # Uneven: 15 rows in 8 tiles of ceil(15/8) = 2; the last tile is one row
    # and a zero padding row, which the assembled result keeps.
    np.save(a, lhs[:15])
    res = launch("-np", 8, "--quiet", "--global-args", "%s,%s" % (a, b), "--global-output", out,
                 MATMUL)
    if res.returncode != 0:
        return "uneven\n" + res.describe()
    got = np.load(out)
    if got.shape != (16, 3):
        return "uneven: shape %s" % (got.shape,)
    msg = hl_testlib.compare("uneven product", got[:15], want[:15], (1e-5, 1e-5)) or \
        hl_testlib.compare("padding row", got[15], np.zeros(3, np.float32))
    return msg


def test_global_args_errors():
    a, b = os.path.join(WORK, "lhs.npy"), os.path.join(WORK, "rhs.npy")
    np.save(a, np.zeros((8, 4), np.float32))   # 8 rows / 8 tiles = 1 row, needs 2
    np.save(b, np.zeros((4, 3), np.float32))
    res = launch("-np", 8, "--quiet", "--global-args", "%s,%s" % (a, b), MATMUL)
    if res.returncode != 1 or "{devices=[8,1]<=[8]}" not in res.stderr or a not in res.stderr:
        return "wrong global shape should name the file and the sharding\n" + res.describe()
    manual = os.path.join(WORK, "manual.hlo")
    with open(manual, "w") as f:
        f.write("HloModule manual, num_partitions=2\n\nENTRY main {\n"
                "  x = f32[2]{0} parameter(0), sharding={manual}\n"
                "  ROOT y = f32[2]{0} negate(x), sharding={manual}\n}\n")
    x = os.path.join(WORK, "x.npy")
    np.save(x, np.zeros(4, np.float32))
    res = launch("-np", 2, "--quiet", "--global-args", x, manual)
    if res.returncode != 1 or "{manual}" not in res.stderr:
        return "a {manual} parameter should be refused by name\n" + res.describe()
    res = launch("-np", 2, "--quiet", "--zeros", "--global-output", os.path.join(WORK, "o.npy"),
                 manual)
    if res.returncode != 1 or "{manual}" not in res.stderr:
        return "a {manual} result should be refused by name\n" + res.describe()
    res = launch("-np", 8, "--quiet", "--global-args", a, MATMUL)
    if res.returncode != 1 or "gives 1 file" not in res.stderr:
        return "file count\n" + res.describe()
    res = launch("-np", 8, "--global-args", a, "--seed", 1, MATMUL)
    if res.returncode != 2:
        return "--global-args with --seed is a usage error\n" + res.describe()
    return None


def worker_pids():
    """pid -> MPI rank of this test's hlo-launch ranks (their command lines
    name a file in this test's work directory; other tests may run the
    same binary at the same time)."""
    ranks = {}
    for pid, cmd in cl.processes_matching(HLO_LAUNCH + " --worker"):
        if WORK not in cmd:
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            # Open MPI's mpiexec, or Hydra (MPICH)
            rank = int(env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMI_RANK", b"-1")))
        except (OSError, ValueError):
            continue
        if rank >= 0:  # not mpiexec, whose command line names the worker too
            ranks[pid] = rank
    return ranks


def test_kill_one_rank():
    import subprocess
    count = cl.write_count(WORK, 50000000)
    log = os.path.join(WORK, "kill.log")
    # The ranks' state files (the post-mortem's source, which names the rank
    # under Hydra: MPICH's starter does not) show when they run.
    dbg = os.path.join(WORK, "kill-debug")
    os.makedirs(dbg, exist_ok=True)
    argv = [HLO_LAUNCH, "-np", "8", "--quiet", "--timeout", "60", "--debug-dir", dbg,
            "--args", count, PROGRAM]
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True, env=ENV)
    try:
        # Only a bound for a start that never comes: 8 ranks under MPICH on a
        # loaded 2-core machine take many seconds to start.
        deadline = time.monotonic() + 60
        victim = None
        while time.monotonic() < deadline:
            ranks = worker_pids()
            if len(ranks) == 8:
                victim = [p for p, r in ranks.items() if r == 5]
                break
            time.sleep(0.2)
        if not victim:
            return "the 8 ranks never appeared: %s" % worker_pids()
        while time.monotonic() < deadline and not all(
                os.path.exists(os.path.join(dbg, "rank%d.state" % r)) for r in range(8)):
            time.sleep(0.2)
        time.sleep(2.0)  # inside the loop by now
        os.kill(victim[0], signal.SIGKILL)
        killed = time.monotonic()
        # The kill must end the job, not --timeout 60 (exit 124). No tighter
        # bound on its time: the launcher alone gives ranks orphaned by the
        # starter 10 s to die before it kills them (it was a 15 s limit).
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            return "the job did not end within 60 s of the kill; still running:\n%s" % (
                "\n".join("%d %s" % p for p in cl.processes_matching(WORK)))
        took = time.monotonic() - killed
        with open(log, errors="replace") as f:
            err = f.read()
        if proc.returncode in (0, 124) or "did not finish within --timeout" in err:
            return "kill -9 of rank 5: exit %s after %.1f s\n%s" % (proc.returncode, took, err)
        if not re.search(r"rank 5\b", err):
            return "the message should name rank 5:\n" + err
        print("    the kill ended the job: exit %d after %.1f s" % (proc.returncode, took),
              flush=True)
        return cl.wait_no_processes(WORK, 10)
    finally:
        if proc.poll() is None:
            cl.kill_group(proc)


def main():
    global WORK, ENV, PROGRAM
    hl_testlib.require_binaries("hlo-launch")
    WORK = cl.workdir("cluster-local")
    ENV = cl.mpi_env(WORK)
    try:
        PROGRAM, _ = cl.collective_program(ENV, WORK)
        print("program for the kill test: %s" % os.path.basename(PROGRAM), flush=True)
        hl_testlib.main([
            ("one_rank_gets_every_core", test_one_rank_gets_every_core),
            ("two_ranks_disjoint", test_two_ranks_disjoint),
            ("eight_ranks_share_without_failing", test_eight_ranks_share_without_failing),
            ("bind_none_and_numa", test_bind_none_and_numa),
            ("grid_in_report", test_grid_in_report),
            ("dry_run_command_lines", test_dry_run_command_lines),
            ("global_matmul_8_partitions", test_global_matmul_8_partitions),
            ("global_args_errors", test_global_args_errors),
            ("kill_one_rank", test_kill_one_rank),
        ])
    finally:
        for pid in worker_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
