// A transpose the way XLA's compiled dumps write it (copy to the layout
// {0,1}, then bitcast: the physical reinterpretation of docs/LAYOUTS.md) on
// f32[2048,2048], against the `transpose` op on the same data in the same
// process, both in GB/s of array; their ratio is the figure that counts.
// The bitcast path makes one strided pass plus one memcpy, so it should stay
// within 2x of the transpose.
#include "bench/bench_util.h"

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int n = quick ? 64 : 2048, rounds = quick ? 1 : 7;
  hl_bench_tune_malloc();
  char text[1024], shape[64];
  snprintf(shape, sizeof shape, "f32[%d,%d]", n, n);
  snprintf(text, sizeof text,
           "HloModule bench_layout_transpose\nENTRY main {\n  p = f32[%d,%d]{1,0} parameter(0)\n"
           "  c = f32[%d,%d]{0,1} copy(p)\n  ROOT b = f32[%d,%d]{1,0} bitcast(c)\n}\n",
           n, n, n, n, n, n);
  hl_module_t *layout = hl_bench_module(text);
  snprintf(text, sizeof text,
           "HloModule bench_transpose\nENTRY main {\n  p = f32[%d,%d]{1,0} parameter(0)\n"
           "  ROOT t = f32[%d,%d]{1,0} transpose(p), dimensions={1,0}\n}\n",
           n, n, n, n);
  hl_module_t *transpose = hl_bench_module(text);
  hl_literal_t *x = hl_bench_literal(shape, 3);
  hl_bench_execute(layout, &x, 1);
  hl_bench_execute(transpose, &x, 1);
  double ours[HL_BENCH_MAX_ROUNDS], base[HL_BENCH_MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    ours[r] = hl_bench_best_execute(layout, &x, 1, 3);
    base[r] = hl_bench_best_execute(transpose, &x, 1, 3);
  }
  int m = hl_bench_median_round(ours, base, rounds);
  double gb = (double)n * n * 4 / 1e9;
  hl_bench_report("copy_bitcast_transpose_2048", gb / ours[m], "GB/s", "transpose GB/s",
                  gb / base[m], true, 0.5);
  hl_module_destroy(layout);
  hl_module_destroy(transpose);
  hl_literal_release(x);
  return 0;
}
