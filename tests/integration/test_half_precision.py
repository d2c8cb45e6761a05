"""bf16 and f16 through hlo-launch (issue 12): element-wise fusions and
unfused chains whose ops work on the 16-bit types directly, and dots of
16-bit operands in every gemm layout, against NumPy.

Oracles: f16 with NumPy's float16 (+ - * / sqrt of two f16 values are
computed in f32 and rounded once: f32 has 2p + 2 bits, so that is the
correctly rounded f16 result); bf16 computed in f32 and rounded to nearest
even by bit manipulation here. Every op rounds its result to the 16-bit
type, as the spec's per-op semantics say. The element-wise results must be
bit-identical (NaNs: NaN in the same places) with the fusion blocked
(default) and op by op (--no-fusion-blocking).

Dots accumulate in f32 and round the result once, as XLA's CPU backend
does (docs/NUMERICS.md): the operands here are small multiples of powers of
two, so every f32 partial sum is exact and the expected result is the exact
sum rounded once to the 16-bit type (a per-step-rounding dot would differ).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import launch, main, read_outputs, require_binaries, tempdir  # noqa: E402

R, C = 19, 301  # a few blocks of the fusion executor, a ragged tail


def bf16_bits(a):
    """f32 -> bf16 bits, nearest even; NaN -> a quiet NaN with its sign."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, np.float32))
    return np.where(nan, ((u >> 16) & 0x8000).astype(np.uint16) | np.uint16(0x7FC0), r)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def rb(a):
    """Rounds f32 values to bf16, returned as f32."""
    return bf16_value(bf16_bits(a))


def special_values(dtype):
    """Inputs that exercise rounding and the special cases of the type."""
    if dtype == "bf16":
        tiny = bf16_value(np.array([0x0001, 0x0080, 0x8003], np.uint16))  # subnormal, min normal
        big = bf16_value(np.array([0x7F7F, 0xFF7F], np.uint16))            # +-max finite
    else:
        tiny = np.array([2.0 ** -24, 2.0 ** -14, -3 * 2.0 ** -24], np.float32)
        big = np.array([65504, -65504], np.float32)
    return np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5, 0.5],
                                    np.float32), tiny, big])


def inputs(dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-8, 8, (R, C)).astype(np.float32)
    a.flat[:13] = np.roll(special_values(dtype), seed)  # x and y: other pairs
    a.flat[20:30] = rng.uniform(-1e-3, 1e-3, 10)  # near the subnormal range after products
    if dtype == "bf16":
        return rb(a)
    return a.astype(np.float16)


def to_file(a, dtype):
    return bf16_bits(a).view("V2") if dtype == "bf16" else a


def from_file(a, dtype):
    return bf16_value(a.view(np.uint16)) if dtype == "bf16" else a


def ieee_max_min(x, y, is_max):
    """IEEE-754 maximum / minimum: NaN propagates, -0 < +0."""
    pick = np.maximum(x, y) if is_max else np.minimum(x, y)
    zeros = (x == y) & (np.signbit(x) != np.signbit(y))
    signed = np.where(np.signbit(x) == is_max, y, x)
    return np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan), np.where(zeros, signed, pick))


EW_OPS = [  # (name, HLO body using x / y, NumPy in f32 on the widened inputs)
    ("add", "add(x, y)", lambda x, y: x + y),
    ("sub", "subtract(x, y)", lambda x, y: x - y),
    ("mul", "multiply(x, y)", lambda x, y: x * y),
    ("div", "divide(x, y)", lambda x, y: x / y),
    ("max", "maximum(x, y)", lambda x, y: ieee_max_min(x, y, True)),
    ("min", "minimum(x, y)", lambda x, y: ieee_max_min(x, y, False)),
    ("neg", "negate(x)", lambda x, y: -x),
    ("abs", "abs(x)", lambda x, y: np.abs(x)),
    ("sqrt", "sqrt(y)", lambda x, y: np.sqrt(y)),
    ("floor", "floor(x)", lambda x, y: np.floor(x)),
    ("ceil", "ceil(y)", lambda x, y: np.ceil(y)),
]


