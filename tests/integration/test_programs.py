#!/usr/bin/env python3
"""Runs every program in tests/programs/ through hlo-launch on several process
grids and compares each process's outputs with NumPy's computation of the
same math, then checks that bad input fails cleanly with a useful message.

To add a program: put NAME.hlo in tests/programs/ and a CASES entry below with
its inputs and a NumPy oracle (a function of the inputs, the replica id and
the partition id returning the root's leaves in order).
"""

import os

import numpy as np

import hl_testlib as hl

# (replicas, partitions): 1, 2 and 8 processes, incl. a 2x4 grid.
GRIDS = [(1, 1), (2, 1), (8, 1), (2, 4)]

rng = np.random.default_rng(20261122)


def normal(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def away_from_zero(*shape):
    """Values with |v| in [0.5, 2): safe divisors."""
    v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return v.astype(np.float32)


# ------------------------------------------------------------------ oracles
def elementwise_f32(x, y, r, p):
    f = np.float32
    s = x + y
    prod = s * x
    diff = prod - y
    quot = diff / y
    lo = np.minimum(np.maximum(quot, x), y)
    mag = np.abs(diff)
    neg = -mag
    mag1 = mag + f(1)
    return [lo, neg, np.exp(neg), np.log(mag1), np.sqrt(mag1), np.tanh(x),
            (f(1) / np.sqrt(mag1)).astype(f), np.power(mag1, y), np.floor(quot),
            np.ceil(quot), np.sign(x), quot]


def elementwise_f16(x, y, r, p):
    s = x + y
    prod = s * y
    diff = prod - x
    quot = diff / y
    th = np.tanh(np.maximum(quot, x))
    return [quot, th, np.sqrt(np.abs(diff))]


def elementwise_bf16(xf, yf, r, p):
    b = hl.round_to_bf16
    x, y = b(xf), b(yf)
    s = b(x + y)
    prod = b(s * x)
    diff = b(prod - y)
    return [s, prod, np.minimum(diff, s)]


def elementwise_s32(x, y, sh, r, p):
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    quot = (np.abs(x64) // np.abs(y64)) * np.sign(x64) * np.sign(y64)  # C: toward zero
    rem = x64 - quot * y64                                              # sign of dividend
    i32 = lambda a: (a.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    srl = (x.view(np.uint32) >> sh.astype(np.uint32)).view(np.int32)
    return [i32(x64 + y64), i32(x64 - y64), i32(x64 * y64), i32(quot), i32(rem),
            np.maximum(x, y), np.minimum(x, y), x & y, x | y, x ^ y, ~x,
            i32(x64 << sh.astype(np.int64)), x >> sh, srl, i32(-x64), i32(np.abs(x64))]


def elementwise_u8(x, y, r, p):
    w = lambda a: (a & 0xFF).astype(np.uint8)
    x16, y16 = x.astype(np.int64), y.astype(np.int64)
    return [w(x16 + y16), w(x16 - y16), w(x16 * y16), x // y, x % y, np.maximum(x, y),
            x >> np.uint8(3), w(~x16)]


def elementwise_pred(a, b, r, p):
    return [a & b, a | b, a ^ b, ~a, a == b, a & ~b]


def compare_select_clamp(x, y, r, p):
    f = np.float32
    return [x > y, x <= y, np.where(x > y, x, y), np.minimum(np.maximum(f(-0.5), x), f(0.75)),
            np.minimum(np.maximum(f(-0.5), x), y * y)]


def convert(x, i, r, p):
    return [np.trunc(x).astype(np.int32), x != 0, x.astype(np.float16), x.astype(np.float64),
            np.trunc(np.abs(x)).astype(np.uint8), i.astype(np.float32), i.astype(np.int8),
            (i != 0).astype(np.int32)]


def data_movement(x, v, r, p):
    bv = np.broadcast_to(v, (2, 3))
    return [np.broadcast_to(x, (4, 2, 3)), x.reshape(3, 2), x.T, x[0:2, 0:3:2],
            np.concatenate([x, bv], axis=1),
            np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)),
            np.broadcast_to(np.arange(4, dtype=np.float32)[:, None], (4, 3))]


def reduce_(x, n, r, p):
    return [x.sum(axis=1, dtype=np.float32), x.max(axis=0), x.sum(dtype=np.float32),
            n.sum(axis=0, dtype=np.int32), x.max(axis=1), x.argmax(axis=1).astype(np.int32)]


def dot(a, b, c, d, e, m, r, p):
    return [np.einsum("bij,bjk->bik", a, b), c @ d, c.T @ e, (m @ m.T).astype(np.int32)]


def while_loop(x, r, p):
    v = x.copy()
    for _ in range(5):
        v = v * np.float32(2) + np.float32(1)
    return [np.int32(sum(range(1, 11))), v]


def conditional(x, r, p):
    pc = x + x if r % 2 == 0 else -x
    idx = r - 1
    branches = [lambda: x + np.float32(10), lambda: x * x, lambda: np.abs(x)]
    ic = branches[idx if 0 <= idx < 3 else 2]()
    return [pc, ic]


def call_fusion(x, y, r, p):
    c = x * np.float32(3) + y
    return [c, (c - y) * (c - y)]


def tuples(x, y, r, p):
    return [x * np.float32(1.5), y + np.array([7, -8], np.int32)]


def replica_partition_id(x, r, p):
    return [np.uint32(r), np.uint32(p), x * np.float32(10 * r + p)]


def dump_style(a, b, r, p):
    s = a + b
    m = s * a
    d = m - b
    bc = np.broadcast_to(d.sum(axis=1, dtype=np.float32)[:, None], (2, 2))
    return [s, m, d, bc, np.maximum(bc, b), a]


def old_style(a, b, r, p):
    return [(a * b).sum(dtype=np.float32) - a]


S32_X = np.array([7, -7, 2147483647, -2147483648, 100, -1, 0, 123456789], np.int32)
S32_Y = np.array([2, 2, 3, 7, -3, 5, 9, -1000], np.int32)
S32_SH = np.array([0, 1, 4, 31, 3, 2, 30, 16], np.int32)
U8_X = np.array([250, 3, 0, 128, 17, 255, 100, 9], np.uint8)
U8_Y = np.array([10, 5, 1, 2, 4, 255, 7, 3], np.uint8)

def layout_transpose(x, q, m, r, p):
    # XLA's layout rules (docs/LAYOUTS.md): a copy to another layout keeps the
    # values; a bitcast reads the operand's physical order. copy to {1,0,2}
    # then bitcast = transpose (2,0,1); {0,2,1} = transpose (1,2,0); a
    # column-major f32[3,2]{0,1} bitcast to row-major [2,3] is its transpose
    # (also inside an async computation).
    s = m.astype(np.int64)
    for _ in range(3):
        s = s.T * s + 1
    return [x.transpose(2, 0, 1), x.transpose(1, 2, 0), q.T,
            np.array([[1, 2, 3], [4, 5, 6]], np.float32), q, s.astype(np.int32), q.T]


# name -> (inputs, oracle[, tolerance override])
CASES = {
    "elementwise_f32": ([normal(2, 3), away_from_zero(2, 3)], elementwise_f32),
    "elementwise_f16": ([normal(8, dtype=np.float16), away_from_zero(8).astype(np.float16)],
                        elementwise_f16),
    "elementwise_bf16": ([normal(8), normal(8)], elementwise_bf16, (8e-3, 1e-6)),
    "elementwise_s32": ([S32_X, S32_Y, S32_SH], elementwise_s32),
    "elementwise_u8": ([U8_X, U8_Y], elementwise_u8),
    "elementwise_pred": ([np.array([1, 1, 0, 0, 1, 0], bool), np.array([1, 0, 1, 0, 0, 1], bool)],
                         elementwise_pred),
    "compare_select_clamp": ([normal(6), normal(6)], compare_select_clamp),
    "convert": ([np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.2], np.float32),
                 np.array([-3, 0, 1, 127, -128, 5], np.int32)], convert),
    "data_movement": ([normal(2, 3), normal(3)], data_movement),
    "reduce": ([normal(3, 4), rng.integers(-100, 100, (3, 4)).astype(np.int32)], reduce_),
    "dot": ([normal(2, 3, 4), normal(2, 4, 5), normal(3, 4), normal(4, 5), normal(3, 2),
             rng.integers(-9, 9, (2, 3)).astype(np.int32)], dot, (1e-5, 1e-5)),
    "while_loop": ([normal(4)], while_loop),
    "conditional": ([normal(4)], conditional),
    "call_fusion": ([normal(5), normal(5)], call_fusion),
    "tuples": ([normal(3), np.array([1, 2], np.int32)], tuples),
    "replica_partition_id": ([normal(3)], replica_partition_id),
    "dump_style": ([normal(2, 2), normal(2, 2)], dump_style, (1e-5, 1e-6)),
    "old_style": ([normal(4), normal(4)], old_style, (1e-5, 1e-6)),
    "layout_transpose": ([normal(2, 3, 4), normal(3, 2),
                          rng.integers(-5, 5, (3, 3)).astype(np.int32)], layout_transpose),
}


