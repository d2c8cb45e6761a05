"""The fusion pass (runtime/fusion/fusion_pass.c) through hlo-launch and
hlo-convert: unfused programs (HLO op by op as a "before optimizations" dump
has them, StableHLO text as JAX prints it) run fused by default. Each must
give the same bits as the program run op by op (--no-fusion-pass), on 1 and
2 threads, and match NumPy; hlo-convert --fuse writes a module that runs to
the same bits, --explain-fusion names what was fused, and a module that
already has fusions passes unchanged.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (convert, launch, main, read_outputs, require_binaries,  # noqa: E402
                        tempdir, write_args)

R, C = 67, 300  # rows not a multiple of any block; rows longer than a vector

REDUCERS = """
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


def hlo_softmax():
    return "HloModule softmax\n" + REDUCERS + """
ENTRY main {
  x = f32[R,C] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[R] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[R,C] broadcast(mx), dimensions={0}
  sub = f32[R,C] subtract(x, mxb)
  e = f32[R,C] exponential(sub)
  zero = f32[] constant(0)
  s = f32[R] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sb = f32[R,C] broadcast(s), dimensions={0}
  ROOT d = f32[R,C] divide(e, sb)
}
"""


def hlo_layer_norm():
    return "HloModule layer_norm\n" + REDUCERS + """
ENTRY main {
  x = f32[R,C] parameter(0)
  gamma = f32[C] parameter(1)
  beta = f32[C] parameter(2)
  zero = f32[] constant(0)
  n = f32[] constant(C)
  nb = f32[R] broadcast(n), dimensions={}
  s1 = f32[R] reduce(x, zero), dimensions={1}, to_apply=add_f32
  mean = f32[R] divide(s1, nb)
  meanb = f32[R,C] broadcast(mean), dimensions={0}
  xc = f32[R,C] subtract(x, meanb)
  sq = f32[R,C] multiply(xc, xc)
  s2 = f32[R] reduce(sq, zero), dimensions={1}, to_apply=add_f32
  var = f32[R] divide(s2, nb)
  eps = f32[] constant(1e-5)
  epsb = f32[R] broadcast(eps), dimensions={}
  ve = f32[R] add(var, epsb)
  rs = f32[R] rsqrt(ve)
  rsb = f32[R,C] broadcast(rs), dimensions={0}
  y = f32[R,C] multiply(xc, rsb)
  gb = f32[R,C] broadcast(gamma), dimensions={1}
  yg = f32[R,C] multiply(y, gb)
  bb = f32[R,C] broadcast(beta), dimensions={1}
  ROOT out = f32[R,C] add(yg, bb)
}
"""


ADD_COPY = """
add_copy {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT c = f32[] copy(s)
}
"""


def hlo_mixed():
    # Sibling reduces of one input (sum and sum of squares, row-wise), a
    # column reduce of a transposed, sliced, reversed producer, a scalar
    # broadcast read by three ops, iota + convert + compare + select, a dot
    # reading a broadcast (materialized: the dot is not fused) and a tuple root.
    # A reduce whose reducer is not one op: the blocked executor refuses the
    # candidate, which stays unfused.
    return "HloModule mixed\n" + REDUCERS + ADD_COPY + """
ENTRY main {
  x = f32[R,C] parameter(0)
  w = f32[C,8] parameter(1)
  zero = f32[] constant(0)
  s1 = f32[R] reduce(x, zero), dimensions={1}, to_apply=add_f32
  sq = f32[R,C] multiply(x, x)
  s2 = f32[R] reduce(sq, zero), dimensions={1}, to_apply=add_f32
  t = f32[C,R] transpose(x), dimensions={1,0}
  sl = f32[C,R2] slice(t), slice={[0:C], [1:R]}
  rv = f32[C,R2] reverse(sl), dimensions={0}
  th = f32[C,R2] tanh(rv)
  cs = f32[R2] reduce(th, zero), dimensions={0}, to_apply=add_f32
  two = f32[] constant(2.5)
  tb = f32[R,C] broadcast(two), dimensions={}
  a1 = f32[R,C] multiply(x, tb)
  a2 = f32[R,C] add(a1, tb)
  a3 = f32[R,C] subtract(a2, tb)
  io = s32[R,C] iota(), iota_dimension=1
  iof = f32[R,C] convert(io)
  half = f32[] constant(150)
  hb = f32[R,C] broadcast(half), dimensions={}
  lt = pred[R,C] compare(iof, hb), direction=LT
  sel = f32[R,C] select(lt, a3, x)
  one = f32[] constant(1)
  ob = f32[R,C] broadcast(one), dimensions={}
  d = f32[R,8] dot(ob, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ex = f32[R,C] exponential(x)
  s3 = f32[R] reduce(ex, zero), dimensions={1}, to_apply=add_copy
  ROOT r = (f32[R], f32[R], f32[R2], f32[R,C], f32[R,8], f32[R]) tuple(s1, s2, cs, sel, d, s3)
}
""".replace("R2", str(R - 1))


