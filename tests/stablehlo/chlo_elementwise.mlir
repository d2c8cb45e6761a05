// CHLO ops that decompose into other element-wise ops (jnp.isinf,
// jnp.isposinf, jnp.isneginf, jnp.conj, jnp.square, jax.lax.top_k,
// jnp.sinh / cosh / arcsinh / arctanh), plus chlo.constant_like and chlo.constant.
module @jit_elementwise attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<6xf32> {mhlo.sharding = "{replicated}"}, %z: tensor<3xcomplex<f32>>, %t: tensor<2x5xf32>, %h: tensor<7xf32>) -> (tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<3xcomplex<f32>>, tensor<6xf32>, tensor<3xcomplex<f32>>, tensor<6xf32>, tensor<2x5xf32>, tensor<2x5xi32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>) {
    %0 = chlo.is_inf %x : tensor<6xf32> -> tensor<6xi1>
    %1 = chlo.is_pos_inf %x : tensor<6xf32> -> tensor<6xi1>
    %2 = "chlo.is_neg_inf"(%x) : (tensor<6xf32>) -> tensor<6xi1>
    %3 = chlo.conj %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
    %4 = chlo.conj %x : tensor<6xf32> -> tensor<6xf32>
    %5 = chlo.square %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
    %6 = chlo.square %x : tensor<6xf32> -> tensor<6xf32>
    %7 = "chlo.constant_like"(%t) <{value = 2.5 : f32}> : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %ti = stablehlo.convert %t : (tensor<2x5xf32>) -> tensor<2x5xi32>
    %8 = chlo.constant_like {value = -7 : i32} %ti : (tensor<2x5xi32>) -> tensor<2x5xi32>
    %9 = chlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
    %values, %indices = chlo.top_k(%t, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    %10 = chlo.sinh %h : tensor<7xf32> -> tensor<7xf32>
    %11 = chlo.cosh %h : tensor<7xf32> -> tensor<7xf32>
    %12 = chlo.asinh %h : tensor<7xf32> -> tensor<7xf32>
    %c11 = stablehlo.constant dense<1.100000e+01> : tensor<7xf32>
    %hs = stablehlo.divide %h, %c11 : tensor<7xf32>
    %13 = chlo.atanh %hs : tensor<7xf32> -> tensor<7xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %values, %indices, %10, %11, %12, %13 : tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<3xcomplex<f32>>, tensor<6xf32>, tensor<3xcomplex<f32>>, tensor<6xf32>, tensor<2x5xf32>, tensor<2x5xi32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>
  }
}
