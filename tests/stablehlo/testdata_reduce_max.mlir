// The form of stablehlo/testdata: inputs and expected values baked in,
// checked with custom_call @check.expect_close (expected values from NumPy:
// np.max([[1.5, -2.0, 3.25], [0.5, 7.0, -1.0]], axis=1) -> [3.25, 7.0];
// np.exp of that, rounded to f32).
module @jit_testcase attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> tensor<2xf32> {
    %0 = call @inputs() : () -> tensor<2x3xf32>
    %1 = call @expected() : () -> tensor<2xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %3 = stablehlo.exponential %2 : tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%3, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %3 : tensor<2xf32>
  }
  func.func private @inputs() -> (tensor<2x3xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[[1.500000e+00, -2.000000e+00, 3.250000e+00], [5.000000e-01, 7.000000e+00, -1.000000e+00]]> : tensor<2x3xf32>
    return %cst : tensor<2x3xf32>
  }
  func.func private @expected() -> (tensor<2xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[EXPECTED]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
}
