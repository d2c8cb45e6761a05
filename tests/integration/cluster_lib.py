"""Helpers for the cluster tests (not a test itself): a real Slurm on localhost
(munge, slurmctld, slurmd), simulated hosts in network namespaces, leftover
checks. The recipes are the tested ones of shared/reference/CLUSTER_TESTING.md.

Everything a test starts lives under one work directory and has names with
this process's id in them, so two test runs (two build directories) on one
machine do not collide; everything is stopped by pid file, pid or name.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib  # noqa: E402

HLO_LAUNCH = hl_testlib.HLO_LAUNCH
PROGRAMS_DIR = hl_testlib.PROGRAMS_DIR
run = hl_testlib.run


def mpi_env(work):
    """The environment for Open MPI runs (CLUSTER_TESTING.md section 6)."""
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        # session dirs of killed jobs stay in the work dir, not in /tmp
        "OMPI_MCA_orte_tmpdir_base": os.path.join(work, "ompi-tmp"),
    })
    os.makedirs(env["OMPI_MCA_orte_tmpdir_base"], exist_ok=True)
    return env


def run_env(argv, env, timeout, cwd=None):
    """hl_testlib.run with an environment (own process group, killed on timeout)."""
    return hl_testlib.run(argv, timeout=timeout, cwd=cwd, env=env)


def kill_group(proc):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def processes_matching(needle):
    """(pid, cmdline) of live (non-zombie) processes whose command line contains needle."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, IndexError):
            continue
        if needle in cmd:
            found.append((int(pid), cmd.strip()))
    return found


def wait_no_processes(needle, seconds=10):
    """None when no process matching needle remains within `seconds`, else a message."""
    deadline = time.monotonic() + seconds
    while True:
        left = processes_matching(needle)
        if not left:
            return None
        if time.monotonic() > deadline:
            return "processes left behind:\n" + "\n".join("%d %s" % p for p in left)
        time.sleep(0.2)


def skip_reason(tools):
    if os.geteuid() != 0:
        return "SKIP: needs root (network namespaces, Slurm daemons)"
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        return "SKIP: not installed: " + " ".join(missing)
    return None


def free_ports(count):
    """`count` distinct TCP ports that are free now, for daemons that bind them
    later. Taken below the kernel's ephemeral range: a port from that range
    (what bind to port 0 returns) can be handed to any outgoing connection
    of the tests beside this one before the daemon binds it."""
    import random
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    ports, held = [], []
    try:
        while len(ports) < count:
            port = random.randrange(10000, max(low, 10001 + count))
            s = socket.socket()
            try:
                s.bind(("", port))
            except OSError:
                s.close()
                continue
            held.append(s)  # held until all are chosen: no port twice
            if port not in ports:
                ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


# --- munge + Slurm on localhost ---------------------------------------------------

