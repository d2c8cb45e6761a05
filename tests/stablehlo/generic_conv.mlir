// The generic op form as `mlir-opt --mlir-print-op-generic` prints it: a
// "builtin.module", "func.func" ops with their properties (function_type,
// sym_name, sym_visibility, arg_attrs / res_attrs), "func.call", and a
// convolution with #stablehlo.conv<raw ...> dimension numbers (NHWC input,
// HWIO kernel, padding 1, stride 1).
"builtin.module"() <{sym_name = "jit_conv"}> ({
  "func.func"() <{arg_attrs = [{mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"}, {jax.arg_info = "w"}], function_type = (tensor<1x4x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x5x3xf32>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<1x4x5x2xf32> loc("x"), %arg1: tensor<3x3x2x3xf32> loc("w")):
    %0 = "stablehlo.convolution"(%arg0, %arg1) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<1> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> : (tensor<1x4x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x5x3xf32> loc(#loc3)
    %1 = "func.call"(%0) <{callee = @double}> : (tensor<1x4x5x3xf32>) -> tensor<1x4x5x3xf32> loc(#loc3)
    "func.return"(%1) : (tensor<1x4x5x3xf32>) -> () loc(#loc3)
  }) : () -> () loc(#loc3)
  "func.func"() <{function_type = (tensor<1x4x5x3xf32>) -> tensor<1x4x5x3xf32>, sym_name = "double", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<1x4x5x3xf32>):
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<1x4x5x3xf32>, tensor<1x4x5x3xf32>) -> tensor<1x4x5x3xf32>
    "func.return"(%0) : (tensor<1x4x5x3xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> () loc(#loc)
#loc = loc(unknown)
#loc3 = loc("jit(conv)/jit(main)/conv_general_dilated"(#loc))
