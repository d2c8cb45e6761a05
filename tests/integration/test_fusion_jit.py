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
                        run, tempdir, write_args)

# The JIT compiles in the background and runs the interpreter until a loop
# is ready; these runs are short, so they wait for the loops (the modes
# without the JIT are unaffected).
os.environ["HL_FUSION_JIT_WAIT"] = "1"
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


def run_modes(tag, text, args, modes, count, min_compiled=None):
    """Runs the program text on 2 ranks once per mode (name, extra options,
    environment); returns ({name: per rank, its count outputs}, None) or
    (None, what failed). With min_compiled, the "jit" mode (run with
    HL_FUSION_JIT_LOG) must log that many compiled loops at least, on builds
    and hosts with the LLVM generator (others run interpreted)."""
    with tempdir(tag) as d:
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
                return None, "%s: %s" % (name, res.describe())
            if name == "jit" and min_compiled is not None and \
                    "Fusion JIT: LLVM" in run([res.argv[0], "--version"]).stdout:
                compiled = res.stderr.count(": compiled (")
                if compiled < min_compiled:
                    return None, "jit: %d compiled loops logged, at least %d expected\n%s" % (
                        compiled, min_compiled, res.stderr[-2000:])
            outs[name] = [read_outputs(out, r, 0, count) for r in range(2)]
    return outs, None


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
    outs, err = run_modes("fusion-jit", text, args, modes, len(want))
    if err:
        return err
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


INT_TYPES = [("s8", np.int8), ("s16", np.int16), ("s32", np.int32), ("s64", np.int64),
             ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64)]

INT_FUSION = """fused_{t} {{
  x = {t}[{n}] parameter(0)
  y = {t}[{n}] parameter(1)
  c = {t}[] constant(3)
  cb = {t}[{n}] broadcast(c), dimensions={{}}
  a = {t}[{n}] add(x, y)
  m = {t}[{n}] multiply(a, cb)
  d = {t}[{n}] divide(m, y)
  r = {t}[{n}] remainder(x, y)
  mx = {t}[{n}] maximum(d, r)
  ng = {t}[{n}] negate(mx)
  ab = {t}[{n}] abs(ng)
  xr = {t}[{n}] xor(ab, x)
  sl = {t}[{n}] shift-left(xr, y)
  sr = {t}[{n}] shift-right-logical(x, y)
  sa = {t}[{n}] shift-right-arithmetic(sl, y)
  p = pred[{n}] compare(sa, sr), direction=LT
  sel = {t}[{n}] select(p, sr, sa)
  ROOT out = ({t}[{n}], {t}[{n}]) tuple(sel, d)
}}"""


def int_inputs(rng, dt):
    info = np.iinfo(dt)
    bits = 8 * np.dtype(dt).itemsize
    x = rng.integers(info.min, info.max, N, dtype=dt, endpoint=True)
    small = rng.integers(0, bits + 3, N).astype(dt)
    x = np.where(rng.random(N) < 0.3, small, x).astype(dt)
    ext = np.array([0, 1, info.max, info.min, info.max - 1] + ([-1] if info.min < 0 else []), dt)
    mask = rng.random(N) < 0.2
    x[mask] = rng.choice(ext, int(mask.sum()))
    return x


