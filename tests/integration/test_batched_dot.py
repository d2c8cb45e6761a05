#!/usr/bin/env python3
"""Batched dots (attention-style: batch x heads of small matrices) through
hlo-launch: several operand layouts and batch sizes against numpy, bit
identity of the results between --threads 1 and --threads 2, and that
OpenBLAS itself stays single-threaded (the binding line's blas_threads=).

Run by ctest (integration.batched_dot).
"""

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib  # noqa: E402


def dims(name, values):
    return "%s={%s}" % (name, ",".join(str(v) for v in values))


def shape_text(shape):
    return "f32[%s]" % ",".join(str(d) for d in shape)


# (name, lhs shape, rhs shape, lhs batch, rhs batch, lhs contracting, rhs contracting)
CASES = [
    # q k^T of attention: [b, h, s, d] x [b, h, s, d] over d (rhs transposed)
    ("qkT", (2, 3, 16, 8), (2, 3, 16, 8), (0, 1), (0, 1), (3,), (3,)),
    # p v: [b, h, s, s] x [b, h, s, d] (both canonical)
    ("pv", (2, 3, 16, 16), (2, 3, 16, 8), (0, 1), (0, 1), (3,), (2,)),
    # p^T g: lhs contracted over its first free dimension (lhs transposed)
    ("pTg", (4, 12, 12), (4, 12, 5), (0,), (0,), (1,), (1,)),
    # a batch dimension in the middle of both operands (packed)
    ("mid_batch", (6, 5, 7), (7, 5, 3), (1,), (1,), (2,), (0,)),
    # batch dimensions listed in a different order on each side (packed)
    ("swapped_batch", (3, 2, 4, 6), (2, 3, 6, 5), (0, 1), (1, 0), (3,), (2,)),
    # batch 1 and a large batch of tiny matrices
    ("batch1", (1, 33, 17), (1, 17, 9), (0,), (0,), (2,), (1,)),
    ("batch64_tiny", (64, 3, 4), (64, 4, 2), (0,), (0,), (2,), (1,)),
]


def case_hlo(case):
    name, ls, rs, lb, rb, lc, rc = case
    free_l = [ls[d] for d in range(len(ls)) if d not in lb and d not in lc]
    free_r = [rs[d] for d in range(len(rs)) if d not in rb and d not in rc]
    out = [ls[d] for d in lb] + free_l + free_r
    return ("HloModule batched_dot_%s\n\nENTRY %%main {\n"
            "  %%a = %s parameter(0)\n  %%b = %s parameter(1)\n"
            "  ROOT %%d = %s dot(%%a, %%b), %s, %s, %s, %s\n}\n" %
            (name, shape_text(ls), shape_text(rs), shape_text(out),
             dims("lhs_batch_dims", lb), dims("rhs_batch_dims", rb),
             dims("lhs_contracting_dims", lc), dims("rhs_contracting_dims", rc)))


def oracle(case, a, b):
    """The dot by einsum in float64 (independent of the runtime's gemm view)."""
    _, ls, rs, lb, rb, lc, rc = case
    letters = iter("abcdefghijklmnop")
    la = [None] * len(ls)
    ra = [None] * len(rs)
    for x, y in zip(lb, rb):
        la[x] = ra[y] = next(letters)
    for x, y in zip(lc, rc):
        la[x] = ra[y] = next(letters)
    for d in range(len(ls)):
        if la[d] is None:
            la[d] = next(letters)
    for d in range(len(rs)):
        if ra[d] is None:
            ra[d] = next(letters)
    out = ([la[d] for d in lb] + [la[d] for d in range(len(ls)) if d not in lb and d not in lc] +
           [ra[d] for d in range(len(rs)) if d not in rb and d not in rc])
    spec = "%s,%s->%s" % ("".join(la), "".join(ra), "".join(out))
    return np.einsum(spec, a.astype(np.float64), b.astype(np.float64)).astype(np.float32)


