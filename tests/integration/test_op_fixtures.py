#!/usr/bin/env python3
"""Runs every op fixture tests/ops/*.hlo through hlo-launch and checks its
result against the expected literal written in the fixture's header.

Fixture format (see tests/ops/README.md): leading comment lines
    // op: <opcode>
    // source: <where the expected value comes from>
    // expect: <HLO literal with shape, e.g. s32[2] {1, 2}; tuples (s32[] 1, f32[] 2)>
    // tolerance: <float>      (optional)
    // error: <substring>      (instead of expect: the run must fail with it in stderr)
    // xfail: <why>            (optional: a known gap; the fixture must still fail, and
                                passing is reported as a failure so the line gets removed)
A comment line that starts with "//" and three or more spaces continues the
previous key's value, so long literals can wrap.

Usage: test_op_fixtures.py [NAME_SUBSTRING ...]  (only fixtures whose file name
contains one of the substrings). HL_OPS_DIR overrides the fixture directory,
HL_FIXTURE_JOBS the number of batch jobs the fixtures are split among (default 2;
each job runs its fixtures one after another in one MPI job).
"""

import concurrent.futures
import glob
import math
import os
import re
import sys

import numpy as np

import hl_testlib as hl

OPS_DIR = os.environ.get("HL_OPS_DIR", os.path.join(hl.SOURCE_DIR, "tests", "ops"))
# Batch jobs at once: one per core keeps both busy while the other checks.
JOBS = max(1, int(os.environ.get("HL_FIXTURE_JOBS", "2")))
KEYS = ("op", "source", "expect", "tolerance", "error", "xfail")

# ---------------------------------------------------------------- element types
NATIVE = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}
# Sub-byte integers: one byte per element in the .npy ('<V1'); bit width.
SUB_BYTE_INT = {"s1": (1, True), "s2": (2, True), "s4": (4, True),
                "u1": (1, False), "u2": (2, False), "u4": (4, False)}
# Narrow floats, written as '<V1' / '<V2' (raw bytes):
#   (total bits, exponent bits, mantissa bits, bias, encoding)
#   ieee: exponent all ones is inf (mantissa 0) or NaN
#   fn:   no inf; exponent and mantissa all ones is NaN
#   fnuz: no inf, no -0; the pattern 1000..0 is NaN (and bias is one more)
#   e8m0: exponent only, unsigned; all ones is NaN
#   none: no inf and no NaN (f4e2m1fn, f6e2m3fn, f6e3m2fn: OCP MX)
NARROW_FLOAT = {
    "bf16": (16, 8, 7, 127, "ieee"),
    "f8e5m2": (8, 5, 2, 15, "ieee"),
    "f8e4m3": (8, 4, 3, 7, "ieee"),
    "f8e3m4": (8, 3, 4, 3, "ieee"),
    "f8e4m3fn": (8, 4, 3, 7, "fn"),
    "f8e4m3fnuz": (8, 4, 3, 8, "fnuz"),
    "f8e5m2fnuz": (8, 5, 2, 16, "fnuz"),
    "f8e4m3b11fnuz": (8, 4, 3, 11, "fnuz"),
    "f8e8m0fnu": (8, 8, 0, 127, "e8m0"),
    "f4e2m1fn": (4, 2, 1, 1, "none"),
    "f6e2m3fn": (6, 2, 3, 1, "none"),
    "f6e3m2fn": (6, 3, 2, 3, "none"),
}
FLOAT_NAMES = {"f16", "f32", "f64"} | set(NARROW_FLOAT)
COMPLEX_NAMES = {"c64", "c128"}
INT_NAMES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"} | set(SUB_BYTE_INT)


def default_tolerance(dtype):
    """Relative (and absolute) tolerance when the fixture states none."""
    if dtype in ("f32", "f64", "c64", "c128"):
        return 1e-6
    if dtype in ("f16", "bf16"):
        return 1e-2
    if dtype in NARROW_FLOAT:  # one ulp of the type
        return 2.0 ** -max(NARROW_FLOAT[dtype][2], 1)
    return 0.0


