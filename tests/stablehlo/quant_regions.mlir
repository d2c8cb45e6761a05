// Regions on quantized values: a reduce whose body adds quantized scalars,
// an all_reduce across the 2 replicas, a sort comparing quantized keys, and a while loop carrying a quantized
// tensor (doubled three times, saturating at storage_max). The bodies' ops
// dequantize -> add -> quantize; the loops and collectives move storage.
!q = !quant.uniform<i8:f32, 5.000000e-01:0>
module @quant_regions attributes {mhlo.num_replicas = 2 : i32} {
  func.func public @main(%x: tensor<4x!q>, %i: tensor<!q>) -> (tensor<!q>, tensor<4x!q>, tensor<4x!q>, tensor<4x!q>) {
    %0 = "stablehlo.reduce"(%x, %i) ({
    ^bb0(%a: tensor<!q>, %b: tensor<!q>):
      %s = stablehlo.add %a, %b : tensor<!q>
      stablehlo.return %s : tensor<!q>
    }) {dimensions = array<i64: 0>} : (tensor<4x!q>, tensor<!q>) -> tensor<!q>
    %1 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<!q>, %b: tensor<!q>):
      %s = stablehlo.add %a, %b : tensor<!q>
      stablehlo.return %s : tensor<!q>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4x!q>) -> tensor<4x!q>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %2:2 = stablehlo.while(%it = %x, %k = %c0) : tensor<4x!q>, tensor<i32>
     cond {
      %lt = stablehlo.compare LT, %k, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %d = stablehlo.add %it, %it : tensor<4x!q>
      %k1 = stablehlo.add %k, %c1 : tensor<i32>
      stablehlo.return %d, %k1 : tensor<4x!q>, tensor<i32>
    }
    %3 = "stablehlo.sort"(%x) ({
    ^bb0(%a: tensor<!q>, %b: tensor<!q>):
      %lt = stablehlo.compare GT, %a, %b : (tensor<!q>, tensor<!q>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) {dimension = 0 : i64} : (tensor<4x!q>) -> tensor<4x!q>
    return %0, %1, %2#0, %3 : tensor<!q>, tensor<4x!q>, tensor<4x!q>, tensor<4x!q>
  }
}
