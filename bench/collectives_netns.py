#!/usr/bin/env python3
"""bench_collectives across simulated hosts (network namespaces, Open MPI over
TCP between them): the shared-memory layer's hierarchical path (shared memory
in each host, MPI across) against raw MPI over the same links, in one run.
Run by bench/run_collectives_netns.sh; the namespace setup is the tests'
(tests/integration/cluster_lib.py, as test_cluster_shm_netns.py uses it).

  collectives_netns.py --bench PATH [--hosts 2] [--ranks-per-host 2]
                       [--btl self,vader,tcp] [-- bench_collectives options]

Raw MPI uses `--btl` (default: shared memory inside a host, TCP between
hosts, MPI's best here); the single-copy mechanism is the caller's
OMPI_MCA_btl_vader_single_copy_mechanism, "none" when unset (as CI runs).
In the output the "shm" columns are the hierarchical path (the group of
all spans the hosts evenly); its "bound" column counts only one host's
memory traffic and says nothing across hosts.

Needs root, iproute2 and util-linux; otherwise it prints why and exits 0.
"""

import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import cluster_lib as cl  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="path of bench_collectives")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--ranks-per-host", type=int, default=2)
    ap.add_argument("--btl", default="self,vader,tcp")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- bench_collectives options")
    a = ap.parse_args()
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    why = cl.skip_reason(["ip", "nsenter", "unshare", "mpiexec"])
    if why:
        print(why)
        return 0
    work = cl.workdir("bench-netns")
    env = cl.mpi_env(work)
    env["OMPI_MCA_btl_vader_single_copy_mechanism"] = os.environ.get(
        "OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    net = cl.Netns(work, a.hosts)
    try:
        try:
            net.setup(slots=a.ranks_per_host)
        except subprocess.CalledProcessError as e:
            print("SKIP: cannot create network namespaces here: %s" % (e.stderr or b"").decode())
            return 0
        n = a.hosts * a.ranks_per_host
        print("## %d simulated hosts x %d ranks (network namespaces, TCP over a bridge between "
              "hosts; MPI btl %s, single copy %s; %d cores)"
              % (a.hosts, a.ranks_per_host, a.btl,
                 env["OMPI_MCA_btl_vader_single_copy_mechanism"], os.cpu_count()), flush=True)
        argv = ([net.nsexec, net.hosts[0], "timeout", "-k", "5", str(a.timeout), "mpiexec",
                 "-n", str(n), "--hostfile", net.hostfile, "--oversubscribe", "--bind-to", "none"]
                + net.mpiexec_args(btl=a.btl) + [os.path.abspath(a.bench)] + rest)
        return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL).returncode
    finally:
        net.teardown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