def decode_narrow_float(raw, name):
    """Raw little-endian codes (uint array) -> float64 values."""
    bits, ebits, mbits, bias, enc = NARROW_FLOAT[name]
    out = np.empty(raw.shape, np.float64)
    flat_raw, flat_out = raw.reshape(-1), out.reshape(-1)
    mask = (1 << bits) - 1
    for i, code in enumerate(flat_raw.tolist()):
        code &= mask
        if enc == "e8m0":
            flat_out[i] = math.nan if code == 0xFF else math.ldexp(1.0, code - bias)
            continue
        sign = -1.0 if (code >> (bits - 1)) & 1 else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        emax = (1 << ebits) - 1
        if enc == "ieee" and e == emax:
            flat_out[i] = sign * math.inf if m == 0 else math.nan
            continue
        if enc == "fn" and e == emax and m == (1 << mbits) - 1:
            flat_out[i] = math.nan
            continue
        if enc == "fnuz" and code == 1 << (bits - 1):
            flat_out[i] = math.nan
            continue
        if e == 0:
            flat_out[i] = sign * math.ldexp(m, 1 - bias - mbits)
        else:
            flat_out[i] = sign * math.ldexp((1 << mbits) + m, e - bias - mbits)
    return out


# ---------------------------------------------------------------- literal parser
class ParseError(Exception):
    pass


class Leaf:
    """One array of an expected literal: dtype name, dims, flat Python values."""

    def __init__(self, dtype, dims, values):
        self.dtype, self.dims, self.values = dtype, dims, values

    def describe(self):
        return "%s[%s]" % (self.dtype, ",".join(str(d) for d in self.dims))


_TOKEN = re.compile(r"""\s*(?:
    (?P<shape>[a-z][a-z0-9]*\[[^\]]*\])
  | (?P<num>[-+]?(?:nan(?:\(0x[0-9a-fA-F]+\))?|inf|
        0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
  | (?P<word>true|false)
  | (?P<punct>[{}(),])
  | (?P<comment>/\*.*?\*/)
)""", re.X)


