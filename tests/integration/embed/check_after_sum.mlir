// For api_errors.c: a global sum, then a check that this process's argument
// is all ones. A process given other values fails after the collective, so
// the others are not left waiting for it: every process gets the error.
module @jit_check_after_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    check.expect_eq_const %arg0, dense<1.000000e+00> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
