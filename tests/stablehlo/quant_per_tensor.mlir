// Per-tensor uniform_quantize / uniform_dequantize (pretty form), a
// storage_min:storage_max type and an unsigned storage type. Quantized results
// are written as their storage type (.npy int8 / uint8).
module @quant_per_tensor {
  func.func public @main(%x: tensor<8xf32>) -> (tensor<8x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<8xf32>, tensor<8x!quant.uniform<i8<-100:100>:f32, 2.500000e-01:7>>, tensor<8x!quant.uniform<u8:f32, 1.000000e-01:128>>, tensor<8xf32>) {
    %0 = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x!quant.uniform<i8:f32, 5.000000e-01:-3>>
    %1 = stablehlo.uniform_dequantize %0 : (tensor<8x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<8xf32>
    %2 = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x!quant.uniform<i8<-100:100>:f32, 2.500000e-01:7>>
    %3 = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x!quant.uniform<u8:f32, 1.000000e-01:128>>
    %4 = stablehlo.uniform_dequantize %3 : (tensor<8x!quant.uniform<u8:f32, 1.000000e-01:128>>) -> tensor<8xf32>
    return %0, %1, %2, %3, %4 : tensor<8x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<8xf32>, tensor<8x!quant.uniform<i8<-100:100>:f32, 2.500000e-01:7>>, tensor<8x!quant.uniform<u8:f32, 1.000000e-01:128>>, tensor<8xf32>
  }
}
