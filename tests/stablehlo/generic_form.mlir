"builtin.module"() <{sym_name = "generic_form"}> ({
  "func.func"() <{arg_attrs = [{jax.arg_info = "x"}], function_type = (tensor<3xf32>) -> tensor<3xf32>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<3xf32>):
    %0 = "func.call"(%arg0) <{callee = @double}> : (tensor<3xf32>) -> tensor<3xf32>
    %1 = "stablehlo.all_reduce"(%0) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%1) : (tensor<3xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<3xf32>) -> tensor<3xf32>, sym_name = "double", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<3xf32>):
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} : () -> ()
