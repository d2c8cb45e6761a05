// chlo.broadcast_* binary ops (jnp's implicit broadcasting as older JAX
// versions and TF/XLA bridges emit it): numpy-style trailing alignment,
// size-1 expansion, and explicit broadcast_dimensions; pretty and generic.
module @jit_broadcast attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>, %col: tensor<2x1xf32>, %row: tensor<1x3xf32>, %pred: tensor<3xi1>, %ia: tensor<2x3xi32>, %ib: tensor<3xi32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>) {
    %0 = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = chlo.broadcast_multiply %a, %c {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
    %2 = chlo.broadcast_compare %a, %b {comparison_direction = #chlo<comparison_direction LT>, compare_type = #chlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
    %3 = chlo.broadcast_select %pred, %a, %s : (tensor<3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %4 = "chlo.broadcast_subtract"(%col, %row) : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
    %5 = chlo.broadcast_maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %abs = stablehlo.abs %a : tensor<2x3xf32>
    %6 = chlo.broadcast_power %abs, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %7 = "chlo.broadcast_atan2"(%a, %c) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
    %8 = chlo.broadcast_divide %a, %row : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
    %9 = chlo.broadcast_shift_left %ia, %ib : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
    %10 = chlo.broadcast_remainder %ia, %ib : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
    %and = chlo.broadcast_and %ia, %ib : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
    %xor = chlo.broadcast_xor %ib, %ia : (tensor<3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %11 = chlo.broadcast_or %and, %xor : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %12 = chlo.broadcast_complex %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
    %13 = chlo.broadcast_next_after %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>
  }
}