def hlo_while():
    # A loop body of element-wise ops around a reduce: fused inside the body.
    return "HloModule loop\n" + REDUCERS + """
cond {
  p = (s32[], f32[R,C]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}

body {
  p = (s32[], f32[R,C]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[R,C] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  zero = f32[] constant(0)
  s = f32[R] reduce(x, zero), dimensions={1}, to_apply=add_f32
  c = f32[] constant(0.01)
  cb = f32[R] broadcast(c), dimensions={}
  sc = f32[R] multiply(s, cb)
  sb = f32[R,C] broadcast(sc), dimensions={0}
  y = f32[R,C] subtract(x, sb)
  z = f32[R,C] sine(y)
  ROOT t = (s32[], f32[R,C]) tuple(i1, z)
}

ENTRY main {
  x = f32[R,C] parameter(0)
  i0 = s32[] constant(0)
  t0 = (s32[], f32[R,C]) tuple(i0, x)
  w = (s32[], f32[R,C]) while(t0), condition=cond, body=body
  ROOT r = f32[R,C] get-tuple-element(w), index=1
}
"""


def hlo_gelu_grad():
    # An expensive op (tanh) read by two fusions whose cheap operand (z, the
    # bias add) each recomputes: tanh becomes an output of the fusion that
    # reads it (multi-output); g, read by a dot and a column reduce (a bias
    # gradient), becomes an output of the reduce's fusion. The cycle check
    # must not see a cycle through z, computed inside both fusions.
    return "HloModule gelu_grad\n" + REDUCERS + """
ENTRY main {
  x = f32[R,C] parameter(0)
  b = f32[C] parameter(1)
  w = f32[C,8] parameter(2)
  bb = f32[R,C] broadcast(b), dimensions={1}
  z = f32[R,C] add(x, bb)
  t = f32[R,C] tanh(z)
  h = f32[R,C] multiply(z, t)
  g = f32[R,C] subtract(z, t)
  gw = f32[R,8] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  db = f32[C] reduce(g, zero), dimensions={0}, to_apply=add_f32
  ROOT r = (f32[R,C], f32[R,8], f32[C]) tuple(h, gw, db)
}
"""


def hlo_adam():
    # Adam as JAX writes it: m' and v' are results and read by W's update;
    # all three become one multi-output loop fusion (one pass).
    return "HloModule adam\n" + """
ENTRY main {
  w = f32[R,C] parameter(0)
  m = f32[R,C] parameter(1)
  v = f32[R,C] parameter(2)
  g = f32[R,C] parameter(3)
  lr = f32[] parameter(4)
  b1 = f32[] constant(0.9)
  b1b = f32[R,C] broadcast(b1), dimensions={}
  c1 = f32[] constant(0.1)
  c1b = f32[R,C] broadcast(c1), dimensions={}
  m1 = f32[R,C] multiply(b1b, m)
  m2 = f32[R,C] multiply(c1b, g)
  mn = f32[R,C] add(m1, m2)
  b2 = f32[] constant(0.999)
  b2b = f32[R,C] broadcast(b2), dimensions={}
  c2 = f32[] constant(0.001)
  c2b = f32[R,C] broadcast(c2), dimensions={}
  gg = f32[R,C] multiply(g, g)
  v1 = f32[R,C] multiply(b2b, v)
  v2 = f32[R,C] multiply(c2b, gg)
  vn = f32[R,C] add(v1, v2)
  sq = f32[R,C] sqrt(vn)
  eps = f32[] constant(1e-8)
  epsb = f32[R,C] broadcast(eps), dimensions={}
  den = f32[R,C] add(sq, epsb)
  lrb = f32[R,C] broadcast(lr), dimensions={}
  num = f32[R,C] multiply(lrb, mn)
  step = f32[R,C] divide(num, den)
  wn = f32[R,C] subtract(w, step)
  ROOT r = (f32[R,C], f32[R,C], f32[R,C]) tuple(wn, mn, vn)
}
"""


