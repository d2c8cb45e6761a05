#!/usr/bin/env python3
"""Ops that exporters write beside or instead of today's StableHLO ops
(runtime/stablehlo/lower_legacy.c) through hlo-launch, NumPy as the oracle:
the deprecated stablehlo.broadcast / dot / einsum / unary_einsum /
torch_index_select / "cross-replica-sum" / create_token, arith ops,
tensor.extract, sdy.constant, the mhlo.topk custom call; and refusals that
name the construct (a diagonal einsum, an arith op whose signedness the
tensor type contradicts, an ambiguous i1 hex byte, cf branches).

Integer and selection results are compared exactly; float sums (dot,
einsum) with rtol 1e-5 (the order of the sums is the runtime's)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402


def run_mlir(tag, text, args, nresults, expect_error=None):
    if expect_error is None:
        return hl.run_hlo_text(tag, text, args, nresults, name="p.mlir")[0]
    r, _ = hl.launch_text(tag, text, args, nresults, name="p.mlir")
    if r.returncode == 0 or expect_error not in r.stderr:
        raise AssertionError("expected an error naming '%s'\n%s" % (expect_error, r.describe()))
    return None


def check_all(pairs):
    for name, got, want in pairs:
        want = np.asarray(want)
        if want.dtype.kind == "f":
            msg = hl.compare(name, got, want.astype(got.dtype), (1e-5, 1e-6))
        else:
            msg = hl.compare(name, got, want)
        if msg:
            return msg
    return None


RNG = np.random.default_rng(7)

BROADCAST_DOT = """func.func @main(%a: tensor<3xi32>, %m: tensor<2x3xf32>, %n: tensor<3x4xf32>, %v: tensor<3xf32>) -> (tensor<2x2x3xi32>, tensor<2x4xf32>, tensor<2xf32>, tensor<f32>) {
  %0 = stablehlo.broadcast %a, sizes = [2, 2] : (tensor<3xi32>) -> tensor<2x2x3xi32>
  %1 = stablehlo.dot %m, %n, precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %2 = "stablehlo.dot"(%m, %v) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  %3 = stablehlo.dot %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<2x2x3xi32>, tensor<2x4xf32>, tensor<2xf32>, tensor<f32>
}
"""


def test_broadcast_dot():
    a = RNG.integers(-9, 9, 3).astype(np.int32)
    m, n, v = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 4), (3,)))
    got = run_mlir("bcdot", BROADCAST_DOT, [a, m, n, v], 4)
    return check_all([("broadcast", got[0], np.broadcast_to(a, (2, 2, 3))),
                      ("dot mm", got[1], m @ n), ("dot mv", got[2], m @ v),
                      ("dot vv", got[3], np.float32(v @ v))])


EINSUM = """func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<3x4xf32>) -> (tensor<2x5x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3x5xf32>) {
  %0 = stablehlo.einsum %a, %b, config = "bij,bjk->bki" : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x3xf32>
  %1 = stablehlo.unary_einsum %c, config = "ab->ba" : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %2 = "stablehlo.unary_einsum"(%c) {einsum_config = "ab->a"} : (tensor<3x4xf32>) -> tensor<3xf32>
  %3 = "stablehlo.einsum"(%a, %b) {einsum_config = "bij,bjk->ik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<3x5xf32>
  return %0, %1, %2, %3 : tensor<2x5x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3x5xf32>
}
"""


def test_einsum():
    a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 4, 5), (3, 4)))
    got = run_mlir("einsum", EINSUM, [a, b, c], 4)
    return check_all([("bij,bjk->bki", got[0], np.einsum("bij,bjk->bki", a, b)),
                      ("ab->ba", got[1], c.T), ("ab->a", got[2], c.sum(axis=1)),
                      ("bij,bjk->ik", got[3], np.einsum("bij,bjk->ik", a, b))])


def test_einsum_diagonal_refused():
    text = """func.func @main(%c: tensor<3x3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.unary_einsum %c, config = "aa->a" : (tensor<3x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
    run_mlir("einsum-diag", text, [np.zeros((3, 3), np.float32)], 1,
             expect_error="repeats label 'a'")


TORCH_INDEX_SELECT = """func.func @main(%x: tensor<3x5x4xf32>, %i: tensor<2xi32>, %j: tensor<3x2xi64>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>) {
  %0 = "stablehlo.torch_index_select"(%x, %i) {dim = 1 : i64, batch_dims = 0 : i64} : (tensor<3x5x4xf32>, tensor<2xi32>) -> tensor<3x2x4xf32>
  %1 = "stablehlo.torch_index_select"(%x, %j) {dim = 1 : i64, batch_dims = 1 : i64} : (tensor<3x5x4xf32>, tensor<3x2xi64>) -> tensor<3x2x4xf32>
  return %0, %1 : tensor<3x2x4xf32>, tensor<3x2x4xf32>
}
"""


def test_torch_index_select():
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    i = np.array([4, 1], np.int32)
    j = np.array([[0, 2], [3, 3], [1, 4]], np.int64)
    got = run_mlir("tis", TORCH_INDEX_SELECT, [x, i, j], 2)
    batched = np.stack([x[b][j[b]] for b in range(3)])  # torch.gather-like per batch row
    return check_all([("batch_dims 0", got[0], x[:, i, :]), ("batch_dims 1", got[1], batched)])


ARITH = """func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %f: tensor<4xf32>, %g: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xf64>, tensor<4xf32>, tensor<i32>, tensor<4xi32>) {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %k = arith.constant 7 : i32
  %0 = arith.addi %a, %c overflow<nsw> : tensor<4xi32>
  %1 = arith.divsi %a, %b : tensor<4xi32>
  %2 = arith.cmpi ult, %a, %b : tensor<4xi32>
  %3 = arith.cmpf olt, %f, %g : tensor<4xf32>
  %4 = arith.select %3, %f, %g : tensor<4xi1>, tensor<4xf32>
  %5 = arith.extui %a : tensor<4xi32> to tensor<4xi64>
  %6 = arith.extf %f : tensor<4xf32> to tensor<4xf64>
  %7 = arith.maximumf %f, %g fastmath<fast> : tensor<4xf32>
  %8 = "arith.cmpi"(%a, %b) <{predicate = 2 : i64}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %9 = arith.select %8, %a, %b : tensor<4xi1>, tensor<4xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %k, %9 : tensor<4xi32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xf64>, tensor<4xf32>, tensor<i32>, tensor<4xi32>
}
"""


def test_arith():
    a = np.array([8, -7, 5, -2], np.int32)
    b = np.array([3, 2, -2, -1], np.int32)
    f = np.array([1.5, -2.0, np.nan, 0.25], np.float32)
    g = np.array([2.0, -3.0, 1.0, 0.25], np.float32)
    got = run_mlir("arith", ARITH, [a, b, f, g], 10)
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    lt = f < g
    return check_all([
        ("addi", got[0], a + np.array([1, 2, 3, 4], np.int32)),
        ("divsi", got[1], np.trunc(a / b).astype(np.int32)),
        ("cmpi ult", got[2], ua < ub), ("cmpf olt", got[3], lt),
        ("select", got[4], np.where(lt, f, g)),
        ("extui", got[5], ua.astype(np.int64)), ("extf", got[6], f.astype(np.float64)),
        ("maximumf", got[7], np.maximum(f, g)),  # NaN propagates, as arith.maximumf's
        ("constant 7 : i32", got[8], np.int32(7)),
        ("generic cmpi slt + select", got[9], np.where(a < b, a, b))])


def test_arith_signedness_refused():
    text = """func.func @main(%a: tensor<2xui32>, %b: tensor<2xui32>) -> tensor<2xui32> {
  %0 = arith.divsi %a, %b : tensor<2xui32>
  return %0 : tensor<2xui32>
}
"""
    z = np.ones(2, np.uint32)
    run_mlir("arith-sign", text, [z, z], 1, expect_error="signed integer")


MISC = """func.func @main(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<3xi1>, tensor<2x2xf32>) {
  %t = stablehlo.create_token : !stablehlo.token
  %0 = "stablehlo.cross-replica-sum"(%x) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %1:2 = stablehlo.custom_call @mhlo.topk(%x) {mhlo.attributes = {k = 3 : i64, largest = true}, mhlo.version = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
  %2 = sdy.constant dense<"0x010001"> : tensor<3xi1>
  %3:2 = stablehlo.custom_call @mhlo.topk(%x) {mhlo.attributes = {k = 2 : i64, largest = false}} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return %0, %1#0, %1#1, %2, %3#0 : tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<3xi1>, tensor<2x2xf32>
}
"""


def test_misc():
    x = RNG.permutation(12).astype(np.float32).reshape(2, 6)
    got = run_mlir("misc", MISC, [x], 5)
    order = np.argsort(-x, axis=1, kind="stable")[:, :3].astype(np.int32)
    return check_all([("cross-replica-sum over one replica", got[0], x),
                      ("mhlo.topk values", got[1], np.take_along_axis(x, order, 1)),
                      ("mhlo.topk indices", got[2], order),
                      ("sdy.constant i1 hex", got[3], np.array([True, False, True])),
                      ("mhlo.topk smallest", got[4], np.sort(x, axis=1)[:, :2])])


TENSOR_EXTRACT = """func.func @main(%a: tensor<3x4xf32>, %b: tensor<i32>) -> (f32, tensor<i32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %0 = tensor.extract %a[%c1, %c3] : tensor<3x4xf32>
  %1 = tensor.extract %b[] : tensor<i32>
  %2 = arith.addi %1, %1 : i32
  %t = arith.constant true
  %3 = arith.select %t, %2, %1 : i1, tensor<i32>
  return %0, %3 : f32, tensor<i32>
}
"""


def test_tensor_extract():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    got = run_mlir("textract", TENSOR_EXTRACT, [a, np.int32(21)], 2)
    return check_all([("extract [1, 3]", got[0], a[1, 3]), ("extract [] + itself", got[1], np.int32(42))])


def test_cf_refused():
    text = """func.func @main(%p: i1, %x: tensor<f32>) -> tensor<f32> {
  cf.cond_br %p, ^bb1, ^bb2
^bb1:
  return %x : tensor<f32>
^bb2:
  return %x : tensor<f32>
}
"""
    run_mlir("cf", text, [np.bool_(True), np.float32(1)], 1, expect_error="'cf.cond_br'")


def test_forms_file():
    """tests/stablehlo/forms_beside_stablehlo.mlir (also a fuzz seed) checks itself."""
    src = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    r = hl.run([hl.HLO_LAUNCH, "--quiet",
                os.path.join(src, "tests", "stablehlo", "forms_beside_stablehlo.mlir")])
    return None if r.returncode == 0 else r.describe()


def test_i1_hex_ambiguous_refused():
    text = """func.func @main() -> tensor<4xi1> {
  %0 = stablehlo.constant dense<"0x05"> : tensor<4xi1>
  return %0 : tensor<4xi1>
}
"""
    run_mlir("i1amb", text, [], 1, expect_error="ambiguous")


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("broadcast_dot", test_broadcast_dot),
        ("einsum", test_einsum),
        ("einsum_diagonal_refused", test_einsum_diagonal_refused),
        ("torch_index_select", test_torch_index_select),
        ("arith", test_arith),
        ("arith_signedness_refused", test_arith_signedness_refused),
        ("misc", test_misc),
        ("i1_hex_ambiguous_refused", test_i1_hex_ambiguous_refused),
        ("tensor_extract", test_tensor_extract),
        ("cf_refused", test_cf_refused),
        ("forms_file", test_forms_file),
    ])
