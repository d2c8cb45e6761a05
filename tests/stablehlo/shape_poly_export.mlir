// A shape-polymorphic program in the form jax.export writes with symbolic
// shapes (x: f32[b, 4], b >= 2): @main reads the dimension variable with
// get_dimension_size, checks the constraint with a shape_assertion, and calls
// the wrapped function with the dimension as a global constant. Computes
//   r0 = cumsum(x, axis=0) without its last row  (f32[b-1, 4])
//   r1 = x.sum(axis=1) + iota(b)                  (f32[b])
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<?x4xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<?x4xf32> {jax.result_info = "[0]"}, tensor<?xf32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %1 = stablehlo.constant dense<2> : tensor<i32>
    %2 = stablehlo.compare  GE, %0, %1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%2, %0) {api_version = 2 : i32, error_message = "Input shapes do not match the polymorphic shapes specification. Expected value >= 2 for dimension variable 'b'. Obtained dimension variables: 'b' = {0} from specification 'b' for dimension args[0].shape[0] (= {0}).", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
    %3:2 = call @_wrapped_jax_export_main(%0, %arg0) : (tensor<i32>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>)
    return %3#0, %3#1 : tensor<?x4xf32>, tensor<?xf32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>) {
    %0 = call @cumsum(%arg0, %arg1) : (tensor<i32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %1 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.subtract %arg0, %1 : tensor<i32>
    %3 = stablehlo.constant dense<0> : tensor<1xi32>
    %4 = stablehlo.reshape %2 : (tensor<i32>) -> tensor<1xi32>
    %5 = stablehlo.constant dense<4> : tensor<1xi32>
    %6 = stablehlo.concatenate %3, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %7 = stablehlo.concatenate %4, %5, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %8 = stablehlo.constant dense<1> : tensor<2xi32>
    %9 = stablehlo.real_dynamic_slice %0, %6, %7, %8 : (tensor<?x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x4xf32>
    %10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.reduce(%arg1 init: %10) applies stablehlo.add across dimensions = [1] : (tensor<?x4xf32>, tensor<f32>) -> tensor<?xf32>
    %12 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %13 = stablehlo.dynamic_iota %12, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
    %14 = stablehlo.add %11, %13 : tensor<?xf32>
    return %9, %14 : tensor<?x4xf32>, tensor<?xf32>
  }
  func.func private @cumsum(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.subtract %arg0, %1 : tensor<i32>
    %3 = stablehlo.reshape %2 : (tensor<i32>) -> tensor<1xi32>
    %4 = stablehlo.constant dense<0> : tensor<1xi32>
    %5 = stablehlo.concatenate %3, %4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %6 = stablehlo.constant dense<0> : tensor<2xi32>
    %7 = stablehlo.reshape %5 : (tensor<2xi32>) -> tensor<1x2xi32>
    %8 = stablehlo.reshape %6 : (tensor<2xi32>) -> tensor<1x2xi32>
    %9 = stablehlo.concatenate %7, %8, dim = 0 : (tensor<1x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
    %10 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %11 = stablehlo.constant dense<1> : tensor<1xi32>
    %12 = stablehlo.concatenate %10, %11, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %13 = stablehlo.constant dense<1> : tensor<2xi32>
    %14 = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg1, %0, %12, %13, %13, %13, %9) {api_version = 2 : i32, called_computations = [@add_reducer]} : (tensor<?x4xf32>, tensor<f32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2x2xi32>) -> tensor<?x4xf32>
    return %14 : tensor<?x4xf32>
  }
  func.func private @add_reducer(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<f32>
    return %0 : tensor<f32>
  }
}