def mlir_softmax():
    t = "tensor<RxCxf32>"
    return """module @jit_softmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: T {mhlo.layout_mode = "default"}) -> (T {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (T, tensor<f32>) -> tensor<Rxf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<Rxf32>
    %2 = stablehlo.maximum %1, %0 : tensor<Rxf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<Rxf32>) -> tensor<Rx1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<Rx1xf32>) -> T
    %5 = stablehlo.subtract %arg0, %4 : T
    %6 = stablehlo.exponential %5 : T
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (T, tensor<f32>) -> tensor<Rxf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<Rxf32>) -> tensor<Rx1xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<Rx1xf32>) -> T
    %10 = stablehlo.divide %6, %9 : T
    return %10 : T
  }
}
""".replace("T", t)


def mlir_layer_norm():
    t = "tensor<RxCxf32>"
    return """module @jit_layer_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: T, %arg1: tensor<Cxf32>, %arg2: tensor<Cxf32>) -> (T {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (T, tensor<f32>) -> tensor<Rxf32>
    %cst_0 = stablehlo.constant dense<CC> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<Rxf32>
    %2 = stablehlo.divide %0, %1 : tensor<Rxf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<Rxf32>) -> T
    %4 = stablehlo.subtract %arg0, %3 : T
    %5 = stablehlo.multiply %4, %4 : T
    %6 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [1] : (T, tensor<f32>) -> tensor<Rxf32>
    %7 = stablehlo.divide %6, %1 : tensor<Rxf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<Rxf32>
    %9 = stablehlo.add %7, %8 : tensor<Rxf32>
    %10 = stablehlo.rsqrt %9 : tensor<Rxf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0] : (tensor<Rxf32>) -> T
    %12 = stablehlo.multiply %4, %11 : T
    %13 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<Cxf32>) -> T
    %14 = stablehlo.multiply %12, %13 : T
    %15 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<Cxf32>) -> T
    %16 = stablehlo.add %14, %15 : T
    return %16 : T
  }
}
""".replace("T", t).replace("CC", "%.6e" % C)


def mlir_layer_norm_3d():
    # A transformer's layer norm over [batch, sequence, features] as JAX
    # lowers flax's LayerNorm: var = mean(x^2) - mean^2 (two sibling row
    # sums of x), clamped at 0, the row values broadcast through [B,S,1].
    t = "tensor<BxSxCxf32>"
    r = "tensor<BxSxf32>"
    r1 = "tensor<BxSx1xf32>"
    return """module @jit_layer_norm_3d attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: T, %arg1: tensor<Cxf32>, %arg2: tensor<Cxf32>) -> (T {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [2] : (T, tensor<f32>) -> RR
    %1 = stablehlo.multiply %arg0, %arg0 : T
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [2] : (T, tensor<f32>) -> RR
    %cst_0 = stablehlo.constant dense<CC> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> RR
    %4 = stablehlo.divide %0, %3 : RR
    %5 = stablehlo.divide %2, %3 : RR
    %6 = stablehlo.multiply %4, %4 : RR
    %7 = stablehlo.subtract %5, %6 : RR
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> RR
    %9 = stablehlo.maximum %8, %7 : RR
    %cst_1 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> RR
    %11 = stablehlo.add %9, %10 : RR
    %12 = stablehlo.rsqrt %11 : RR
    %13 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (RR) -> R1
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1, 2] : (R1) -> T
    %15 = stablehlo.subtract %arg0, %14 : T
    %16 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (RR) -> R1
    %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1, 2] : (R1) -> T
    %18 = stablehlo.multiply %15, %17 : T
    %19 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<Cxf32>) -> T
    %20 = stablehlo.multiply %18, %19 : T
    %21 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<Cxf32>) -> T
    %22 = stablehlo.add %20, %21 : T
    return %22 : T
  }
}
""".replace("T", t).replace("RR", r).replace("R1", r1).replace("CC", "%.6e" % C3) \
        .replace("BxSxCx", "%dx%dx%dx" % (B3, S3, C3)).replace("BxSx", "%dx%dx" % (B3, S3)) \
        .replace("tensor<Cx", "tensor<%dx" % C3)


