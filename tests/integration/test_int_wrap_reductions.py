#!/usr/bin/env python3
"""Integer sums and products that overflow wrap, as XLA defines them
(two's complement, modulo 2^bits), through every reducing collective.

Open MPI 4.1's AVX reduction component (op/avx) saturates MPI_SUM / MPI_PROD
on 8- and 16-bit integers (an s8 all-reduce of 127 + 1 gave 127, not -128),
so the MPI backend reduces integer add/multiply with its own wrapping user op
(collectives/mpi_reduce_ops.c). This test runs, on 2 and 4 ranks, a generated
program per type (s8, u8, s16, u16, s32, s64, u32, u64) with all-reduce,
reduce-scatter, all-reduce-start/done and collective-reduce, each with add and
multiply, on per-rank inputs that overflow (edge values like 127 + 1 first,
then random values over the whole range). The oracle is NumPy's wrapping
integer arithmetic, reducing in rank order.

The run does not set OMPI_MCA_op: whatever MPI components are loaded, the
results must wrap.
"""

import os

import numpy as np

import hl_testlib as hl

# Elements per operand, divisible by every rank count. Large enough that every
# reduce-scatter block (N / 4) fills whole 512-bit vectors of 8-bit values:
# op/avx reduces only full vectors with SIMD and the tail with scalar C, so a
# short operand would not show the saturation.
N = 512
EDGE_REPEAT = 32  # the 4 edge columns, tiled over the first 128 elements
RANKS = [2, 4]
TYPES = ["s8", "u8", "s16", "u16", "s32", "s64", "u32", "u64"]
NP_TYPE = {"s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
           "s32": np.int32, "s64": np.int64, "u32": np.uint32, "u64": np.uint64}

rng = np.random.default_rng(23)


def program(t, n):
    """all-reduce, reduce-scatter, async all-reduce and collective-reduce of
    the parameter over all n ranks, with add and with multiply."""
    lines = ["HloModule wrap_%s_%d" % (t, n), ""]
    for name, op in (("add", "add"), ("mul", "multiply")):
        lines += ["%s {" % name,
                  "  a = %s[] parameter(0)" % t,
                  "  b = %s[] parameter(1)" % t,
                  "  ROOT r = %s[] %s(a, b)" % (t, op),
                  "}", ""]
    lines += ["ENTRY main {", "  x = %s[%d] parameter(0)" % (t, N)]
    results = []
    for name in ("add", "mul"):
        lines += [
            "  ar_%s = %s[%d] all-reduce(x), replica_groups={}, to_apply=%s" % (name, t, N, name),
            "  rs_%s = %s[%d] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=%s"
            % (name, t, N // n, name),
            "  st_%s = %s[%d] all-reduce-start(x), replica_groups={}, to_apply=%s"
            % (name, t, N, name),
            "  as_%s = %s[%d] all-reduce-done(st_%s)" % (name, t, N, name),
            "  cr_%s = %s[%d] collective-reduce(x), to_apply=%s" % (name, t, N, name),
        ]
        results += ["ar_" + name, "rs_" + name, "as_" + name, "cr_" + name]
    lines += ["  ROOT out = (%s) tuple(%s)"
              % (", ".join("%s[%d]" % (t, N // n if r.startswith("rs") else N) for r in results),
                 ", ".join(results)),
              "}", ""]
    return "\n".join(lines)


def inputs(t, n):
    """Per-rank operands: edge values that overflow first, random after."""
    dt = np.dtype(NP_TYPE[t])
    info = np.iinfo(dt)
    # Column 0: max + 1 + 1 ... (sum wraps past max; product of max and 1s).
    # Column 1: min + (-1 or max) ... (sum wraps below min / past max).
    # Column 2: 2^(bits/2) on every rank (the product overflows).
    # Column 3: max on every rank (sum and product both overflow).
    half = 1 << (dt.itemsize * 4)
    edges = [np.array([info.max if r == 0 else 1,
                       info.min if r == 0 else (-1 if info.min < 0 else info.max),
                       half, info.max], dtype=dt) for r in range(n)]
    rand = rng.integers(info.min, info.max, size=(n, N - 4 * EDGE_REPEAT), dtype=dt,
                        endpoint=True)
    return [np.concatenate([np.tile(edges[r], EDGE_REPEAT), rand[r]]) for r in range(n)]


def oracle(values, fn):
    """Rank-order reduction in the operands' own type (NumPy arrays wrap)."""
    acc = values[0].copy()
    with np.errstate(over="ignore"):
        for v in values[1:]:
            acc = fn(acc, v).astype(acc.dtype)
    return acc


def run_case(t, n):
    values = inputs(t, n)
    with hl.tempdir("intwrap") as tmp:
        prog = os.path.join(tmp, "wrap.hlo")
        with open(prog, "w") as f:
            f.write(program(t, n))
        args_dir, out_dir = os.path.join(tmp, "args"), os.path.join(tmp, "out")
        for r in range(n):
            hl.write_args(os.path.join(args_dir, "replica%d_partition0" % r), [values[r]])
        res = hl.launch(prog, n, 1, args_dir=args_dir, output_dir=out_dir)
        if res.returncode != 0:
            return res.describe()
        msgs = []
        for name, fn in (("add", np.add), ("mul", np.multiply)):
            full = oracle(values, fn)
            block = N // n
            for r in range(n):
                got = hl.read_outputs(out_dir, r, 0, 8)
                base = 0 if name == "add" else 4
                want = {"all-reduce": full,
                        "reduce-scatter": full[r * block:(r + 1) * block],
                        "all-reduce-start/done": full,
                        "collective-reduce": full if r == 0 else np.zeros_like(full)}
                for k, (op, w) in enumerate(want.items()):
                    m = hl.compare("%s %s %s rank %d" % (t, op, name, r), got[base + k], w)
                    if m:
                        bad = np.flatnonzero(got[base + k] != w)[:8]
                        msgs.append("%s %s %s rank %d: %d of %d elements differ; first at %s: "
                                    "got %s, expected %s, inputs per rank %s"
                                    % (t, op, name, r, np.count_nonzero(got[base + k] != w),
                                       w.size, bad.tolist(), got[base + k][bad].tolist(),
                                       w[bad].tolist(),
                                       [v[bad + (r * block if op == "reduce-scatter" else 0)]
                                        .tolist() for v in values]))
        return "\n".join(msgs) or None


def main():
    hl.require_binaries("hlo-launch")
    tests = [("%s np=%d" % (t, n), (lambda t=t, n=n: run_case(t, n)))
             for n in RANKS for t in TYPES]
    hl.main(tests)


if __name__ == "__main__":
    main()