class LiteralParser:
    """Parses the stand-alone HLO literal form: "f32[2] {1, 2}", "(s32[] 1, pred[] true)"."""

    def __init__(self, text):
        self.text, self.pos = text, 0

    def fail(self, what):
        raise ParseError("%s at column %d of %r" % (what, self.pos + 1, self.text))

    def peek(self):
        while True:
            m = _TOKEN.match(self.text, self.pos)
            if not m:
                if self.text[self.pos:].strip():
                    self.fail("unexpected text")
                return None, None, self.pos
            if m.group("comment"):
                self.pos = m.end()
                continue
            kind = m.lastgroup
            return kind, m.group(kind), m.end()

    def next(self):
        kind, tok, end = self.peek()
        if kind is None:
            self.fail("unexpected end")
        self.pos = end
        return kind, tok

    def expect(self, tok):
        kind, got = self.next()
        if got != tok:
            self.fail("expected %r, got %r" % (tok, got))

    def parse(self):
        leaves = self.literal()
        if self.peek()[0] is not None:
            self.fail("trailing text")
        return leaves

    def literal(self):
        """Returns the list of leaves (tuples flattened depth-first)."""
        kind, tok, _ = self.peek()
        if tok == "(":
            self.next()
            leaves = []
            if self.peek()[1] == ")":
                self.next()
                return leaves
            while True:
                leaves += self.literal()
                kind, tok = self.next()
                if tok == ")":
                    return leaves
                if tok != ",":
                    self.fail("expected ',' or ')' in a tuple")
        if kind != "shape":
            self.fail("expected a shape like f32[2,3]")
        self.next()
        m = re.fullmatch(r"([a-z][a-z0-9]*)\[([^\]]*)\]", tok)
        dtype, dims_text = m.group(1), m.group(2).strip()
        dims = [int(d) for d in dims_text.split(",")] if dims_text else []
        # A layout is written right after the dims, without a space: f32[2]{0}.
        if self.text.startswith("{", self.pos):
            close = self.text.index("}", self.pos)
            if re.fullmatch(r"[\d,\s:A-Za-z()]*", self.text[self.pos + 1:close]):
                self.pos = close + 1
        if dtype == "token":
            return []
        if dtype not in NATIVE and dtype not in NARROW_FLOAT and dtype not in SUB_BYTE_INT:
            self.fail("unknown element type %r" % dtype)
        values = []
        if not dims:
            values.append(self.scalar(dtype))
        else:
            self.array(dtype, dims, 0, values)
        count = 1
        for d in dims:
            count *= d
        if len(values) != count:
            self.fail("%d values for %s" % (len(values), tok))
        return [Leaf(dtype, dims, values)]

    def array(self, dtype, dims, depth, values):
        self.expect("{")
        if self.peek()[1] == "}":
            self.next()
            return
        n = 0
        while True:
            if depth + 1 < len(dims):
                self.array(dtype, dims, depth + 1, values)
            else:
                values.append(self.scalar(dtype))
            n += 1
            kind, tok = self.next()
            if tok == "}":
                break
            if tok != ",":
                self.fail("expected ',' or '}'")
        if n != dims[depth]:
            self.fail("dimension %d has %d entries, expected %d" % (depth, n, dims[depth]))

    def number(self, dtype):
        kind, tok = self.next()
        if kind == "word":
            return 1 if tok == "true" else 0
        if kind != "num":
            self.fail("expected a number, got %r" % tok)
        t = tok.lstrip("+")
        neg = t.startswith("-")
        body = t.lstrip("-")
        if body.startswith("nan"):
            return math.nan
        if body == "inf":
            return -math.inf if neg else math.inf
        if body.startswith("0x"):
            v = int(body, 16)
            return -v if neg else v
        if dtype in INT_NAMES or dtype == "pred":
            if re.fullmatch(r"\d+", body):
                return int(t)
            f = float(t)
            if f != int(f):
                self.fail("non-integer %r for %s" % (tok, dtype))
            return int(f)
        return float(t)

    def scalar(self, dtype):
        if dtype in COMPLEX_NAMES:
            self.expect("(")
            re_ = self.number(dtype)
            self.expect(",")
            im = self.number(dtype)
            self.expect(")")
            return complex(re_, im)
        return self.number(dtype)


def parse_literal(text):
    return LiteralParser(text).parse()


# ---------------------------------------------------------------- fixtures
def read_header(path):
    """Returns {key: value} from the fixture's leading comment lines."""
    header, last = {}, None
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if not s.startswith("//"):
                break
            body = s[2:]
            m = re.match(r"\s*([a-z_]+):\s?(.*)$", body)
            if m and m.group(1) in KEYS:
                last = m.group(1)
                if last in header:
                    raise ParseError("%s: key %r given twice" % (path, last))
                header[last] = m.group(2).strip()
            elif last and body.startswith("   "):
                header[last] += " " + body.strip()
            else:
                last = None
    return header


def leaf_from_file(path, leaf):
    """Loads result file `path` as the expected leaf's type; returns (array, message)."""
    a = np.load(path, allow_pickle=False)
    want_shape = tuple(leaf.dims)
    if a.shape != want_shape:
        return None, "shape %s, expected %s" % (a.shape, leaf.describe())
    dt = leaf.dtype
    if dt in NATIVE:
        if a.dtype != np.dtype(NATIVE[dt]):
            return None, "dtype %s, expected %s (%s)" % (a.dtype, np.dtype(NATIVE[dt]), dt)
        return a, None
    size = 2 if dt == "bf16" else 1
    if a.dtype.itemsize != size or a.dtype.kind not in "Vfiu":
        return None, "dtype %s, expected a %d-byte raw type for %s" % (a.dtype, size, dt)
    raw = np.frombuffer(a.tobytes(), dtype=np.uint16 if size == 2 else np.uint8)
    raw = raw.reshape(want_shape).astype(np.int64)
    if dt in SUB_BYTE_INT:
        width, signed = SUB_BYTE_INT[dt]
        v = raw & ((1 << width) - 1)
        if signed:
            v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        return v, None
    return decode_narrow_float(raw, dt), None