B3, S3, C3 = 3, 23, 200


def hlo_softmax_transposed():
    # The softmax's result read transposed: blocks of its output are not
    # whole rows of the reductions, so the blocked executor refuses the row
    # fusion and the pass forms what it formed before (a fusion per reduce).
    return hlo_softmax().replace("ROOT d = f32[R,C] divide(e, sb)", """d = f32[R,C] divide(e, sb)
  ROOT t = f32[C,R] transpose(d), dimensions={1,0}""")


def shaped(text, r=None, c=None):
    # R and C as words only (names like "R2" were replaced before).
    import re
    r = R if r is None else r
    c = C if c is None else c
    text = re.sub(r"\bR\b", str(r), text)
    text = re.sub(r"\bC\b", str(c), text)
    return text.replace("RxCx", "%dx%dx" % (r, c)).replace("tensor<Rx", "tensor<%dx" % r) \
        .replace("tensor<Cx", "tensor<%dx" % c)


def np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return [e / e.sum(1, keepdims=True)]


def np_layer_norm(x, g, b):
    m = x.mean(1, keepdims=True)
    v = ((x - m) ** 2).mean(1, keepdims=True)
    return [(x - m) / np.sqrt(v + np.float32(1e-5)) * g + b]


def np_layer_norm_3d(x, g, b):
    m = x.mean(2, keepdims=True)
    v = np.maximum((x * x).mean(2, keepdims=True) - m * m, 0)
    return [(x - m) / np.sqrt(v + np.float32(1e-6)) * g + b]


def np_softmax_transposed(x):
    return [np_softmax(x)[0].T]


def np_mixed(x, w):
    t = np.tanh(x.T[:, 1:][::-1, :])
    a3 = x * np.float32(2.5) + np.float32(2.5) - np.float32(2.5)
    sel = np.where(np.arange(C)[None, :] < 150, a3, x)
    d = np.ones((R, C), np.float32) @ w
    return [x.sum(1), (x * x).sum(1), t.sum(0), sel, d, np.exp(x).sum(1)]


def np_while(x):
    for _ in range(3):
        x = np.sin(x - (x.sum(1, keepdims=True) * np.float32(0.01)))
    return [x]


def np_gelu_grad(x, b, w):
    z = x + b
    t = np.tanh(z)
    g = z - t
    return [z * t, g @ w, g.sum(0)]


def adam_args(x):
    f = np.float32
    return [x, (x * f(0.01)).astype(f), (np.abs(x) * f(1e-3) + f(1e-4)).astype(f),
            x[::-1].copy(), np.array(1e-3, f)]


def np_adam(w, m, v, g, lr):
    mn = 0.9 * m + 0.1 * g
    vn = 0.999 * v + 0.001 * g * g
    return [w - lr * mn / (np.sqrt(vn) + 1e-8), mn, vn]


def inputs(rng):
    x = (rng.standard_normal((R, C)) * 3).astype(np.float32)
    g = rng.uniform(0.5, 1.5, C).astype(np.float32)
    b = rng.uniform(-1, 1, C).astype(np.float32)
    w = rng.standard_normal((C, 8)).astype(np.float32)
    return x, g, b, w


