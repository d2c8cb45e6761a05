"""Blocked fusion execution and per-rank threads through hlo-launch: a program
of XLA-style fusions (softmax as reduce-max / exp+sum multi-output / divide,
tanh-GELU in bf16 with converts, a transposed bias add) runs on real MPI
ranks blocked (default), op by op (--no-fusion-blocking, the reference) and
on 2 threads per rank; the results must be bitwise equal across the modes and
match NumPy. The entry also holds an unfused element-wise chain (multiply,
subtract, tanh), which the walk runs blocked unless --no-fusion-blocking.
--report-bindings must show the thread count each rank uses, and
--profile its per-rank table (calls, bytes, FLOPs checked against the shapes),
roofline line and peak memory against the live-set lower bound. The warm
start (--no-warm-start turns it off) must not change a bit.
"""

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (compare, launch, main, read_outputs, require_binaries,  # noqa: E402
                        round_to_bf16, tempdir, write_args)

R, C = 37, 300  # rows longer than one block of a reduce, ragged blocks

PROGRAM = """HloModule fusion_modes
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused_max {
  x = f32[R,C] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT m = f32[R] reduce(x, ninf), dimensions={1}, to_apply=max
}
fused_exp_sum {
  x = f32[R,C] parameter(0)
  m = f32[R] parameter(1)
  bm = f32[R,C] broadcast(m), dimensions={0}
  d = f32[R,C] subtract(x, bm)
  e = f32[R,C] exponential(d)
  zero = f32[] constant(0)
  s = f32[R] reduce(e, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[R], f32[R,C]) tuple(s, e)
}
fused_div {
  e = f32[R,C] parameter(0)
  s = f32[R] parameter(1)
  bs = f32[R,C] broadcast(s), dimensions={0}
  ROOT y = f32[R,C] divide(e, bs)
}
fused_gelu {
  y = f32[R,C] parameter(0)
  bias = f32[C,R] parameter(1)
  bt = f32[R,C] transpose(bias), dimensions={1,0}
  z = f32[R,C] add(y, bt)
  h = bf16[R,C] convert(z)
  c3 = bf16[] constant(0.044715)
  b3 = bf16[R,C] broadcast(c3), dimensions={}
  h2 = bf16[R,C] multiply(h, h)
  h3 = bf16[R,C] multiply(h2, h)
  t1 = bf16[R,C] multiply(h3, b3)
  t2 = bf16[R,C] add(h, t1)
  th = bf16[R,C] tanh(t2)
  ROOT out = f32[R,C] convert(th)
}
ENTRY main {
  x = f32[R,C] parameter(0)
  bias = f32[C,R] parameter(1)
  m = f32[R] fusion(x), kind=kInput, calls=fused_max
  es = (f32[R], f32[R,C]) fusion(x, m), kind=kInput, calls=fused_exp_sum
  s = f32[R] get-tuple-element(es), index=0
  e = f32[R,C] get-tuple-element(es), index=1
  y = f32[R,C] fusion(e, s), kind=kLoop, calls=fused_div
  g = f32[R,C] fusion(y, bias), kind=kLoop, calls=fused_gelu
  u1 = f32[R,C] multiply(x, x)
  u2 = f32[R,C] subtract(u1, y)
  u3 = f32[R,C] tanh(u2)
  ROOT r = (f32[R,C], f32[R,C], f32[R,C]) tuple(y, g, u3)
}
""".replace("R,C", "%d,%d" % (R, C)).replace("C,R", "%d,%d" % (C, R)).replace(
    "[R]", "[%d]" % R)


def inputs():
    rng = np.random.default_rng(12)
    x = rng.uniform(-4, 4, (R, C)).astype(np.float32)
    bias = rng.uniform(-1, 1, (C, R)).astype(np.float32)
    return x, bias


def numpy_reference(x, bias):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    h = round_to_bf16(y + bias.T)
    t = round_to_bf16(h + round_to_bf16(round_to_bf16(round_to_bf16(h * h) * h) *
                                        round_to_bf16(np.array([0.044715], np.float32))[0]))
    u = np.tanh((x * x - y).astype(np.float64)).astype(np.float32)
    return y, round_to_bf16(np.tanh(t.astype(np.float64)).astype(np.float32)), u


def run_modes(d, np_count, modes):
    prog = os.path.join(d, "fusion_modes.hlo")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    args = os.path.join(d, "args")
    write_args(args, inputs())
    outs = {}
    for name, extra in modes:
        out = os.path.join(d, "out_" + name)
        res = launch(prog, replicas=np_count, args_dir=args, output_dir=out, extra=extra)
        if res.returncode != 0 or res.timed_out:
            return None, "%s: %s" % (name, res.describe())
        outs[name] = [read_outputs(out, r, 0, 3) for r in range(np_count)]
    return outs, None


