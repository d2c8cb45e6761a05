#!/usr/bin/env python3
"""Physical layouts, generated: random shapes and layout pairs, chains of
copies to other layouts and bitcasts, in the entry computation, inside a
fusion and inside a while body, on every element type (sub-byte ones packed
with E(n)), run through hlo-launch on 1 process (HLO text) and 2 processes
(the same program as a binary HloProto), compared byte for byte with a NumPy
model written from XLA's layout documentation, not from this runtime:

  * minor_to_major lists the dimensions from fastest to slowest varying, so
    logical index i sits at physical position sum_k i[m2m[k]] * prod_{j<k}
    dims[m2m[j]] (xla/layout.h; shared/reference/HLO_FORMAT_FACTS.md §3.5);
  * a copy to another layout keeps the logical values;
  * a bitcast reinterprets the physical bytes: the operand's bytes in its
    physical order are the result's bytes in the result's physical order
    (xla-operation-semantics: bitcast; docs/LAYOUTS.md).

Then the layout features without an implemented meaning for bitcast (tiles,
packed storage across element types, unequal byte sizes) must fail with a
message naming the instruction.
"""

import os

import numpy as np

import hl_testlib as hl

rng = np.random.default_rng(20261124)

# (HLO name, bytes per element in memory, bits if sub-byte, numpy dtype for .npy or None)
TYPES = [
    ("pred", 1, 1, np.bool_), ("s1", 1, 1, None), ("u1", 1, 1, None), ("s2", 1, 2, None),
    ("u2", 1, 2, None), ("s4", 1, 4, None), ("u4", 1, 4, None), ("f4e2m1fn", 1, 4, None),
    ("s8", 1, 0, np.int8), ("u8", 1, 0, np.uint8), ("f8e5m2", 1, 0, None),
    ("f8e4m3fn", 1, 0, None), ("f8e4m3b11fnuz", 1, 0, None), ("f8e5m2fnuz", 1, 0, None),
    ("f8e4m3fnuz", 1, 0, None), ("f8e4m3", 1, 0, None), ("f8e3m4", 1, 0, None),
    ("f8e8m0fnu", 1, 0, None), ("s16", 2, 0, np.int16), ("u16", 2, 0, np.uint16),
    ("f16", 2, 0, np.float16), ("bf16", 2, 0, None), ("s32", 4, 0, np.int32),
    ("u32", 4, 0, np.uint32), ("f32", 4, 0, np.float32), ("s64", 8, 0, np.int64),
    ("u64", 8, 0, np.uint64), ("f64", 8, 0, np.float64), ("c64", 8, 0, np.complex64),
    ("c128", 16, 0, np.complex128),
]
BYTE_TYPES = {"s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "f32": 4, "u64": 8, "c128": 16}


# ------------------------------------------------------------ the NumPy model
def physical_positions(dims, m2m):
    """Physical position of every element, in logical row-major order."""
    idx = np.indices(dims).reshape(len(dims), -1) if dims else np.zeros((0, 1), np.int64)
    pos = np.zeros(idx.shape[1], np.int64)
    stride = 1
    for d in m2m:
        pos += idx[d] * stride
        stride *= dims[d]
    return pos


def to_physical(elems, dims, m2m):
    """elems: (n, itemsize) uint8 rows in logical row-major order -> physical bytes."""
    out = np.empty_like(elems)
    out[physical_positions(dims, m2m)] = elems
    return out.reshape(-1)


def from_physical(stream, dims, m2m, itemsize):
    rows = stream.reshape(-1, itemsize)
    return rows[physical_positions(dims, m2m)]


class Arr:
    """A generated value: HLO type, dims, layout, and its elements as bytes."""

    def __init__(self, ty, dims, m2m, elems, suffix=""):
        self.ty, self.dims, self.m2m, self.elems, self.suffix = ty, dims, m2m, elems, suffix

    def shape(self):
        dims = ",".join(str(d) for d in self.dims)
        if not self.dims:
            return "%s[]" % self.ty
        return "%s[%s]{%s%s}" % (self.ty, dims, ",".join(str(d) for d in self.m2m),
                                 (":" + self.suffix) if self.suffix else "")


def itemsize(ty):
    return next(t[1] for t in TYPES if t[0] == ty)


def random_dims(n):
    """Random dims (rank 1..4) whose product is n."""
    rank = int(rng.integers(1, 5))
    if n == 0:
        dims = [int(d) for d in rng.integers(1, 4, rank)]
        dims[int(rng.integers(0, rank))] = 0
        return dims
    dims = []
    rest = n
    for _ in range(rank - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = int(rng.choice(divs))
        dims.append(d)
        rest //= d
    dims.append(rest)
    rng.shuffle(dims)
    return [int(d) for d in dims]


def random_layout(rank):
    return [int(d) for d in rng.permutation(rank)]


def random_values(ty, n):
    size, bits, _ = next(t[1:] for t in TYPES if t[0] == ty)[:3]
    if ty == "pred":
        return rng.integers(0, 2, (n, 1)).astype(np.uint8)
    if bits:
        if ty.startswith("s"):  # sub-byte signed: sign-extended in its byte
            v = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), n).astype(np.int8)
            return v.view(np.uint8).reshape(n, 1)
        return rng.integers(0, 1 << bits, (n, 1)).astype(np.uint8)
    return rng.integers(0, 256, (n, size)).astype(np.uint8)


