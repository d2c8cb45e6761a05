// A global (sharded) shape-polymorphic program: x: f32[b, 4] split in rows over 2
// partitions; the shapes refine from the global array (--global-args), then the
// program is partitioned. y = x + iota(b) along rows.
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<?x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<?x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %b = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>
    %c4 = stablehlo.constant dense<4> : tensor<1xi32>
    %s = stablehlo.concatenate %b1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %i = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi32>) -> tensor<?x4xf32>
    %y = stablehlo.add %x, %i : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
