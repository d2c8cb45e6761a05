#!/usr/bin/env python3
"""Quantized StableHLO types (!quant.uniform) through hlo-launch on 2 ranks.

Expected values come from the StableHLO spec's formulas computed here in
NumPy ("Quantization computations"):
  dequantize(q) = f32(q - zero_point) * f32(scale)
  quantize(x)   = clamp(storage_min, round_half_even(x / f32(scale)) + zero_point, storage_max)
and ops on quantized tensors as dequantize -> op in f32 -> quantize. The
programs are tests/stablehlo/quant_*.mlir; quantized values are read and
written as their storage type. Unsupported uses stop with a diagnostic at
file:line:col naming the op.
"""

import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")
RANKS = 2
f32 = np.float32


def scales_for(shape, scales, axis):
    """Per-element parameters: one value, or one per slice of `axis`."""
    v = np.asarray(scales)
    if axis is None:
        return np.broadcast_to(v.reshape(()), shape)
    idx = [1] * len(shape)
    idx[axis] = -1
    return np.broadcast_to(v.reshape(idx), shape)


def quantize(x, scale, zp, lo, hi, dtype, axis=None):
    s = scales_for(x.shape, np.asarray(scale, f32), axis)
    z = scales_for(x.shape, np.asarray(zp, np.int64), axis)
    r = np.round((x.astype(f32) / s).astype(f32))  # NumPy rounds half to even
    return np.clip(r.astype(np.float64) + z, lo, hi).astype(dtype)


def dequantize(q, scale, zp, axis=None):
    s = scales_for(q.shape, np.asarray(scale, f32), axis)
    z = scales_for(q.shape, np.asarray(zp, np.int64), axis)
    return ((q.astype(np.int64) - z).astype(f32) * s).astype(f32)


def run_program(name, args, nresults):
    """Runs tests/stablehlo/<name> on RANKS ranks; every rank's results."""
    r, outs = hl.launch_file("shlo-quant", os.path.join(PROGRAMS, name), args, nresults,
                             replicas=RANKS)
    return (outs, None) if outs else (None, r.describe())


def check_all(results, wants, names):
    for rank, got in enumerate(results):
        for g, w, n in zip(got, wants, names):
            if g.dtype != w.dtype:
                return "rank %d %s: dtype %s, expected %s" % (rank, n, g.dtype, w.dtype)
            msg = hl.compare("rank %d %s" % (rank, n), g, w, tol=(0, 0))
            if msg:
                return msg
    return None


def per_tensor():
    """uniform_quantize / dequantize per-tensor: ties to even, clamping to the
    storage range and to `i8<-100:100>`, an unsigned u8 storage type."""
    x = np.array([0.25, 0.75, 1.25, -0.25, -1.75, 1000, -1000, 3.3], f32)
    q0 = quantize(x, 0.5, -3, -128, 127, np.int8)
    q2 = quantize(x, 0.25, 7, -100, 100, np.int8)
    q3 = quantize(x, 0.1, 128, 0, 255, np.uint8)
    wants = [q0, dequantize(q0, 0.5, -3), q2, q3, dequantize(q3, 0.1, 128)]
    if not (q0[0] == -3 and q0[1] == -1 and q0[2] == -1):  # 0.5, 1.5, 2.5 round to 0, 2, 2
        return "oracle: ties are not rounded half to even"
    results, err = run_program("quant_per_tensor.mlir", [x], 5)
    return err or check_all(results, wants, ["q_i8", "dq_i8", "q_i8_narrow", "q_u8", "dq_u8"])


def per_axis():
    """Per-axis (dimension 1) quantize, dequantize, requantize into other
    per-axis parameters, and a transpose that moves the quantized storage."""
    x = np.array([[4.0, 15.0, -2.0], [0.35, -100, 2.625]], f32)
    s1, z1 = [0.1, 0.5, 0.25], [-30, -20, 5]
    s2, z2 = [0.2, 0.1, 0.3], [10, 0, -7]
    q = quantize(x, s1, z1, -128, 127, np.int8, axis=1)
    dq = dequantize(q, s1, z1, axis=1)
    rq = quantize(dq, s2, z2, -128, 127, np.int8, axis=1)
    wants = [q, dq, rq, q.T.copy()]
    results, err = run_program("quant_per_axis.mlir", [x], 4)
    return err or check_all(results, wants, ["q", "dq", "requantized", "transposed"])


