#!/usr/bin/env python3
"""CHLO ops (as JAX emits them in StableHLO text) through hlo-launch on real ranks.

Oracles are independent of the runtime: NumPy, Python's math module, and, for
the special functions NumPy lacks, references written here from their
textbook definitions (digamma: recurrence + asymptotic series; Hurwitz zeta:
direct sum + Euler-Maclaurin with Bernoulli numbers; I1: its power series;
erf_inv: Newton on math.erf), all in double.

Tolerances: f64 results are compared with rtol 1e-12 (lgamma / digamma use
upstream's Lanczos approximation, whose own error is ~1e-15 relative, and an
absolute 1e-13 near lgamma's zeros at 1 and 2); erf_inv's f64 polynomials are
accurate to ~1e-15. f32 results (evaluated in double, rounded once) against
the double oracle rounded to f32 with rtol 4e-6 (a few f32 ULPs: erf_inv and
bessel_i1e use upstream's single-precision coefficient sets, accurate to f32
but not to double).
"""

import math
import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")

# --- references ------------------------------------------------------------------

# B_2k for k = 1..10.
BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
             43867 / 798, -174611 / 330]


def digamma(x):
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:  # reflection: psi(1 - x) - pi / tan(pi x)
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 20:
        acc -= 1 / x
        x += 1
    s = math.log(x) - 1 / (2 * x)
    for k, b in enumerate(BERNOULLI, start=1):
        s -= b / (2 * k * x ** (2 * k))
    return acc + s


def hurwitz_zeta(s, q):
    """sum_{k>=0} (q + k)^-s for s > 1, q > 0."""
    if s == 1:
        return math.inf
    if s < 1:
        return math.nan
    if q <= 0 and q == math.floor(q):
        return math.inf if s == math.floor(s) and s % 2 == 0 else math.nan
    n = 40
    total = sum((q + k) ** -s for k in range(n))
    a = q + n
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    fact, rising = 1.0, s  # (2j)!, s (s+1) ... (s+2j-2)
    for j, b in enumerate(BERNOULLI, start=1):
        fact *= (2 * j - 1) * (2 * j)
        total += b / fact * rising * a ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total


def polygamma(n, x):
    if n != math.floor(n) or n < 0:
        return math.nan
    if n == 0:
        return digamma(x)
    return (-1) ** (n + 1) * math.factorial(int(n)) * hurwitz_zeta(n + 1, x)


def bessel_i1e(x):
    """exp(-|x|) I1(x), I1 by its power series (all terms share x's sign)."""
    h = abs(x) / 2
    term, total, k = h, 0.0, 0
    while term > 1e-18 * max(total, 1e-300) or k < 5:
        total += term
        k += 1
        term *= h * h / (k * (k + 1))
    return math.copysign(total, x) * math.exp(-abs(x))


def erf_inv(p):
    if abs(p) == 1:
        return math.copysign(math.inf, p)
    y = 0.0
    for _ in range(100):  # Newton on erf(y) = p
        step = (math.erf(y) - p) / (2 / math.sqrt(math.pi) * math.exp(-y * y))
        y -= step
        if abs(step) <= 1e-17 * max(1, abs(y)):
            break
    return y


def lgamma(x):
    if x <= 0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


def apply(fn, *arrays):
    return np.array([fn(*v) for v in zip(*[a.astype(np.float64) for a in arrays])])


# --- tests -----------------------------------------------------------------------


def compare(name, got, want):
    want = np.asarray(want)
    return hl.compare(name, got, want, tol=(2e-6, 1e-6) if want.dtype.kind == "c" else None)


def run_program(name, args, count):
    r, outs = hl.launch_file("chlo", os.path.join(PROGRAMS, name), args, count)
    return (outs[0], None) if outs else (None, r.describe())


def special_functions():
    """lgamma, digamma, erfc, bessel_i1e, erf_inv, zeta, polygamma, next_after."""
    x = np.array([0.3, 1.0, 2.0, 2.5, 7.25, 31.5, -0.4, -2.75, -3.0, 0.0])
    x32 = x.astype(np.float32)
    p = np.array([-1.0, -0.999, -0.5, 0.0, 0.25, 0.9999, 1.0])
    p32 = p.astype(np.float32)
    n = np.array([0.0, 1.0, 2.0, 3.0, 1.5, 4.0])
    q = np.array([0.7, 2.5, 1.3, 5.0, 3.0, -1.0])
    frm = np.array([1.0, 1.0, 0.0, -0.0, 3.0, np.nan, -2.0], np.float32)
    to = np.array([2.0, 0.0, 1.0, -1.0, 3.0, 1.0, np.inf], np.float32)
    got, err = run_program("chlo_special.mlir", [x, x32, p, p32, n, q, frm, to], 13)
    if err:
        return err
    f64 = (1e-12, 1e-13)
    f32 = (4e-6, 1e-7)
    checks = [
        ("lgamma f64", got[0], apply(lgamma, x), f64),
        ("digamma f64", got[1], apply(digamma, x), f64),
        ("erfc f64", got[2], apply(math.erfc, x), f64),
        ("bessel_i1e f64", got[3], apply(bessel_i1e, x), f64),
        ("lgamma f32", got[4], apply(lgamma, x32).astype(np.float32), f32),
        ("digamma f32", got[5], apply(digamma, x32).astype(np.float32), f32),
        ("erfc f32", got[6], apply(math.erfc, x32).astype(np.float32), f32),
        ("bessel_i1e f32", got[7], apply(bessel_i1e, x32).astype(np.float32), f32),
        ("erf_inv f64", got[8], apply(erf_inv, p), f64),
        ("erf_inv f32", got[9], apply(erf_inv, p32).astype(np.float32), f32),
        ("zeta f64", got[10], apply(hurwitz_zeta, n, q), f64),
        ("polygamma f64", got[11], apply(polygamma, n, q), f64),
    ]
    for name, g, w, tol in checks:
        msg = hl.compare(name, g, w, tol=tol)
        if msg:
            return msg
    # next_after is exact: compare bits (NumPy's nextafter, NaN as upstream's quiet NaN).
    want = np.nextafter(frm, to)
    gb, wb = got[12].view(np.uint32), want.view(np.uint32)
    nan = np.isnan(want)
    if not (np.array_equal(gb[~nan], wb[~nan]) and np.isnan(got[12][nan]).all()):
        return "next_after: got %s expected %s" % (got[12], want)
    return None


