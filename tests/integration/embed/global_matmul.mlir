// For api_global.c: a global program as jax.jit lowers it with GSPMD
// shardings (rows of x over 4 partitions, w replicated, a Sharding
// custom-call). The runner partitions it; each process passes its rows.
module @jit_global_matmul attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{devices=[4,1]<=[4]}"}, %arg1: tensor<4x4xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"}) -> (tensor<8x4xf32> {jax.result_info = "[0]", mhlo.sharding = "{devices=[4,1]<=[4]}"}, tensor<f32> {jax.result_info = "[1]", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[4,1]<=[4]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<f32>
    return %1, %2 : tensor<8x4xf32>, tensor<f32>
  }
}
