// dot through hl_execute against a direct OpenBLAS gemm on the same shapes
// and data: a square 1024^3 product (f32 and f64) and a batched one.
// Figure and baseline are GFLOP/s, best of several runs; the executor's run
// includes allocating its result, as a real program's would. Each case runs
// twice: on one thread against OpenBLAS on one, and (names ending _2t) on a
// pool of 2 threads, the runtime's gemm tiles with single-threaded BLAS
// (runtime/kernels/gemm_tiles.h), against OpenBLAS's own 2 threads.
#include <cblas.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "runtime/kernels/blas_threads.h"
#include "runtime/threads/thread_pool.h"

typedef struct dot_case {
  const char *name;
  const char *dtype;  // "f32" / "f64"
  int batch, m, k, n;
} dot_case_t;

static double best_time_blas(const dot_case_t *c, const void *a, const void *b, void *y,
                             int reps) {
  bool f32 = strcmp(c->dtype, "f32") == 0;
  size_t es = f32 ? 4 : 8;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    for (int i = 0; i < c->batch; i++) {
      const char *ai = (const char *)a + (size_t)i * c->m * c->k * es;
      const char *bi = (const char *)b + (size_t)i * c->k * c->n * es;
      char *yi = (char *)y + (size_t)i * c->m * c->n * es;
      if (f32)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->m, c->n, c->k, 1.0f,
                    (const float *)(const void *)ai, c->k, (const float *)(const void *)bi, c->n,
                    0.0f, (float *)(void *)yi, c->n);
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->m, c->n, c->k, 1.0,
                    (const double *)(const void *)ai, c->k, (const double *)(const void *)bi,
                    c->n, 0.0, (double *)(void *)yi, c->n);
    }
    double t = hl_bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static bool run_case(const dot_case_t *c, int reps, hl_thread_pool_t *pool) {
  int threads = hl_thread_pool_size(pool);
  hl_exec_options_t o = {.pool = pool};
  char lhs[64], rhs[64], res[64], text[1024];
  if (c->batch > 1) {
    snprintf(lhs, sizeof lhs, "%s[%d,%d,%d]", c->dtype, c->batch, c->m, c->k);
    snprintf(rhs, sizeof rhs, "%s[%d,%d,%d]", c->dtype, c->batch, c->k, c->n);
    snprintf(res, sizeof res, "%s[%d,%d,%d]", c->dtype, c->batch, c->m, c->n);
    snprintf(text, sizeof text,
             "HloModule bench_dot\nENTRY main {\n  a = %s parameter(0)\n  b = %s parameter(1)\n"
             "  ROOT d = %s dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
             "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n",
             lhs, rhs, res);
  } else {
    snprintf(lhs, sizeof lhs, "%s[%d,%d]", c->dtype, c->m, c->k);
    snprintf(rhs, sizeof rhs, "%s[%d,%d]", c->dtype, c->k, c->n);
    snprintf(res, sizeof res, "%s[%d,%d]", c->dtype, c->m, c->n);
    snprintf(text, sizeof text,
             "HloModule bench_dot\nENTRY main {\n  a = %s parameter(0)\n  b = %s parameter(1)\n"
             "  ROOT d = %s dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
             lhs, rhs, res);
  }
  hl_module_t *mod = hl_bench_module(text);
  hl_literal_t *args[2] = {hl_bench_literal(lhs, 1), hl_bench_literal(rhs, 2)};
  hl_literal_t *y = hl_bench_literal(res, 3);
  double flops = 2.0 * c->batch * (double)c->m * c->n * c->k;
  // Warm both paths (BLAS thread pool, page mapping), then alternate so that
  // frequency or load changes hit both alike.
  hl_blas_threads_set(threads);
  hl_bench_execute_with(mod, &o, args, 2);
  best_time_blas(c, args[0]->data, args[1]->data, y->data, 1);
  if (threads > 1 && reps > 1) usleep(300000);
  // Paired rounds, the median round reported (bench_util.h).
  int rounds = reps > 1 ? 7 : 1;
  double t_exec[HL_BENCH_MAX_ROUNDS], t_blas[HL_BENCH_MAX_ROUNDS];
  for (int round = 0; round < rounds; round++) {
    t_exec[round] = hl_bench_best_execute_with(mod, &o, args, 2, reps);
    t_blas[round] = best_time_blas(c, args[0]->data, args[1]->data, y->data, reps);
    // OpenBLAS's own threads spin for a while after a threaded call (about
    // 2^28 cycles) and would take the pool's second core in our next run.
    if (threads > 1 && reps > 1) usleep(300000);
  }
  int med = hl_bench_median_round(t_exec, t_blas, rounds);
  char name[96];
  snprintf(name, sizeof name, "%s%s", c->name, threads > 1 ? "_2t" : "");
  bool pass = hl_bench_report(name, flops / t_exec[med] * 1e-9, "GFLOP/s",
                              threads > 1 ? "cblas_gemm_2_threads" : "cblas_gemm",
                              flops / t_blas[med] * 1e-9, true, 0.9);
  hl_blas_threads_set(1);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_literal_release(y);
  hl_module_destroy(mod);
  return pass;
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int s = quick ? 32 : 1024, reps = quick ? 1 : 3;
  dot_case_t cases[] = {
      {"dot_f32_1024", "f32", 1, s, s, s},
      {"dot_f64_1024", "f64", 1, s, s, s},
      {"dot_f32_batched_16x256", "f32", 16, quick ? 8 : 256, quick ? 8 : 256, quick ? 8 : 256},
      {"dot_f64_batched_16x256", "f64", 16, quick ? 8 : 256, quick ? 8 : 256, quick ? 8 : 256},
  };
  hl_thread_pool_t *pool = NULL;
  hl_bench_check(hl_thread_pool_create(2, &pool), "pool");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(&cases[i], reps, NULL);
    run_case(&cases[i], reps, pool);
  }
  hl_thread_pool_destroy(pool);
  return 0;
}
