"""Every function vmath runs through SLEEF (sine, cosine, tan, exponential,
exponential-minus-one, log, log-plus-one, tanh, logistic, erf, cbrt, power,
atan2; f32 and f64) on inputs with a few out-of-range values (1e30, inf, NaN,
denormals, |x| >= 125 / 15 / 1e14 where SLEEF's trig routines change their
argument reduction for the whole vector) at positions that are not multiples
of 8, through hlo-launch: in a row-reduce fusion over rows of 300 (rows start
off the 8-lane grid), a slicing element-wise fusion and an unfused op. The
results must be bitwise equal across default, --no-fusion-blocking (op by
op), --no-fusion-jit, --threads 1 and --threads 2: an element's bits must not
depend on which elements share its vector. The element-wise results must
also match NumPy (f64 libm) within 4 ULP, NaN for NaN.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (launch, main, read_outputs, require_binaries,  # noqa: E402
                        tempdir, write_args)

R, C = 21, 300
CUT = 3  # the element-wise fusion works on x[:, 3:]

# (HLO op, NumPy reference computed in f64 (x, y) -> value)
_erf = np.vectorize(math.erf, otypes=[np.float64])
FUNCS = [
    ("sine", lambda x, y: np.sin(x)),
    ("cosine", lambda x, y: np.cos(x)),
    ("tan", lambda x, y: np.tan(x)),
    ("exponential", lambda x, y: np.exp(x)),
    ("exponential-minus-one", lambda x, y: np.expm1(x)),
    ("log", lambda x, y: np.log(x)),
    ("log-plus-one", lambda x, y: np.log1p(x)),
    ("tanh", lambda x, y: np.tanh(x)),
    ("logistic", lambda x, y: 1.0 / (1.0 + np.exp(-x))),
    ("erf", lambda x, y: _erf(x)),
    ("cbrt", lambda x, y: np.cbrt(x)),
    ("power", lambda x, y: np.power(x, y)),
    ("atan2", lambda x, y: np.arctan2(x, y)),
]
BINARY = {"power", "atan2"}

# The JIT compiles in the background and runs the interpreter until a loop
# is ready; these runs are short, so they wait for the loops (the modes
# without the JIT are unaffected).
os.environ["HL_FUSION_JIT_WAIT"] = "1"
MODES = [("default", ()), ("op_by_op", ("--no-fusion-blocking",)),
         ("no_jit", ("--no-fusion-jit",)), ("threads1", ("--threads", "1")),
         ("threads2", ("--threads", "2"))]


def program(t):
    shape, row, cut = "%s[%d,%d]" % (t, R, C), "%s[%d]" % (t, R), "%s[%d,%d]" % (t, R, C - CUT)
    out = ["HloModule vmath_lanes_%s" % t,
           "add {", "  a = %s[] parameter(0)" % t, "  b = %s[] parameter(1)" % t,
           "  ROOT s = %s[] add(a, b)" % t, "}"]
    entry = ["ENTRY main {", "  x = %s parameter(0)" % shape, "  y = %s parameter(1)" % shape]
    results = []
    for k, (op, _) in enumerate(FUNCS):
        binary = op in BINARY
        params = ["  x = %s parameter(0)" % shape] + (
            ["  y = %s parameter(1)" % shape] if binary else [])
        operands = "x, y" if binary else "x"
        # A multi-output row reduce: the reduce absorbs fn, rows of 300.
        out += ["fused_row%d {" % k] + params + [
            "  e = %s %s(%s)" % (shape, op, operands),
            "  zero = %s[] constant(0)" % t,
            "  s = %s reduce(e, zero), dimensions={1}, to_apply=add" % row,
            "  ROOT o = (%s, %s) tuple(s, e)" % (row, shape), "}"]
        # An element-wise fusion over a slice (elements move off their lane).
        out += ["fused_ew%d {" % k] + params + [
            "  xs = %s slice(x), slice={[0:%d], [%d:%d]}" % (cut, R, CUT, C)] + (
            ["  ys = %s slice(y), slice={[0:%d], [%d:%d]}" % (cut, R, CUT, C)]
            if binary else []) + [
            "  e = %s %s(%s)" % (cut, op, "xs, ys" if binary else "xs"),
            "  h = %s[] constant(0.5)" % t,
            "  hb = %s broadcast(h), dimensions={}" % cut,
            "  ROOT o = %s multiply(e, hb)" % cut, "}"]
        entry += ["  r%d = (%s, %s) fusion(%s), kind=kInput, calls=fused_row%d"
                  % (k, row, shape, operands, k),
                  "  s%d = %s get-tuple-element(r%d), index=0" % (k, row, k),
                  "  e%d = %s get-tuple-element(r%d), index=1" % (k, shape, k),
                  "  w%d = %s fusion(%s), kind=kLoop, calls=fused_ew%d" % (k, cut, operands, k),
                  "  u%d = %s %s(%s)" % (k, shape, op, operands)]
        results += [("s%d" % k, row), ("e%d" % k, shape), ("w%d" % k, cut), ("u%d" % k, shape)]
    entry.append("  ROOT out = (%s) tuple(%s)" % (", ".join(s for _, s in results),
                                                  ", ".join(n for n, _ in results)))
    return "\n".join(out + entry + ["}"]) + "\n"


def inputs(dtype, rng):
    """Ordinary values with about 2% out-of-range ones, never at a multiple of 8."""
    x = rng.uniform(-6, 6, (R, C)) * rng.choice([1.0, 20.0], (R, C))
    tiny = np.finfo(dtype).tiny
    specials = [1e30, -1e30, np.inf, -np.inf, np.nan, tiny / 8, -tiny / 4, 200.0, -130.0,
                15.5, 1e5, 1e15, 39000.0, 0.0, -0.0]
    flat = x.reshape(-1)
    pos = [p for p in rng.choice(flat.size, flat.size // 40, replace=False) if p % 8]
    flat[pos] = rng.choice(specials, len(pos))
    y = rng.uniform(-3, 3, (R, C))
    return x.astype(dtype), y.astype(dtype)


def ulp_mismatch(got, want64, dtype):
    """Indices where got (dtype) is not within 4 ULP of the f64 reference."""
    with np.errstate(all="ignore"):
        want = want64.astype(dtype)
        nan = np.isnan(want)
        inf = np.isinf(want)
        err = np.abs(got.astype(np.float64) - want64)
        ok = np.where(nan, np.isnan(got),
                      np.where(inf, got == want,
                               err <= 4 * np.spacing(np.abs(want)).astype(np.float64)))
    return np.argwhere(~ok)


def check_type(t, dtype, seed):
    rng = np.random.default_rng(seed)
    x, y = inputs(dtype, rng)
    with tempdir("vmath-lanes") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(program(t))
        write_args(os.path.join(d, "args"), [x, y])
        outs = {}
        for name, extra in MODES:
            out = os.path.join(d, name)
            res = launch(prog, replicas=1, args_dir=os.path.join(d, "args"), output_dir=out,
                         extra=extra)
            if res.returncode != 0 or res.timed_out:
                return "%s %s: %s" % (t, name, res.describe())
            outs[name] = read_outputs(out, 0, 0, 4 * len(FUNCS))
    errors = []
    base = outs["default"]
    for name, _ in MODES[1:]:
        for j, (got, want) in enumerate(zip(outs[name], base)):
            if got.tobytes() != want.tobytes():
                bad = np.argwhere(got.view("u%d" % got.itemsize) != want.view("u%d" % got.itemsize))
                i = tuple(bad[0])
                errors.append("%s %s result %s (%s): %d elements differ from default, first %s: "
                              "%r vs %r" % (t, name, "sewu"[j % 4] + str(j // 4),
                                            FUNCS[j // 4][0], len(bad), i, got[i], want[i]))
    for k, (op, ref) in enumerate(FUNCS):
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64), y.astype(np.float64))
            # fn rounds to the type (overflowing to inf) before the * 0.5
            cut = want[:, CUT:]
            half = np.where(np.isinf(cut.astype(dtype)), cut.astype(dtype), 0.5 * cut)
        for label, got, w in (("row-reduce", base[4 * k + 1], want),
                              ("element-wise", base[4 * k + 2], half),
                              ("unfused", base[4 * k + 3], want)):
            bad = ulp_mismatch(got, w, dtype)
            if len(bad):
                i = tuple(bad[0])
                xi = x[i] if label != "element-wise" else x[i[0], i[1] + CUT]
                errors.append("%s %s %s: %d elements off NumPy by > 4 ULP, first x=%r: %r vs %r"
                              % (t, op, label, len(bad), xi, got[i], w[i]))
    return "\n".join(errors) or None


def test_f32_lanes_bitwise_across_modes():
    return check_type("f32", np.float32, 8)


def test_f64_lanes_bitwise_across_modes():
    return check_type("f64", np.float64, 64)


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([(n[5:], f) for n, f in sorted(globals().items()) if n.startswith("test_")])
