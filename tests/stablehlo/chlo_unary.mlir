// CHLO ops as JAX emits them (jnp.sinh, jnp.cosh, jnp.tan, jnp.arcsin,
// jnp.arccos, jnp.arctan, jax.lax.erf) on one f32[5] argument.
module @jit_chlo attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
    %0 = chlo.sinh %arg0 : tensor<5xf32> -> tensor<5xf32>
    %1 = chlo.cosh %arg0 : tensor<5xf32> -> tensor<5xf32>
    %2 = chlo.tan %arg0 : tensor<5xf32> -> tensor<5xf32>
    %3 = chlo.asin %arg0 : tensor<5xf32> -> tensor<5xf32>
    %4 = chlo.acos %arg0 : tensor<5xf32> -> tensor<5xf32>
    %5 = chlo.atan %arg0 : tensor<5xf32> -> tensor<5xf32>
    %6 = chlo.erf %arg0 : tensor<5xf32> -> tensor<5xf32>
    return %0, %1, %2, %3, %4, %5, %6 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
  }
}