def ops_on_quantized():
    """multiply / add / maximum / compare on quantized operands, a quantized x
    per-axis-quantized dot_general and a hybrid f32 x quantized dot_general."""
    rng = np.random.default_rng(1124)
    a = np.array([5, -20, 100, -128], np.int8)
    b = np.array([3, -9, 100, 127], np.int8)
    lq = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    rq = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    fl = rng.integers(-8, 8, (2, 3)).astype(f32) / f32(4)
    sa, za, sb, zb = 0.1, -3, 0.2, 4
    da, db = dequantize(a, sa, za), dequantize(b, sb, zb)
    mul = quantize((da * db).astype(f32), 0.3, 1, -128, 127, np.int8)
    add = quantize((da + db).astype(f32), sb, zb, -128, 127, np.int8)
    mx = quantize(np.maximum(da, da), sa, za, -128, 127, np.int8)
    gt = da > db
    rs, rz = [0.5, 0.25, 0.125, 1.0], [0, -1, 3, 0]
    dl = dequantize(lq, 0.25, 2)
    dr = dequantize(rq, rs, rz, axis=1)
    # Power-of-two scales: every product and partial sum is exact in f32, so
    # the summation order cannot change the f32 dot.
    dot = (dl.astype(np.float64) @ dr.astype(np.float64)).astype(f32)
    qdot = quantize(dot, 0.3, -1, -128, 127, np.int8)
    hybrid = (fl.astype(np.float64) @ dr.astype(np.float64)).astype(f32)
    wants = [mul, add, mx, gt, qdot, hybrid]
    results, err = run_program("quant_ops.mlir", [a, b, lq, rq, fl], 6)
    return err or check_all(results, wants, ["multiply", "add", "maximum", "compare",
                                             "dot_general", "hybrid_dot_general"])


def constant_and_convolution():
    """A quantized constant (storage values) and a quantized convolution."""
    c = np.array([1, 2, -3], np.int8)
    lq = np.array([2, 4, 6, 8, 10], np.int8)
    kq = np.array([1, 2, 3], np.int8)
    dl, dk = dequantize(lq, 0.25, 0), dequantize(kq, 0.5, 0)
    conv = np.array([np.dot(dl[i:i + 3].astype(np.float64), dk) for i in range(3)]).astype(f32)
    wants = [dequantize(c, 0.5, 1), quantize(conv, 1.0, 0, -128, 127, np.int8).reshape(1, 1, 3, 1)]
    results, err = run_program("quant_conv.mlir", [], 2)
    return err or check_all(results, wants, ["dequantized_constant", "convolution"])


def regions():
    """reduce / all_reduce (2 ranks) / while / sort (descending) on quantized
    values: each body op
    dequantizes, adds in f32 and quantizes (scale 0.5, so sums are exact and
    the reduction order cannot matter; the loop saturates at 127)."""
    x = np.array([3, -7, 20, 1], np.int8)
    init = np.array(2, np.int8)
    s, z = 0.5, 0

    def qadd(p, q):
        return quantize((dequantize(p, s, z) + dequantize(q, s, z)).astype(f32), s, z, -128,
                        127, np.int8)

    total = init
    for v in x:
        total = qadd(total, v)
    loop = x
    for _ in range(3):
        loop = qadd(loop, loop)
    if loop[2] != 127:
        return "oracle: the loop does not saturate"
    wants = [np.asarray(total), qadd(x, x), loop, np.sort(x)[::-1].copy()]
    results, err = run_program("quant_regions.mlir", [x, init], 4)
    return err or check_all(results, wants, ["reduce", "all_reduce", "while", "sort"])


UNSUPPORTED = {
    # op on quantized tensors outside the spec's dequantize-op-quantize and
    # element-moving ops
    "convert.mlir": ("""func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<4xf32> {
  %0 = stablehlo.convert %x : (tensor<4x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
""", ":2:8: error: 'stablehlo.convert' on quantized tensors is not supported"),
    "applies.mlir": ("""func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5:0>>, %i: tensor<!quant.uniform<i8:f32, 0.5:0>>) -> tensor<!quant.uniform<i8:f32, 0.5:0>> {
  %0 = stablehlo.reduce(%x init: %i) applies stablehlo.add across dimensions = [0] : (tensor<4x!quant.uniform<i8:f32, 0.5:0>>, tensor<!quant.uniform<i8:f32, 0.5:0>>) -> tensor<!quant.uniform<i8:f32, 0.5:0>>
  return %0 : tensor<!quant.uniform<i8:f32, 0.5:0>>
}
""", ":2:8: error: 'stablehlo.reduce' on quantized tensors needs its region written out"),
    "storage64.mlir": ("""func.func @main(%x: tensor<4x!quant.uniform<i64:f32, 0.5:0>>) -> tensor<4x!quant.uniform<i64:f32, 0.5:0>> {
  return %x : tensor<4x!quant.uniform<i64:f32, 0.5:0>>
}
""", ":1:"),
    "requantizing_reshape.mlir": ("""func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:0>> {
  %0 = stablehlo.reshape %x : (tensor<4x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:0>>
  return %0 : tensor<2x2x!quant.uniform<i8:f32, 0.25:0>>
}
""", ":2:8: error: 'stablehlo.reshape' changes the quantization"),
}


def unsupported_stops():
    """What is not implemented stops with exit 1 and a file:line:col diagnostic."""
    with hl.tempdir("shlo-quant") as d:
        for name, (text, needle) in UNSUPPORTED.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            r = hl.launch(path)
            if r.returncode != 1 or (name + needle) not in r.stderr:
                return "%s: expected exit 1 and %r\n%s" % (name, name + needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("per_tensor", per_tensor),
        ("per_axis", per_axis),
        ("ops_on_quantized", ops_on_quantized),
        ("constant_and_convolution", constant_and_convolution),
        ("regions", regions),
        ("unsupported_stops", unsupported_stops),
    ])