def run_case(case, threads, args):
    with hl_testlib.tempdir("bdot") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(case_hlo(case))
        hl_testlib.write_args(os.path.join(d, "args"), args)
        r = hl_testlib.launch(path, args_dir=os.path.join(d, "args"),
                              output_dir=os.path.join(d, "out"),
                              extra=("--threads", str(threads)))
        if r.returncode != 0:
            raise AssertionError("hlo-launch failed\n%s\n%s" % (case_hlo(case), r.describe()))
        return hl_testlib.read_outputs(os.path.join(d, "out"), 0, 0, 1)[0]


def make_args(case, seed):
    rng = np.random.default_rng(seed)
    _, ls, rs = case[:3]
    return [rng.uniform(-1, 1, ls).astype(np.float32), rng.uniform(-1, 1, rs).astype(np.float32)]


def test_against_numpy():
    for i, case in enumerate(CASES):
        args = make_args(case, i)
        got = run_case(case, 1, args)
        msg = hl_testlib.compare(case[0], got, oracle(case, *args), tol=(1e-5, 1e-5))
        if msg:
            return msg
    return None


def test_threads_bit_identical():
    # The attention shapes at a size where gemm blocks and BLAS threading matter.
    cases = [("qkT_big", (2, 4, 128, 64), (2, 4, 128, 64), (0, 1), (0, 1), (3,), (3,)),
             ("pv_big", (2, 4, 128, 128), (2, 4, 128, 64), (0, 1), (0, 1), (3,), (2,)),
             # one matrix, cut into row tiles
             ("plain_big", (384, 320), (320, 448), (), (), (1,), (0,)),
             # k between OpenBLAS's block and twice it: its 2-thread driver
             # blocks the sum differently (differed in 45115 of 64000 bits)
             ("k_blocked", (1000, 1000), (1000, 64), (), (), (1,), (0,)),
             # few rows, many columns: column tiles (rhs transposed)
             ("wide", (64, 700), (1000, 700), (), (), (1,), (1,)),
             # 3 large matrices on 2 threads: tiles of every batch element
             ("batch3_large", (3, 160, 170), (3, 170, 150), (0,), (0,), (2,), (1,))] + CASES
    for i, case in enumerate(cases):
        args = make_args(case, 100 + i)
        one = run_case(case, 1, args)
        two = run_case(case, 2, args)
        if one.tobytes() != two.tobytes():
            return "%s: --threads 1 and --threads 2 differ in bits (max diff %g)" % (
                case[0], float(np.max(np.abs(one - two))))
    return None


def test_blas_single_threaded():
    """OpenBLAS stays at one thread whatever --threads says: the runtime's
    pool runs the gemm tiles (OpenBLAS's own threads would change the bits)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    program = os.path.join(hl_testlib.SOURCE_DIR, "bench", "training", "mlp_f32.hlo")
    for threads in (1, 2):
        r = hl_testlib.run([hl_testlib.HLO_LAUNCH, "-np", "1", "--threads", str(threads),
                            "--report-bindings", "--quiet",
                            "--repeat", "1", "--seed", "0", program], env=env)
        if r.returncode != 0:
            return "hlo-launch failed\n" + r.describe()
        m = re.search(r"^hlo-launch: binding: .* threads=(\d+) policy=\w+(?: blas_threads=(\d+))?",
                      r.stderr, re.M)
        if not m:
            return "no binding line\n" + r.describe()
        if m.group(2) is None:
            return "SKIP: the BLAS is not OpenBLAS (no blas_threads= in the binding line)"
        if int(m.group(1)) != threads or int(m.group(2)) != 1:
            return "--threads %d: binding line says threads=%s blas_threads=%s\n%s" % (
                threads, m.group(1), m.group(2), r.stderr)
    return None


if __name__ == "__main__":
    hl_testlib.require_binaries("hlo-launch")
    hl_testlib.main([
        ("batched dots against numpy", test_against_numpy),
        ("batched dots bit-identical across --threads 1 / 2", test_threads_bit_identical),
        ("OpenBLAS single-threaded under any --threads", test_blas_single_threaded),
    ])
