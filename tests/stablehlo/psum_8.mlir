module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 8 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<3xf32>) -> (tensor<4x3xf32> {jax.result_info = "[0]"}, tensor<f32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4x3xf32>
    %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %5 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<f32>
    %4 = stablehlo.tanh %3 : tensor<f32>
    return %2, %4 : tensor<4x3xf32>, tensor<f32>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
