// Per-axis quantization along dimension 1 (three scale:zero_point pairs):
// quantize, dequantize, and requantize (uniform_quantize of a quantized
// operand) into other per-axis parameters; a transpose moves the storage.
module @quant_per_axis {
  func.func public @main(%x: tensor<2x3xf32>) -> (tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>, tensor<2x3xf32>, tensor<2x3x!quant.uniform<i8:f32:1, {2.000000e-01:10,1.000000e-01:0,3.000000e-01:-7}>>, tensor<3x2x!quant.uniform<i8:f32:0, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>) {
    %0 = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>
    %1 = stablehlo.uniform_dequantize %0 : (tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>) -> tensor<2x3xf32>
    %2 = stablehlo.uniform_quantize %0 : (tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>) -> tensor<2x3x!quant.uniform<i8:f32:1, {2.000000e-01:10,1.000000e-01:0,3.000000e-01:-7}>>
    %3 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>) -> tensor<3x2x!quant.uniform<i8:f32:0, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>
    return %0, %1, %2, %3 : tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>, tensor<2x3xf32>, tensor<2x3x!quant.uniform<i8:f32:1, {2.000000e-01:10,1.000000e-01:0,3.000000e-01:-7}>>, tensor<3x2x!quant.uniform<i8:f32:0, {1.000000e-01:-30,5.000000e-01:-20,2.500000e-01:5}>>
  }
}