def ew_program(dtype):
    """One fusion holding every op (each its own output) plus a chain that
    feeds one op's rounded result into the next (mul -> add -> select on a
    compare), and the same chain unfused in the entry."""
    t = "%s[%d,%d]" % (dtype, R, C)
    body = ["  x = %s parameter(0)" % t, "  y = %s parameter(1)" % t]
    names = []
    for name, expr, _ in EW_OPS:
        body.append("  %s = %s %s" % (name, t, expr))
        names.append(name)
    body += ["  c1 = %s multiply(x, y)" % t,
             "  c2 = %s add(c1, x)" % t,
             "  gt = pred[%d,%d] compare(c2, y), direction=GT" % (R, C),
             "  c3 = %s select(gt, c2, y)" % t,
             "  w = f32[%d,%d] convert(c3)" % (R, C),
             "  w2 = f32[%d,%d] multiply(w, w)" % (R, C),
             "  c4 = %s convert(w2)" % t]
    names.append("c4")
    tuple_t = ", ".join([t] * len(names))
    body.append("  ROOT out = (%s) tuple(%s)" % (tuple_t, ", ".join(names)))
    entry = ["  x = %s parameter(0)" % t, "  y = %s parameter(1)" % t,
             "  f = (%s) fusion(x, y), kind=kLoop, calls=fused" % tuple_t,
             "  u1 = %s multiply(x, y)" % t,
             "  u2 = %s add(u1, x)" % t,
             "  ugt = pred[%d,%d] compare(u2, y), direction=GT" % (R, C),
             "  u3 = %s select(ugt, u2, y)" % t,
             "  u4 = %s sqrt(u3)" % t,
             "  ROOT r = ((%s), %s) tuple(f, u4)" % (tuple_t, t)]
    return "HloModule half_ew\nfused {\n%s\n}\nENTRY main {\n%s\n}\n" % (
        "\n".join(body), "\n".join(entry))


def round_to(a, dtype):
    return rb(a) if dtype == "bf16" else a.astype(np.float16)


def ew_expected(dtype, x, y):
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(all="ignore"):
        out = [round_to(f(xf, yf).astype(np.float32), dtype) for _, _, f in EW_OPS]
        c2 = round_to(round_to(xf * yf, dtype).astype(np.float32) + xf, dtype).astype(np.float32)
        c3 = np.where(c2 > yf, c2, yf)
        out.append(round_to(c3 * c3, dtype))
        out.append(round_to(np.sqrt(c3), dtype))
    return out


def same_bits(name, got, want, dtype):
    g = got.view(np.uint16) if dtype == "f16" else bf16_bits(got)
    w = want.view(np.uint16) if dtype == "f16" else bf16_bits(want)
    gn, wn = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    if not np.array_equal(gn, wn):
        i = np.argwhere(gn != wn)[0]
        return "%s: NaN at %s: got %r, expected %r" % (name, tuple(i), got[tuple(i)],
                                                       want[tuple(i)])
    bad = (g != w) & ~wn
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return "%s: %d elements differ, first at %s: got %r (0x%04x), expected %r (0x%04x)" % (
            name, int(bad.sum()), i, got[i], g[i], want[i], w[i])
    return None


