// convolution through hl_execute against the GEMM roofline: a cblas_?gemm
// of the im2col-equivalent sizes (per group M = O / groups, N = batch *
// output pixels, K = input features per group * kernel pixels) on buffers
// of those sizes, in the same run. Figure and baseline are GFLOP/s (2*M*N*K
// per group), best of several runs; the executor's run includes allocating
// its result and packing, as a real program's would. Target: ratio >= 0.6.
//
//   conv_2_threads  a 3x3 NHWC convolution 8x56x56x64 -> 64 (im2col + GEMM)
//                   with --threads 2 (a pool of 2 running the gemm tiles,
//                   runtime/kernels/gemm_tiles.h) against 1 thread (no
//                   pool), interleaved per repeat; target >= 1.8.
// BLAS runs on one thread throughout: the runtime's tiles call it
// single-threaded, and so does the GEMM baseline.
#include <cblas.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/blas_threads.h"
#include "bench/bench_util.h"
#include "runtime/threads/thread_pool.h"

typedef struct conv_case {
  const char *name;
  const char *dtype;           // "f32" / "f64"
  int n, h, w, c, o, kh, kw;   // NHWC input, HWIO kernel
  int stride, pad, groups;     // feature groups
} conv_case_t;

static int out_dim(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

static double best_time_gemm(bool f32, int groups, int m, int n, int k, const void *a,
                             const void *b, void *c, int reps) {
  double best = 1e30;
  size_t es = f32 ? 4 : 8;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    for (int g = 0; g < groups; g++) {
      const char *ag = (const char *)a + (size_t)g * m * k * es;
      char *cg = (char *)c + (size_t)g * m * n * es;
      if (f32)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                    (const float *)(const void *)ag, k, (const float *)b, n, 0.0f,
                    (float *)(void *)cg, n);
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0,
                    (const double *)(const void *)ag, k, (const double *)b, n, 0.0,
                    (double *)(void *)cg, n);
    }
    double t = hl_bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static void run_case(const conv_case_t *c, int reps) {
  int oh = out_dim(c->h, c->kh, c->stride, c->pad), ow = out_dim(c->w, c->kw, c->stride, c->pad);
  int ig = c->c / c->groups;
  char lhs[64], rhs[64], res[64], text[1024];
  snprintf(lhs, sizeof lhs, "%s[%d,%d,%d,%d]", c->dtype, c->n, c->h, c->w, c->c);
  snprintf(rhs, sizeof rhs, "%s[%d,%d,%d,%d]", c->dtype, c->kh, c->kw, ig, c->o);
  snprintf(res, sizeof res, "%s[%d,%d,%d,%d]", c->dtype, c->n, oh, ow, c->o);
  snprintf(text, sizeof text,
           "HloModule bench_conv\nENTRY main {\n  x = %s parameter(0)\n  k = %s parameter(1)\n"
           "  ROOT y = %s convolution(x, k), window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d}, "
           "dim_labels=b01f_01io->b01f, feature_group_count=%d\n}\n",
           lhs, rhs, res, c->kh, c->kw, c->stride, c->stride, c->pad, c->pad, c->pad, c->pad,
           c->groups);
  hl_module_t *mod = hl_bench_module(text);
  hl_literal_t *args[2] = {hl_bench_literal(lhs, 1), hl_bench_literal(rhs, 2)};
  bool f32 = strcmp(c->dtype, "f32") == 0;
  size_t es = f32 ? 4 : 8;
  int m = c->o / c->groups, n = c->n * oh * ow, k = ig * c->kh * c->kw;
  void *ga = hl_calloc((size_t)c->groups * m * k, es), *gb = hl_calloc((size_t)k * n, es);
  void *gc = hl_calloc((size_t)c->groups * m * n, es);
  if (!ga || !gb || !gc) hl_bench_check(HL_OOM(), "gemm buffers");
  double flops = 2.0 * c->groups * (double)m * n * k;
  hl_bench_execute(mod, args, 2);
  best_time_gemm(f32, c->groups, m, n, k, ga, gb, gc, 1);
  // Paired rounds, the median round reported (bench_util.h).
  int rounds = reps > 1 ? 7 : 1;
  double t_exec[HL_BENCH_MAX_ROUNDS], t_gemm[HL_BENCH_MAX_ROUNDS];
  for (int round = 0; round < rounds; round++) {
    t_exec[round] = hl_bench_best_execute(mod, args, 2, reps);
    t_gemm[round] = best_time_gemm(f32, c->groups, m, n, k, ga, gb, gc, reps);
  }
  int med = hl_bench_median_round(t_exec, t_gemm, rounds);
  hl_bench_report(c->name, flops / t_exec[med] * 1e-9, "GFLOP/s", "cblas_gemm_MNK",
                  flops / t_gemm[med] * 1e-9, true, 0.6);
  hl_free(ga);
  hl_free(gb);
  hl_free(gc);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(mod);
}

