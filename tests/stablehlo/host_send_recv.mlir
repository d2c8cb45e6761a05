// Host transfers outside run_parallel, as HLO's: send(is_host_transfer)
// writes --outfeed-dir, recv(is_host_transfer) reads the --infeed files.
func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>,
    is_host_transfer = true
  } : (tensor<2x2xf32>, !stablehlo.token) -> !stablehlo.token
  %v:2 = "stablehlo.recv"(%s) {
    channel_handle = #stablehlo.channel_handle<handle = 2, type = 3>,
    is_host_transfer = true
  } : (!stablehlo.token) -> (tensor<2x2xf32>, !stablehlo.token)
  %y = stablehlo.add %x, %v#0 : tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