# name, text, suffix, args(x, g, b, w), NumPy, fusions the pass must form
# (softmax and layer norm: one fusion, one pass over rows: the row
# reductions read back by their consumers in the same fusion; the while
# loop: its body's element-wise ops around the sum, the sum included)
def cases():
    return [
        ("softmax_hlo", hlo_softmax, ".hlo", lambda x, g, b, w: [x], np_softmax, 1),
        ("layer_norm_hlo", hlo_layer_norm, ".hlo", lambda x, g, b, w: [x, g, b], np_layer_norm, 1),
        ("mixed_hlo", hlo_mixed, ".hlo", lambda x, g, b, w: [x, w], np_mixed, 3),
        ("while_hlo", hlo_while, ".hlo", lambda x, g, b, w: [x], np_while, 1),
        ("gelu_grad_hlo", hlo_gelu_grad, ".hlo", lambda x, g, b, w: [x, b, w], np_gelu_grad,
         "2 fusions (2 multi-output)"),
        ("adam_hlo", hlo_adam, ".hlo", lambda x, g, b, w: adam_args(x), np_adam,
         "1 fusion (1 multi-output)"),
        ("softmax_stablehlo", mlir_softmax, ".mlir", lambda x, g, b, w: [x], np_softmax, 1),
        ("layer_norm_stablehlo", mlir_layer_norm, ".mlir", lambda x, g, b, w: [x, g, b],
         np_layer_norm, 1),
    ]


def shaped_inputs(rows, cols, batch=None):
    # Inputs of other shapes (pick(x, g, b, w) as for the cases above).
    def make(rng):
        shape = (rows, cols) if batch is None else (batch, rows, cols)
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        g = rng.uniform(0.5, 1.5, cols).astype(np.float32)
        b = rng.uniform(-1, 1, cols).astype(np.float32)
        return x, g, b, None
    return make


# Row fusions at their edges: rows of 5 (the executor reads the row values
# element by element; a layer norm's rsqrt and mean, expensive, are then
# computed once each as before, since a broadcast of fewer than 8 per row
# would recompute them per element), rows too long for the cache (20000
# f32: the reduces stay fusions of their own, as before), a consumer that
# does not read whole rows (refused, formed as before), and a batched layer
# norm as JAX lowers flax's (sibling row sums, 3-d).
def row_cases():
    return [
        ("softmax_short_rows_hlo", lambda: shaped(hlo_softmax(), 67, 5), ".hlo",
         lambda x, g, b, w: [x], np_softmax, 1, shaped_inputs(67, 5)),
        ("layer_norm_short_rows_hlo", lambda: shaped(hlo_layer_norm(), 67, 5), ".hlo",
         lambda x, g, b, w: [x, g, b], np_layer_norm, 4, shaped_inputs(67, 5)),
        ("softmax_long_rows_hlo", lambda: shaped(hlo_softmax(), 3, 20000), ".hlo",
         lambda x, g, b, w: [x], np_softmax, 2, shaped_inputs(3, 20000)),
        ("softmax_transposed_hlo", hlo_softmax_transposed, ".hlo", lambda x, g, b, w: [x],
         np_softmax_transposed, 2),
        ("layer_norm_3d_stablehlo", mlir_layer_norm_3d, ".mlir", lambda x, g, b, w: [x, g, b],
         np_layer_norm_3d, 1, shaped_inputs(S3, C3, B3)),
    ]