static double run_once(hl_executable_t *exe, hl_thread_pool_t *pool, hl_literal_t **args) {
  hl_exec_options_t o = {.pool = pool};
  hl_literal_t *out = NULL;
  double t0 = hl_bench_now();
  hl_bench_check(hl_executable_run(exe, &o, args, 2, &out), "run");
  double t = hl_bench_now() - t0;
  hl_literal_release(out);
  return t;
}

// conv_2_threads: the same convolution on a pool of 2 threads vs 1.
static void two_threads_case(bool quick) {
  int n = quick ? 1 : 8, hw = quick ? 6 : 56, c = quick ? 4 : 64, o = quick ? 4 : 64;
  char lhs[64], rhs[64], res[64], text[1024];
  snprintf(lhs, sizeof lhs, "f32[%d,%d,%d,%d]", n, hw, hw, c);
  snprintf(rhs, sizeof rhs, "f32[3,3,%d,%d]", c, o);
  snprintf(res, sizeof res, "f32[%d,%d,%d,%d]", n, hw, hw, o);
  snprintf(text, sizeof text,
           "HloModule conv2t\nENTRY main {\n  x = %s parameter(0)\n  k = %s parameter(1)\n"
           "  ROOT y = %s convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f\n}\n",
           lhs, rhs, res);
  hl_module_t *mod = hl_bench_module(text);
  hl_executable_t *exe = NULL;
  hl_bench_check(hl_executable_create(mod, &exe), "executable");
  hl_literal_t *args[2] = {hl_bench_literal(lhs, 1), hl_bench_literal(rhs, 2)};
  hl_thread_pool_t *pool = NULL;
  hl_bench_check(hl_thread_pool_create(2, &pool), "pool");
  double t1 = 1e30, t2 = 1e30;
  int reps = quick ? 1 : 7;
  for (int r = -1; r < reps; r++) {  // r = -1: warm-up
    double t = run_once(exe, NULL, args);
    if (r >= 0 && t < t1) t1 = t;
    t = run_once(exe, pool, args);
    if (r >= 0 && t < t2) t2 = t;
  }
  double flops = 2.0 * n * hw * hw * (double)o * c * 9;
  printf("# conv 3x3 %s -> %d: 1 thread %.2f ms (%.1f GFLOP/s), 2 threads %.2f ms (%.1f GFLOP/s)\n",
         lhs, o, 1e3 * t1, flops / t1 * 1e-9, 1e3 * t2, flops / t2 * 1e-9);
  hl_bench_report("conv_2_threads", 1 / t2, "runs/s", "1_thread", 1 / t1, true,
                  quick ? 0.0 : 1.8);
  hl_thread_pool_destroy(pool);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_executable_destroy(exe);
  hl_module_destroy(mod);
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int reps = quick ? 1 : 3;
  hl_bench_tune_malloc();
  hl_blas_threads_set(1);
  conv_case_t full[] = {
      // name, type, N, H, W, C, O, KH, KW, stride, pad, groups
      {"conv_f32_3x3_28x28x128", "f32", 4, 28, 28, 128, 128, 3, 3, 1, 1, 1},
      {"conv_f32_1x1_14x14x256", "f32", 8, 14, 14, 256, 256, 1, 1, 1, 0, 1},
      {"conv_f32_3x3_s2_56x56x64", "f32", 4, 56, 56, 64, 128, 3, 3, 2, 1, 1},
      {"conv_f32_3x3_g4_28x28x128", "f32", 4, 28, 28, 128, 128, 3, 3, 1, 1, 4},
      {"conv_f64_3x3_28x28x64", "f64", 2, 28, 28, 64, 64, 3, 3, 1, 1, 1},
  };
  conv_case_t tiny[] = {
      {"conv_f32_3x3_28x28x128", "f32", 1, 6, 6, 4, 4, 3, 3, 1, 1, 1},
      {"conv_f64_3x3_28x28x64", "f64", 1, 6, 6, 4, 4, 3, 3, 1, 1, 2},
  };
  conv_case_t *cases = quick ? tiny : full;
  size_t count = quick ? sizeof tiny / sizeof tiny[0] : sizeof full / sizeof full[0];
  for (size_t i = 0; i < count; i++) run_case(&cases[i], reps);
  two_threads_case(quick);
  return 0;
}
