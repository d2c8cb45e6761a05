// interpreter.run_parallel on a 2x2 grid (replica r, partition p = rank
// 2r + p): every process all-gathers its operand over all four processes
// (flattened ids) and scales it by its partition id + 1. EXPECTED_k is
// filled in by tests/integration/test_stablehlo.py from NumPy.
module @run_parallel_grid {
  func.func @gather_scale(%x: tensor<2xf32>) -> tensor<8xf32> {
    %g = "stablehlo.all_gather"(%x) {
      all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
      use_global_device_ids
    } : (tensor<2xf32>) -> tensor<8xf32>
    %pid = stablehlo.partition_id : tensor<ui32>
    %pf = stablehlo.convert %pid : (tensor<ui32>) -> tensor<f32>
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %s = stablehlo.add %pf, %one : tensor<f32>
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %r = stablehlo.multiply %g, %sb : tensor<8xf32>
    func.return %r : tensor<8xf32>
  }
  func.func @main() -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %a = stablehlo.constant dense<[INPUT_0]> : tensor<2xf32>
    %b = stablehlo.constant dense<[INPUT_1]> : tensor<2xf32>
    %c = stablehlo.constant dense<[INPUT_2]> : tensor<2xf32>
    %d = stablehlo.constant dense<[INPUT_3]> : tensor<2xf32>
    %r:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {
      programs = [[@gather_scale, @gather_scale], [@gather_scale, @gather_scale]]
    } : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    check.expect_eq_const %r#0, dense<[EXPECTED_0]> : tensor<8xf32>
    check.expect_eq_const %r#1, dense<[EXPECTED_1]> : tensor<8xf32>
    check.expect_eq_const %r#2, dense<[EXPECTED_2]> : tensor<8xf32>
    check.expect_eq_const %r#3, dense<[EXPECTED_3]> : tensor<8xf32>
    func.return %r#0, %r#1, %r#2, %r#3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
