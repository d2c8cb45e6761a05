// jax.pmap-style program on 8 replicas (as `jax.jit(f).lower(...).as_text()`
// prints a per-device program: mhlo.num_replicas = 8, one partition) with its
// input and expected values baked in (the form of stablehlo/testdata): every
// collective of the spec, each checked on every rank. x = a + axis_index.
//   psum(x) = 8a + 28; pmax(x) = a + 7; all_gather(x) = [a + 0, ..., a + 7];
//   ppermute(x, r -> r + 1) gathered = [a + 7, a + 0, ..., a + 6];
//   psum_scatter(x) gathered = 8a + 28; all_to_all(x) gathered: block r = a[r] + [0..7].
#loc1 = loc("a")
module @jit_collectives attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 8 : i32} {
  func.func public @main() -> (tensor<8xf32> {jax.result_info = "[0]"}, tensor<64xf32> {jax.result_info = "[1]"}, tensor<64xf32>, tensor<8xf32>, tensor<64xf32>, tensor<8xf32>) {
    %a = call @inputs() : () -> tensor<8xf32> loc(#loc2)
    %0 = stablehlo.replica_id : tensor<ui32> loc(#loc3)
    %1 = stablehlo.convert %0 : (tensor<ui32>) -> tensor<f32> loc(#loc3)
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<8xf32> loc(#loc3)
    %x = stablehlo.add %a, %2 : tensor<8xf32> loc(#loc4)
    %sum = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %r = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %r : tensor<f32>
    }) : (tensor<8xf32>) -> tensor<8xf32> loc(#loc5)
    %g = "stablehlo.all_gather"(%x) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<8xf32>) -> tensor<64xf32> loc(#loc6)
    %perm = "stablehlo.collective_permute"(%x) <{source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 0]]> : tensor<8x2xi64>}> : (tensor<8xf32>) -> tensor<8xf32> loc(#loc7)
    %gp = "stablehlo.all_gather"(%perm) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<8xf32>) -> tensor<64xf32> loc(#loc6)
    %rs = "stablehlo.reduce_scatter"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, scatter_dimension = 0 : i64}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %r = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %r : tensor<f32>
    }) : (tensor<8xf32>) -> tensor<1xf32> loc(#loc8)
    %grs = "stablehlo.all_gather"(%rs) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 6, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<1xf32>) -> tensor<8xf32> loc(#loc6)
    %a2a = "stablehlo.all_to_all"(%x) <{concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 0 : i64}> : (tensor<8xf32>) -> tensor<8xf32> loc(#loc9)
    %ga2a = "stablehlo.all_gather"(%a2a) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 8, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<8xf32>) -> tensor<64xf32> loc(#loc6)
    %max = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 9, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %r = stablehlo.maximum %p, %q : tensor<f32>
      stablehlo.return %r : tensor<f32>
    }) : (tensor<8xf32>) -> tensor<8xf32> loc(#loc5)
    %e0 = call @expected_sum() : () -> tensor<8xf32>
    stablehlo.custom_call @check.expect_eq(%sum, %e0) {has_side_effect = true} : (tensor<8xf32>, tensor<8xf32>) -> ()
    check.expect_eq_const %g, dense<[5.000000e-01, -1.250000e+00, 2.000000e+00, 3.500000e+00, -4.000000e+00, 2.500000e-01, 1.000000e+00, -7.500000e-01, 1.500000e+00, -2.500000e-01, 3.000000e+00, 4.500000e+00, -3.000000e+00, 1.250000e+00, 2.000000e+00, 2.500000e-01, 2.500000e+00, 7.500000e-01, 4.000000e+00, 5.500000e+00, -2.000000e+00, 2.250000e+00, 3.000000e+00, 1.250000e+00, 3.500000e+00, 1.750000e+00, 5.000000e+00, 6.500000e+00, -1.000000e+00, 3.250000e+00, 4.000000e+00, 2.250000e+00, 4.500000e+00, 2.750000e+00, 6.000000e+00, 7.500000e+00, 0.000000e+00, 4.250000e+00, 5.000000e+00, 3.250000e+00, 5.500000e+00, 3.750000e+00, 7.000000e+00, 8.500000e+00, 1.000000e+00, 5.250000e+00, 6.000000e+00, 4.250000e+00, 6.500000e+00, 4.750000e+00, 8.000000e+00, 9.500000e+00, 2.000000e+00, 6.250000e+00, 7.000000e+00, 5.250000e+00, 7.500000e+00, 5.750000e+00, 9.000000e+00, 1.050000e+01, 3.000000e+00, 7.250000e+00, 8.000000e+00, 6.250000e+00]> : tensor<64xf32>
    check.expect_eq_const %gp, dense<[7.500000e+00, 5.750000e+00, 9.000000e+00, 1.050000e+01, 3.000000e+00, 7.250000e+00, 8.000000e+00, 6.250000e+00, 5.000000e-01, -1.250000e+00, 2.000000e+00, 3.500000e+00, -4.000000e+00, 2.500000e-01, 1.000000e+00, -7.500000e-01, 1.500000e+00, -2.500000e-01, 3.000000e+00, 4.500000e+00, -3.000000e+00, 1.250000e+00, 2.000000e+00, 2.500000e-01, 2.500000e+00, 7.500000e-01, 4.000000e+00, 5.500000e+00, -2.000000e+00, 2.250000e+00, 3.000000e+00, 1.250000e+00, 3.500000e+00, 1.750000e+00, 5.000000e+00, 6.500000e+00, -1.000000e+00, 3.250000e+00, 4.000000e+00, 2.250000e+00, 4.500000e+00, 2.750000e+00, 6.000000e+00, 7.500000e+00, 0.000000e+00, 4.250000e+00, 5.000000e+00, 3.250000e+00, 5.500000e+00, 3.750000e+00, 7.000000e+00, 8.500000e+00, 1.000000e+00, 5.250000e+00, 6.000000e+00, 4.250000e+00, 6.500000e+00, 4.750000e+00, 8.000000e+00, 9.500000e+00, 2.000000e+00, 6.250000e+00, 7.000000e+00, 5.250000e+00]> : tensor<64xf32>
    check.expect_almost_eq_const %grs, dense<[3.200000e+01, 1.800000e+01, 4.400000e+01, 5.600000e+01, -4.000000e+00, 3.000000e+01, 3.600000e+01, 2.200000e+01]> : tensor<8xf32>
    check.expect_eq_const %ga2a, dense<[5.000000e-01, 1.500000e+00, 2.500000e+00, 3.500000e+00, 4.500000e+00, 5.500000e+00, 6.500000e+00, 7.500000e+00, -1.250000e+00, -2.500000e-01, 7.500000e-01, 1.750000e+00, 2.750000e+00, 3.750000e+00, 4.750000e+00, 5.750000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, 9.000000e+00, 3.500000e+00, 4.500000e+00, 5.500000e+00, 6.500000e+00, 7.500000e+00, 8.500000e+00, 9.500000e+00, 1.050000e+01, -4.000000e+00, -3.000000e+00, -2.000000e+00, -1.000000e+00, 0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 2.500000e-01, 1.250000e+00, 2.250000e+00, 3.250000e+00, 4.250000e+00, 5.250000e+00, 6.250000e+00, 7.250000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, -7.500000e-01, 2.500000e-01, 1.250000e+00, 2.250000e+00, 3.250000e+00, 4.250000e+00, 5.250000e+00, 6.250000e+00]> : tensor<64xf32>
    check.expect_eq_const %max, dense<[7.500000e+00, 5.750000e+00, 9.000000e+00, 1.050000e+01, 3.000000e+00, 7.250000e+00, 8.000000e+00, 6.250000e+00]> : tensor<8xf32>
    return %sum, %g, %gp, %grs, %ga2a, %max : tensor<8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<64xf32>, tensor<8xf32> loc(#loc)
  } loc(#loc)
  func.func private @inputs() -> (tensor<8xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[5.000000e-01, -1.250000e+00, 2.000000e+00, 3.500000e+00, -4.000000e+00, 2.500000e-01, 1.000000e+00, -7.500000e-01]> : tensor<8xf32>
    return %cst : tensor<8xf32>
  }
  func.func private @expected_sum() -> (tensor<8xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[3.200000e+01, 1.800000e+01, 4.400000e+01, 5.600000e+01, -4.000000e+00, 3.000000e+01, 3.600000e+01, 2.200000e+01]> : tensor<8xf32>
    return %cst : tensor<8xf32>
  }
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("jit(f)/jit(main)/inputs"(#loc1))
#loc3 = loc("jit(f)/jit(main)/axis_index"(#loc1))
#loc4 = loc("jit(f)/jit(main)/add"(#loc1))
#loc5 = loc("jit(f)/jit(main)/psum"(#loc1))
#loc6 = loc("jit(f)/jit(main)/all_gather"(#loc1))
#loc7 = loc("jit(f)/jit(main)/ppermute"(#loc1))
#loc8 = loc("jit(f)/jit(main)/psum_scatter"(#loc1))
#loc9 = loc("jit(f)/jit(main)/all_to_all"(#loc1))
