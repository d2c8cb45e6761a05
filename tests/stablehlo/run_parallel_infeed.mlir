// interpreter.run_parallel with infeed functions: only process 1 reads the
// queue; its first infeed op takes @feed0's two values, its second @feed1's.
module @run_parallel_infeed {
  func.func @idle(%t: !stablehlo.token) -> tensor<2xi32> {
    %z = stablehlo.constant dense<[7, 7]> : tensor<2xi32>
    return %z : tensor<2xi32>
  }
  func.func @reader(%t: !stablehlo.token) -> tensor<2xi32> {
    %a:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi32>, tensor<i32>, !stablehlo.token)
    %b:2 = "stablehlo.infeed"(%a#2) : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    %s = stablehlo.broadcast_in_dim %a#1, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %m = stablehlo.multiply %a#0, %s : tensor<2xi32>
    %r = stablehlo.subtract %m, %b#0 : tensor<2xi32>
    return %r : tensor<2xi32>
  }
  func.func @feed0() -> (tensor<2xi32>, tensor<i32>) {
    %v = stablehlo.constant dense<[3, -4]> : tensor<2xi32>
    %k = stablehlo.constant dense<10> : tensor<i32>
    return %v, %k : tensor<2xi32>, tensor<i32>
  }
  func.func @feed1() -> tensor<2xi32> {
    %v = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    return %v : tensor<2xi32>
  }
  func.func @main() -> (tensor<2xi32>, tensor<2xi32>) {
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%t, %t) {
      infeed = [@feed0, @feed1],
      programs = [[@idle], [@reader]]
    } : (!stablehlo.token, !stablehlo.token) -> (tensor<2xi32>, tensor<2xi32>)
    return %r#0, %r#1 : tensor<2xi32>, tensor<2xi32>
  }
}