def run(d, tag, program, arrays, dtype, nout, extra=()):
    prog = os.path.join(d, tag + ".hlo")
    with open(prog, "w") as f:
        f.write(program)
    args = os.path.join(d, tag + "_args")
    os.makedirs(args, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(os.path.join(args, "arg%d.npy" % i), to_file(a, dtype))
    out = os.path.join(d, tag + "_out" + "".join(extra).replace("-", "_"))
    res = launch(prog, args_dir=args, output_dir=out, extra=extra)
    if res.returncode != 0 or res.timed_out:
        return None, res.describe()
    return read_outputs(out, 0, 0, nout), None


def check_elementwise(dtype):
    with tempdir("half-ew-" + dtype) as d:
        x, y = inputs(dtype, 1), inputs(dtype, 2)
        nout = len(EW_OPS) + 2
        blocked, err = run(d, "ew", ew_program(dtype), (x, y), dtype, nout)
        if err:
            return err
        ref, err = run(d, "ew", ew_program(dtype), (x, y), dtype, nout,
                       extra=("--no-fusion-blocking",))
        if err:
            return err
        for i in range(nout):
            if blocked[i].tobytes() != ref[i].tobytes():
                return "%s result %d: blocked and --no-fusion-blocking differ" % (dtype, i)
        want = ew_expected(dtype, x, y)
        labels = [n for n, _, _ in EW_OPS] + ["chain", "unfused chain"]
        for label, got, w in zip(labels, blocked, want):
            msg = same_bits("%s %s" % (dtype, label), from_file(got, dtype), w, dtype)
            if msg:
                return msg
    return None


def test_bf16_elementwise():
    return check_elementwise("bf16")


def test_f16_elementwise():
    return check_elementwise("f16")


# Dots: (lhs dims, rhs dims, dimension numbers, result dims, NumPy einsum).
DOTS = [
    ((33, 70), (70, 45), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", (33, 45),
     "mk,kn->mn"),
    ((70, 33), (70, 45), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", (33, 45),
     "km,kn->mn"),
    ((33, 70), (45, 70), "lhs_contracting_dims={1}, rhs_contracting_dims={1}", (33, 45),
     "mk,nk->mn"),
    ((3, 17, 40), (3, 23, 40), "lhs_batch_dims={0}, rhs_batch_dims={0}, "
     "lhs_contracting_dims={2}, rhs_contracting_dims={2}", (3, 17, 23), "bmk,bnk->bmn"),
    ((40, 3, 17), (3, 40, 23), "lhs_batch_dims={1}, rhs_batch_dims={0}, "
     "lhs_contracting_dims={0}, rhs_contracting_dims={1}", (3, 17, 23), "kbm,bkn->bmn"),
]


def dot_operand(rng, dims):
    # Multiples of 1/8 in [-4, 4]: products are multiples of 1/64 below 16, so
    # the f32 sums of up to 70 terms are exact (well under 2^24 / 64).
    return (rng.integers(-32, 33, dims) / 8.0).astype(np.float32)


def check_dots(dtype, out_type):
    rng = np.random.default_rng(7)
    lines, arrays, wants = [], [], []
    for i, (ld, rd, dn, od, spec) in enumerate(DOTS):
        a, b = dot_operand(rng, ld), dot_operand(rng, rd)
        arrays += [a if dtype == "bf16" else a.astype(np.float16),
                   b if dtype == "bf16" else b.astype(np.float16)]
        lines.append("  a%d = %s[%s] parameter(%d)" % (i, dtype, ",".join(map(str, ld)), 2 * i))
        lines.append("  b%d = %s[%s] parameter(%d)" % (i, dtype, ",".join(map(str, rd)),
                                                        2 * i + 1))
        lines.append("  d%d = %s[%s] dot(a%d, b%d), %s" % (i, out_type, ",".join(map(str, od)),
                                                          i, i, dn))
        exact = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
        if out_type == "f32":
            wants.append(exact.astype(np.float32))
        elif out_type == "bf16":
            wants.append(rb(exact.astype(np.float32)))  # exact in f32: one rounding
        else:
            wants.append(exact.astype(np.float16))
    types = ", ".join("%s[%s]" % (out_type, ",".join(map(str, d[3]))) for d in DOTS)
    lines.append("  ROOT r = (%s) tuple(%s)" % (types, ", ".join("d%d" % i
                                                              for i in range(len(DOTS)))))
    program = "HloModule half_dot\nENTRY main {\n%s\n}\n" % "\n".join(lines)
    with tempdir("half-dot-" + dtype) as d:
        prog = os.path.join(d, "dot.hlo")
        with open(prog, "w") as f:
            f.write(program)
        args = os.path.join(d, "args")
        os.makedirs(args)
        for i, a in enumerate(arrays):
            np.save(os.path.join(args, "arg%d.npy" % i), to_file(a, dtype))
        out = os.path.join(d, "out")
        res = launch(prog, args_dir=args, output_dir=out)
        if res.returncode != 0 or res.timed_out:
            return res.describe()
        got = read_outputs(out, 0, 0, len(DOTS))
        for i, (g, w) in enumerate(zip(got, wants)):
            g = from_file(g, out_type if out_type != "f32" else "f32")
            if g.shape != w.shape or g.tobytes() != w.astype(g.dtype).tobytes():
                bad = np.argwhere(g != w)
                return "%s dot %d (%s) into %s: %d elements differ, first at %s: %r vs %r" % (
                    dtype, i, DOTS[i][4], out_type, len(bad), tuple(bad[0]),
                    g[tuple(bad[0])], w[tuple(bad[0])])
    return None


def test_bf16_dots_round_once():
    return check_dots("bf16", "bf16")


def test_bf16_dots_into_f32():
    return check_dots("bf16", "f32")


def test_f16_dots_round_once():
    return check_dots("f16", "f16")


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([("bf16_elementwise", test_bf16_elementwise),
          ("f16_elementwise", test_f16_elementwise),
          ("bf16_dots_round_once", test_bf16_dots_round_once),
          ("bf16_dots_into_f32", test_bf16_dots_into_f32),
          ("f16_dots_round_once", test_f16_dots_round_once)])
