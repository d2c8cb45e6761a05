module @jit_mlp_train_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<512x1024xf32>, %arg1: tensor<1024xf32>, %arg2: tensor<1024x256xf32>, %arg3: tensor<256xf32>, %arg4: tensor<512x1024xf32>, %arg5: tensor<512x1024xf32>, %arg6: tensor<1024xf32>, %arg7: tensor<1024xf32>, %arg8: tensor<1024x256xf32>, %arg9: tensor<1024x256xf32>, %arg10: tensor<256xf32>, %arg11: tensor<256xf32>, %arg12: tensor<256x512xf32>, %arg13: tensor<256x256xf32>, %arg14: tensor<f32>) -> (tensor<512x1024xf32> {jax.result_info = "result[0]"}, tensor<512x1024xf32> {jax.result_info = "result[1]"}, tensor<512x1024xf32> {jax.result_info = "result[2]"}, tensor<1024xf32> {jax.result_info = "result[3]"}, tensor<1024xf32> {jax.result_info = "result[4]"}, tensor<1024xf32> {jax.result_info = "result[5]"}, tensor<1024x256xf32> {jax.result_info = "result[6]"}, tensor<1024x256xf32> {jax.result_info = "result[7]"}, tensor<1024x256xf32> {jax.result_info = "result[8]"}, tensor<256xf32> {jax.result_info = "result[9]"}, tensor<256xf32> {jax.result_info = "result[10]"}, tensor<256xf32> {jax.result_info = "result[11]"}, tensor<f32> {jax.result_info = "result[12]"}) {
    %0 = stablehlo.dot_general %arg12, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<256x512xf32>, tensor<512x1024xf32>) -> tensor<256x1024xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x1024xf32>) -> tensor<256x1024xf32>
    %3 = stablehlo.add %0, %2 : tensor<256x1024xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<256x1024xf32>
    %5 = stablehlo.maximum %3, %4 : tensor<256x1024xf32>
    %6 = stablehlo.dot_general %5, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<256x1024xf32>, tensor<1024x256xf32>) -> tensor<256x256xf32>
    %7 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<256xf32>) -> tensor<1x256xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x256xf32>) -> tensor<256x256xf32>
    %9 = stablehlo.add %6, %8 : tensor<256x256xf32>
    %10 = stablehlo.subtract %9, %arg13 : tensor<256x256xf32>
    %11 = stablehlo.multiply %10, %10 : tensor<256x256xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.reduce(%11 init: %cst_0) applies stablehlo.add across dimensions = [0, 1] : (tensor<256x256xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<6.553600e+04> : tensor<f32>
    %13 = stablehlo.divide %12, %cst_1 : tensor<f32>
    %cst_2 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<256x256xf32>
    %15 = stablehlo.multiply %14, %10 : tensor<256x256xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_4 = stablehlo.constant dense<6.553600e+04> : tensor<f32>
    %16 = stablehlo.divide %cst_3, %cst_4 : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<f32>) -> tensor<256x256xf32>
    %18 = stablehlo.multiply %17, %15 : tensor<256x256xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.reduce(%18 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<256x256xf32>, tensor<f32>) -> tensor<256xf32>
    %20 = stablehlo.reshape %19 : (tensor<256xf32>) -> tensor<1x256xf32>
    %21 = stablehlo.reshape %20 : (tensor<1x256xf32>) -> tensor<256xf32>
    %22 = stablehlo.dot_general %5, %18, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<256x1024xf32>, tensor<256x256xf32>) -> tensor<1024x256xf32>
    %23 = stablehlo.dot_general %18, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<256x256xf32>, tensor<1024x256xf32>) -> tensor<256x1024xf32>
    %24 = stablehlo.compare GT, %3, %4, FLOAT : (tensor<256x1024xf32>, tensor<256x1024xf32>) -> tensor<256x1024xi1>
    %25 = stablehlo.select %24, %23, %4 : tensor<256x1024xi1>, tensor<256x1024xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = stablehlo.reduce(%25 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<1024xf32>
    %27 = stablehlo.reshape %26 : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %28 = stablehlo.reshape %27 : (tensor<1x1024xf32>) -> tensor<1024xf32>
    %29 = stablehlo.dot_general %arg12, %25, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<256x512xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
    %cst_7 = stablehlo.constant dense<9.000000e-01> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %31 = stablehlo.multiply %30, %arg4 : tensor<512x1024xf32>
    %cst_8 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %32 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %33 = stablehlo.multiply %32, %29 : tensor<512x1024xf32>
    %34 = stablehlo.add %31, %33 : tensor<512x1024xf32>
    %cst_9 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %36 = stablehlo.multiply %35, %arg5 : tensor<512x1024xf32>
    %cst_10 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %38 = stablehlo.multiply %29, %29 : tensor<512x1024xf32>
    %39 = stablehlo.multiply %37, %38 : tensor<512x1024xf32>
    %40 = stablehlo.add %36, %39 : tensor<512x1024xf32>
    %41 = stablehlo.sqrt %40 : tensor<512x1024xf32>
    %cst_11 = stablehlo.constant dense<1.000000e-08> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %43 = stablehlo.add %41, %42 : tensor<512x1024xf32>
    %44 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %45 = stablehlo.multiply %44, %34 : tensor<512x1024xf32>
    %46 = stablehlo.divide %45, %43 : tensor<512x1024xf32>
    %47 = stablehlo.subtract %arg0, %46 : tensor<512x1024xf32>
    %cst_12 = stablehlo.constant dense<9.000000e-01> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %49 = stablehlo.multiply %48, %arg6 : tensor<1024xf32>
    %cst_13 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %51 = stablehlo.multiply %50, %28 : tensor<1024xf32>
    %52 = stablehlo.add %49, %51 : tensor<1024xf32>
    %cst_14 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %54 = stablehlo.multiply %53, %arg7 : tensor<1024xf32>
    %cst_15 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %55 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %56 = stablehlo.multiply %28, %28 : tensor<1024xf32>
    %57 = stablehlo.multiply %55, %56 : tensor<1024xf32>
    %58 = stablehlo.add %54, %57 : tensor<1024xf32>
    %59 = stablehlo.sqrt %58 : tensor<1024xf32>
    %cst_16 = stablehlo.constant dense<1.000000e-08> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %61 = stablehlo.add %59, %60 : tensor<1024xf32>
    %62 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %63 = stablehlo.multiply %62, %52 : tensor<1024xf32>
    %64 = stablehlo.divide %63, %61 : tensor<1024xf32>
    %65 = stablehlo.subtract %arg1, %64 : tensor<1024xf32>
    %cst_17 = stablehlo.constant dense<9.000000e-01> : tensor<f32>
    %66 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %67 = stablehlo.multiply %66, %arg8 : tensor<1024x256xf32>
    %cst_18 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %68 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %69 = stablehlo.multiply %68, %22 : tensor<1024x256xf32>
    %70 = stablehlo.add %67, %69 : tensor<1024x256xf32>
    %cst_19 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %71 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %72 = stablehlo.multiply %71, %arg9 : tensor<1024x256xf32>
    %cst_20 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %74 = stablehlo.multiply %22, %22 : tensor<1024x256xf32>
    %75 = stablehlo.multiply %73, %74 : tensor<1024x256xf32>
    %76 = stablehlo.add %72, %75 : tensor<1024x256xf32>
    %77 = stablehlo.sqrt %76 : tensor<1024x256xf32>
    %cst_21 = stablehlo.constant dense<1.000000e-08> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %79 = stablehlo.add %77, %78 : tensor<1024x256xf32>
    %80 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %81 = stablehlo.multiply %80, %70 : tensor<1024x256xf32>
    %82 = stablehlo.divide %81, %79 : tensor<1024x256xf32>
    %83 = stablehlo.subtract %arg2, %82 : tensor<1024x256xf32>
    %cst_22 = stablehlo.constant dense<9.000000e-01> : tensor<f32>
    %84 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %85 = stablehlo.multiply %84, %arg10 : tensor<256xf32>
    %cst_23 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %86 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %87 = stablehlo.multiply %86, %21 : tensor<256xf32>
    %88 = stablehlo.add %85, %87 : tensor<256xf32>
    %cst_24 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %89 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %90 = stablehlo.multiply %89, %arg11 : tensor<256xf32>
    %cst_25 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %91 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %92 = stablehlo.multiply %21, %21 : tensor<256xf32>
    %93 = stablehlo.multiply %91, %92 : tensor<256xf32>
    %94 = stablehlo.add %90, %93 : tensor<256xf32>
    %95 = stablehlo.sqrt %94 : tensor<256xf32>
    %cst_26 = stablehlo.constant dense<1.000000e-08> : tensor<f32>
    %96 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %97 = stablehlo.add %95, %96 : tensor<256xf32>
    %98 = stablehlo.broadcast_in_dim %arg14, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %99 = stablehlo.multiply %98, %88 : tensor<256xf32>
    %100 = stablehlo.divide %99, %97 : tensor<256xf32>
    %101 = stablehlo.subtract %arg3, %100 : tensor<256xf32>
    return %47, %34, %40, %65, %52, %58, %83, %70, %76, %101, %88, %94, %13 : tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>
  }
}