def compare_leaf(got, leaf, tol):
    dt = leaf.dtype
    shape = tuple(leaf.dims)
    if dt == "pred":
        want = np.array([bool(v) for v in leaf.values], np.bool_).reshape(shape)
        ok = np.array_equal(got, want)
    elif dt in INT_NAMES:
        want = np.array(leaf.values, dtype=object).reshape(shape)
        ok = all(int(g) == int(w) for g, w in zip(np.asarray(got).reshape(-1).tolist(),
                                                 want.reshape(-1).tolist()))
    else:
        t = default_tolerance(dt) if tol is None else tol
        if dt in COMPLEX_NAMES:
            want = np.array(leaf.values, np.complex128).reshape(shape)
            g = np.asarray(got, np.complex128)
            ok = (np.allclose(g.real, want.real, rtol=t, atol=t, equal_nan=True) and
                  np.allclose(g.imag, want.imag, rtol=t, atol=t, equal_nan=True))
        else:
            want = np.array(leaf.values, np.float64).reshape(shape)
            g = np.asarray(got, np.float64)
            ok = np.allclose(g, want, rtol=t, atol=t, equal_nan=True)
            # allclose treats inf == inf already; make -0/0 and NaN explicit no-ops.
    if ok:
        return None
    with np.printoptions(threshold=200, precision=9):
        return "got\n%s\nexpected\n%s%s" % (
            np.asarray(got), want, "" if dt in INT_NAMES or dt == "pred" else
            "\n(tolerance %g)" % (default_tolerance(dt) if tol is None else tol))


def run_fixture(path, batch):
    """Judges one fixture from the batch run; returns None on success, else a message."""
    header = read_header(path)
    if "op" not in header:
        return "header has no '// op:' line"
    if "source" not in header:
        return "header has no '// source:' line"
    if ("expect" in header) == ("error" in header):
        return "header needs exactly one of '// expect:' and '// error:'"
    tol = None
    if "tolerance" in header:
        tol = float(header["tolerance"].split()[0])
    leaves = parse_literal(header["expect"]) if "expect" in header else None
    verdict = batch.verdicts.get(path)
    if verdict is None:
        return "no verdict from the batch run\n" + batch.result.describe()
    stderr = batch.stderr_of.get(path, "")
    if leaves is None:
        if verdict == "passed":
            return "succeeded, expected a failure with %r" % header["error"]
        if header["error"] not in stderr and header["error"] not in verdict:
            return "stderr lacks %r\n%s\n%s" % (header["error"], verdict, stderr)
        return None
    if verdict != "passed":
        return "hlo-launch failed: %s\n%s" % (verdict, stderr)
    out = batch.program_output_dir(path)
    msgs = []
    for i, leaf in enumerate(leaves):
        p = hl.output_path(out, 0, 0, i)
        if not os.path.exists(p):
            msgs.append("result%d (%s): missing" % (i, leaf.describe()))
            continue
        got, msg = leaf_from_file(p, leaf)
        if msg is None:
            msg = compare_leaf(got, leaf, tol)
        if msg:
            msgs.append("result%d (%s): %s" % (i, leaf.describe(), msg))
    extra = hl.output_path(out, 0, 0, len(leaves))
    if os.path.exists(extra):
        msgs.append("more results than expected (%s exists)" % os.path.basename(extra))
    return "\n".join(msgs) or None