class Slurm:
    """A single-node Slurm (CPUs=8 declared, whatever the machine has), with a
    private munged; commands find it through SLURM_CONF in self.env."""

    def __init__(self, work):
        self.work = work
        self.munge = os.path.join(work, "munge")
        self.dir = os.path.join(work, "slurm")
        self.host = socket.gethostname().split(".")[0]
        self.env = None
        self.started = []

    def start(self):
        os.makedirs(self.munge, exist_ok=True)
        os.chmod(self.munge, 0o755)
        key = os.path.join(self.munge, "munge.key")
        sock = os.path.join(self.munge, "munge.socket.2")
        subprocess.run(["mungekey", "--create", "--keyfile=" + key], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        subprocess.run(["munged", "--socket=" + sock, "--key-file=" + key,
                        "--log-file=" + os.path.join(self.munge, "munged.log"),
                        "--pid-file=" + os.path.join(self.munge, "munged.pid"),
                        "--seed-file=" + os.path.join(self.munge, "munged.seed")],
                       check=True, timeout=30)
        self.started.append("munged")
        for d in ("state", "run", "log", "spool/" + self.host, "tmp/" + self.host):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        conf = os.path.join(self.dir, "slurm.conf")
        d = self.dir
        ctld_port, slurmd_port = free_ports(2)
        with open(conf, "w") as f:
            f.write("\n".join([
                "ClusterName=hlci",
                "SlurmctldHost=%s(127.0.0.1)" % self.host,
                "SlurmctldPort=%d" % ctld_port,
                "SlurmdPort=%d" % slurmd_port,
                "SlurmUser=root", "SlurmdUser=root",
                "AuthType=auth/munge", "CredType=cred/munge",
                "AuthInfo=socket=" + sock,
                "StateSaveLocation=%s/state" % d,
                "SlurmdSpoolDir=%s/spool/%%n" % d,
                "TmpFS=%s/tmp/%%n" % d,
                "SlurmctldPidFile=%s/run/slurmctld.pid" % d,
                "SlurmdPidFile=%s/run/slurmd.pid" % d,
                "SlurmctldLogFile=%s/log/slurmctld.log" % d,
                "SlurmdLogFile=%s/log/slurmd.log" % d,
                "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
                "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
                "MpiDefault=pmix", "ReturnToService=2",
                "SlurmdParameters=config_overrides",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none", "JobCompType=jobcomp/none",
                "NodeName=%s NodeAddr=127.0.0.1 CPUs=8 Boards=1 SocketsPerBoard=1 "
                "CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN" % self.host,
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        if not os.path.isdir("/sys/fs/cgroup/cpuset"):
            # slurmd 22.05 always starts a cgroup plugin; without a v1
            # hierarchy it fails unless told to use cgroup/v1 (tested recipe).
            with open(os.path.join(d, "cgroup.conf"), "w") as f:
                f.write("CgroupPlugin=cgroup/v1\n")
        self.env = dict(os.environ, SLURM_CONF=conf)
        for k in list(self.env):
            if k.startswith("SLURM_") and k != "SLURM_CONF":
                del self.env[k]
        subprocess.run(["slurmctld"], env=self.env, check=True, timeout=30)
        self.started.append("slurmctld")
        subprocess.run(["slurmd"], env=self.env, check=True, timeout=30)
        self.started.append("slurmd")
        for _ in range(150):
            r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, timeout=10,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if r.stdout.strip() == "idle":
                return
            time.sleep(0.2)
        raise RuntimeError("slurm node never became idle:\n" + self.logs())

    def logs(self):
        text = []
        for name in ("slurmctld.log", "slurmd.log"):
            p = os.path.join(self.dir, "log", name)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text.append("--- %s ---\n%s" % (name, f.read()[-3000:]))
        return "\n".join(text)

    def stop(self):
        if self.env and "slurmctld" in self.started:
            subprocess.run(["scontrol", "shutdown"], env=self.env, timeout=15,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        for pidfile in (os.path.join(self.dir, "run", "slurmd.pid"),
                        os.path.join(self.dir, "run", "slurmctld.pid"),
                        os.path.join(self.munge, "munged.pid")):
            kill_pidfile(pidfile)


def kill_pidfile(path):
    try:
        with open(path) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(25):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return
            except OSError:
                return
            time.sleep(0.1)


# --- simulated hosts --------------------------------------------------------------

class Netns:
    """`count` hosts in network namespaces on one bridge, each with its own
    hostname and /etc/hosts (nsenter + unshare, as the tested recipe); an
    rsh agent lets Open MPI start its daemons "on" them."""

    def __init__(self, work, count=3):
        self.work = work
        self.count = count
        tag = "%d" % (os.getpid() % 100000)
        self.hosts = ["hl%sh%d" % (tag, i + 1) for i in range(count)]  # <= 15 chars
        self.veths = ["hl%sv%d" % (tag, i + 1) for i in range(count)]
        self.bridge = "hl%sbr" % tag
        self.subnet = "10.77.0"
        self.nsexec = os.path.join(work, "nsexec")
        self.agent = os.path.join(work, "rsh-agent")
        self.hostfile = os.path.join(work, "hostfile")
        self.created = False

    def ip(self, *args):
        subprocess.run(["ip"] + list(args), check=True, timeout=20,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    @staticmethod
    def remove_stale():
        """Deletes the namespaces, links and bridges of earlier runs whose
        test process is gone (a run killed outright cannot clean up)."""
        import re
        r = subprocess.run(["ip", "-o", "link"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        n = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        names = re.findall(r"^(hl(\d+)h\d+)\b", n.stdout, re.M)
        links = re.findall(r"^\d+: (hl(\d+)(?:v\d+|br))[@:]", r.stdout, re.M)
        for name, pid in names + links:
            if os.path.exists("/proc/%s" % pid):
                continue
            if (name, pid) in names:
                subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL, timeout=10)
            else:
                subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL, timeout=10)

    def setup(self, slots=3):
        self.remove_stale()
        self.created = True
        self.ip("link", "add", self.bridge, "type", "bridge")
        self.ip("link", "set", self.bridge, "up")
        hosts_file = os.path.join(self.work, "hosts")
        with open(hosts_file, "w") as f:
            f.write("127.0.0.1 localhost\n")
            for i, h in enumerate(self.hosts):
                f.write("%s.%d %s\n" % (self.subnet, i + 1, h))
        with open(self.hostfile, "w") as f:
            for h in self.hosts:
                f.write(hostfile_line(h, slots))
        for i, (h, v) in enumerate(zip(self.hosts, self.veths)):
            self.ip("netns", "add", h)
            self.ip("link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", h)
            self.ip("link", "set", v, "master", self.bridge, "up")
            self.ip("-n", h, "addr", "add", "%s.%d/24" % (self.subnet, i + 1), "dev", "eth0")
            self.ip("-n", h, "link", "set", "eth0", "up")
            self.ip("-n", h, "link", "set", "lo", "up")
        with open(self.nsexec, "w") as f:
            f.write("#!/bin/bash\nhost=$1; shift\n"
                    "exec nsenter --net=/run/netns/\"$host\" unshare --uts --mount -- /bin/sh -c "
                    "'hostname \"$0\" && mount --bind %s /etc/hosts && exec \"$@\"' \"$host\" \"$@\"\n"
                    % hosts_file)
        with open(self.agent, "w") as f:
            f.write("#!/bin/bash\nwhile [[ $# -gt 0 && $1 == -* ]]; do shift; done\n"
                    "host=$1; shift\nexec %s \"$host\" /bin/sh -c \"$*\"\n" % self.nsexec)
        os.chmod(self.nsexec, 0o755)
        os.chmod(self.agent, 0o755)

    def mpiexec_args(self, btl="tcp,self"):
        """mpiexec options for Open MPI across the hosts over TCP (`btl`:
        the transports, e.g. "self,vader,tcp" for shared memory inside a host);
        for MPICH's Hydra the same through its rsh launcher and UCX over TCP
        between the hosts. Inside a host UCX always takes shared memory, as in
        any real deployment: with TCP there too, MPICH 4.0.2's MPI_Finalize
        deadlocks in about one run of three on 3 hosts (a rank whose UCX
        disconnect needs a peer's progress while that peer already blocks in
        the PMI barrier that follows; pmodels/mpich#6596, fixed in 4.2)."""
        if hl_testlib.mpi_family() == "mpich":
            tls = "tcp,sm,self"
            return ["-launcher", "rsh", "-launcher-exec", self.agent,
                    "-genv", "UCX_TLS", tls, "-genv", "UCX_NET_DEVICES", "eth0"]
        return ["--mca", "plm_rsh_agent", self.agent, "--mca", "btl", btl,
                "--mca", "btl_tcp_if_include", self.subnet + ".0/24",
                "--mca", "oob_tcp_if_include", self.subnet + ".0/24",
                # softirq of the bridge starves without it (CLUSTER_TESTING.md)
                "--mca", "mpi_yield_when_idle", "1"]

    def mpi_args(self):
        """hlo-launch options for Open MPI across the hosts over TCP."""
        return ["--mpiexec-arg=" + a for a in self.mpiexec_args()]

    def pids(self, host):
        r = subprocess.run(["ip", "netns", "pids", host], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        return [int(p) for p in r.stdout.split()]

    def teardown(self):
        if not self.created:
            return
        for h, v in zip(self.hosts, self.veths):
            for pid in self.pids(h) if os.path.exists("/run/netns/" + h) else []:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", h], stderr=subprocess.DEVNULL, timeout=10)
            subprocess.run(["ip", "link", "del", v], stderr=subprocess.DEVNULL, timeout=10)
        subprocess.run(["ip", "link", "del", self.bridge], stderr=subprocess.DEVNULL, timeout=10)


def hostfile_line(host, slots, other=False):
    """A hostfile line in the format of the built-with MPI's starter (with
    `other`, of the other family's)."""
    if (hl_testlib.mpi_family() == "mpich") != other:
        return "%s:%d\n" % (host, slots)  # Hydra
    return "%s slots=%d\n" % (host, slots)


def workdir(prefix):
    # Straight under /tmp, not the test's private $TMPDIR (mode 0700): the
    # Slurm and munge daemons, other users, read it; removed by the tests.
    return tempfile.mkdtemp(prefix="hl-%s-" % prefix, dir="/tmp")


def collective_program(env, work):
    """The all-reduce loop when this build runs all-reduce, else the spin
    loop (the tests then rely on mpiexec / srun noticing a lost rank)."""
    prog = os.path.join(PROGRAMS_DIR, "cluster_allreduce_loop.hlo")
    n = write_count(work, 3)
    res = run_env([HLO_LAUNCH, "-np", "2", "--quiet", "--timeout", "30", "--args", n, prog],
                  env, 45)
    if res.returncode == 0:
        return prog, True
    return os.path.join(PROGRAMS_DIR, "cluster_spin.hlo"), False


def write_count(work, n):
    import numpy as np
    path = os.path.join(work, "count%d.npy" % n)
    np.save(path, np.array(n, np.int32))
    return path