def test_modes_agree_bitwise_and_match_numpy():
    modes = [("blocked", ()), ("reference", ("--no-fusion-blocking",)),
             ("threads2", ("--threads", "2")), ("no_warm_start", ("--no-warm-start",))]
    with tempdir("fusion-modes") as d:
        outs, err = run_modes(d, 2, modes)
        if err:
            return err
        ref = outs["reference"]
        for name in ("blocked", "threads2", "no_warm_start"):
            for r in range(2):
                for leaf in range(3):
                    if outs[name][r][leaf].tobytes() != ref[r][leaf].tobytes():
                        return "%s: replica %d result %d differs from --no-fusion-blocking" % (
                            name, r, leaf)
        y_want, g_want, u_want = numpy_reference(*inputs())
        y, g, u = outs["blocked"][0]
        msg = compare("unfused chain", u, u_want, tol=(1e-5, 1e-6))
        if msg:
            return msg
        msg = compare("softmax", y, y_want, tol=(1e-5, 1e-7))
        if msg:
            return msg
        # bf16 GELU pieces: a bf16 ulp (2^-8 relative) for the tanh and roundings.
        return compare("bf16 tanh chain", g, g_want, tol=(8e-3, 1e-6))


def cpuset_size(text):
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def test_report_bindings_shows_threads():
    with tempdir("fusion-threads") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        args = os.path.join(d, "args")
        write_args(args, inputs())
        res = launch(prog, replicas=2, args_dir=args,
                     extra=("--threads", "3", "--report-bindings", "-q"))
        if res.returncode != 0:
            return res.describe()
        lines = [l for l in res.stderr.splitlines() if "binding:" in l]
        if len(lines) != 2 or not all(" threads=3 " in l for l in lines):
            return "--threads 3: expected threads=3 on both ranks\n" + res.describe()
        # Default: the rank's cpuset size (bound), so ranks x threads = cores used.
        res = launch(prog, replicas=2, args_dir=args, extra=("--report-bindings", "-q"))
        if res.returncode != 0:
            return res.describe()
        for l in (l for l in res.stderr.splitlines() if "binding:" in l):
            m = re.search(r"cpuset=(\S+) threads=(\d+)", l)
            if not m:
                return "no cpuset/threads in %r" % l
            if int(m.group(2)) != cpuset_size(m.group(1)):
                return "default threads %s differ from the cpuset %s" % (m.group(2), m.group(1))
    return None


DOT_PROGRAM = """HloModule profiled
fused_scale {
  d = f32[64,32] parameter(0)
  two = f32[] constant(2)
  b = f32[64,32] broadcast(two), dimensions={}
  ROOT s = f32[64,32] multiply(d, b)
}
ENTRY main {
  a = f32[64,128] parameter(0)
  w = f32[128,32] parameter(1)
  mm = f32[64,32] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT scaled = f32[64,32] fusion(mm), kind=kLoop, calls=fused_scale
}
"""

PROFILE_ROW = re.compile(r"^  (\S+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)$")
ROOFLINE = re.compile(r"^  roofline: 2 runs ([\d.]+) ms \(instructions ([\d.]+) ms\); model "
                      r"([\d.]+) ms = .* measured / model = ([\d.]+)$")


def test_profile_rows_and_roofline():
    """--profile=2 on 2 ranks, 3 runs: per rank a header, the first run's
    table, then that of runs 2-3 (steady state): the two instructions that do
    work (dot and the fusion) with their calls, bytes and FLOPs as computed
    here from the shapes, and a roofline line."""
    with tempdir("fusion-profile") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(DOT_PROGRAM)
        res = launch(prog, replicas=2, extra=("--profile=2", "--repeat", "3", "--zeros", "-q"))
        if res.returncode != 0:
            return res.describe()
        lines = res.stderr.splitlines()
        heads = [i for i, l in enumerate(lines) if l.startswith("hlo-launch: profile of rank")]
        if len(heads) != 2:
            return "expected a profile per rank\n" + res.describe()
        for first in heads:
            if not lines[first + 1].startswith("  first run (cold") or \
                    not PROFILE_ROW.match(lines[first + 3]) or \
                    int(PROFILE_ROW.match(lines[first + 3]).group(3)) != 1:
                return "expected the first run's table (1 call a row)\n" + res.describe()
        heads = [i for i, l in enumerate(lines) if l == "  runs 2-3 (steady state):"]
        if len(heads) != 2:
            return "expected the steady-state table of runs 2-3 per rank\n" + res.describe()
        for h in heads:
            rows = {}
            for l in lines[h + 2:h + 4]:
                m = PROFILE_ROW.match(l)
                if not m:
                    return "bad profile row %r\n%s" % (l, res.describe())
                rows[m.group(1)] = m
            if set(rows) != {"mm", "scaled"}:
                return "expected rows mm and scaled, got %s\n%s" % (sorted(rows), res.describe())
            mm, sc = rows["mm"], rows["scaled"]
            # dot: 2 calls x 2*64*32*128 FLOPs; bytes (64*128 + 128*32 + 64*32) * 4 per call.
            want_mflop = 2 * 2 * 64 * 32 * 128 / 1e6
            want_mb = 2 * (64 * 128 + 128 * 32 + 64 * 32) * 4 / 1e6
            if mm.group(2) != "dot" or int(mm.group(3)) != 2 or \
                    abs(float(mm.group(7)) - want_mflop) > 1e-3 or \
                    abs(float(mm.group(6)) - want_mb) > 1e-3:
                return "dot row %r, want 2 calls, %.3f MB, %.3f MFLOP" % (
                    mm.group(0), want_mb, want_mflop)
            if sc.group(2) != "fusion" or float(sc.group(7)) != 0 or \
                    abs(float(sc.group(6)) - 2 * 2 * 64 * 32 * 4 / 1e6) > 1e-3:
                return "fusion row %r" % sc.group(0)
            roof = next((ROOFLINE.match(l) for l in lines[h:h + 12] if ROOFLINE.match(l)), None)
            if not roof:
                return "no roofline line\n" + res.describe()
            run_ms, inst_ms, model_ms, ratio = (float(roof.group(i)) for i in (1, 2, 3, 4))
            if not (0 < inst_ms <= run_ms and model_ms > 0 and ratio > 0):
                return "roofline figures do not add up: %r" % roof.group(0)
    return None


