// Top-k of a shape-polymorphic row length (x: f32[3, b], b >= 2), written as
// jax.export writes lax.top_k and lax.approx_max_k with k = b - 1:
// stablehlo.dynamic_top_k, and stablehlo.dynamic_approx_top_k with the
// iota of indices as its second input.
module @jit_topk attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x?xf32>) -> (tensor<3x?xf32>, tensor<3x?xi32>, tensor<3x?xf32>, tensor<3x?xi32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<3x?xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %c = stablehlo.constant dense<2> : tensor<i64>
    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = "Expected value >= 2 for dimension variable 'b'; 'b' = {0}", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> ()
    %3:4 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<3x?xf32>) -> (tensor<3x?xf32>, tensor<3x?xi32>, tensor<3x?xf32>, tensor<3x?xi32>)
    return %3#0, %3#1, %3#2, %3#3 : tensor<3x?xf32>, tensor<3x?xi32>, tensor<3x?xf32>, tensor<3x?xi32>
  }
  func.func private @top_k_gt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
    %0 = stablehlo.compare  GT, %arg0, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    return %0 : tensor<i1>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"}, %arg1: tensor<3x?xf32>) -> (tensor<3x?xf32>, tensor<3x?xi32>, tensor<3x?xf32>, tensor<3x?xi32>) {
    %c = stablehlo.constant dense<-1> : tensor<i64>
    %0 = stablehlo.add %arg0, %c : tensor<i64>
    %1 = stablehlo.convert %0 : (tensor<i64>) -> tensor<i32>
    %2:2 = stablehlo.custom_call @stablehlo.dynamic_top_k(%arg1, %1) {api_version = 2 : i32} : (tensor<3x?xf32>, tensor<i32>) -> (tensor<3x?xf32>, tensor<3x?xi32>)
    %3 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %4 = stablehlo.reshape %3 : (tensor<i32>) -> tensor<1xi32>
    %c3 = stablehlo.constant dense<3> : tensor<1xi32>
    %5 = stablehlo.concatenate %c3, %4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %6 = stablehlo.dynamic_iota %5, dim = 1 : (tensor<2xi32>) -> tensor<3x?xi32>
    %7 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
    %8 = stablehlo.concatenate %c3, %7, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_1 = stablehlo.constant dense<-1> : tensor<i32>
    %9:2 = stablehlo.custom_call @stablehlo.dynamic_approx_top_k(%arg1, %6, %cst, %c_1, %1, %8, %8) {called_computations = [@top_k_gt_f32_comparator], indices_of_shape_operands = dense<[5, 6]> : tensor<2xi64>, mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 1 : i64, reduction_input_size_override = -1 : i64}} : (tensor<3x?xf32>, tensor<3x?xi32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<2xi32>, tensor<2xi32>) -> (tensor<3x?xf32>, tensor<3x?xi32>)
    return %2#0, %2#1, %9#0, %9#1 : tensor<3x?xf32>, tensor<3x?xi32>, tensor<3x?xf32>, tensor<3x?xi32>
  }
}