# All cases of one grid run in one MPI job (batch mode); each case's inputs
# in args/<file name>/, its results in out/<file name>/.
_batches = {}


def grid_batch(replicas, partitions):
    if (replicas, partitions) not in _batches:
        tmp = hl.tempdir("programs-%dx%d" % (replicas, partitions))
        args_dir, out_dir = os.path.join(tmp.name, "args"), os.path.join(tmp.name, "out")
        programs = []
        for name in sorted(CASES):
            program = os.path.join(hl.PROGRAMS_DIR, name + ".hlo")
            hl.write_args(os.path.join(args_dir, name + ".hlo"), CASES[name][0])
            programs.append(program)
        os.makedirs(out_dir)
        batch = hl.run_batch(programs, np_=None, output_dir=out_dir,
                             extra=["--replicas", str(replicas), "--partitions", str(partitions),
                                    "--args-dir", args_dir])
        _batches[(replicas, partitions)] = (tmp, batch)
    return _batches[(replicas, partitions)][1]


def run_case(name, replicas, partitions):
    inputs, oracle = CASES[name][0], CASES[name][1]
    tol = CASES[name][2] if len(CASES[name]) > 2 else None
    program = os.path.join(hl.PROGRAMS_DIR, name + ".hlo")
    batch = grid_batch(replicas, partitions)
    if not batch.passed(program):
        return "%s: %s\n%s\n%s" % (program, batch.verdicts.get(program),
                                   batch.stderr_of.get(program, ""), batch.result.describe())
    out_dir = batch.program_output_dir(program)
    problems = []
    for rank in range(replicas * partitions):
        r, p = divmod(rank, partitions)  # rank = replica * num_partitions + partition
        want = [np.asarray(w) for w in oracle(*inputs, r, p)]
        try:
            got = hl.read_outputs(out_dir, r, p, len(want))
        except OSError as e:
            return "rank %d: missing output: %s" % (rank, e)
        extra = hl.output_path(out_dir, r, p, len(want))
        if os.path.exists(extra):
            problems.append("rank %d: more outputs than the %d expected" % (rank, len(want)))
        for j, (g, w) in enumerate(zip(got, want)):
            msg = hl.compare("rank %d (replica %d, partition %d) output %d" % (rank, r, p, j),
                             g, w, tol)
            if msg:
                problems.append(msg)
    return "\n".join(problems) or None


