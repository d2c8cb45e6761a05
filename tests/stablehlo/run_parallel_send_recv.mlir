// interpreter.run_parallel on a 1x2 grid: partition 0 sends 2 * x on
// channel 5, partition 1 receives it and returns it + 1. INPUT / EXPECTED
// are filled in by tests/integration/test_stablehlo_channels.py (NumPy).
module @send_recv_1x2 {
  func.func @sender(%x: tensor<3xf32>, %t: !stablehlo.token) -> !stablehlo.token {
    %two = stablehlo.constant dense<2.0> : tensor<3xf32>
    %y = stablehlo.multiply %x, %two : tensor<3xf32>
    %r = "stablehlo.send"(%y, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>,
      is_host_transfer = false
    } : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
    return %r : !stablehlo.token
  }
  func.func @receiver(%t: !stablehlo.token) -> tensor<3xf32> {
    %v:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>,
      is_host_transfer = false
    } : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    %one = stablehlo.constant dense<1.0> : tensor<3xf32>
    %w = stablehlo.add %v#0, %one : tensor<3xf32>
    return %w : tensor<3xf32>
  }
  func.func @main() -> tensor<3xf32> {
    %x = stablehlo.constant dense<[INPUT]> : tensor<3xf32>
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%x, %t, %t) {
      programs = [[@sender, @receiver]]
    } : (tensor<3xf32>, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, tensor<3xf32>)
    check.expect_eq_const %r#1, dense<[EXPECTED]> : tensor<3xf32>
    return %r#1 : tensor<3xf32>
  }
}
