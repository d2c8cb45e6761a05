// Ops on quantized tensors (arguments arrive as their int8 storage):
// element-wise multiply / add / maximum (dequantize -> op in f32 -> quantize),
// compare on dequantized values, a quantized x per-axis-quantized dot_general
// and a hybrid f32 x quantized dot_general (dequantize the weights only).
!qa = !quant.uniform<i8:f32, 1.000000e-01:-3>
module @quant_ops {
  func.func public @main(%a: tensor<4x!qa>, %b: tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>, %l: tensor<2x3x!quant.uniform<i8:f32, 2.500000e-01:2>>, %r: tensor<3x4x!quant.uniform<i8:f32:1, {5.000000e-01:0,2.500000e-01:-1,1.250000e-01:3,1.000000e+00:0}>>, %f: tensor<2x3xf32>) -> (tensor<4x!quant.uniform<i8:f32, 3.000000e-01:1>>, tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>, tensor<4x!quant.uniform<i8:f32, 1.000000e-01:-3>>, tensor<4xi1>, tensor<2x4x!quant.uniform<i8:f32, 3.000000e-01:-1>>, tensor<2x4xf32>) {
    %0 = stablehlo.multiply %a, %b : (tensor<4x!qa>, tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>) -> tensor<4x!quant.uniform<i8:f32, 3.000000e-01:1>>
    %1 = "stablehlo.add"(%a, %b) : (tensor<4x!qa>, tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>) -> tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>
    %2 = stablehlo.maximum %a, %a : tensor<4x!qa>
    %3 = stablehlo.compare GT, %a, %b : (tensor<4x!qa>, tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>) -> tensor<4xi1>
    %4 = stablehlo.dot_general %l, %r, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 2.500000e-01:2>>, tensor<3x4x!quant.uniform<i8:f32:1, {5.000000e-01:0,2.500000e-01:-1,1.250000e-01:3,1.000000e+00:0}>>) -> tensor<2x4x!quant.uniform<i8:f32, 3.000000e-01:-1>>
    %5 = stablehlo.dot_general %f, %r, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4x!quant.uniform<i8:f32:1, {5.000000e-01:0,2.500000e-01:-1,1.250000e-01:3,1.000000e+00:0}>>) -> tensor<2x4xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<4x!quant.uniform<i8:f32, 3.000000e-01:1>>, tensor<4x!quant.uniform<i8:f32, 2.000000e-01:4>>, tensor<4x!qa>, tensor<4xi1>, tensor<2x4x!quant.uniform<i8:f32, 3.000000e-01:-1>>, tensor<2x4xf32>
  }
}