def program_tests():
    listed = sorted(f[:-4] for f in os.listdir(hl.PROGRAMS_DIR) if f.endswith(".hlo"))
    tests = []
    # Programs other tests own (e.g. launcher_*.hlo) may have no case here.
    others = sorted(set(listed) - set(CASES))
    if others:
        print("note: no NumPy case here for: " + ", ".join(others))
    for (rr, pp) in GRIDS:
        for name in sorted(CASES):
            tests.append(("%s %dx%d" % (name, rr, pp),
                          lambda n=name, a=rr, b=pp: run_case(n, a, b)))
    return tests


# ------------------------------------------------------------------ errors
ERRORS_DIR = os.path.join(hl.PROGRAMS_DIR, "errors")


def error_grid_mismatch():
    # The program states replica_count=4; 2 processes cannot hold that grid.
    program = os.path.join(ERRORS_DIR, "grid_mismatch.hlo")
    res = hl.run([hl.HLO_LAUNCH, "-np", "2", "--timeout", "60", program])
    msg = hl.expect_failure(res, r"replica", r"\b4\b", r"\b2\b")
    if msg:
        return msg
    res = hl.run([hl.HLO_LAUNCH, "-np", "3", "--partitions", "2", program])
    return hl.expect_failure(res, r"3", r"2")


def error_malformed():
    res = hl.launch(os.path.join(ERRORS_DIR, "malformed.hlo"), 2, 1)
    return hl.expect_failure(res, r"malformed\.hlo:\d+:\d+")


def error_elided_constant():
    res = hl.launch(os.path.join(ERRORS_DIR, "elided_constant.hlo"), 1, 1)
    return hl.expect_failure(res, r"elided_constant\.hlo:\d+:\d+", r"\.pb")


def error_wrong_shape_arg():
    program = os.path.join(hl.PROGRAMS_DIR, "elementwise_f32.hlo")  # parameter 0: f32[2,3]
    with hl.tempdir("wrong-shape") as tmp:
        # Every process reads the same wrong file.
        args_dir = os.path.join(tmp, "args")
        hl.write_args(args_dir, [normal(3, 2), normal(2, 3)])
        res = hl.launch(program, 2, 1, args_dir=args_dir, output_dir=os.path.join(tmp, "out"))
        msg = hl.expect_failure(res, r"rank", r"arg0\.npy", r"f32\[2,3\]", r"\(3, 2\)")
        if msg:
            return msg
        # Only replica 1's own file is wrong: the error names that rank.
        args_dir = os.path.join(tmp, "args2")
        hl.write_args(args_dir, [normal(2, 3), normal(2, 3)])
        hl.write_args(os.path.join(args_dir, "replica1_partition0"),
                      [normal(2, 3), normal(2, 2)])
        res = hl.launch(program, 2, 1, args_dir=args_dir, output_dir=os.path.join(tmp, "out2"))
        return hl.expect_failure(res, r"rank 1\b|replica 1\b", r"replica1_partition0/arg1\.npy",
                                 r"f32\[2,3\]")


def error_unsupported_op():
    with hl.tempdir("unsupported") as tmp:
        args_dir = os.path.join(tmp, "args")
        hl.write_args(args_dir, [normal(4)])
        res = hl.launch(os.path.join(ERRORS_DIR, "unsupported_op.hlo"), 2, 1,
                        args_dir=args_dir, output_dir=os.path.join(tmp, "out"))
        return hl.expect_failure(res, r"mystery\.7", r"custom-call")


def error_tests():
    return [("error: grid mismatch", error_grid_mismatch),
            ("error: malformed file", error_malformed),
            ("error: elided constant", error_elided_constant),
            ("error: wrong-shape argument", error_wrong_shape_arg),
            ("error: unsupported op", error_unsupported_op)]


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main(program_tests() + error_tests())
