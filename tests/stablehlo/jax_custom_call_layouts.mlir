// jax.export's form of custom calls into jaxlib's LAPACK kernels (JAX's export
// back-compat data, cpu_lu_lapack_getrf / cpu_cholesky_lapack_potrf):
// column-major operand_layouts / result_layouts, typed-FFI attributes in
// mhlo.backend_config beside api_version 1, output_operand_aliases.
// tests/integration/test_stablehlo_custom_call_layouts.py runs it (P A = L U,
// L L^T = A A^T + 4 I); a seed of the fuzz_program_loader harness.
module @jit_lu_cholesky attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x4xf64> {mhlo.layout_mode = "default"}) -> (tensor<2x4x4xf64> {jax.result_info = "[0]"}, tensor<2x4xi32> {jax.result_info = "[1]"}, tensor<2xi32> {jax.result_info = "[2]"}, tensor<2x4x4xf64> {jax.result_info = "[3]"}, tensor<2xi32> {jax.result_info = "[4]"}) {
    %0:3 = stablehlo.custom_call @lapack_dgetrf_ffi(%arg0) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x4x4xf64>) -> (tensor<2x4x4xf64>, tensor<2x4xi32>, tensor<2xi32>) loc(#loc1)
    %1 = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x4x4xf64>) -> tensor<2x4x4xf64>
    %2 = stablehlo.dot_general %arg0, %1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf64>, tensor<2x4x4xf64>) -> tensor<2x4x4xf64>
    %3 = stablehlo.iota dim = 1 : tensor<2x4x4xi32>
    %4 = stablehlo.iota dim = 2 : tensor<2x4x4xi32>
    %5 = stablehlo.compare EQ, %3, %4, SIGNED : (tensor<2x4x4xi32>, tensor<2x4x4xi32>) -> tensor<2x4x4xi1>
    %cst = stablehlo.constant dense<4.000000e+00> : tensor<2x4x4xf64>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<2x4x4xf64>
    %6 = stablehlo.select %5, %cst, %cst_0 : tensor<2x4x4xi1>, tensor<2x4x4xf64>
    %7 = stablehlo.add %2, %6 : tensor<2x4x4xf64>
    %8:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%7) {mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x4x4xf64>) -> (tensor<2x4x4xf64>, tensor<2xi32>) loc(#loc2)
    return %0#0, %0#1, %0#2, %8#0, %8#1 : tensor<2x4x4xf64>, tensor<2x4xi32>, tensor<2xi32>, tensor<2x4x4xf64>, tensor<2xi32>
  }
}
#loc1 = loc("jit(lu)/lu")
#loc2 = loc("jit(cholesky)/cholesky")
