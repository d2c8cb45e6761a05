#!/usr/bin/env python3
"""Forms and numbers from StableHLO's testdata corpus (JAX-lowered programs;
scripts/conformance_testdata.py runs the corpus itself) that once failed,
each as a focused program through hlo-launch with NumPy as the oracle:

- the pretty reduce with a `reducer(...) (...)` body, one input (complex
  max) and several (argmax / argmin as JAX writes them: `(%a init: %x),
  (%b init: %y)`, one argument pair per input, the body's block taking every
  accumulator, then every element);
- `loc(...)` inside a Shardy manual computation's block arguments and as
  an attribute value;
- cummin / cummax of u64 above 2^63 (a reduce_window that compared u64 as
  signed);
- a small depthwise f32 convolution (2x3x9 by 12x1x3, rhs dilation 2,
  feature groups 3) and a bf16 x c128 dot: small products are summed in
  order over the contraction with every product rounded (no fused
  multiply-add), as XLA's CPU backend does; the expected values are that
  computation in NumPy, compared bit for bit. Inputs with cancelling terms
  make a fused or reordered sum differ in the last bits (the corpus's own
  checks allow 3 ULP; a BLAS kernel was 4 and 22 ULP away).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402


def run_mlir(tag, text, args, nresults, partitions=1):
    return hl.run_hlo_text(tag, text, args, nresults, partitions=partitions, name="p.mlir")[0]


def same_bits(name, got, want):
    want = np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return "%s: got %s %s, expected %s %s" % (name, got.dtype, got.shape, want.dtype,
                                                   want.shape)
    if got.tobytes() != want.tobytes():
        bad = np.argwhere(got != want)
        i = tuple(bad[0]) if len(bad) else ()
        return "%s: %d elements differ, first at %s: %r, expected %r" % (
            name, len(bad), list(i), got[i], want[i])
    return None


ARGMAX = """module @jit_main {
  func.func public @main(%arg0: tensor<5x7xf32>) -> (tensor<7xf32>, tensor<7xi32>) {
    %0 = stablehlo.iota dim = 0 : tensor<5x7xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [0] : (tensor<5x7xf32>, tensor<5x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<7xf32>, tensor<7xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare  GT, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare  EQ, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare  LT, %arg2, %arg4,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    } loc(#loc)
    return %1#0, %1#1 : tensor<7xf32>, tensor<7xi32>
  }
}
#loc = loc(unknown)
"""


def test_multi_operand_reduce():
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, (5, 7)).astype(np.float32)  # ties: the first index wins
    got = run_mlir("reduce2", ARGMAX, [x], 2)
    return (same_bits("max", got[0], x.max(axis=0)) or
            same_bits("argmax", got[1], x.argmax(axis=0).astype(np.int32)))


REDUCE_COMPLEX_MAX = """module @jit_main {
  func.func public @main(%arg0: tensor<2x3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
    %cst = stablehlo.constant dense<(0xFFF0000000000000,0.000000e+00)> : tensor<complex<f64>>
    %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<2x3xcomplex<f64>>, tensor<complex<f64>>) -> tensor<3xcomplex<f64>>
     reducer(%arg1: tensor<complex<f64>>, %arg2: tensor<complex<f64>>)  {
      %1 = stablehlo.real %arg1 : (tensor<complex<f64>>) -> tensor<f64>
      %2 = stablehlo.real %arg2 : (tensor<complex<f64>>) -> tensor<f64>
      %3 = stablehlo.compare  GT, %1, %2,  FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %4 = stablehlo.select %3, %arg1, %arg2 : tensor<i1>, tensor<complex<f64>>
      stablehlo.return %4 : tensor<complex<f64>>
    }
    return %0 : tensor<3xcomplex<f64>>
  }
}
"""


def test_single_operand_reducer_form():
    x = np.array([[1 + 2j, -4 + 1j, 3 - 1j], [2 - 5j, -5 + 0j, 0.5 + 7j]], np.complex128)
    got = run_mlir("reduce1", REDUCE_COMPLEX_MAX, [x], 1)
    want = np.where(x[0].real > x[1].real, x[0], x[1])  # the reducer's own rule, in order
    return same_bits("complex max", got[0], want)


SDY_LOC = """#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=2]> loc(#loc)
  func.func public @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>} loc("x")) -> (tensor<4x4xf32> {jax.result_info = "", sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<2x4xf32> loc("shard_map:"(#loc1))) {
      %1 = stablehlo.add %arg1, %arg1 {mhlo.frontend_attributes = {at = loc("y")}} : tensor<2x4xf32> loc(#loc1)
      sdy.return %1 : tensor<2x4xf32> loc(#loc1)
    } : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(#loc1)
    return %0 : tensor<4x4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
"""


def test_loc_in_shardy_and_attributes():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    with hl.tempdir("sdyloc") as d:
        path = os.path.join(d, "p.mlir")
        with open(path, "w") as f:
            f.write(SDY_LOC)
        np.save(os.path.join(d, "x.npy"), x)
        out = os.path.join(d, "out.npy")
        r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--quiet", "--global-args",
                    os.path.join(d, "x.npy"), "--global-output", out, path])
        if r.returncode != 0:
            return r.describe()
        return same_bits("2x over a manual computation", np.load(out), 2 * x)


CUM_U64 = """module @jit_main {
  func.func public @main(%arg0: tensor<8x3xui64>) -> (tensor<8x3xui64>, tensor<8x3xui64>) {
    %hi = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
    %lo = stablehlo.constant dense<0> : tensor<ui64>
    %0 = "stablehlo.reduce_window"(%arg0, %hi) <{padding = dense<[[7, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 8, 1>}> ({
    ^bb0(%a: tensor<ui64>, %b: tensor<ui64>):
      %2 = stablehlo.minimum %a, %b : tensor<ui64>
      stablehlo.return %2 : tensor<ui64>
    }) : (tensor<8x3xui64>, tensor<ui64>) -> tensor<8x3xui64>
    %1 = "stablehlo.reduce_window"(%arg0, %lo) <{padding = dense<[[7, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 8, 1>}> ({
    ^bb0(%a: tensor<ui64>, %b: tensor<ui64>):
      %2 = stablehlo.maximum %a, %b : tensor<ui64>
      stablehlo.return %2 : tensor<ui64>
    }) : (tensor<8x3xui64>, tensor<ui64>) -> tensor<8x3xui64>
    return %0, %1 : tensor<8x3xui64>, tensor<8x3xui64>
  }
}
"""


def test_cummin_cummax_u64():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2**64 - 1, (8, 3), dtype=np.uint64, endpoint=True)
    x[0, 0], x[3, 1], x[5, 2] = 0, 2**64 - 1, 2**63
    got = run_mlir("cumu64", CUM_U64, [x], 2)
    return (same_bits("cummin", got[0], np.minimum.accumulate(x, axis=0)) or
            same_bits("cummax", got[1], np.maximum.accumulate(x, axis=0)))


CONV = """module @jit_main {
  func.func public @main(%arg0: tensor<2x3x9xf32>, %arg1: tensor<12x1x3xf32>) -> tensor<2x12x5xf32> {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {rhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 3 : i64} : (tensor<2x3x9xf32>, tensor<12x1x3xf32>) -> tensor<2x12x5xf32>
    return %0 : tensor<2x12x5xf32>
  }
}
"""


def test_depthwise_conv_f32():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9)).astype(np.float32) * 3
    w = rng.standard_normal((12, 1, 3)).astype(np.float32) * 3
    want = np.zeros((2, 12, 5), np.float32)
    for b in range(2):
        for o in range(12):
            g = o // 4  # feature group of output feature o: 4 outputs per input feature
            for s in range(5):
                acc = np.float32(0)
                for k in range(3):  # taps in order, each product rounded
                    acc = np.float32(acc + np.float32(x[b, g, s + 2 * k] * w[o, 0, k]))
                want[b, o, s] = acc
    got = run_mlir("conv", CONV, [x, w], 1)
    return same_bits("depthwise conv", got[0], want)


DOT = """module @jit_main {
  func.func public @main(%arg0: tensor<4x3xbf16>, %arg1: tensor<3x6xcomplex<f64>>) -> tensor<4x6xcomplex<f64>> {
    %0 = stablehlo.convert %arg0 : (tensor<4x3xbf16>) -> tensor<4x3xcomplex<f64>>
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] : (tensor<4x3xcomplex<f64>>, tensor<3x6xcomplex<f64>>) -> tensor<4x6xcomplex<f64>>
    return %1 : tensor<4x6xcomplex<f64>>
  }
}
"""


def test_dot_bf16_c128():
    rng = np.random.default_rng(4)
    a = hl.round_to_bf16(rng.standard_normal((4, 3)).astype(np.float32) * 4)
    b = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))) * 2
    bits = (a.view(np.uint32) >> 16).astype(np.uint16).view("V2")  # bf16 as np.save writes it
    ar = a.astype(np.float64)
    want = np.zeros((4, 6), np.complex128)
    for i in range(4):
        for j in range(6):
            re = im = 0.0
            for q in range(3):  # (ar + 0i)(br + bi i), each product rounded, in order
                re = re + (ar[i, q] * b[q, j].real - 0.0 * b[q, j].imag)
                im = im + (ar[i, q] * b[q, j].imag + 0.0 * b[q, j].real)
            want[i, j] = complex(re, im)
    got = run_mlir("dot", DOT, [bits, b], 1)
    return same_bits("bf16 x c128 dot", got[0], want)


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("multi_operand_reduce", test_multi_operand_reduce),
        ("single_operand_reducer_form", test_single_operand_reducer_form),
        ("loc_in_shardy_and_attributes", test_loc_in_shardy_and_attributes),
        ("cummin_cummax_u64", test_cummin_cummax_u64),
        ("depthwise_conv_f32", test_depthwise_conv_f32),
        ("dot_bf16_c128", test_dot_bf16_c128),
    ])
