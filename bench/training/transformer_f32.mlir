module @jit_transformer_train_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<256x768xf32>, %arg1: tensor<256x256xf32>, %arg2: tensor<256x1024xf32>, %arg3: tensor<1024xf32>, %arg4: tensor<1024x256xf32>, %arg5: tensor<256xf32>, %arg6: tensor<512x256xf32>, %arg7: tensor<512x256xf32>, %arg8: tensor<f32>) -> (tensor<256x768xf32> {jax.result_info = "result[0]"}, tensor<256x256xf32> {jax.result_info = "result[1]"}, tensor<256x1024xf32> {jax.result_info = "result[2]"}, tensor<1024xf32> {jax.result_info = "result[3]"}, tensor<1024x256xf32> {jax.result_info = "result[4]"}, tensor<256xf32> {jax.result_info = "result[5]"}, tensor<f32> {jax.result_info = "result[6]"}) {
    %0 = stablehlo.dot_general %arg6, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<256x768xf32>) -> tensor<512x768xf32>
    %1 = stablehlo.reshape %0 : (tensor<512x768xf32>) -> tensor<4x128x3x4x64xf32>
    %2 = stablehlo.slice %1 [0:4, 0:128, 0:1, 0:4, 0:64] : (tensor<4x128x3x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %3 = stablehlo.reshape %2 : (tensor<4x128x1x4x64xf32>) -> tensor<4x128x4x64xf32>
    %4 = stablehlo.transpose %3, dims = [0, 2, 1, 3] : (tensor<4x128x4x64xf32>) -> tensor<4x4x128x64xf32>
    %5 = stablehlo.slice %1 [0:4, 0:128, 1:2, 0:4, 0:64] : (tensor<4x128x3x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %6 = stablehlo.reshape %5 : (tensor<4x128x1x4x64xf32>) -> tensor<4x128x4x64xf32>
    %7 = stablehlo.transpose %6, dims = [0, 2, 1, 3] : (tensor<4x128x4x64xf32>) -> tensor<4x4x128x64xf32>
    %8 = stablehlo.slice %1 [0:4, 0:128, 2:3, 0:4, 0:64] : (tensor<4x128x3x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %9 = stablehlo.reshape %8 : (tensor<4x128x1x4x64xf32>) -> tensor<4x128x4x64xf32>
    %10 = stablehlo.transpose %9, dims = [0, 2, 1, 3] : (tensor<4x128x4x64xf32>) -> tensor<4x4x128x64xf32>
    %cst = stablehlo.constant dense<1.250000e-01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x128x64xf32>
    %12 = stablehlo.multiply %4, %11 : tensor<4x4x128x64xf32>
    %13 = stablehlo.dot_general %12, %7, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x64xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x128xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %14 = stablehlo.reduce(%13 init: %cst_0) applies stablehlo.maximum across dimensions = [3] : (tensor<4x4x128x128xf32>, tensor<f32>) -> tensor<4x4x128xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1, 2] : (tensor<4x4x128xf32>) -> tensor<4x4x128x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2, 3] : (tensor<4x4x128x1xf32>) -> tensor<4x4x128x128xf32>
    %17 = stablehlo.subtract %13, %16 : tensor<4x4x128x128xf32>
    %18 = stablehlo.exponential %17 : tensor<4x4x128x128xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.reduce(%18 init: %cst_1) applies stablehlo.add across dimensions = [3] : (tensor<4x4x128x128xf32>, tensor<f32>) -> tensor<4x4x128xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0, 1, 2] : (tensor<4x4x128xf32>) -> tensor<4x4x128x1xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2, 3] : (tensor<4x4x128x1xf32>) -> tensor<4x4x128x128xf32>
    %22 = stablehlo.divide %18, %21 : tensor<4x4x128x128xf32>
    %23 = stablehlo.dot_general %22, %10, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x128xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x64xf32>
    %24 = stablehlo.transpose %23, dims = [0, 2, 1, 3] : (tensor<4x4x128x64xf32>) -> tensor<4x128x4x64xf32>
    %25 = stablehlo.reshape %24 : (tensor<4x128x4x64xf32>) -> tensor<512x256xf32>
    %26 = stablehlo.dot_general %25, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<256x256xf32>) -> tensor<512x256xf32>
    %27 = stablehlo.add %arg6, %26 : tensor<512x256xf32>
    %28 = stablehlo.dot_general %27, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
    %29 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1] : (tensor<1x1024xf32>) -> tensor<512x1024xf32>
    %31 = stablehlo.add %28, %30 : tensor<512x1024xf32>
    %32 = stablehlo.multiply %31, %31 : tensor<512x1024xf32>
    %33 = stablehlo.multiply %32, %31 : tensor<512x1024xf32>
    %cst_2 = stablehlo.constant dense<7.978846e-01> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %cst_3 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %36 = stablehlo.multiply %35, %33 : tensor<512x1024xf32>
    %37 = stablehlo.add %31, %36 : tensor<512x1024xf32>
    %38 = stablehlo.multiply %34, %37 : tensor<512x1024xf32>
    %39 = stablehlo.tanh %38 : tensor<512x1024xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %40 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %42 = stablehlo.add %41, %39 : tensor<512x1024xf32>
    %43 = stablehlo.multiply %40, %42 : tensor<512x1024xf32>
    %44 = stablehlo.multiply %31, %43 : tensor<512x1024xf32>
    %cst_6 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %45 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %46 = stablehlo.multiply %31, %31 : tensor<512x1024xf32>
    %47 = stablehlo.multiply %45, %46 : tensor<512x1024xf32>
    %48 = stablehlo.dot_general %44, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x1024xf32>, tensor<1024x256xf32>) -> tensor<512x256xf32>
    %49 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<256xf32>) -> tensor<1x256xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1] : (tensor<1x256xf32>) -> tensor<512x256xf32>
    %51 = stablehlo.add %48, %50 : tensor<512x256xf32>
    %52 = stablehlo.add %51, %27 : tensor<512x256xf32>
    %53 = stablehlo.subtract %52, %arg7 : tensor<512x256xf32>
    %54 = stablehlo.multiply %53, %53 : tensor<512x256xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %55 = stablehlo.reduce(%54 init: %cst_7) applies stablehlo.add across dimensions = [0, 1] : (tensor<512x256xf32>, tensor<f32>) -> tensor<f32>
    %cst_8 = stablehlo.constant dense<1.310720e+05> : tensor<f32>
    %56 = stablehlo.divide %55, %cst_8 : tensor<f32>
    %cst_9 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<512x256xf32>
    %58 = stablehlo.multiply %57, %53 : tensor<512x256xf32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_11 = stablehlo.constant dense<1.310720e+05> : tensor<f32>
    %59 = stablehlo.divide %cst_10, %cst_11 : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %59, dims = [] : (tensor<f32>) -> tensor<512x256xf32>
    %61 = stablehlo.multiply %60, %58 : tensor<512x256xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %62 = stablehlo.reduce(%61 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<512x256xf32>, tensor<f32>) -> tensor<256xf32>
    %63 = stablehlo.reshape %62 : (tensor<256xf32>) -> tensor<1x256xf32>
    %64 = stablehlo.reshape %63 : (tensor<1x256xf32>) -> tensor<256xf32>
    %65 = stablehlo.dot_general %44, %61, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x1024xf32>, tensor<512x256xf32>) -> tensor<1024x256xf32>
    %66 = stablehlo.dot_general %61, %arg4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<1024x256xf32>) -> tensor<512x1024xf32>
    %67 = stablehlo.multiply %31, %66 : tensor<512x1024xf32>
    %cst_13 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %68 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %69 = stablehlo.multiply %68, %67 : tensor<512x1024xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %71 = stablehlo.multiply %39, %39 : tensor<512x1024xf32>
    %72 = stablehlo.subtract %70, %71 : tensor<512x1024xf32>
    %73 = stablehlo.multiply %69, %72 : tensor<512x1024xf32>
    %cst_15 = stablehlo.constant dense<7.978846e-01> : tensor<f32>
    %74 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %75 = stablehlo.multiply %74, %73 : tensor<512x1024xf32>
    %cst_16 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %76 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<512x1024xf32>
    %77 = stablehlo.multiply %76, %75 : tensor<512x1024xf32>
    %78 = stablehlo.multiply %77, %47 : tensor<512x1024xf32>
    %79 = stablehlo.multiply %66, %43 : tensor<512x1024xf32>
    %80 = stablehlo.add %79, %75 : tensor<512x1024xf32>
    %81 = stablehlo.add %80, %78 : tensor<512x1024xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %82 = stablehlo.reduce(%81 init: %cst_17) applies stablehlo.add across dimensions = [0] : (tensor<512x1024xf32>, tensor<f32>) -> tensor<1024xf32>
    %83 = stablehlo.reshape %82 : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %84 = stablehlo.reshape %83 : (tensor<1x1024xf32>) -> tensor<1024xf32>
    %85 = stablehlo.dot_general %27, %81, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<512x1024xf32>) -> tensor<256x1024xf32>
    %86 = stablehlo.dot_general %81, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<512x1024xf32>, tensor<256x1024xf32>) -> tensor<512x256xf32>
    %87 = stablehlo.add %61, %86 : tensor<512x256xf32>
    %88 = stablehlo.dot_general %25, %87, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<512x256xf32>) -> tensor<256x256xf32>
    %89 = stablehlo.dot_general %87, %arg1, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<256x256xf32>) -> tensor<512x256xf32>
    %90 = stablehlo.reshape %89 : (tensor<512x256xf32>) -> tensor<4x128x4x64xf32>
    %91 = stablehlo.transpose %90, dims = [0, 2, 1, 3] : (tensor<4x128x4x64xf32>) -> tensor<4x4x128x64xf32>
    %92 = stablehlo.dot_general %91, %10, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x64xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x128xf32>
    %93 = stablehlo.dot_general %22, %91, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x128xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x64xf32>
    %94 = stablehlo.multiply %22, %92 : tensor<4x4x128x128xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %95 = stablehlo.reduce(%94 init: %cst_18) applies stablehlo.add across dimensions = [3] : (tensor<4x4x128x128xf32>, tensor<f32>) -> tensor<4x4x128xf32>
    %96 = stablehlo.broadcast_in_dim %95, dims = [0, 1, 2] : (tensor<4x4x128xf32>) -> tensor<4x4x128x1xf32>
    %97 = stablehlo.broadcast_in_dim %96, dims = [0, 1, 2, 3] : (tensor<4x4x128x1xf32>) -> tensor<4x4x128x128xf32>
    %98 = stablehlo.multiply %22, %97 : tensor<4x4x128x128xf32>
    %99 = stablehlo.subtract %94, %98 : tensor<4x4x128x128xf32>
    %100 = stablehlo.dot_general %99, %7, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x128xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x64xf32>
    %cst_19 = stablehlo.constant dense<1.250000e-01> : tensor<f32>
    %101 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<4x4x128x64xf32>
    %102 = stablehlo.multiply %100, %101 : tensor<4x4x128x64xf32>
    %103 = stablehlo.dot_general %99, %12, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<4x4x128x128xf32>, tensor<4x4x128x64xf32>) -> tensor<4x4x128x64xf32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %104 = stablehlo.transpose %102, dims = [0, 2, 1, 3] : (tensor<4x4x128x64xf32>) -> tensor<4x128x4x64xf32>
    %105 = stablehlo.reshape %104 : (tensor<4x128x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %106 = stablehlo.pad %105, %cst_20, low = [0, 0, 0, 0, 0], high = [0, 0, 2, 0, 0], interior = [0, 0, 0, 0, 0] : (tensor<4x128x1x4x64xf32>, tensor<f32>) -> tensor<4x128x3x4x64xf32>
    %107 = stablehlo.transpose %103, dims = [0, 2, 1, 3] : (tensor<4x4x128x64xf32>) -> tensor<4x128x4x64xf32>
    %108 = stablehlo.reshape %107 : (tensor<4x128x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %109 = stablehlo.pad %108, %cst_20, low = [0, 0, 1, 0, 0], high = [0, 0, 1, 0, 0], interior = [0, 0, 0, 0, 0] : (tensor<4x128x1x4x64xf32>, tensor<f32>) -> tensor<4x128x3x4x64xf32>
    %110 = stablehlo.add %106, %109 : tensor<4x128x3x4x64xf32>
    %111 = stablehlo.transpose %93, dims = [0, 2, 1, 3] : (tensor<4x4x128x64xf32>) -> tensor<4x128x4x64xf32>
    %112 = stablehlo.reshape %111 : (tensor<4x128x4x64xf32>) -> tensor<4x128x1x4x64xf32>
    %113 = stablehlo.pad %112, %cst_20, low = [0, 0, 2, 0, 0], high = [0, 0, 0, 0, 0], interior = [0, 0, 0, 0, 0] : (tensor<4x128x1x4x64xf32>, tensor<f32>) -> tensor<4x128x3x4x64xf32>
    %114 = stablehlo.add %110, %113 : tensor<4x128x3x4x64xf32>
    %115 = stablehlo.reshape %114 : (tensor<4x128x3x4x64xf32>) -> tensor<512x768xf32>
    %116 = stablehlo.dot_general %arg6, %115, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x256xf32>, tensor<512x768xf32>) -> tensor<256x768xf32>
    %117 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<256x768xf32>
    %118 = stablehlo.multiply %117, %116 : tensor<256x768xf32>
    %119 = stablehlo.subtract %arg0, %118 : tensor<256x768xf32>
    %120 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<256x256xf32>
    %121 = stablehlo.multiply %120, %88 : tensor<256x256xf32>
    %122 = stablehlo.subtract %arg1, %121 : tensor<256x256xf32>
    %123 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<256x1024xf32>
    %124 = stablehlo.multiply %123, %85 : tensor<256x1024xf32>
    %125 = stablehlo.subtract %arg2, %124 : tensor<256x1024xf32>
    %126 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<1024xf32>
    %127 = stablehlo.multiply %126, %84 : tensor<1024xf32>
    %128 = stablehlo.subtract %arg3, %127 : tensor<1024xf32>
    %129 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<1024x256xf32>
    %130 = stablehlo.multiply %129, %65 : tensor<1024x256xf32>
    %131 = stablehlo.subtract %arg4, %130 : tensor<1024x256xf32>
    %132 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %133 = stablehlo.multiply %132, %64 : tensor<256xf32>
    %134 = stablehlo.subtract %arg5, %133 : tensor<256xf32>
    return %119, %122, %125, %128, %131, %134, %56 : tensor<256x768xf32>, tensor<256x256xf32>, tensor<256x1024xf32>, tensor<1024xf32>, tensor<1024x256xf32>, tensor<256xf32>, tensor<f32>
  }
}
