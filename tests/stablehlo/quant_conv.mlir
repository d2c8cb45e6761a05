// A quantized constant, and a convolution of quantized operands (dequantize ->
// f32 convolution -> quantize; 3.5 and 6.5 round half to even).
func.func @main() -> (tensor<3xf32>, tensor<1x1x3x1xi8>) {
  %c = stablehlo.constant dense<[1, 2, -3]> : tensor<3x!quant.uniform<i8:f32, 5.000000e-01:1>>
  %0 = stablehlo.uniform_dequantize %c : (tensor<3x!quant.uniform<i8:f32, 5.000000e-01:1>>) -> tensor<3xf32>
  %l = stablehlo.constant dense<[[[[2], [4], [6], [8], [10]]]]> : tensor<1x1x5x1x!quant.uniform<i8:f32, 2.500000e-01:0>>
  %k = stablehlo.constant dense<[[[[1]], [[2]], [[3]]]]> : tensor<1x3x1x1x!quant.uniform<i8:f32, 5.000000e-01:0>>
  %r = stablehlo.convolution(%l, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x5x1x!quant.uniform<i8:f32, 2.500000e-01:0>>, tensor<1x3x1x1x!quant.uniform<i8:f32, 5.000000e-01:0>>) -> tensor<1x1x3x1x!quant.uniform<i8:f32, 1.000000e+00:0>>
  %b = stablehlo.bitcast_convert %r : (tensor<1x1x3x1x!quant.uniform<i8:f32, 1.000000e+00:0>>) -> tensor<1x1x3x1xi8>
  return %0, %b : tensor<3xf32>, tensor<1x1x3x1xi8>
}
