// A dense layer with a tanh-GELU on 4 replicas and the global sum of its
// output (tests/integration/embed/api_options.c): a StableHLO program whose
// elementwise chain the fusion pass turns into loop fusions.
module @jit_gelu_layer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<f32>) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %y = stablehlo.add %0, %1 : tensor<4x8xf32>
    %c3 = stablehlo.constant dense<4.471500e-02> : tensor<4x8xf32>
    %k = stablehlo.constant dense<0.797884583> : tensor<4x8xf32>
    %half = stablehlo.constant dense<5.000000e-01> : tensor<4x8xf32>
    %one = stablehlo.constant dense<1.000000e+00> : tensor<4x8xf32>
    %2 = stablehlo.multiply %y, %y : tensor<4x8xf32>
    %3 = stablehlo.multiply %2, %y : tensor<4x8xf32>
    %4 = stablehlo.multiply %c3, %3 : tensor<4x8xf32>
    %5 = stablehlo.add %y, %4 : tensor<4x8xf32>
    %6 = stablehlo.multiply %k, %5 : tensor<4x8xf32>
    %7 = stablehlo.tanh %6 : tensor<4x8xf32>
    %8 = stablehlo.add %one, %7 : tensor<4x8xf32>
    %9 = stablehlo.multiply %half, %y : tensor<4x8xf32>
    %g = stablehlo.multiply %9, %8 : tensor<4x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%g init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    %s = "stablehlo.all_reduce"(%10) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>):
      %11 = stablehlo.add %a0, %a1 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    return %g, %s : tensor<4x8xf32>, tensor<f32>
  }
}