def self_test():
    """Checks of the parser and decoders against hand-worked values."""
    lv = parse_literal("(s32[2,2] {{1, 2}, {3, -4}}, f32[] -inf, c64[1] {(1, -2.5)}, "
                       "pred[2]{0} {true, false}, (bf16[0] {}, u8[] 0x1f))")
    assert [l.describe() for l in lv] == ["s32[2,2]", "f32[]", "c64[1]", "pred[2]",
                                         "bf16[0]", "u8[]"], lv
    assert lv[0].values == [1, 2, 3, -4] and lv[1].values == [-math.inf]
    assert lv[2].values == [complex(1, -2.5)] and lv[3].values == [1, 0]
    assert lv[5].values == [31]
    assert math.isnan(parse_literal("f32[] nan")[0].values[0])
    for bad in ("f32[2] {1}", "f32[2] {1, 2", "q7[] 1", "s32[] 1.5"):
        try:
            parse_literal(bad)
        except ParseError:
            continue
        raise AssertionError("parsed %r" % bad)
    d = lambda name, codes: decode_narrow_float(np.array(codes, np.int64), name).tolist()
    assert d("bf16", [0x3F80, 0xC000, 0x7F80, 0x0001]) == [1.0, -2.0, math.inf, 2.0 ** -133]
    assert d("f8e4m3fn", [0x38, 0x7E, 0x01]) == [1.0, 448.0, 2.0 ** -9]
    assert math.isnan(d("f8e4m3fn", [0x7F])[0])
    assert d("f8e5m2", [0x3C, 0x7B, 0x7C]) == [1.0, 57344.0, math.inf]
    assert d("f8e4m3fnuz", [0x40, 0x7F]) == [1.0, 240.0]
    assert math.isnan(d("f8e5m2fnuz", [0x80])[0])
    assert d("f8e4m3b11fnuz", [0x58]) == [1.0]
    assert d("f8e4m3", [0x38, 0x77, 0x78]) == [1.0, 240.0, math.inf]
    assert d("f8e3m4", [0x30, 0x6F]) == [1.0, 15.5]
    assert d("f8e8m0fnu", [127, 128, 0]) == [1.0, 2.0, 2.0 ** -127]
    assert d("f4e2m1fn", [0x2, 0x7, 0xF, 0x1]) == [1.0, 6.0, -6.0, 0.5]
    assert d("f6e2m3fn", [0x1F, 0x3F, 0x01, 0x21]) == [7.5, -7.5, 0.125, -0.125]
    assert d("f6e3m2fn", [0x1F, 0x3F, 0x01, 0x21]) == [28.0, -28.0, 0.0625, -0.0625]


def main():
    self_test()
    hl.require_binaries("hlo-launch")
    files = sorted(glob.glob(os.path.join(OPS_DIR, "*.hlo")))
    if sys.argv[1:]:
        files = [f for f in files if any(s in os.path.basename(f) for s in sys.argv[1:])]
    if not files:
        sys.exit("FAIL: no fixtures in %s" % OPS_DIR)
    names = [os.path.basename(f)[:-len(".hlo")] for f in files]

    def guarded(path, batch):
        try:
            msg = run_fixture(path, batch)
            xfail = read_header(path).get("xfail")
        except Exception as e:  # a bad header or literal is that fixture's failure
            import traceback
            return "exception: %r\n%s" % (e, traceback.format_exc())
        if xfail is None:
            return msg
        if msg is None:
            return "passes but is marked 'xfail: %s'; remove that line" % xfail
        return "XFAIL: " + xfail

    # Every fixture in one MPI job (batch mode), the fixtures split among
    # JOBS jobs so that start-up and checking overlap.
    def run_share(share):
        with hl.tempdir("opfix") as out:
            batch = hl.run_batch(share, np_=1, output_dir=out)
            return [guarded(p, batch) for p in share]

    shares = [files[k::JOBS] for k in range(JOBS) if files[k::JOBS]]
    by_path = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(shares)) as pool:
        for share, msgs in zip(shares, pool.map(run_share, shares)):
            by_path.update(zip(share, msgs))
    results = [by_path[f] for f in files]
    failures, xfails = [], 0
    for name, msg in zip(names, results):
        if msg and msg.startswith("XFAIL: "):
            xfails += 1
            print("xfail %s: %s" % (name, msg[len("XFAIL: "):]), flush=True)
        elif msg:
            failures.append(name)
            print("FAIL %s\n%s\n" % (name, msg), flush=True)
        else:
            print("ok   %s" % name, flush=True)
    print("%d passed, %d failed%s" % (len(files) - len(failures) - xfails, len(failures),
                                      ", %d expected failures (xfail)" % xfails if xfails else ""))
    if failures:
        print("failed: " + ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
