// For api_errors.c --stuck: the check comes first, so a process given other
// values fails while the others wait in the all_reduce for it.
module @jit_check_before_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    check.expect_eq_const %arg0, dense<1.000000e+00> : tensor<4xf32>
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