def broadcasting():
    """chlo.broadcast_* with numpy-style and explicit broadcast_dimensions."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    c = rng.standard_normal(2).astype(np.float32)
    col = rng.standard_normal((2, 1)).astype(np.float32)
    row = rng.standard_normal((1, 3)).astype(np.float32)
    pred = np.array([True, False, True])
    ia = np.array([[1, -7, 12], [5, 0, -3]], np.int32)
    ib = np.array([3, 2, 5], np.int32)
    s = np.float32(0.5)
    got, err = run_program("chlo_broadcast.mlir",
                           [a, b, c, col, row, pred, ia, ib, np.array(s)], 14)
    if err:
        return err
    want = [
        a + b,
        a * c[:, None],
        a < b,
        np.where(pred, a, s),
        col - row,
        np.maximum(a, b),
        np.power(np.abs(a), b),
        np.arctan2(a, c[:, None]),
        a / row,
        (ia << (ib & 7)).astype(np.int32),
        np.fmod(ia, ib).astype(np.int32),
        (ia & ib) | (ia ^ ib),
        (a + 1j * b).astype(np.complex64),
        np.nextafter(a, b),
    ]
    names = ["add", "multiply dims=0", "compare LT", "select", "subtract 1-dims", "maximum",
             "power", "atan2 dims=0", "divide", "shift_left", "remainder", "and/or/xor",
             "complex", "next_after"]
    for name, g, w in zip(names, got, want):
        msg = compare(name, g, w)
        if msg:
            return msg
    return None


def elementwise_decompositions():
    """is_inf family, conj, square, constant_like, chlo.constant, top_k, hyperbolics."""
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -2.5, 3.0e38], np.float32)
    z = np.array([1 + 2j, -3 - 0.5j, 2 - 2j], np.complex64)
    t = np.array([[3.0, 1.0, 3.0, -2.0, 7.0], [0.5, 0.5, -1.0, 9.0, 0.5]], np.float32)
    h = np.array([-3.0, -0.9, -0.25, 0.0, 0.6, 2.0, 10.0], np.float32)
    got, err = run_program("chlo_elementwise.mlir", [x, z, t, h], 16)
    if err:
        return err
    order = np.argsort(-t, axis=1, kind="stable")[:, :3]
    hd = h.astype(np.float64)
    with np.errstate(over="ignore"):
        sq = (x * x).astype(np.float32)
    want = [
        np.isinf(x), np.isposinf(x), np.isneginf(x),
        np.conj(z), x, (z * z).astype(np.complex64), sq,
        np.full((2, 5), 2.5, np.float32), np.full((2, 5), -7, np.int32),
        np.array([1.0, 2.0], np.float32),
        np.take_along_axis(t, order, axis=1), order.astype(np.int32),
        np.sinh(hd).astype(np.float32), np.cosh(hd).astype(np.float32),
        np.arcsinh(hd).astype(np.float32), np.arctanh(hd / 11).astype(np.float32),
    ]
    names = ["is_inf", "is_pos_inf", "is_neg_inf", "conj c64", "conj f32", "square c64",
             "square f32", "constant_like f32", "constant_like i32", "constant",
             "top_k values", "top_k indices", "sinh", "cosh", "asinh", "atanh"]
    for name, g, w in zip(names, got, want):
        msg = compare(name, g, w)
        if msg:
            return msg
    return None


BAD_TYPE = """func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {
  %0 = chlo.lgamma %x : tensor<3xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}
"""

BAD_BROADCAST = """func.func @main(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = chlo.broadcast_add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def errors_name_the_op():
    """Operands a CHLO op does not accept stop with a diagnostic at the op."""
    for text, needle in ((BAD_TYPE, "2:8: error: 'chlo.lgamma' is defined for floating-point"),
                         (BAD_BROADCAST, "2:8: error: 'chlo.broadcast_add' cannot broadcast")):
        with hl.tempdir("chlo") as d:
            prog = os.path.join(d, "bad.mlir")
            with open(prog, "w") as f:
                f.write(text)
            r = hl.launch(prog)
            if r.returncode == 0 or needle not in r.stderr:
                return "expected a failure with %r\n%s" % (needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("special_functions", special_functions),
        ("broadcasting", broadcasting),
        ("elementwise_decompositions", elementwise_decompositions),
        ("errors_name_the_op", errors_name_the_op),
    ])
