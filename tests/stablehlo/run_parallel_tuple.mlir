// interpreter.run_parallel whose programs return tuples: each leaf reaches
// every rank from its own process (a nested tuple and a token included).
module @run_parallel_tuple {
  func.func @p0(%x: tensor<2xi32>, %t: !stablehlo.token) -> tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>> {
    %y = stablehlo.add %x, %x : tensor<2xi32>
    %k = stablehlo.constant dense<10> : tensor<i32>
    %in = stablehlo.tuple %k, %t : tuple<tensor<i32>, !stablehlo.token>
    %r = stablehlo.tuple %y, %in : tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>
    return %r : tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>
  }
  func.func @p1(%x: tensor<2xi32>, %t: !stablehlo.token) -> tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>> {
    %y = stablehlo.multiply %x, %x : tensor<2xi32>
    %k = stablehlo.constant dense<20> : tensor<i32>
    %in = stablehlo.tuple %k, %t : tuple<tensor<i32>, !stablehlo.token>
    %r = stablehlo.tuple %y, %in : tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>
    return %r : tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>
  }
  func.func @main() -> (tensor<2xi32>, tensor<i32>, tensor<2xi32>, tensor<i32>) {
    %a = stablehlo.constant dense<[3, -4]> : tensor<2xi32>
    %b = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%a, %t, %b, %t) {
      programs = [[@p0], [@p1]]
    } : (tensor<2xi32>, !stablehlo.token, tensor<2xi32>, !stablehlo.token) ->
        (tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>,
         tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>)
    %y0 = stablehlo.get_tuple_element %r#0[0] : (tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>) -> tensor<2xi32>
    %i0 = stablehlo.get_tuple_element %r#0[1] : (tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>) -> tuple<tensor<i32>, !stablehlo.token>
    %k0 = stablehlo.get_tuple_element %i0[0] : (tuple<tensor<i32>, !stablehlo.token>) -> tensor<i32>
    %y1 = stablehlo.get_tuple_element %r#1[0] : (tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>) -> tensor<2xi32>
    %i1 = stablehlo.get_tuple_element %r#1[1] : (tuple<tensor<2xi32>, tuple<tensor<i32>, !stablehlo.token>>) -> tuple<tensor<i32>, !stablehlo.token>
    %k1 = stablehlo.get_tuple_element %i1[0] : (tuple<tensor<i32>, !stablehlo.token>) -> tensor<i32>
    return %y0, %k0, %y1, %k1 : tensor<2xi32>, tensor<i32>, tensor<2xi32>, tensor<i32>
  }
}