def np_int_fusion(x, y, dt):
    """The integer fusion by XLA's CPU semantics (elementwise.c's comment)."""
    info = np.iinfo(dt)
    bits = 8 * np.dtype(dt).itemsize
    signed = info.min < 0
    w = np.int64 if signed else np.uint64
    wrap = lambda v: v.astype(dt)  # noqa: E731
    a = wrap(x.astype(w) + y.astype(w))
    m = wrap(a.astype(w) * w(3))
    zero = y == 0
    m1 = (y == -1) if signed else np.zeros(N, bool)
    safe = np.where(zero | m1, 1, y).astype(w)
    mw, xw = m.astype(w), x.astype(w)
    if signed:  # C division truncates toward zero (NumPy's floors)
        def trunc_div(p, q):
            f = p // q
            return f + ((p - f * q != 0) & ((p < 0) != (q < 0)))
        q = trunc_div(mw, safe)
        rem = xw - trunc_div(xw, safe) * safe
    else:
        q, rem = mw // safe, xw % safe
    d = wrap(np.where(zero, w(-1) if signed else ~w(0), np.where(m1, w(0) - mw, q)))
    r = wrap(np.where(zero, xw, np.where(m1, 0, rem)))
    mx = np.maximum(d, r)
    ng = wrap(w(0) - mx.astype(w))
    ab = wrap(np.abs(ng.astype(w))) if signed else ng
    xr = ab ^ x
    amt = y.astype(np.uint64) & np.uint64((1 << bits) - 1)
    big = amt >= bits
    s_amt = np.where(big, 0, amt).astype(np.uint64)
    ux = xr.astype(np.uint64) & np.uint64((1 << bits) - 1 if bits < 64 else ~np.uint64(0))
    sl = wrap(np.where(big, 0, (ux << s_amt) & np.uint64((1 << bits) - 1 if bits < 64
                                                         else ~np.uint64(0))))
    xu = x.astype(np.uint64) & np.uint64((1 << bits) - 1 if bits < 64 else ~np.uint64(0))
    sr = wrap(np.where(big, 0, xu >> s_amt))
    sls = sl.view(np.dtype("i%d" % (bits // 8))).astype(np.int64)
    sa = wrap(np.where(big, np.where(sls < 0, -1, 0), sls >> s_amt.astype(np.int64)))
    sel = np.where(sa < sr, sr, sa).astype(dt)
    return [sel, d]


def test_integer_and_f16_bitwise_and_numpy():
    """Integer fusions of every width and an f16 fusion: JIT (whose compiled
    loops the JIT's log confirms), --no-fusion-jit and op by op agree bit for
    bit, and match NumPy (integers exactly; f16 with any NaN for a NaN)."""
    rng = np.random.default_rng(20261129)
    texts, calls, roots, args, want = [], [], [], [], []
    for k, (t, dt) in enumerate(INT_TYPES):
        x, y = int_inputs(rng, dt), int_inputs(rng, dt)
        args += [x, y]
        texts.append(INT_FUSION.format(t=t, n=N))
        calls.append("  f%d = (%s[%d], %s[%d]) fusion(a%d, a%d), kind=kLoop, calls=fused_%s" %
                     (k, t, N, t, N, 2 * k, 2 * k + 1, t))
        for i in range(2):
            calls.append("  g%d_%d = %s[%d] get-tuple-element(f%d), index=%d" % (k, i, t, N, k, i))
            roots.append(("%s[%d]" % (t, N), "g%d_%d" % (k, i)))
        want += np_int_fusion(x, y, dt)
    # f16: every bit pattern among the inputs; NumPy's float16 computes each
    # op in f32 and rounds, as XLA does.
    hx = rng.integers(0, 1 << 16, N, dtype=np.uint16).view(np.float16)
    hy = rng.integers(0, 1 << 16, N, dtype=np.uint16).view(np.float16)
    k = len(INT_TYPES)
    args += [hx, hy]
    texts.append("""fused_f16 {{
  x = f16[{n}] parameter(0)
  y = f16[{n}] parameter(1)
  a = f16[{n}] add(x, y)
  m = f16[{n}] multiply(a, y)
  d = f16[{n}] divide(m, x)
  mx = f16[{n}] maximum(d, x)
  s = f16[{n}] sqrt(mx)
  p = pred[{n}] compare(s, y), direction=GT
  sel = f16[{n}] select(p, s, d)
  ROOT out = (f16[{n}], f16[{n}]) tuple(sel, m)
}}""".format(n=N))
    calls.append("  f%d = (f16[%d], f16[%d]) fusion(a%d, a%d), kind=kLoop, calls=fused_f16" %
                 (k, N, N, 2 * k, 2 * k + 1))
    for i in range(2):
        calls.append("  g%d_%d = f16[%d] get-tuple-element(f%d), index=%d" % (k, i, N, k, i))
        roots.append(("f16[%d]" % N, "g%d_%d" % (k, i)))
    with np.errstate(all="ignore"):
        a = hx + hy
        m = a * hy
        d = m / hx
        mx = np_max(d, hx)
        s = np.sqrt(mx)
        want += [np.where(s > hy, s, d), m]
    entry = ["ENTRY main {"]
    for i, v in enumerate(args):
        entry.append("  a%d = %s[%d] parameter(%d)" % (i, roots[2 * (i // 2)][0].split("[")[0],
                                                       N, i))
    entry += calls
    entry.append("  ROOT r = (%s) tuple(%s)" % (", ".join(s for s, _ in roots),
                                                 ", ".join(n for _, n in roots)))
    entry.append("}")
    text = "HloModule fusion_jit_int\n" + "\n".join(texts) + "\n" + "\n".join(entry) + "\n"
    logged = dict(os.environ, HL_FUSION_JIT_LOG="1")
    modes = [("jit", (), logged), ("no_jit", ("--no-fusion-jit",), None),
             ("op_by_op", ("--no-fusion-blocking",), None)]
    outs, err = run_modes("fusion-jit-int", text, args, modes, len(want),
                          min_compiled=2 * (len(INT_TYPES) + 1))  # per rank, a region per fusion
    if err:
        return err
    for r in range(2):
        for j in range(len(want)):
            ref = outs["op_by_op"][r][j]
            for name in ("jit", "no_jit"):
                if not same_bits(outs[name][r][j], ref):
                    return "%s: rank %d result %d differs from op by op" % (name, r, j)
            got, w = outs["jit"][r][j], np.asarray(want[j])
            ok = matches_numpy(got, w) if got.dtype == np.float16 else same_bits(got, w)
            if not ok:
                bad = got != w
                if got.dtype == np.float16:
                    bad &= ~(np.isnan(got) & np.isnan(w))
                i = int(np.nonzero(bad)[0][0])
                return "rank %d result %d (%s) differs from NumPy at %d: %r vs %r" % (
                    r, j, got.dtype, i, got[i], w[i])
    return None


def test_cache_dir():
    """--cache-dir: the first launch (2 ranks writing the same bodies at once)
    compiles and stores, the second reads every loop back; results equal the
    interpreter's bit for bit; a file of the user's in the directory and an
    entry whose key does not match (overwritten with other bytes) are left
    alone."""
    rng = np.random.default_rng(7)
    args = [special_inputs(rng, np.float32) for _ in range(3)] + \
           [special_inputs(rng, np.float64) for _ in range(3)]
    with np.errstate(all="ignore"):
        text, want = program(rng, args)
    logged = dict(os.environ, HL_FUSION_JIT_LOG="1")
    with tempdir("fusion-jit-cache") as d:
        prog = os.path.join(d, "p.hlo")
        with open(prog, "w") as f:
            f.write(text)
        write_args(os.path.join(d, "args"), args)
        cache = os.path.join(d, "cache")
        os.mkdir(cache)
        mine = os.path.join(cache, "notes.txt")
        with open(mine, "w") as f:
            f.write("mine")
        outs, logs = [], []
        for k, extra in enumerate([("--cache-dir", cache), ("--cache-dir", cache),
                                   ("--no-fusion-jit",)]):
            out = os.path.join(d, "out%d" % k)
            res = launch(prog, replicas=2, args_dir=os.path.join(d, "args"), output_dir=out,
                         extra=extra, env=logged)
            if res.returncode != 0 or res.timed_out:
                return "launch %d: %s" % (k, res.describe())
            outs.append([read_outputs(out, r, 0, len(want)) for r in range(2)])
            logs.append(res.stderr)
            if k == 0:
                entries = sorted(e for e in os.listdir(cache) if e.endswith(".o"))
                if "Fusion JIT: LLVM" in run([res.argv[0], "--version"]).stdout and not entries:
                    return "nothing cached\n" + res.stderr[-2000:]
                if entries:  # a damaged entry: read as a miss, recompiled, kept
                    with open(os.path.join(cache, entries[0]), "r+b") as f:
                        f.seek(30)
                        f.write(b"XXXX")
        if "Fusion JIT: LLVM" in run([res.argv[0], "--version"]).stdout:
            compiled, read = logs[1].count(": compiled ("), logs[1].count("read from the cache")
            if read < 2 * (FUSIONS - 1) or compiled > 2:
                return "second launch: %d read from the cache, %d compiled\n%s" % (
                    read, compiled, logs[1][-3000:])
        with open(mine) as f:
            if f.read() != "mine":
                return "the user's file in the cache directory changed"
        for r in range(2):
            for j in range(len(want)):
                for k in (0, 1):
                    if not same_bits(outs[k][r][j], outs[2][r][j]):
                        return "launch %d rank %d result %d differs from --no-fusion-jit" % (
                            k, r, j)
    return None


# Converts (XLA's CPU semantics: float -> int truncates, saturates, NaN -> 0;
# int -> int wraps; rounding once to nearest even), each a fusion
# "c = D convert(x); d = D add(c, c)" so the convert feeds arithmetic in the
# loop. (source, destination, NumPy dtype of each.)
CONVERTS = [("f32", "s32"), ("f32", "u8"), ("f64", "s64"), ("f64", "u64"), ("f16", "s8"),
            ("f16", "f64"), ("f64", "f16"), ("f32", "f16"), ("f64", "f32"), ("f32", "f64"),
            ("s64", "f32"), ("u64", "f32"), ("u64", "f64"), ("s32", "u8"), ("s8", "u32"),
            ("u8", "s64"), ("s16", "f16"), ("u32", "f32")]
NP_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "s8": np.int8,
            "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
            "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def convert_inputs(rng, t):
    dt = NP_TYPES[t]
    if t == "f16":
        return rng.integers(0, 1 << 16, N, dtype=np.uint16).view(np.float16)
    if t in ("f32", "f64"):
        x = special_inputs(rng, dt)
        big = (rng.choice([-1.0, 1.0], N) * np.ldexp(1.0, rng.integers(0, 70, N)) +
               rng.integers(-2, 3, N)).astype(dt)
        half = (rng.integers(-300, 300, N) + 0.5).astype(dt)
        pick = rng.integers(0, 3, N)
        return np.where(pick == 0, x, np.where(pick == 1, big, half)).astype(dt)
    return int_inputs(rng, dt)


def np_convert(x, t):
    """x (a NumPy array) converted by XLA's CPU rules to type t."""
    dt = NP_TYPES[t]
    if np.issubdtype(dt, np.integer):
        if np.issubdtype(x.dtype, np.integer):
            return x.astype(dt)  # wraps
        info = np.iinfo(dt)
        d = np.trunc(x.astype(np.float64))
        hi, lo = float(info.max) + 1.0, float(info.min)  # 2^bits(-1), exact in f64
        safe = np.where(np.isnan(d) | (d >= hi) | (d < lo), 0, d)
        r = safe.astype(dt)
        r = np.where(d >= hi, info.max, r)
        r = np.where(d < lo, info.min, r)
        return np.where(np.isnan(d), 0, r).astype(dt)
    if x.dtype == np.float16 and dt == np.float64:
        return x.astype(np.float32).astype(np.float64)
    return x.astype(dt)  # NumPy rounds once to nearest even (int64 -> f32 too)


def np_bf16_round_trip(x):
    """f32 -> bf16 (round to nearest even) -> f32."""
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return np.where(np.isnan(x), np.nan, r.astype(np.uint32).view(np.float32)).astype(np.float32)


ROWS, COLS = 37, 256


def test_converts_iota_rows_pow_numpy():
    """Converts between float and integer types, iota, broadcast row / column
    vectors and slices read per row, clamp, pow and atan2, each in a compiled loop
    (the JIT's log counts them): the JIT, --no-fusion-jit and op by op agree
    bit for bit, and the results match NumPy (exactly where the math is
    exact; pow / atan2 / exponential within 4 ulp)."""
    rng = np.random.default_rng(20261129)
    texts, calls, roots, args, want = [], [], [], [], []  # want: (value, ulps or None)

    def add_fusion(name, params, body, outs, expect):
        k = len(texts)
        lines = ["%s {" % name]
        for i, (shape, value) in enumerate(params):
            lines.append("  p%d = %s parameter(%d)" % (i, shape, i))
            args.append(value)
        lines += ["  " + b for b in body]
        lines.append("  ROOT t = (%s) tuple(%s)" % (", ".join(s for s, _ in outs),
                                                     ", ".join(v for _, v in outs)))
        lines.append("}")
        texts.append("\n".join(lines))
        base = len(args) - len(params)
        ops = ", ".join("a%d" % (base + i) for i in range(len(params)))
        calls.append("  f%d = (%s) fusion(%s), kind=kLoop, calls=%s" %
                     (k, ", ".join(s for s, _ in outs), ops, name))
        for i, (shape, _) in enumerate(outs):
            calls.append("  g%d_%d = %s get-tuple-element(f%d), index=%d" % (k, i, shape, k, i))
            roots.append((shape, "g%d_%d" % (k, i)))
        want.extend(expect)

    with np.errstate(all="ignore"):
        for src, dst in CONVERTS:
            x = convert_inputs(rng, src)
            c = np_convert(x, dst)
            d = (c.astype(np.uint64) * 2).astype(NP_TYPES[dst]) \
                if np.issubdtype(c.dtype, np.integer) else (c + c).astype(c.dtype)
            add_fusion("conv_%s_%s" % (src, dst), [("%s[%d]" % (src, N), x)],
                       ["c = %s[%d] convert(p0)" % (dst, N),
                        "d = %s[%d] add(c, c)" % (dst, N)],
                       [("%s[%d]" % (dst, N), "d")], [(d, 0)])
        x = special_inputs(rng, np.float32)
        add_fusion("conv_bf16", [("f32[%d]" % N, x)],
                   ["b = bf16[%d] convert(p0)" % N, "f = f32[%d] convert(b)" % N,
                    "m = f32[%d] multiply(f, p0)" % N],
                   [("f32[%d]" % N, "m")], [(np_bf16_round_trip(x) * x, 0)])
        # iota along each dimension, as f32 and as s32 into f64.
        xr = rng.standard_normal((ROWS, COLS)).astype(np.float32)
        sh = "[%d,%d]" % (ROWS, COLS)
        add_fusion("iota", [("f32" + sh, xr)],
                   ["i1 = s32%s iota(), iota_dimension=1" % sh,
                    "c1 = f32%s convert(i1)" % sh,
                    "a = f32%s add(p0, c1)" % sh,
                    "i0 = f64%s iota(), iota_dimension=0" % sh,
                    "b = f64%s convert(p0)" % sh,
                    "m = f64%s multiply(b, i0)" % sh],
                   [("f32" + sh, "a"), ("f64" + sh, "m")],
                   [(xr + np.arange(COLS, dtype=np.float32)[None, :], 0),
                    (xr.astype(np.float64) * np.arange(ROWS, dtype=np.float64)[:, None], 0)])
        # Softmax's and layer norm's broadcasts: x - max per row, exp, / sum
        # per row; x * scale per row + bias per column; a slice of columns.
        mx = xr.max(axis=1)
        sm = np.exp(xr - mx[:, None]).sum(axis=1).astype(np.float32)
        scale = rng.uniform(0.5, 2, ROWS).astype(np.float32)
        bias = rng.standard_normal(COLS).astype(np.float32)
        wide = rng.standard_normal((ROWS, COLS + 9)).astype(np.float32)
        add_fusion("rows", [("f32" + sh, xr), ("f32[%d]" % ROWS, mx), ("f32[%d]" % ROWS, sm),
                            ("f32[%d]" % ROWS, scale), ("f32[%d]" % COLS, bias),
                            ("f32[%d,%d]" % (ROWS, COLS + 9), wide)],
                   ["bm = f32%s broadcast(p1), dimensions={0}" % sh,
                    "bs = f32%s broadcast(p2), dimensions={0}" % sh,
                    "sc = f32%s broadcast(p3), dimensions={0}" % sh,
                    "bb = f32%s broadcast(p4), dimensions={1}" % sh,
                    "sl = f32%s slice(p5), slice={[0:%d], [5:%d]}" % (sh, ROWS, COLS + 5),
                    "d = f32%s subtract(p0, bm)" % sh,
                    "e = f32%s exponential(d)" % sh,
                    "s = f32%s divide(e, bs)" % sh,
                    "m = f32%s multiply(p0, sc)" % sh,
                    "a = f32%s add(m, bb)" % sh,
                    "z = f32%s add(a, sl)" % sh],
                   [("f32" + sh, "s"), ("f32" + sh, "z")],
                   [(np.exp(xr - mx[:, None]) / sm[:, None], 4),
                    ((xr * scale[:, None] + bias[None, :]) + wide[:, 5:COLS + 5], 0)])
        # clamp: a scalar lower bound, an array upper bound (f32 with NaN and
        # signed zeros; s32 and u16 exactly).
        for t, dt in (("f32", np.float32), ("s32", np.int32), ("u16", np.uint16)):
            x = special_inputs(rng, dt) if t == "f32" else int_inputs(rng, dt)
            hi = special_inputs(rng, dt) if t == "f32" else int_inputs(rng, dt)
            lo = np.asarray(x[:1] if t != "f32" else dt(-1.5), dt).reshape(())
            add_fusion("clamp_%s" % t, [("%s[%d]" % (t, N), x), ("%s[]" % t, lo),
                                        ("%s[%d]" % (t, N), hi)],
                       ["c = %s[%d] clamp(p1, p0, p2)" % (t, N),
                        "m = %s[%d] maximum(c, p2)" % (t, N)],
                       [("%s[%d]" % (t, N), "m")],
                       [(np_max(np_min(np_max(x, lo), hi), hi) if t == "f32" else
                         np.maximum(np.minimum(np.maximum(x, lo), hi), hi).astype(dt), 0)])
        # pow and atan2 (f32 and f64).
        for t, dt in (("f32", np.float32), ("f64", np.float64)):
            b = np.abs(rng.standard_normal(N) * 4).astype(dt)
            e = (rng.standard_normal(N) * 3).astype(dt)
            add_fusion("pow_%s" % t, [("%s[%d]" % (t, N), b), ("%s[%d]" % (t, N), e)],
                       ["p = %s[%d] power(p0, p1)" % (t, N),
                        "q = %s[%d] atan2(p1, p0)" % (t, N),
                        "s = %s[%d] add(p, p)" % (t, N)],
                       [("%s[%d]" % (t, N), "s"), ("%s[%d]" % (t, N), "q")],
                       [(np.power(b, e) * 2, 4), (np.arctan2(e, b), 4)])
    entry = ["ENTRY main {"]
    for i, v in enumerate(args):
        name = [k for k, d in NP_TYPES.items() if np.dtype(d) == v.dtype][0]
        entry.append("  a%d = %s%s parameter(%d)" % (
            i, name, "[%s]" % ",".join(str(d) for d in v.shape), i))
    entry += calls
    entry.append("  ROOT r = (%s) tuple(%s)" % (", ".join(s for s, _ in roots),
                                                 ", ".join(n for _, n in roots)))
    entry.append("}")
    text = "HloModule fusion_jit_conv\n" + "\n\n".join(texts) + "\n\n" + "\n".join(entry) + "\n"
    logged = dict(os.environ, HL_FUSION_JIT_LOG="1")
    modes = [("jit", ("--no-fusion-pass",), logged),
             ("no_jit", ("--no-fusion-pass", "--no-fusion-jit"), None),
             ("op_by_op", ("--no-fusion-pass", "--no-fusion-blocking"), None)]
    outs, err = run_modes("fusion-jit-conv", text, args, modes, len(want),
                          min_compiled=2 * len(texts))  # per rank, a loop per fusion at least
    if err:
        return err
    for r in range(2):
        for j, (w, ulps) in enumerate(want):
            ref = outs["op_by_op"][r][j]
            for name in ("jit", "no_jit"):
                if not same_bits(outs[name][r][j], ref):
                    return "%s: rank %d result %d (%s) differs from op by op" % (
                        name, r, j, roots[j][1])
            got, w = outs["jit"][r][j], np.asarray(w)
            if got.dtype != w.dtype or got.shape != w.shape:
                return "result %d: %s%s, NumPy %s%s" % (j, got.dtype, got.shape,
                                                       w.dtype, w.shape)
            if np.issubdtype(got.dtype, np.integer):
                ok = np.array_equal(got, w)
            elif ulps == 0:
                ok = matches_numpy(got, w)
            else:
                nan = np.isnan(w)
                ok = np.array_equal(np.isnan(got), nan) and np.all(
                    np.abs(got[~nan] - w[~nan]) <=
                    ulps * np.spacing(np.abs(w[~nan]).astype(w.dtype)) + np.finfo(w.dtype).tiny)
            if not ok:
                bad = np.nonzero(~((got == w) | (np.isnan(got) & np.isnan(w))))
                i = tuple(a[0] for a in bad)
                return "rank %d result %d (%s, %s) differs from NumPy at %s: %r vs %r" % (
                    r, j, got.dtype, roots[j][1], i, got[i], w[i])
    return None


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([("jit_modes_bitwise_and_numpy", test_jit_modes_bitwise_and_numpy),
          ("integer_and_f16_bitwise_and_numpy", test_integer_and_f16_bitwise_and_numpy),
          ("converts_iota_rows_pow_numpy", test_converts_iota_rows_pow_numpy),
          ("cache_dir", test_cache_dir)])