SUB_BYTE_PEERS = {1: ["s1", "u1"], 2: ["s2", "u2"], 4: ["s4", "u4", "f4e2m1fn"]}


def retype_sub_byte(elems, src, dst):
    """A bitcast between sub-byte types of one width keeps each element's low
    bits (XLA stores an unpacked sub-byte element in the low bits of its byte,
    a packed one in `width` bits); signed types hold them sign-extended here."""
    bits = next(t[2] for t in TYPES if t[0] == dst)
    if src == dst or not bits or dst == "pred":
        return elems
    low = elems & ((1 << bits) - 1)
    if dst.startswith("s"):
        neg = (low >> (bits - 1)) & 1
        low = np.where(neg == 1, low | (0xFF ^ ((1 << bits) - 1)), low)
    return low.astype(np.uint8)


# ------------------------------------------------------------ program builder
class Builder:
    def __init__(self, ty):
        self.ty, self.size = ty, itemsize(ty)
        bits = next(t[2] for t in TYPES if t[0] == ty)
        # Sub-byte types are packed (E(bits)) as XLA's CPU/GPU layouts do.
        self.packed = "E(%d)" % bits if bits and ty != "pred" else ""
        self.params, self.outputs, self.lines, self.comps = [], [], [], []
        self.n = 0

    def name(self, base):
        self.n += 1
        return "%s.%s.%d" % (base, self.ty, self.n)

    def suffix(self):
        parts = [self.packed] if self.packed else []
        if rng.random() < 0.3:
            parts.append("S(%d)" % int(rng.integers(1, 3)))
        return "".join(parts)

    def param(self, lines, arr, index):
        name = self.name("Arg")
        lines.append("  %s = %s parameter(%d)" % (name, arr.shape(), index))
        return name

    def copy(self, lines, src, arr):
        """copy to a random layout: the values stay."""
        out = Arr(arr.ty, arr.dims, random_layout(len(arr.dims)), arr.elems, self.suffix())
        name = self.name("copy")
        lines.append("  %s = %s copy(%s)" % (name, out.shape(), src))
        return name, out

    def bitcast(self, lines, src, arr, ty=None, dims=None, m2m=None, suffix=None):
        """bitcast to random dims / layout (and maybe another type of the same bytes)."""
        ty = ty or arr.ty
        size = itemsize(ty)
        nbytes = len(arr.elems) * self.size if arr.ty == self.ty else arr.elems.size
        dims = dims if dims is not None else random_dims(nbytes // size)
        m2m = m2m if m2m is not None else random_layout(len(dims))
        stream = to_physical(arr.elems, arr.dims, arr.m2m)
        elems = retype_sub_byte(from_physical(stream, dims, m2m, size), arr.ty, ty)
        if suffix is None:
            suffix = self.suffix() if ty == self.ty else ""
        out = Arr(ty, dims, m2m, elems, suffix)
        name = self.name("bitcast")
        lines.append("  %s = %s bitcast(%s)" % (name, out.shape(), src))
        return name, out

    def chain(self, lines, src, arr, steps):
        for _ in range(steps):
            src, arr = self.copy(lines, src, arr)
            src, arr = self.bitcast(lines, src, arr)
        return src, arr


def build_part(ty, seed_count, first_param):
    """For one element type: entry chains, a fused chain, a while-body chain
    and (for byte-sized types) a bitcast to another element type. Returns the
    computations, the entry's lines, its inputs and its results (with models)."""
    b = Builder(ty)
    entry, roots, inputs = [], [], []

    def new_input():
        n = int(rng.choice([0, 6, 12, 24, 30, 36, 60, 120], p=[0.05] + [0.95 / 7] * 7))
        arr = Arr(ty, random_dims(n), None, random_values(ty, n), b.packed)
        arr.m2m = random_layout(len(arr.dims))
        name = b.param(entry, arr, first_param + len(inputs))
        inputs.append(arr)
        return name, arr

    # 1. Entry: copy / bitcast chains.
    for _ in range(seed_count):
        src, arr = new_input()
        src, arr = b.chain(entry, src, arr, int(rng.integers(1, 4)))
        roots.append((src, arr))

    # 2. The same inside a fusion.
    src, arr = new_input()
    body = []
    fp = Arr(arr.ty, arr.dims, arr.m2m, arr.elems, arr.suffix)
    body.append("  param_0 = %s parameter(0)" % fp.shape())
    fsrc, farr = b.chain(body, "param_0", fp, 2)
    body[-1] = "  ROOT" + body[-1][1:]
    b.comps.append("fused_chain_%s {\n%s\n}\n" % (ty, "\n".join(body)))
    name = b.name("fusion")
    entry.append("  %s = %s fusion(%s), kind=kLoop, calls=fused_chain_%s" % (
        name, farr.shape(), src, ty))
    roots.append((name, farr))

    # 3. A while body that maps the state through a copy / bitcast chain back
    #    to its own shape and layout; three iterations apply the model thrice.
    src, arr = new_input()
    state = "(s32[], %s)" % arr.shape()
    chain = []
    wsrc, warr = b.chain(chain, "x", arr, 1)
    wsrc, warr = b.copy(chain, wsrc, warr)
    wsrc, warr = b.bitcast(chain, wsrc, warr, dims=arr.dims, m2m=arr.m2m, suffix=arr.suffix)
    wb = ["  st = %s parameter(0)" % state,
          "  i = s32[] get-tuple-element(st), index=0",
          "  x = %s get-tuple-element(st), index=1" % arr.shape(),
          "  one = s32[] constant(1)",
          "  i1 = s32[] add(i, one)"] + chain
    wb.append("  ROOT t = %s tuple(i1, %s)" % (state, wsrc))
    b.comps.append("loop_body_%s {\n%s\n}\n" % (ty, "\n".join(wb)))
    b.comps.append("loop_cond_%s {\n  st = %s parameter(0)\n  i = s32[] get-tuple-element(st), "
                   "index=0\n  three = s32[] constant(3)\n  ROOT lt = pred[] compare(i, three), "
                   "direction=LT\n}\n" % (ty, state))
    elems = arr.elems
    for _ in range(3):
        elems = replay(chain, arr, elems)
    zero, init, loop, res = (b.name(s) for s in ("zero", "init", "while", "gte"))
    entry += ["  %s = s32[] constant(0)" % zero,
              "  %s = %s tuple(%s, %s)" % (init, state, zero, src),
              "  %s = %s while(%s), condition=loop_cond_%s, body=loop_body_%s" % (
                  loop, state, init, ty, ty),
              "  %s = %s get-tuple-element(%s), index=1" % (res, arr.shape(), loop)]
    roots.append((res, Arr(ty, arr.dims, arr.m2m, elems, arr.suffix)))

    # 4. A bitcast to another element type: of the same bytes for byte-sized
    #    types, of the same width (and packing) for sub-byte ones.
    bits = next(t[2] for t in TYPES if t[0] == ty)
    if bits and ty != "pred":
        src, arr = new_input()
        src, arr = b.copy(entry, src, arr)
        other = str(rng.choice([t for t in SUB_BYTE_PEERS[bits] if t != ty]))
        src, arr = b.bitcast(entry, src, arr, ty=other, suffix=b.packed)
        roots.append((src, arr))
    if b.size and bits == 0:
        src, arr = new_input()
        src, arr = b.copy(entry, src, arr)
        nbytes = arr.elems.size
        other = str(rng.choice([t for t, s in BYTE_TYPES.items()
                                if (nbytes % s == 0 or nbytes == 0) and t != ty]))
        src, arr = b.bitcast(entry, src, arr, ty=other)
        roots.append((src, arr))

    return b.comps, entry, inputs, roots


def build_program(types, seed_count=3):
    """One module holding a part per element type, its ROOT a tuple of all
    results (fewer, larger jobs keep the sanitizer runs short)."""
    comps, entry, inputs, roots = [], [], [], []
    for ty in types:
        c, e, i, r = build_part(ty, seed_count, len(inputs))
        comps += c
        entry += e
        inputs += i
        roots += r
    shapes = ", ".join(a.shape() for _, a in roots)
    entry.append("  ROOT out = (%s) tuple(%s)" % (shapes, ", ".join(n for n, _ in roots)))
    text = "HloModule layouts\n\n%s\nENTRY main {\n%s\n}\n" % (
        "\n".join(comps), "\n".join(entry))
    return text, inputs, [a for _, a in roots]


def replay(lines, start, elems):
    """Applies the model of a copy/bitcast chain (its HLO lines) to elems."""
    cur = Arr(start.ty, start.dims, start.m2m, elems)
    for line in lines:
        shape_text = line.split(" = ", 1)[1].rsplit(" ", 1)[0]
        ty, rest = shape_text.split("[", 1)
        dims_text, lay = rest.split("]", 1)
        dims = [int(d) for d in dims_text.split(",")] if dims_text else []
        m2m_text = lay.strip("{}").split(":")[0]
        m2m = [int(d) for d in m2m_text.split(",")] if m2m_text else []
        if " copy(" in line:
            cur = Arr(ty, dims, m2m, cur.elems)
        else:
            stream = to_physical(cur.elems, cur.dims, cur.m2m)
            cur = Arr(ty, dims, m2m, from_physical(stream, dims, m2m, itemsize(ty)))
    return cur.elems


# ------------------------------------------------------------ running
def npy_array(arr):
    np_type = next(t[3] for t in TYPES if t[0] == arr.ty)
    raw = np.ascontiguousarray(arr.elems).reshape(-1)
    if np_type is not None:
        return raw.view(np_type).reshape(arr.dims)
    return raw.view("V%d" % itemsize(arr.ty)).reshape(arr.dims)


def check_outputs(out_dir, replica, want):
    problems = []
    for j, w in enumerate(want):
        try:
            got = np.load(hl.output_path(out_dir, replica, 0, j))
        except OSError as e:
            return ["replica %d: output %d missing: %s" % (replica, j, e)]
        g = np.ascontiguousarray(got).reshape(-1).view(np.uint8)
        if list(got.shape) != list(w.dims):
            problems.append("output %d: shape %s, expected %s" % (j, got.shape, w.dims))
        elif not np.array_equal(g, w.elems.reshape(-1)):
            problems.append("replica %d output %d (%s): bytes\n%s\nexpected\n%s" % (
                replica, j, w.shape(), g, w.elems.reshape(-1)))
    return problems


def run_types(types):
    text, inputs, want = build_program(types)
    with hl.tempdir("layouts") as tmp:
        program = os.path.join(tmp, "p.hlo")
        with open(program, "w") as f:
            f.write(text)
        pb = os.path.join(tmp, "p.pb")
        res = hl.convert(program, pb)
        if res.returncode != 0:
            return "hlo-convert failed\n%s\n%s" % (res.describe(), text)
        args = os.path.join(tmp, "args")
        hl.write_args(args, [npy_array(a) for a in inputs])
        problems = []
        for path, ranks in ((program, 1), (pb, 2)):
            out = os.path.join(tmp, "out%d" % ranks)
            res = hl.launch(path, ranks, 1, args_dir=args, output_dir=out)
            if res.returncode != 0 or res.timed_out:
                return "%s on %d processes failed\n%s\n%s" % (path, ranks, res.describe(), text)
            for r in range(ranks):
                problems += check_outputs(out, r, want)
        if problems:
            return "\n".join(problems[:6]) + "\n" + text
    return None


# ------------------------------------------------------------ errors
ERRORS = [
    # (name, shapes and instruction, what stderr must say)
    ("tiled", "  p = f32[8,128]{1,0} parameter(0)\n"
              "  c = f32[8,128]{1,0:T(8,128)} copy(p)\n"
              "  ROOT b = f32[128,8]{0,1} bitcast(c)",
     [r"instruction 'b' \(bitcast\)", r"tiled layout \(T\(\.\.\.\)\)", r"T\(8,128\)"]),
    ("packed_cross_type", "  p = s4[8]{0:E(4)} parameter(0)\n  ROOT b = u8[4]{0} bitcast(p)",
     [r"instruction 'b' \(bitcast\)", r"packed sub-byte storage"]),
    ("byte_size", "  p = f32[2,3]{1,0} parameter(0)\n  ROOT b = f32[7]{0} bitcast(p)",
     [r"instruction 'b' \(bitcast\)", r"keep the byte size", r"24 bytes", r"28"]),
    ("sub_byte_cross_type", "  p = s4[4]{0} parameter(0)\n  ROOT b = s8[4]{0} bitcast(p)",
     [r"instruction 'b' \(bitcast\)", r"unused bits of sub-byte"]),
    ("sparse", "  p = f32[4]{0} parameter(0)\n  c = f32[4]{0:D(C)} copy(p)\n"
               "  ROOT b = f32[2,2]{1,0} bitcast(c)",
     [r"instruction 'b' \(bitcast\)", r"sparse layout"]),
    ("not_a_permutation", "  p = f32[2,3]{1,1} parameter(0)\n  ROOT c = f32[2,3]{1,0} copy(p)",
     [r"e.hlo:4:\d+:", r"layout entry 1 .*repeated"]),
]


def error_case(body, patterns):
    def run():
        with hl.tempdir("layout-error") as tmp:
            program = os.path.join(tmp, "e.hlo")
            with open(program, "w") as f:
                f.write("HloModule e\n\nENTRY main {\n%s\n}\n" % body)
            res = hl.run([hl.HLO_LAUNCH, "-np", "1", "--zeros", "--timeout", "60", program])
            if res.timed_out or res.returncode == 0:
                return "expected a clean failure\n" + res.describe()
            import re
            for pat in patterns:
                if not re.search(pat, res.stderr + res.stdout):
                    return "output does not match %r\n%s" % (pat, res.describe())
            return None
    return run


def model_self_check():
    """The model reproduces the example from XLA's semantics (issue 10 §1):
    f32[2,3]{1,0} [[0,1,2],[3,4,5]] bitcast to f32[3,2]{0,1} = [[0,3],[1,4],[2,5]]."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    elems = x.reshape(-1, 1).view(np.uint8).reshape(6, 4)
    stream = to_physical(elems, [2, 3], [1, 0])
    y = from_physical(stream, [3, 2], [0, 1], 4).reshape(-1).view(np.float32).reshape(3, 2)
    if not np.array_equal(y, np.array([[0, 3], [1, 4], [2, 5]], np.float32)):
        return "model gives %s" % y
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    tests = [("model matches the documented example", model_self_check)]
    names = [t[0] for t in TYPES]
    groups = [names[i:i + 5] for i in range(0, len(names), 5)]
    tests += [("generated %s" % ", ".join(g), lambda g=g: run_types(g)) for g in groups]
    tests += [("error %s" % name, error_case(body, pats)) for name, body, pats in ERRORS]
    hl.main(tests)
