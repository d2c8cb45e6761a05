"""The fusion JIT (runtime/fusion/jit) through hlo-launch on 2 ranks: random
fusions of the ops it compiles (f32 and f64 add, subtract, multiply, divide,
maximum, minimum, negate, abs, sqrt, compare + select, broadcast scalar
constants, and tanh / exponential / log / sine called from the loop), mixed with ops it leaves to the interpreter (floor, a broadcast
row), on inputs full of NaN, infinities, signed zeros and denormals, over a
length of several blocks with a ragged end. Results with the JIT (default),
with its streaming stores forced on (HL_FUSION_STREAM_BYTES=1), without it
(--no-fusion-jit) and op by op (--no-fusion-blocking) must be
equal bit for bit, NaN payloads included, and match NumPy bit for bit
(any NaN for a NaN) where no transcendental feeds the value.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (launch, main, read_outputs, require_binaries,  # noqa: E402
                        tempdir, write_args)

N = 2 * 1024 + 45
FUSIONS = 16
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]
UNARY = ["negate", "abs", "sqrt", "floor"]
# Called from the compiled loop (SLEEF): bitwise across the modes; NumPy's
# libm differs by an ulp or so, so values that depend on them are not
# compared with NumPy.
TRANSCENDENTAL = ["tanh", "exponential", "log", "sine"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]


def special_inputs(rng, dtype):
    info = np.finfo(dtype)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4,
                         -info.tiny / 8, info.tiny, info.max, 1.0, -1.0], dtype)
    a = (rng.uniform(-50, 50, N) * rng.choice([1, 1e-3, 1e3], N)).astype(dtype)
    mask = rng.random(N) < 0.35
    a[mask] = rng.choice(specials, int(mask.sum()))
    if dtype == np.float32:  # a NaN with a payload
        a.view(np.uint32)[rng.integers(0, N, 8)] = 0x7FC01234
    else:
        a.view(np.uint64)[rng.integers(0, N, 8)] = 0x7FF8000000001234
    return a


def np_max(a, b):
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, np.where(
        a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))))


def np_min(a, b):
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, np.where(
        a == b, np.where(np.signbit(a), a, b), np.minimum(a, b))))


NP_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
             "divide": np.divide, "maximum": np_max, "minimum": np_min}
NP_UNARY = {"negate": np.negative, "abs": np.abs, "sqrt": np.sqrt, "floor": np.floor}
NP_CMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
          "GT": np.greater, "GE": np.greater_equal}


def random_fusion(rng, k, t, env):
    """HLO text of fusion k over type t, and its two results computed by NumPy
    from env (the three parameters)."""
    dt = np.float32 if t == "f32" else np.float64
    lines = ["fused%d {" % k]
    vals = []  # (name, numpy value, exact: NumPy computes the same bits)
    for i in range(3):
        lines.append("  p%d = %s[%d] parameter(%d)" % (i, t, N, i))
        vals.append(("p%d" % i, env[i], True))
    c = dt(rng.choice([0.5, -2.0, 3.0, 1e-30 if t == "f32" else 1e-300]))
    lines.append("  c = %s[] constant(%r)" % (t, float(c)))
    lines.append("  cb = %s[%d] broadcast(c), dimensions={}" % (t, N))
    vals.append(("cb", np.full(N, c, dt), True))
    row = 0
    for j in range(int(rng.integers(4, 22))):
        name = "v%d" % j
        pick = lambda: vals[len(vals) - 1 - int(rng.integers(0, min(4, len(vals))))]  # noqa: E731
        r = rng.random()
        if r < 0.5:
            op = BINARY[int(rng.integers(0, len(BINARY)))]
            (an, av, ae), (bn, bv, be) = pick(), vals[int(rng.integers(0, len(vals)))]
            lines.append("  %s = %s[%d] %s(%s, %s)" % (name, t, N, op, an, bn))
            vals.append((name, NP_BINARY[op](av, bv).astype(dt), ae and be))
        elif r < 0.7:
            op = UNARY[int(rng.integers(0, len(UNARY)))]
            an, av, ae = pick()
            lines.append("  %s = %s[%d] %s(%s)" % (name, t, N, op, an))
            vals.append((name, NP_UNARY[op](av).astype(dt), ae))
        elif r < 0.78:
            op = TRANSCENDENTAL[int(rng.integers(0, len(TRANSCENDENTAL)))]
            an, av, ae = pick()
            lines.append("  %s = %s[%d] %s(%s)" % (name, t, N, op, an))
            vals.append((name, av, False))
        elif r < 0.92:
            d = DIRECTIONS[int(rng.integers(0, len(DIRECTIONS)))]
            (an, av, ae), (bn, bv, be) = pick(), vals[int(rng.integers(0, len(vals)))]
            (tn, tv, te), (fn, fv, fe) = vals[int(rng.integers(0, len(vals)))], pick()
            lines.append("  m%d = pred[%d] compare(%s, %s), direction=%s" % (j, N, an, bn, d))
            lines.append("  %s = %s[%d] select(m%d, %s, %s)" % (name, t, N, j, tn, fn))
            vals.append((name, np.where(NP_CMP[d](av, bv), tv, fv).astype(dt),
                         ae and be and te and fe))
        else:
            # A row of 1 element broadcast through a reshape: an index map the
            # JIT reads as a leaf.
            an, av, ae = pick()
            lines.append("  s%d = %s[1] slice(%s), slice={[0:1]}" % (row, t, an))
            lines.append("  r%d = %s[] reshape(s%d)" % (row, t, row))
            lines.append("  %s = %s[%d] broadcast(r%d), dimensions={}" % (name, t, N, row))
            vals.append((name, np.full(N, av[0], dt), ae))
            row += 1
    (ln, lv, le), (on, ov, oe) = vals[-1], vals[int(rng.integers(3, len(vals)))]
    lines.append("  ROOT t = (%s[%d], %s[%d]) tuple(%s, %s)" % (t, N, t, N, ln, on))
    lines.append("}")
    return "\n".join(lines), [lv if le else None, ov if oe else None]


def program(rng, args):
    texts, want, calls, roots = [], [], [], []
    for k in range(FUSIONS):
        t = "f32" if k % 2 == 0 else "f64"
        base = 0 if t == "f32" else 3
        text, w = random_fusion(rng, k, t, args[base:base + 3])
        texts.append(text)
        want += w
        calls.append("  f%d = (%s[%d], %s[%d]) fusion(x%d, x%d, x%d), kind=kLoop, calls=fused%d" %
                     (k, t, N, t, N, base, base + 1, base + 2, k))
        for i in range(2):
            calls.append("  g%d_%d = %s[%d] get-tuple-element(f%d), index=%d" % (k, i, t, N, k, i))
            roots.append(("%s[%d]" % (t, N), "g%d_%d" % (k, i)))
    entry = ["ENTRY main {"]
    for i in range(6):
        entry.append("  x%d = %s[%d] parameter(%d)" % (i, "f32" if i < 3 else "f64", N, i))
    entry += calls
    entry.append("  ROOT r = (%s) tuple(%s)" % (", ".join(s for s, _ in roots),
                                                 ", ".join(n for _, n in roots)))
    entry.append("}")
    return "HloModule fusion_jit\n" + "\n".join(texts) + "\n" + "\n".join(entry) + "\n", want


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def matches_numpy(got, want):
    """Bit-equal, except that any NaN matches any NaN."""
    nan = np.isnan(want)
    if not np.array_equal(np.isnan(got), nan):
        return False
    return got[~nan].tobytes() == want[~nan].tobytes()


def test_jit_modes_bitwise_and_numpy():
    rng = np.random.default_rng(20261124)
    args = [special_inputs(rng, np.float32) for _ in range(3)] + \
           [special_inputs(rng, np.float64) for _ in range(3)]
    with np.errstate(all="ignore"):
        text, want = program(rng, args)
    # "streaming": the JIT's non-temporal stores, which runs use for outputs
    # larger than the L3 cache, forced on for these small ones.
    streaming = dict(os.environ, HL_FUSION_STREAM_BYTES="1")
    modes = [("jit", (), None), ("no_jit", ("--no-fusion-jit",), None),
             ("op_by_op", ("--no-fusion-blocking",), None), ("streaming", (), streaming)]
    with tempdir("fusion-jit") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(text)
        write_args(os.path.join(d, "args"), args)
        outs = {}
        for name, extra, env in modes:
            out = os.path.join(d, "out_" + name)
            res = launch(prog, replicas=2, args_dir=os.path.join(d, "args"), output_dir=out,
                         extra=extra, env=env)
            if res.returncode != 0 or res.timed_out:
                return "%s: %s" % (name, res.describe())
            outs[name] = [read_outputs(out, r, 0, len(want)) for r in range(2)]
        for r in range(2):
            for j in range(len(want)):
                ref = outs["op_by_op"][r][j]
                for name in ("jit", "no_jit", "streaming"):
                    if not same_bits(outs[name][r][j], ref):
                        bad = np.nonzero(outs[name][r][j].view(np.uint8) != ref.view(np.uint8))
                        return "%s: rank %d result %d (fusion %d) differs from op by op at " \
                               "byte %s\n%s" % (name, r, j, j // 2, bad[0][:4], text)
                if want[j] is not None and not matches_numpy(outs["jit"][r][j], want[j]):
                    i = int(np.nonzero(~((outs["jit"][r][j] == want[j]) |
                                         (np.isnan(outs["jit"][r][j]) & np.isnan(want[j]))))[0][0])
                    return "rank %d result %d (fusion %d) differs from NumPy at %d: %r vs %r" % (
                        r, j, j // 2, i, outs["jit"][r][j][i], want[j][i])
    return None


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([("jit_modes_bitwise_and_numpy", test_jit_modes_bitwise_and_numpy)])