# A GEMM the GPU compiler hands to cuBLAS (gemm_rewriter.cc's form): the
# custom-call counts the dot's FLOPs, 2 * 64 * 32 * 128 per call.
GEMM_PROGRAM = """HloModule g

ENTRY e {
  x = f32[64,128]{1,0} parameter(0)
  y = f32[128,32]{1,0} parameter(1)
  ROOT cc = f32[64,32]{1,0} custom-call(x, y), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"alpha_real":1,"alpha_imag":0,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"epilogue":"DEFAULT"}}
}
"""


def test_profile_counts_library_gemm_flops():
    """--profile counts a __cublas$gemm custom-call's FLOPs (it counted 0)."""
    with tempdir("fusion-profile-gemm") as d:
        prog = os.path.join(d, "g.hlo")
        with open(prog, "w") as f:
            f.write(GEMM_PROGRAM)
        res = launch(prog, replicas=1, extra=("--profile=1", "--zeros", "-q"))
        if res.returncode != 0:
            return res.describe()
        rows = [PROFILE_ROW.match(l) for l in res.stderr.splitlines()]
        rows = [m for m in rows if m and m.group(1) == "cc"]
        want_mflop = 2 * 64 * 32 * 128 / 1e6
        if len(rows) != 1 or rows[0].group(2) != "custom-call" or \
                abs(float(rows[0].group(7)) - want_mflop) > 1e-3:
            return "expected the row of cc with %.3f MFLOP\n%s" % (want_mflop, res.describe())
    return None


# Parameter x (2 MiB); e = exp(x) (2 MiB) is alive while c (4 MiB) is made.
PEAK_PROGRAM = """HloModule peak
ENTRY main {
  x = f32[512,1024] parameter(0)
  e = f32[512,1024] exponential(x)
  ROOT c = f32[1024,1024] concatenate(e, x), dimensions={0}
}
"""
PEAK_LINE = re.compile(r"^  peak memory: large arrays ([\d.]+) MiB at once, resident ([\d.]+) MiB; "
                       r"live-set lower bound ([\d.]+) MiB \(parameters ([\d.]+) MiB \+ values "
                       r"alive at once\); arrays / bound = ([\d.]+)$")


def test_profile_peak_memory_against_live_set():
    """--profile ends each rank's report with its peak memory against the
    live-set lower bound: here 2 + 2 + 4 MiB (x, e and c alive at once), and
    the large arrays the rank held never less than that nor (with the warm
    start's buffers) more than 1.3 times it."""
    with tempdir("fusion-profile-peak") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(PEAK_PROGRAM)
        res = launch(prog, replicas=2, extra=("--profile=1", "--repeat", "2", "--zeros", "-q"))
        if res.returncode != 0:
            return res.describe()
        found = [PEAK_LINE.match(l) for l in res.stderr.splitlines()]
        found = [m for m in found if m]
        if len(found) != 2:
            return "expected a peak memory line per rank\n" + res.describe()
        for m in found:
            arrays, resident, bound, params, ratio = (float(m.group(i)) for i in range(1, 6))
            if bound != 8.0 or params != 2.0:
                return "live-set bound %s MiB (parameters %s), want 8.0 (2.0)" % (bound, params)
            if not (bound <= arrays <= 1.3 * bound and resident >= arrays):
                return "peak line out of range: %r" % m.group(0)
    return None


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([(n[5:], f) for n, f in sorted(globals().items()) if n.startswith("test_")])
