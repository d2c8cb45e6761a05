// Memory-bound kernels through hl_execute against memcpy of the same size,
// measured in the same process. Bandwidth counts the bytes a kernel must
// move: add / multiply read two 64 MiB operands and write one (3 x 64 MiB),
// memcpy reads and writes one (2 x 64 MiB), reduce reads one (1 x 64 MiB).
// The chain case (t = a + b; t * b) shows buffer reuse: t dies at the
// multiply, whose result can take over t's buffer. The bf16 cases (issue
// 12) count their own bytes: add of two 16M-element bf16 arrays (3 x 32
// MiB, computed in f32 and rounded per element) and convert f32 -> bf16
// (64 MiB read, 32 MiB written), the same target as the f32 loops.
//
// hlo-launch's worker tunes malloc at start-up (launcher/worker.c); this
// benchmark does the same unless run with --no-mallopt.
#include "bench/bench_util.h"

static double best_memcpy(void *dst, const void *src, size_t bytes, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    memcpy(dst, src, bytes);
    double t = hl_bench_now() - t0;
    // Keeps the copy from being optimised away.
    if (((volatile const char *)dst)[bytes / 2] != ((const char *)src)[bytes / 2]) abort();
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  bool tune = true;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--no-mallopt") == 0) tune = false;
  if (tune) hl_bench_tune_malloc();
  long n = quick ? 4096 : 16L * 1024 * 1024;  // f32 elements: 64 MiB
  int reps = quick ? 1 : 7;
  size_t bytes = (size_t)n * 4;
  char shape[64];
  snprintf(shape, sizeof shape, "f32[%ld]", n);

  char text[2048];
  const char *ops[] = {"add", "multiply"};
  hl_module_t *mods[2];
  for (int i = 0; i < 2; i++) {
    snprintf(text, sizeof text,
             "HloModule bench_%s\nENTRY main {\n  a = %s parameter(0)\n  b = %s parameter(1)\n"
             "  ROOT r = %s %s(a, b)\n}\n",
             ops[i], shape, shape, shape, ops[i]);
    mods[i] = hl_bench_module(text);
  }
  snprintf(text, sizeof text,
           "HloModule bench_chain\nENTRY main {\n  a = %s parameter(0)\n  b = %s parameter(1)\n"
           "  t = %s add(a, b)\n  ROOT r = %s multiply(t, b)\n}\n",
           shape, shape, shape, shape);
  hl_module_t *chain = hl_bench_module(text);
  snprintf(text, sizeof text,
           "HloModule bench_reduce\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(x, y)\n}\nENTRY main {\n  a = %s parameter(0)\n"
           "  z = f32[] constant(0)\n  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add\n}\n",
           shape);
  hl_module_t *red = hl_bench_module(text);
  char bshape[64];
  snprintf(bshape, sizeof bshape, "bf16[%ld]", n);
  snprintf(text, sizeof text,
           "HloModule bench_add_bf16\nENTRY main {\n  a = %s parameter(0)\n  b = %s parameter(1)\n"
           "  ROOT r = %s add(a, b)\n}\n",
           bshape, bshape, bshape);
  hl_module_t *add_bf16 = hl_bench_module(text);
  snprintf(text, sizeof text,
           "HloModule bench_to_bf16\nENTRY main {\n  a = %s parameter(0)\n"
           "  ROOT r = %s convert(a)\n}\n",
           shape, bshape);
  hl_module_t *to_bf16 = hl_bench_module(text);
  hl_literal_t *bargs[2] = {hl_bench_literal(bshape, 1), hl_bench_literal(bshape, 2)};

  hl_literal_t *args[2] = {hl_bench_literal(shape, 1), hl_bench_literal(shape, 2)};
  hl_literal_t *dst = hl_bench_literal(shape, 3);
  // Warm-up: page in everything once.
  for (int i = 0; i < 2; i++) hl_bench_execute(mods[i], args, 2);
  hl_bench_execute(chain, args, 2);
  hl_bench_execute(red, args, 1);
  hl_bench_execute(add_bf16, bargs, 2);
  hl_bench_execute(to_bf16, args, 1);
  best_memcpy(dst->data, args[0]->data, bytes, 1);

  double t_copy = 1e30, t_op[2] = {1e30, 1e30}, t_chain = 1e30, t_red = 1e30;
  double t_add_bf16 = 1e30, t_to_bf16 = 1e30;
  for (int round = 0; round < 3; round++) {  // interleaved, best of all
    double t = best_memcpy(dst->data, args[0]->data, bytes, reps);
    if (t < t_copy) t_copy = t;
    for (int i = 0; i < 2; i++) {
      t = hl_bench_best_execute(mods[i], args, 2, reps);
      if (t < t_op[i]) t_op[i] = t;
    }
    t = hl_bench_best_execute(chain, args, 2, reps);
    if (t < t_chain) t_chain = t;
    t = hl_bench_best_execute(red, args, 1, reps);
    if (t < t_red) t_red = t;
    t = hl_bench_best_execute(add_bf16, bargs, 2, reps);
    if (t < t_add_bf16) t_add_bf16 = t;
    t = hl_bench_best_execute(to_bf16, args, 1, reps);
    if (t < t_to_bf16) t_to_bf16 = t;
  }
  double gb = (double)bytes * 1e-9;
  double copy_bw = 2 * gb / t_copy;
  printf("# %s f32 elements (%.0f MiB), malloc tuning %s\n", quick ? "4096" : "16M",
         bytes / 1048576.0, tune ? "on" : "off");
  hl_bench_report("add_f32_64MiB", 3 * gb / t_op[0], "GB/s", "memcpy", copy_bw, true, 0.7);
  hl_bench_report("multiply_f32_64MiB", 3 * gb / t_op[1], "GB/s", "memcpy", copy_bw, true, 0.7);
  hl_bench_report("add_multiply_chain_64MiB", 6 * gb / t_chain, "GB/s", "memcpy", copy_bw, true,
                  0.7);
  hl_bench_report("reduce_sum_f32_64MiB", gb / t_red, "GB/s", "memcpy", copy_bw, true, 0.7);
  hl_bench_report("add_bf16_32MiB", 1.5 * gb / t_add_bf16, "GB/s", "memcpy", copy_bw, true, 0.7);
  hl_bench_report("convert_f32_to_bf16_64MiB", 1.5 * gb / t_to_bf16, "GB/s", "memcpy", copy_bw,
                  true, 0.7);

  for (int i = 0; i < 2; i++) hl_module_destroy(mods[i]);
  hl_module_destroy(chain);
  hl_module_destroy(red);
  hl_module_destroy(add_bf16);
  hl_module_destroy(to_bf16);
  hl_literal_release(bargs[0]);
  hl_literal_release(bargs[1]);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_literal_release(dst);
  return 0;
}
