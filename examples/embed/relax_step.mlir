// One step of a model run inside an MPI application (examples/embed):
// each of 4 processes holds 8 values u; the step relaxes them towards the
// global mean by a factor k and squashes them with tanh; it also returns
// the global sum it used. Written the way jax.export prints StableHLO
// (module attributes, result_info, an all_reduce over the 4 replicas).
module @jit_relax_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<8xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<f32>) -> (tensor<8xf32> {jax.result_info = "[0]"}, tensor<f32> {jax.result_info = "[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.all_reduce"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %8 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %8 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %2 = stablehlo.divide %1, %cst_0 : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %4 = stablehlo.subtract %3, %arg0 : tensor<8xf32>
    %5 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %6 = stablehlo.multiply %5, %4 : tensor<8xf32>
    %7 = stablehlo.add %arg0, %6 : tensor<8xf32>
    %9 = stablehlo.tanh %7 : tensor<8xf32>
    return %9, %1 : tensor<8xf32>, tensor<f32>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
