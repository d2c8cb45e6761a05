// Forms exporters write around StableHLO (docs/STABLEHLO.md, "Ops beside
// StableHLO"), checked by their own check ops: a seed of the fuzz harness
// fuzz_program_loader and run by integration.stablehlo_legacy_ops.
#loc = loc(unknown)
module @forms attributes {mhlo.frontend_attributes = {origin = loc("x")}} {
  func.func public @main() -> tensor<3xi32> {
    %x = stablehlo.constant dense<[3.0, 9.0, 9.0, -1.0]> : tensor<4xf32>
    %i = stablehlo.iota dim = 0 : tensor<4xi32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %z = stablehlo.constant dense<0> : tensor<i32>
    %m:2 = stablehlo.reduce(%x init: %ninf), (%i init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
     reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>)  {
      %gt = stablehlo.compare  GT, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare  EQ, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare  LT, %b, %d,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take = stablehlo.or %gt, %tie : tensor<i1>
      %v = stablehlo.select %gt, %a, %c : tensor<i1>, tensor<f32>
      %k = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %k : tensor<f32>, tensor<i32>
    } loc(#loc)
    %one = arith.constant dense<1> : tensor<i32>
    %arg = arith.addi %m#1, %one : tensor<i32>
    %idx = arith.constant 1 : index
    %pred = stablehlo.constant dense<"0x0500"> : tensor<16xi1>
    %p1 = tensor.extract %pred[%idx] : tensor<16xi1>
    %b3 = stablehlo.broadcast %arg, sizes = [3] : (tensor<i32>) -> tensor<3xi32>
    %want = stablehlo.constant dense<2> : tensor<3xi32>
    %no = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.custom_call @check.expect_eq(%b3, %want) {has_side_effect = true} : (tensor<3xi32>, tensor<3xi32>) -> ()
    %ok = stablehlo.custom_call @check.eq(%p1, %no) : (i1, tensor<i1>) -> tensor<i1>
    return %b3 : tensor<3xi32>
  }
}
