#!/usr/bin/env python3
"""Shared-memory and hierarchical collectives across simulated hosts: 2 hosts x 2
ranks and 3 hosts x 2 ranks in network namespaces (Open MPI over TCP between them,
as test_cluster_netns.py), `hlo-launch --collectives=shm`. All-reduces over all
ranks span the hosts evenly (the hierarchical path: shared memory in each host, MPI
across), all-reduces over each host's pair stay in one host's shared memory, and an
all-gather and an s32 reduce-scatter over all ranks take the hierarchical path too
where the ranks can read each other's memory (the direct path), else MPI; every
output is compared with NumPy. On 3 hosts, groups of 3 ({0,1,2}, {3,4,5}) span two
hosts unevenly (2 + 1 members): all-reduce, all-gather and reduce-scatter over them
take the MPI backend and must give the same results.
Values are small integers, so float sums are exact in any association order.

Needs root and iproute2/util-linux; otherwise it prints why and skips.
"""

import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_lib as cl  # noqa: E402
import hl_testlib as hl  # noqa: E402

WORK = ENV = NET = None
N_F = 300000  # 1.2 MB of f32: past the auto threshold, several shared-memory rounds
N_Z = 70001   # s32 per reduce-scatter block


def program_text(n):
    pairs = ",".join("{%d,%d}" % (i, i + 1) for i in range(0, n, 2))
    # 3 hosts x 2: groups of 3 ({0,1,2}: two ranks on the first host, one
    # on the second; {3,4,5} the other way round) span hosts unevenly.
    uneven = n == 6
    extra = """
  g = f32[%d] all-reduce(x), replica_groups={{0,1,2},{3,4,5}}, to_apply=add_f
  h = s32[3000] all-gather(y), replica_groups={{0,1,2},{3,4,5}}, dimensions={0}
  zz = s32[%d] slice(z), slice={[0:%d]}
  i = s32[%d] reduce-scatter(zz), replica_groups={{0,1,2},{3,4,5}}, dimensions={0}, to_apply=add_s""" \
        % (N_F, 3 * N_Z, 3 * N_Z, N_Z) if uneven else ""
    extra_shapes = ", f32[%d], s32[3000], s32[%d]" % (N_F, N_Z) if uneven else ""
    extra_names = ", g, h, i" if uneven else ""
    return """HloModule hier, replica_count=%d
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
add_s {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
max_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[%d] parameter(0)
  y = s32[1000] parameter(1)
  z = s32[%d] parameter(2)
  a = f32[%d] all-reduce(x), replica_groups={}, to_apply=add_f
  b = s32[1000] all-reduce(y), replica_groups={}, to_apply=add_s
  c = f32[%d] all-reduce(x), replica_groups={%s}, to_apply=max_f
  d = s32[%d] all-gather(y), replica_groups={}, dimensions={0}
  e = s32[%d] reduce-scatter(z), replica_groups={}, dimensions={0}, to_apply=add_s%s
  ROOT t = (f32[%d], s32[1000], f32[%d], s32[%d], s32[%d]%s) tuple(a, b, c, d, e%s)
}
""" % (n, N_F, N_Z * n, N_F, N_F, pairs, 1000 * n, N_Z, extra, N_F, N_F, 1000 * n, N_Z,
       extra_shapes, extra_names)


def wrap_s32(v):
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


def run_hosts(hosts):
    n = 2 * hosts
    rng = np.random.default_rng(16 + n)
    xs = [rng.integers(-50, 50, N_F).astype(np.float32) for _ in range(n)]
    ys = [rng.integers(-2**31, 2**31 - 1, 1000, dtype=np.int64).astype(np.int32)
          for _ in range(n)]
    zs = [rng.integers(-2**31, 2**31 - 1, N_Z * n, dtype=np.int64).astype(np.int32)
          for _ in range(n)]
    tmp = os.path.join(WORK, "run%d" % n)
    args, out = os.path.join(tmp, "args"), os.path.join(tmp, "out")
    for r in range(n):
        hl.write_args(os.path.join(args, "replica%d_partition0" % r), [xs[r], ys[r], zs[r]])
    prog = os.path.join(tmp, "hier.hlo")
    with open(prog, "w") as f:
        f.write(program_text(n))
    with open(NET.hostfile, "w") as f:
        f.write("".join(cl.hostfile_line(h, 2) for h in NET.hosts[:hosts]))
    argv = ([NET.nsexec, NET.hosts[0], hl.HLO_LAUNCH, "-np", str(n), "--hostfile", NET.hostfile,
             "--args-dir", args, "--output-dir", out, "--quiet", "--timeout", "100",
             "--collectives", "shm"] + NET.mpi_args() + [prog])
    res = cl.run_env(argv, ENV, 120)
    if res.returncode != 0 or res.timed_out:
        return res.describe()
    want_a = np.sum(xs, axis=0, dtype=np.float64).astype(np.float32)
    with np.errstate(over="ignore"):
        want_b = np.sum(np.array(ys, dtype=np.int64), axis=0).astype(np.int64)
    want_b = ((want_b + 2**31) % 2**32 - 2**31).astype(np.int32)  # s32 wraps
    want_d = np.concatenate(ys)
    with np.errstate(over="ignore"):
        want_z = np.sum(np.array(zs, dtype=np.int64), axis=0)
    want_z = ((want_z + 2**31) % 2**32 - 2**31).astype(np.int32)
    problems = []
    for r in range(n):
        want_c = np.maximum(xs[r - r % 2], xs[r - r % 2 + 1])
        want_e = want_z[r * N_Z:(r + 1) * N_Z]
        wants = [want_a, want_b, want_c, want_d, want_e]
        if n == 6:  # the groups of 3 that span hosts unevenly
            grp, pos = range(r - r % 3, r - r % 3 + 3), r % 3
            wants.append(np.sum([xs[k] for k in grp], axis=0, dtype=np.float64)
                         .astype(np.float32))
            wants.append(np.concatenate([ys[k] for k in grp]))
            with np.errstate(over="ignore"):
                part = np.sum([zs[k][:3 * N_Z].astype(np.int64) for k in grp], axis=0)
            wants.append(wrap_s32(part[pos * N_Z:(pos + 1) * N_Z]))
        got = hl.read_outputs(out, r, 0, len(wants))
        for j, (g, w) in enumerate(zip(got, wants)):
            msg = hl.compare("%d hosts x 2: rank %d output %d" % (hosts, r, j), g, w, (0, 0))
            if msg:
                problems.append(msg)
    return "\n".join(problems[:4]) or None


def main():
    global WORK, ENV, NET
    hl.require_binaries("hlo-launch")
    why = cl.skip_reason(["ip", "nsenter", "unshare", "mpiexec"])
    if why:
        print(why)
        return
    WORK = cl.workdir("cluster-shm")
    ENV = cl.mpi_env(WORK)
    NET = cl.Netns(WORK, 3)
    try:
        try:
            NET.setup(slots=2)
        except subprocess.CalledProcessError as e:
            print("SKIP: cannot create network namespaces here: %s" % (e.stderr or b"").decode())
            return
        hl.main([("2 hosts x 2 ranks", lambda: run_hosts(2)),
                 ("3 hosts x 2 ranks", lambda: run_hosts(3))])
    finally:
        NET.teardown()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
