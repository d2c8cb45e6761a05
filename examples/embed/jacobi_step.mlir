// One Jacobi sweep of a 2-D Laplace problem, for the Fortran stencil example
// (examples/embed/fortran): each of 4 processes passes its 16 x 4 block with
// a one-cell halo (18 x 6) and gets the new block and the global squared
// change (an all_reduce over the 4 replicas). In the style of jax.export.
module @jit_jacobi_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<18x6xf64>) -> (tensor<16x4xf64> {jax.result_info = "[0]"}, tensor<f64> {jax.result_info = "[1]"}) {
    %0 = stablehlo.slice %arg0 [0:16, 1:5] : (tensor<18x6xf64>) -> tensor<16x4xf64>
    %1 = stablehlo.slice %arg0 [2:18, 1:5] : (tensor<18x6xf64>) -> tensor<16x4xf64>
    %2 = stablehlo.slice %arg0 [1:17, 0:4] : (tensor<18x6xf64>) -> tensor<16x4xf64>
    %3 = stablehlo.slice %arg0 [1:17, 2:6] : (tensor<18x6xf64>) -> tensor<16x4xf64>
    %4 = stablehlo.slice %arg0 [1:17, 1:5] : (tensor<18x6xf64>) -> tensor<16x4xf64>
    %5 = stablehlo.add %0, %1 : tensor<16x4xf64>
    %6 = stablehlo.add %2, %3 : tensor<16x4xf64>
    %7 = stablehlo.add %5, %6 : tensor<16x4xf64>
    %cst = stablehlo.constant dense<2.500000e-01> : tensor<16x4xf64>
    %8 = stablehlo.multiply %7, %cst : tensor<16x4xf64>
    %9 = stablehlo.subtract %8, %4 : tensor<16x4xf64>
    %10 = stablehlo.multiply %9, %9 : tensor<16x4xf64>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %11 = stablehlo.reduce(%10 init: %cst_0) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x4xf64>, tensor<f64>) -> tensor<f64>
    %12 = "stablehlo.all_reduce"(%11) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%arg1: tensor<f64>, %arg2: tensor<f64>):
      %13 = stablehlo.add %arg1, %arg2 : tensor<f64>
      stablehlo.return %13 : tensor<f64>
    }) : (tensor<f64>) -> tensor<f64>
    return %8, %12 : tensor<16x4xf64>, tensor<f64>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