def run_case(name, make, suffix, pick, oracle, want_fusions, make_inputs=inputs):
    rng = np.random.default_rng(len(name))
    args = pick(*make_inputs(rng))
    want = oracle(*[a.astype(np.float64) for a in args])
    with tempdir("fusion-pass") as d:
        prog = os.path.join(d, name + suffix)
        with open(prog, "w") as f:
            f.write(shaped(make()))
        write_args(os.path.join(d, "args"), args)
        # What the pass forms.
        r = convert(prog, os.path.join(d, "fused.hlo"), "--explain-fusion")
        if r.returncode != 0:
            return "hlo-convert --explain-fusion failed\n" + r.describe()
        summary = [ln for ln in r.stderr.splitlines() if " fusion" in ln and "of " in ln]
        want_line = want_fusions if isinstance(want_fusions, str) else "%d fusion" % want_fusions
        if not summary or not summary[-1].startswith(want_line):
            return "expected %r, --explain-fusion says\n%s" % (want_line, r.stderr)
        results = {}
        runs = [("fused", prog, []), ("fused_2_threads", prog, ["--threads", "2"]),
                ("op_by_op", prog, ["--no-fusion-pass"]),
                ("converted", os.path.join(d, "fused.hlo"), ["--no-fusion-pass"])]
        for tag, path, extra in runs:
            out = os.path.join(d, "out_" + tag)
            r = launch(path, args_dir=os.path.join(d, "args"), output_dir=out, extra=extra)
            if r.returncode != 0:
                return "%s: hlo-launch failed\n%s" % (tag, r.describe())
            results[tag] = read_outputs(out, 0, 0, len(want))
        ref = results["op_by_op"]
        for tag, got in results.items():
            for j, (a, b) in enumerate(zip(got, ref)):
                if a.shape != b.shape or a.tobytes() != b.tobytes():
                    bad = np.flatnonzero(a.ravel() != b.ravel())[:5]
                    return "%s result %d: bits differ from --no-fusion-pass at %s: %s vs %s" % (
                        tag, j, bad, a.ravel()[bad], b.ravel()[bad])
        for j, (a, w) in enumerate(zip(ref, want)):
            if not np.allclose(a, w, rtol=2e-5, atol=2e-5):
                return "result %d differs from NumPy by %g" % (j, np.abs(a - w).max())
        # A fused module passes the pass unchanged.
        r = convert(os.path.join(d, "fused.hlo"), os.path.join(d, "again.hlo"), "--explain-fusion")
        if r.returncode != 0 or "already has fusions" not in r.stderr:
            return "re-fusing a fused module:\n" + r.describe()
        with open(os.path.join(d, "fused.hlo")) as f1, open(os.path.join(d, "again.hlo")) as f2:
            if f1.read() != f2.read():
                return "a fused module changed under --fuse"
    return None


def test_explain_names_reasons():
    with tempdir("fusion-pass") as d:
        prog = os.path.join(d, "mixed.hlo")
        with open(prog, "w") as f:
            f.write(shaped(hlo_mixed()))
        r = convert(prog, "-", "--explain-fusion")
        if r.returncode != 0:
            return r.describe()
        need = ["d (dot): not fused: not an op the pass fuses",
                "ob (broadcast): not fused: alone",  # the dot reads it: materialized once
                "x (parameter): not fused: a parameter",
                "(multi-output)", "tb (broadcast): fused in",
                "s3 (reduce): not fused: a reduce whose reducer is not a simple op",
                "3 fusions (1 multi-output) of 20 instructions; 1 candidate the blocked "
                "executor does not run"]
        for n in need:
            if n not in r.stderr:
                return "--explain-fusion lacks %r:\n%s" % (n, r.stderr)
        if "kind=kInput" not in r.stdout or "kind=kLoop" not in r.stdout:
            return "fused module lacks kLoop / kInput fusions:\n" + r.stdout
    return None


def test_rows_explained():
    # --explain-fusion says which reduces their consumers read back in the
    # same pass, and why the others are not.
    want = [
        (shaped(hlo_layer_norm()), ["s1 (reduce): fused in fusion.0 (read back by its consumer "
                                    "in the same pass over rows)",
                                    "s2 (reduce): fused in fusion.0 (read back",
                                    "rs (rsqrt): fused in fusion.0", "kind=kInput"]),
        (shaped(hlo_softmax(), 3, 20000), ["not in its consumer's pass over rows: rows too long "
                                           "for the cache"]),
        (shaped(hlo_softmax_transposed()), ["not in its consumer's pass over rows: a row reduce "
                                            "read other than broadcast along its rows"]),
    ]
    with tempdir("fusion-pass") as d:
        for k, (text, need) in enumerate(want):
            prog = os.path.join(d, "p%d.hlo" % k)
            with open(prog, "w") as f:
                f.write(text)
            r = convert(prog, "-", "--explain-fusion")
            if r.returncode != 0:
                return r.describe()
            for n in need:
                if n not in r.stderr + r.stdout:
                    return "--explain-fusion lacks %r:\n%s" % (n, r.stderr)
    return None


if __name__ == "__main__":
    require_binaries()
    tests = [(c[0], (lambda c=c: run_case(*c))) for c in cases() + row_cases()]
    tests.append(("rows_explained", test_rows_explained))
    tests.append(("explain_names_reasons", test_explain_names_reasons))
    main(tests)
