// Blocked fusion execution against fused single-pass C loops in the same
// process (issue 12): each figure is the C loop's time divided by ours
// (higher is better; 0.67 means "at most 1.5x the C loop").
//
//   gelu_fusion_16M       tanh-GELU as one kLoop fusion of 9 ops vs a C loop
//                         calling the same vmath tanh (SLEEF) per 256 elements
//   gelu_vs_poly_tanh_16M the same fusion vs a one-pass C loop with the
//                         rational-polynomial tanh XLA's CPU backend emits
//                         (target: at most 3x, figure >= 0.33)
//   softmax_4096x4096     three fusions as XLA's CPU backend forms them
//                         (reduce max; exp + reduce sum, multi-output; divide)
//                         vs a fused per-row C loop with the same vmath exp
//   axpy_fusion_16M       a*x + y as one fusion vs the C loop
//   chain_N_64MiB         fusions of N = 2..20 element-wise ops reading two
//                         64 MiB inputs: time(N) / time(2) is the curve
//                         (figure: time(2) / time(20), target >= 0.67; the
//                         counts interleaved within each repeat)
//   unfused_chain_20_ops_64MiB the 20-op chain as plain instructions of the
//                         entry computation: blocked chains vs op by op
//   gelu_2_threads        the GELU fusion on a pool of 2 threads vs 1
//   gelu_c_loop_2_threads the GELU C loop in two halves on the pool vs 1
//                         thread: the machine's own 2-thread gain for it
//   softmax_2_threads     the softmax fusions on 2 threads vs 1
//   reduce_rows_2_threads a plain (unfused) row-sum reduce on 2 threads vs 1
//   reduce_exp_rows_2_threads the row sum of exp(x) as one kInput fusion,
//                         2 threads vs 1 (a reduction that is not memory bound)
//   sort_2_threads        sorting 1024 rows of 1024 f32 on 2 threads vs 1
//   gather_2_threads      gathering 4096 rows of a 4096x4096 table, 2 threads vs 1
//   fft_2_threads         a c64[512,4096] FFT (chunks of rows over the pool), 2 vs 1
//   read_bw_2_threads     the machine's limit for memory-bound work: summing
//                         the 64 MiB softmax input (a vectorized C loop) with
//                         its halves on the pool's 2 threads vs 1 thread
//   copy_bw_2_threads     the same for a read-64-MiB, write-64-MiB loop with
//                         ordinary stores (what an element-wise fusion does)
//                         (both informational: target > 1, what the
//                         memory system gives a second core; reduce_rows and
//                         the divide pass of softmax are bounded by them)
//
// Also prints the op-by-op time of each fusion (--no-fusion-blocking). The C
// baselines are built like the runtime's hot loops (AVX2 clones, no FMA).
// Built with -DHL_BENCH_CPU_TIME, single-thread figures use the process's
// CPU time instead of wall time (for a machine shared with other jobs).
#include <math.h>

#include "bench/bench_util.h"
#include "runtime/base/simd_clones.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/vmath/vmath.h"

#ifdef HL_BENCH_CPU_TIME
#define hl_bench_now hl_bench_cpu_now
static double hl_bench_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif

static double run_best(hl_executable_t *exe, const hl_exec_options_t *o, hl_literal_t **args,
                       int nargs, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    hl_literal_t *out = NULL;
    double t0 = hl_bench_now();
    hl_bench_check(hl_executable_run(exe, o, args, nargs, &out), "run");
    double t = hl_bench_now() - t0;
    hl_literal_release(out);
    if (t < best) best = t;
  }
  return best;
}

// Our best time for `text` (blocked unless `op_by_op`) on `pool`.
static double time_module(const char *text, hl_literal_t **args, int nargs, int reps,
                          bool op_by_op, hl_thread_pool_t *pool) {
  hl_module_t *m = hl_bench_module(text);
  hl_executable_t *exe = NULL;
  hl_bench_check(hl_executable_create(m, &exe), "executable");
  hl_exec_options_t o = {.no_fusion_blocking = op_by_op, .pool = pool};
  run_best(exe, &o, args, nargs, 1);  // warm-up: compile, page in
  double t = run_best(exe, &o, args, nargs, reps);
  hl_executable_destroy(exe);
  hl_module_destroy(m);
  return t;
}

// Best times of `text` on one thread and on `pool`, one executable, the two
// alternating `rounds` times after a warm-up of each: both see the same
// moments of a shared machine.
static void time_threads(const char *text, hl_literal_t **args, int nargs, hl_thread_pool_t *pool,
                         int rounds, double *t1, double *t2) {
  hl_module_t *m = hl_bench_module(text);
  hl_executable_t *exe = NULL;
  hl_bench_check(hl_executable_create(m, &exe), "executable");
  hl_exec_options_t one = {0}, two = {.pool = pool};
  run_best(exe, &one, args, nargs, 1);
  run_best(exe, &two, args, nargs, 1);
  *t1 = *t2 = 1e30;
  for (int r = 0; r < rounds; r++) {
    *t1 = fmin(*t1, run_best(exe, &one, args, nargs, 1));
    *t2 = fmin(*t2, run_best(exe, &two, args, nargs, 1));
  }
  hl_executable_destroy(exe);
  hl_module_destroy(m);
}

#define BEST_OF_(reps, stmt)                       \
  ({                                               \
    double best_ = 1e30;                           \
    for (int r_ = 0; r_ < (reps); r_++) {          \
      double t0_ = hl_bench_now();                 \
      stmt;                                        \
      double t_ = hl_bench_now() - t0_;            \
      if (t_ < best_) best_ = t_;                  \
    }                                              \
    best_;                                         \
  })

//===----------------------------------------------------------------------===//
// C baselines
//===----------------------------------------------------------------------===//

HL_SIMD_CLONES static void gelu_c(const float *x, float *y, long n) {
  float u[256];
  for (long b = 0; b < n; b += 256) {
    long m = n - b < 256 ? n - b : 256;
    for (long i = 0; i < m; i++) {
      float v = x[b + i];
      u[i] = (v + 0.044715f * v * v * v) * 0.7978845608f;
    }
    hl_vmath_unary_f32(HL_VM_TANH, u, u, m);
    for (long i = 0; i < m; i++) y[b + i] = 0.5f * x[b + i] * (1.0f + u[i]);
  }
}

// The same GELU with tanh as the rational polynomial XLA's CPU backend
// emits (Eigen's fast tanh: odd degree-13 / even degree-6 polynomials on x
// clamped to +-7.905), in one vectorized pass: the 8.5 ms-class loop.
HL_SIMD_CLONES static void gelu_poly_c(const float *x, float *y, long n) {
  for (long i = 0; i < n; i++) {
    float v = x[i];
    float u = (v + 0.044715f * v * v * v) * 0.7978845608f;
    // |u| clamped on the bit pattern: GCC keeps float compares out of
    // vectorized loops unless -fno-trapping-math.
    uint32_t bits, lim;
    float c = 7.90531110763549805f;
    memcpy(&bits, &u, 4);
    memcpy(&lim, &c, 4);
    uint32_t mag = bits & 0x7fffffffu;
    bits = (bits & 0x80000000u) | (mag < lim ? mag : lim);
    memcpy(&u, &bits, 4);
    float u2 = u * u;
    float p = u2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
    p = p * u2 + -8.60467152213735e-11f;
    p = p * u2 + 5.12229709037114e-08f;
    p = p * u2 + 1.48572235717979e-05f;
    p = p * u2 + 6.37261928875436e-04f;
    p = p * u2 + 4.89352455891786e-03f;
    p = p * u;
    float q = u2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
    q = q * u2 + 2.26843463243900e-03f;
    q = q * u2 + 4.89352518554385e-03f;
    y[i] = 0.5f * v * (1.0f + p / q);
  }
}

HL_SIMD_CLONES static void softmax_c(const float *x, float *y, long rows, long cols) {
  for (long r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float mx = -INFINITY;
    for (long i = 0; i < cols; i++) mx = xr[i] > mx ? xr[i] : mx;
    for (long i = 0; i < cols; i++) yr[i] = xr[i] - mx;
    hl_vmath_unary_f32(HL_VM_EXP, yr, yr, cols);
    float s = 0;
    for (long i = 0; i < cols; i++) s += yr[i];
    for (long i = 0; i < cols; i++) yr[i] /= s;
  }
}

// Memory-bandwidth baselines: a read-only pass and a read + write pass.
HL_SIMD_CLONES static float sum_c(const float *x, long n) {
  float p[16] = {0};
  for (long i = 0; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) p[j] += x[i + j];
  float s = 0;
  for (int j = 0; j < 16; j++) s += p[j];
  return s;
}

HL_SIMD_CLONES static void scale_c(const float *x, float *y, long n) {
  for (long i = 0; i < n; i++) y[i] = 2.0f * x[i];
}

// One pass over x, split in `parts` halves: a sum (read only), a scale
// into y (read + write), or the GELU C loop into y.
typedef enum { PASS_SUM, PASS_SCALE, PASS_GELU } pass_t;

typedef struct pass_state {
  pass_t pass;
  const float *x;
  float *y;
  long n;
  int parts;
  float sums[2];
} pass_state_t;

static void pass_task(void *arg, int64_t task, int worker) {
  pass_state_t *s = arg;
  long per = s->n / s->parts, lo = task * per, hi = task == s->parts - 1 ? s->n : lo + per;
  switch (s->pass) {
    case PASS_SUM: s->sums[task] = sum_c(s->x + lo, hi - lo); break;
    case PASS_SCALE: scale_c(s->x + lo, s->y + lo, hi - lo); break;
    case PASS_GELU: gelu_c(s->x + lo, s->y + lo, hi - lo); break;
  }
}

// Best times of the pass on 1 thread and on the pool's 2, interleaved: what
// this machine gives a second thread for it (memory bandwidth for the sum
// and the scale, the GELU computation for the last).
static void pass_2_threads(hl_thread_pool_t *pool, pass_t pass, const float *x, float *y, long n,
                           int reps, double *t1, double *t2) {
  *t1 = *t2 = 1e30;
  for (int r = -1; r < reps; r++) {  // r = -1: warm-up
    pass_state_t one = {pass, x, y, n, 1, {0}}, two = {pass, x, y, n, 2, {0}};
    double t0 = hl_bench_now();
    hl_thread_pool_run(NULL, 1, pass_task, &one);
    double t = hl_bench_now() - t0;
    if (r >= 0 && t < *t1) *t1 = t;
    t0 = hl_bench_now();
    hl_thread_pool_run(pool, 2, pass_task, &two);
    t = hl_bench_now() - t0;
    if (r >= 0 && t < *t2) *t2 = t;
  }
}

HL_SIMD_CLONES static void axpy_c(float a, const float *x, const float *y, float *z, long n) {
  for (long i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

static void gelu_text(char *t, size_t size, long n) {
  snprintf(t, size,
           "HloModule gelu\nfused_gelu {\n  x = f32[%ld] parameter(0)\n"
           "  c3 = f32[] constant(0.044715)\n  b3 = f32[%ld] broadcast(c3), dimensions={}\n"
           "  x2 = f32[%ld] multiply(x, x)\n  x3 = f32[%ld] multiply(x2, x)\n"
           "  t1 = f32[%ld] multiply(x3, b3)\n  t2 = f32[%ld] add(x, t1)\n"
           "  ck = f32[] constant(0.7978845608)\n  bk = f32[%ld] broadcast(ck), dimensions={}\n"
           "  t3 = f32[%ld] multiply(t2, bk)\n  th = f32[%ld] tanh(t3)\n"
           "  one = f32[] constant(1)\n  b1 = f32[%ld] broadcast(one), dimensions={}\n"
           "  t4 = f32[%ld] add(th, b1)\n  half = f32[] constant(0.5)\n"
           "  bh = f32[%ld] broadcast(half), dimensions={}\n  t5 = f32[%ld] multiply(x, bh)\n"
           "  ROOT y = f32[%ld] multiply(t5, t4)\n}\n"
           "ENTRY main {\n  p = f32[%ld] parameter(0)\n"
           "  ROOT f = f32[%ld] fusion(p), kind=kLoop, calls=fused_gelu\n}\n",
           n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n);
}

static void softmax_text(char *t, size_t size, long r, long c) {
  snprintf(t, size,
           "HloModule softmax\nmax {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT m = f32[] maximum(a, b)\n}\nadd {\n  a = f32[] parameter(0)\n"
           "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
           "fused_max {\n  x = f32[%ld,%ld] parameter(0)\n  ninf = f32[] constant(-inf)\n"
           "  ROOT m = f32[%ld] reduce(x, ninf), dimensions={1}, to_apply=max\n}\n"
           "fused_exp_sum {\n  x = f32[%ld,%ld] parameter(0)\n  m = f32[%ld] parameter(1)\n"
           "  bm = f32[%ld,%ld] broadcast(m), dimensions={0}\n  d = f32[%ld,%ld] subtract(x, bm)\n"
           "  e = f32[%ld,%ld] exponential(d)\n  zero = f32[] constant(0)\n"
           "  s = f32[%ld] reduce(e, zero), dimensions={1}, to_apply=add\n"
           "  ROOT t = (f32[%ld], f32[%ld,%ld]) tuple(s, e)\n}\n"
           "fused_div {\n  e = f32[%ld,%ld] parameter(0)\n  s = f32[%ld] parameter(1)\n"
           "  bs = f32[%ld,%ld] broadcast(s), dimensions={0}\n"
           "  ROOT y = f32[%ld,%ld] divide(e, bs)\n}\n"
           "ENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n"
           "  m = f32[%ld] fusion(x), kind=kInput, calls=fused_max\n"
           "  es = (f32[%ld], f32[%ld,%ld]) fusion(x, m), kind=kInput, calls=fused_exp_sum\n"
           "  s = f32[%ld] get-tuple-element(es), index=0\n"
           "  e = f32[%ld,%ld] get-tuple-element(es), index=1\n"
           "  ROOT y = f32[%ld,%ld] fusion(e, s), kind=kLoop, calls=fused_div\n}\n",
           r, c, r, r, c, r, r, c, r, c, r, c, r, r, r, c, r, c, r, r, c, r, c, r, c, r, r, r, c,
           r, r, c, r, c);
}

// A fusion of `ops` element-wise ops over two n-element inputs:
// v = x; v = v * y, v + x, ... alternating, result one array.
static void chain_text(char *t, size_t size, long n, int ops) {
  int k = snprintf(t, size, "HloModule chain\nfused {\n  x = f32[%ld] parameter(0)\n"
                            "  y = f32[%ld] parameter(1)\n  v0 = f32[%ld] multiply(x, y)\n",
                   n, n, n);
  for (int i = 1; i < ops; i++)
    k += snprintf(t + k, size - (size_t)k, "  v%d = f32[%ld] %s(v%d, %s)\n", i, n,
                  i % 2 ? "add" : "multiply", i - 1, i % 2 ? "x" : "y");
  snprintf(t + k, size - (size_t)k,
           "  ROOT r = f32[%ld] copy(v%d)\n}\nENTRY main {\n  x = f32[%ld] parameter(0)\n"
           "  y = f32[%ld] parameter(1)\n  ROOT f = f32[%ld] fusion(x, y), kind=kLoop, "
           "calls=fused\n}\n",
           n, ops - 1, n, n, n);
}

// The same chain as instructions of the entry computation (no fusion).
static void unfused_chain_text(char *t, size_t size, long n, int ops) {
  int k = snprintf(t, size, "HloModule unfused\nENTRY main {\n  x = f32[%ld] parameter(0)\n"
                            "  y = f32[%ld] parameter(1)\n  v0 = f32[%ld] multiply(x, y)\n",
                   n, n, n);
  for (int i = 1; i < ops; i++)
    k += snprintf(t + k, size - (size_t)k, "  %sv%d = f32[%ld] %s(v%d, %s)\n",
                  i == ops - 1 ? "ROOT " : "", i, n, i % 2 ? "add" : "multiply", i - 1,
                  i % 2 ? "x" : "y");
  snprintf(t + k, size - (size_t)k, "}\n");
}

// `bench_fusion --chain OPS ELEMENTS [RUNS]`: only runs the chain fusion of
// OPS ops over ELEMENTS (for callgrind: instruction counts per op and block
// do not depend on the machine's load).
static int chain_only(int ops, long n, int runs) {
  hl_bench_tune_malloc();
  static char text[16384];
  char shape[64];
  snprintf(shape, sizeof shape, "f32[%ld]", n);
  hl_literal_t *args[2] = {hl_bench_literal(shape, 1), hl_bench_literal(shape, 2)};
  chain_text(text, sizeof text, n, ops);
  double t = time_module(text, args, 2, runs, false, NULL);
  printf("# chain %d ops, %ld elements: %.3f ms\n", ops, n, 1e3 * t);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  return 0;
}

// `bench_fusion --gelu ELEMENTS`: the GELU fusion (a warm-up run and one
// more) and the SLEEF C loop once, for callgrind: compare the inclusive
// counts of hl_fusion_program_run (halved) and gelu_c.
static int gelu_only(long n) {
  hl_bench_tune_malloc();
  static char text[16384];
  char shape[64];
  snprintf(shape, sizeof shape, "f32[%ld]", n);
  hl_literal_t *x = hl_bench_literal(shape, 1), *z = hl_bench_literal(shape, 3);
  gelu_text(text, sizeof text, n);
  double t = time_module(text, &x, 1, 1, false, NULL);
  gelu_c(x->data, z->data, n);
  printf("# gelu %ld elements: %.3f ms\n", n, 1e3 * t);
  hl_literal_release(x);
  hl_literal_release(z);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--gelu")) return gelu_only(atol(argv[2]));
  if (argc >= 4 && !strcmp(argv[1], "--chain"))
    return chain_only(atoi(argv[2]), atol(argv[3]), argc > 4 ? atoi(argv[4]) : 1);
  bool quick = hl_bench_quick(argc, argv);
  hl_bench_tune_malloc();
  long n = quick ? 5000 : 16L * 1024 * 1024;
  long rows = quick ? 64 : 4096, cols = quick ? 96 : 4096;
  int reps = quick ? 1 : 5;
  static char text[16384];
  char shape[64];
  snprintf(shape, sizeof shape, "f32[%ld]", n);
  hl_literal_t *x = hl_bench_literal(shape, 1), *y = hl_bench_literal(shape, 2);
  hl_literal_t *z = hl_bench_literal(shape, 3);
  printf("# vmath: %s; sizes: %ld elements, softmax %ldx%ld\n", hl_vmath_isa(), n, rows, cols);

  // GELU.
  gelu_text(text, sizeof text, n);
  // Interleaved: each repeat times the two C loops and ours back to back.
  double t_c = 1e30, t_poly = 1e30, t_ours = 1e30, t_nojit = 1e30;
  double t_gelu1 = 1e30, t_gelu2 = 1e30, t_gelu_c1 = 1e30, t_gelu_c2 = 1e30;
  hl_thread_pool_t *pool = NULL;
  hl_bench_check(hl_thread_pool_create(2, &pool), "pool");
  {
    hl_module_t *gm = hl_bench_module(text);
    hl_executable_t *ge = NULL, *gi = NULL;
    hl_bench_check(hl_executable_create(gm, &ge), "executable");
    hl_bench_check(hl_executable_create(gm, &gi), "executable");
    hl_exec_options_t go = {0};
    run_best(ge, &go, &x, 1, 1);
    bool jit = hl_jit_enabled();
    hl_jit_set_enabled(false);  // gi: the same fusion without the JIT (--no-fusion-jit)
    run_best(gi, &go, &x, 1, 1);
    hl_jit_set_enabled(jit);
    for (int r = 0; r < reps; r++) {
      double ti = run_best(gi, &go, &x, 1, 1);
      t_nojit = ti < t_nojit ? ti : t_nojit;
      double t = BEST_OF_(1, gelu_c(x->data, z->data, n));
      t_c = t < t_c ? t : t_c;
      t = BEST_OF_(1, gelu_poly_c(x->data, z->data, n));
      t_poly = t < t_poly ? t : t_poly;
      t = run_best(ge, &go, &x, 1, 1);
      t_ours = t < t_ours ? t : t_ours;
    }
    // GELU on 2 threads against 1, and the C loop in two halves against
    // one, interleaved per repeat (min of each): on a shared machine the
    // four see the same moments, so the fusion's gain is judged against the
    // machine's own gain for the same computation.
    hl_exec_options_t go2 = {.pool = pool};
    run_best(ge, &go2, &x, 1, 1);
    for (int r = 0; r < (quick ? 1 : 2 * reps); r++) {
      t_gelu1 = fmin(t_gelu1, run_best(ge, &go, &x, 1, 1));
      t_gelu2 = fmin(t_gelu2, run_best(ge, &go2, &x, 1, 1));
      double c1, c2;
      pass_2_threads(pool, PASS_GELU, x->data, z->data, n, 1, &c1, &c2);
      t_gelu_c1 = fmin(t_gelu_c1, c1);
      t_gelu_c2 = fmin(t_gelu_c2, c2);
    }
    hl_executable_destroy(ge);
    hl_executable_destroy(gi);
    hl_module_destroy(gm);
  }
  printf("# gelu: JIT %.2f ms, without the JIT %.2f ms\n", 1e3 * t_ours, 1e3 * t_nojit);
  double t_ref = time_module(text, &x, 1, quick ? 1 : 2, true, NULL);
  printf("# gelu: blocked %.2f ms, C loop %.2f ms, op by op %.2f ms\n", 1e3 * t_ours, 1e3 * t_c,
         1e3 * t_ref);
  hl_bench_report("gelu_fusion_16M", 1 / t_ours, "runs/s", "C_loop", 1 / t_c, true, 0.67);
  printf("# gelu: polynomial-tanh C loop %.2f ms\n", 1e3 * t_poly);
  hl_bench_report("gelu_vs_poly_tanh_16M", 1 / t_ours, "runs/s", "poly_C_loop", 1 / t_poly, true,
                  quick ? 0.0 : 1.0 / 3);

  printf("# gelu: 1 thread %.2f ms, 2 threads %.2f ms\n", 1e3 * t_gelu1, 1e3 * t_gelu2);
  hl_bench_report("gelu_2_threads", 1 / t_gelu2, "runs/s", "1_thread", 1 / t_gelu1, true,
                  quick ? 0.0 : 1.8);
  double tc1 = t_gelu_c1, tc2 = t_gelu_c2;
  printf("# gelu C loop: 1 thread %.2f ms, 2 threads %.2f ms; the fusion reaches %.0f%% of its "
         "2-thread gain\n",
         1e3 * tc1, 1e3 * tc2, 100.0 * (t_gelu1 / t_gelu2) / (tc1 / tc2));
  hl_bench_report("gelu_c_loop_2_threads", 1 / tc2, "runs/s", "1_thread", 1 / tc1, true, 1.0);

  // a*x + y.
  snprintf(text, sizeof text,
           "HloModule axpy\nfused {\n  a = f32[] parameter(0)\n  x = f32[%ld] parameter(1)\n"
           "  y = f32[%ld] parameter(2)\n  ba = f32[%ld] broadcast(a), dimensions={}\n"
           "  ax = f32[%ld] multiply(ba, x)\n  ROOT r = f32[%ld] add(ax, y)\n}\n"
           "ENTRY main {\n  a = f32[] parameter(0)\n  x = f32[%ld] parameter(1)\n"
           "  y = f32[%ld] parameter(2)\n  ROOT f = f32[%ld] fusion(a, x, y), kind=kLoop, "
           "calls=fused\n}\n",
           n, n, n, n, n, n, n, n);
  hl_literal_t *a = hl_bench_literal("f32[]", 4);
  hl_literal_t *axpy_args[3] = {a, x, y};
  t_c = BEST_OF_(reps, axpy_c(*(float *)a->data, x->data, y->data, z->data, n));
  t_ours = time_module(text, axpy_args, 3, reps, false, NULL);
  printf("# axpy: blocked %.2f ms, C loop %.2f ms\n", 1e3 * t_ours, 1e3 * t_c);
  hl_bench_report("axpy_fusion_16M", 1 / t_ours, "runs/s", "C_loop", 1 / t_c, true, 0.67);

  // Softmax.
  snprintf(shape, sizeof shape, "f32[%ld,%ld]", rows, cols);
  hl_literal_t *sx = hl_bench_literal(shape, 5), *sy = hl_bench_literal(shape, 6);
  softmax_text(text, sizeof text, rows, cols);
  t_c = BEST_OF_(reps, softmax_c(sx->data, sy->data, rows, cols));
  t_ours = time_module(text, &sx, 1, reps, false, NULL);
  t_ref = time_module(text, &sx, 1, quick ? 1 : 2, true, NULL);
  printf("# softmax: blocked %.2f ms, C loop %.2f ms, op by op %.2f ms\n", 1e3 * t_ours,
         1e3 * t_c, 1e3 * t_ref);
  hl_bench_report("softmax_4096x4096", 1 / t_ours, "runs/s", "C_loop", 1 / t_c, true, 0.5);

  // Softmax and a plain row reduction on 2 threads against 1, interleaved
  // per repeat (min of each), next to the memory system's own 2-thread gain.
  double t_soft1, t_soft2;
  time_threads(text, &sx, 1, pool, quick ? 1 : 2 * reps, &t_soft1, &t_soft2);
  printf("# softmax: 1 thread %.2f ms, 2 threads %.2f ms\n", 1e3 * t_soft1, 1e3 * t_soft2);
  hl_bench_report("softmax_2_threads", 1 / t_soft2, "runs/s", "1_thread", 1 / t_soft1, true,
                  quick ? 0.0 : 1.8);
  snprintf(text, sizeof text,
           "HloModule rows\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n"
           "  z = f32[] constant(0)\n  ROOT r = f32[%ld] reduce(x, z), dimensions={1}, "
           "to_apply=add\n}\n",
           rows, cols, rows);
  double t_red1, t_red2;
  time_threads(text, &sx, 1, pool, quick ? 1 : 4 * reps, &t_red1, &t_red2);
  printf("# reduce rows: 1 thread %.2f ms, 2 threads %.2f ms\n", 1e3 * t_red1, 1e3 * t_red2);
  hl_bench_report("reduce_rows_2_threads", 1 / t_red2, "runs/s", "1_thread", 1 / t_red1, true,
                  quick ? 0.0 : 1.8);
  // The same row sum over exp(x), one kInput fusion as XLA forms it (the
  // sum of a log-sum-exp): a reduction that computes more per byte than the
  // memory system delivers to one core, so threads pay off as in a loop
  // fusion.
  snprintf(text, sizeof text,
           "HloModule rows_exp\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\nfused_sum_exp {\n  x = f32[%ld,%ld] parameter(0)\n"
           "  e = f32[%ld,%ld] exponential(x)\n  z = f32[] constant(0)\n"
           "  ROOT r = f32[%ld] reduce(e, z), dimensions={1}, to_apply=add\n}\n"
           "ENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n"
           "  ROOT f = f32[%ld] fusion(x), kind=kInput, calls=fused_sum_exp\n}\n",
           rows, cols, rows, cols, rows, rows, cols, rows);
  double t_rex1, t_rex2;
  time_threads(text, &sx, 1, pool, quick ? 1 : 2 * reps, &t_rex1, &t_rex2);
  printf("# reduce rows of exp: 1 thread %.2f ms, 2 threads %.2f ms\n", 1e3 * t_rex1,
         1e3 * t_rex2);
  hl_bench_report("reduce_exp_rows_2_threads", 1 / t_rex2, "runs/s", "1_thread", 1 / t_rex1,
                  true, quick ? 0.0 : 1.8);
  long bw_n = rows * cols;
  double t_rd1, t_rd2, t_cp1, t_cp2;
  pass_2_threads(pool, PASS_SUM, sx->data, NULL, bw_n, quick ? 1 : 2 * reps, &t_rd1, &t_rd2);
  pass_2_threads(pool, PASS_SCALE, sx->data, sy->data, bw_n, quick ? 1 : 2 * reps,
                 &t_cp1, &t_cp2);
  double mib = (double)bw_n * 4 / (1 << 20);
  printf("# memory: read %.0f MiB 1 thread %.2f ms (%.1f GB/s), 2 threads %.2f ms (%.1f GB/s); "
         "read+write 1 thread %.2f ms (%.1f GB/s), 2 threads %.2f ms (%.1f GB/s)\n",
         mib, 1e3 * t_rd1, bw_n * 4e-9 / t_rd1, 1e3 * t_rd2, bw_n * 4e-9 / t_rd2, 1e3 * t_cp1,
         bw_n * 8e-9 / t_cp1, 1e3 * t_cp2, bw_n * 8e-9 / t_cp2);
  printf("# reduce rows reaches %.0f%% of the read loop's 2-thread gain\n",
         100 * (t_red1 / t_red2) / (t_rd1 / t_rd2));
  hl_bench_report("read_bw_2_threads", 1 / t_rd2, "runs/s", "1_thread", 1 / t_rd1, true,
                  quick ? 0.0 : 1.0);
  hl_bench_report("copy_bw_2_threads", 1 / t_cp2, "runs/s", "1_thread", 1 / t_cp1, true,
                  quick ? 0.0 : 1.0);

  // sort (rows of 1024, f32 keys) and gather (rows of a table) on 2 threads
  // against 1, interleaved per repeat.
  long srows = quick ? 16 : 1024, grows = quick ? 64 : 4096;
  snprintf(shape, sizeof shape, "f32[%ld,1024]", srows);
  hl_literal_t *keys = hl_bench_literal(shape, 7);
  snprintf(shape, sizeof shape, "s32[%ld,1]", grows);
  hl_literal_t *gidx = hl_bench_literal(shape, 8);
  for (long i = 0; i < grows; i++) ((int32_t *)gidx->data)[i] = (int32_t)(i * 7919 % rows);
  char sort_text[1024], gather_text[1024];
  snprintf(sort_text, sizeof sort_text,
           "HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT lt = pred[] compare(a, b), direction=LT\n}\nENTRY main {\n"
           "  k = f32[%ld,1024] parameter(0)\n  ROOT r = f32[%ld,1024] sort(k), dimensions={1}, "
           "to_apply=cmp\n}\n",
           srows, srows);
  snprintf(gather_text, sizeof gather_text,
           "HloModule g\nENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n"
           "  i = s32[%ld,1] parameter(1)\n  ROOT g = f32[%ld,%ld] gather(x, i), offset_dims={1}, "
           "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
           "slice_sizes={1,%ld}\n}\n",
           rows, cols, grows, grows, cols, cols);
  hl_literal_t *gargs[2] = {sx, gidx};
  double t_sort1, t_sort2, t_g1, t_g2;
  time_threads(sort_text, &keys, 1, pool, quick ? 1 : 2 * reps, &t_sort1, &t_sort2);
  time_threads(gather_text, gargs, 2, pool, quick ? 1 : 4 * reps, &t_g1, &t_g2);
  printf("# sort %ldx1024: 1 thread %.2f ms, 2 threads %.2f ms\n", srows, 1e3 * t_sort1,
         1e3 * t_sort2);
  printf("# gather %ld rows of %ld: 1 thread %.2f ms, 2 threads %.2f ms\n", grows, cols,
         1e3 * t_g1, 1e3 * t_g2);
  hl_bench_report("sort_2_threads", 1 / t_sort2, "runs/s", "1_thread", 1 / t_sort1, true,
                  quick ? 0.0 : 1.8);
  hl_bench_report("gather_2_threads", 1 / t_g2, "runs/s", "1_thread", 1 / t_g1, true,
                  quick ? 0.0 : 1.5);
  hl_literal_release(keys);
  hl_literal_release(gidx);

  // FFT: the batch in chunks of transforms over the pool (runtime/kernels/fft.c).
  long frows = quick ? 8 : 512, flen = quick ? 64 : 4096;
  snprintf(shape, sizeof shape, "c64[%ld,%ld]", frows, flen);
  hl_literal_t *fx = hl_bench_literal(shape, 9);
  char fft_text[512];
  snprintf(fft_text, sizeof fft_text,
           "HloModule f\nENTRY main {\n  x = c64[%ld,%ld] parameter(0)\n"
           "  ROOT r = c64[%ld,%ld] fft(x), fft_type=FFT, fft_length={%ld}\n}\n",
           frows, flen, frows, flen, flen);
  double t_f1, t_f2;
  time_threads(fft_text, &fx, 1, pool, quick ? 1 : 2 * reps, &t_f1, &t_f2);
  printf("# fft c64[%ld,%ld]: 1 thread %.2f ms, 2 threads %.2f ms\n", frows, flen, 1e3 * t_f1,
         1e3 * t_f2);
  hl_bench_report("fft_2_threads", 1 / t_f2, "runs/s", "1_thread", 1 / t_f1, true,
                  quick ? 0.0 : 1.5);
  hl_literal_release(fx);

  // Curve: 2..20 ops over the same two inputs, the op counts interleaved
  // within each repeat (min per count), so load changes hit all alike.
  hl_literal_t *cargs[2] = {x, y};
  enum { kCurve = 10 };
  hl_module_t *cm[kCurve];
  hl_executable_t *ce[kCurve];
  double best[kCurve];
  hl_exec_options_t blocked = {0};
  for (int i = 0; i < kCurve; i++) {
    chain_text(text, sizeof text, n, 2 * (i + 1));
    cm[i] = hl_bench_module(text);
    hl_bench_check(hl_executable_create(cm[i], &ce[i]), "executable");
    run_best(ce[i], &blocked, cargs, 2, 1);
    best[i] = 1e30;
  }
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < kCurve; i++) {
      double t = run_best(ce[i], &blocked, cargs, 2, 1);
      if (t < best[i]) best[i] = t;
    }
  // The 20-op chain with the fusion JIT (runtime/fusion/jit) against the
  // same fusion interpreted (--no-fusion-jit), interleaved.
  if (hl_jit_enabled()) {
    hl_jit_set_enabled(false);
    hl_executable_t *ie = NULL;
    hl_bench_check(hl_executable_create(cm[kCurve - 1], &ie), "executable");
    run_best(ie, &blocked, cargs, 2, 1);  // compiled now, without the JIT
    hl_jit_set_enabled(true);
    double t_jit = 1e30, t_int = 1e30;
    for (int r = 0; r < (quick ? 1 : 3); r++) {
      double t = run_best(ce[kCurve - 1], &blocked, cargs, 2, 1);
      if (t < t_jit) t_jit = t;
      t = run_best(ie, &blocked, cargs, 2, 1);
      if (t < t_int) t_int = t;
    }
    printf("# 20-op chain: JIT %.2f ms, interpreted %.2f ms\n", 1e3 * t_jit, 1e3 * t_int);
    hl_bench_report("chain_20_ops_jit_vs_interp", 1 / t_jit, "runs/s", "no_jit", 1 / t_int, true,
                    quick ? 0.0 : 2.0);
    hl_executable_destroy(ie);
  }
  printf("# chain curve (ops: ms):");
  for (int i = 0; i < kCurve; i++) {
    printf(" %d: %.2f", 2 * (i + 1), 1e3 * best[i]);
    hl_executable_destroy(ce[i]);
    hl_module_destroy(cm[i]);
  }
  printf("\n");
  hl_bench_report("chain_20_vs_2_ops_64MiB", 1 / best[kCurve - 1], "runs/s", "2_ops", 1 / best[0],
                  true, 0.67);

  // The same 20-op chain unfused (instructions of the entry computation):
  // blocked chains against the op-by-op walk, interleaved.
  unfused_chain_text(text, sizeof text, n, 20);
  hl_module_t *um = hl_bench_module(text);
  hl_executable_t *ue = NULL;
  hl_bench_check(hl_executable_create(um, &ue), "executable");
  hl_exec_options_t op_by_op = {.no_fusion_blocking = true};
  run_best(ue, &blocked, cargs, 2, 1);
  run_best(ue, &op_by_op, cargs, 2, 1);
  double t_ub = 1e30, t_uo = 1e30;
  for (int r = 0; r < (quick ? 1 : 3); r++) {
    double t = run_best(ue, &blocked, cargs, 2, 1);
    if (t < t_ub) t_ub = t;
    t = run_best(ue, &op_by_op, cargs, 2, 1);
    if (t < t_uo) t_uo = t;
  }
  printf("# unfused 20-op chain: blocked %.2f ms, op by op %.2f ms\n", 1e3 * t_ub, 1e3 * t_uo);
  hl_bench_report("unfused_chain_20_ops_64MiB", 1 / t_ub, "runs/s", "op_by_op", 1 / t_uo, true,
                  quick ? 0.0 : 1.5);
  hl_executable_destroy(ue);
  hl_module_destroy(um);

  hl_thread_pool_destroy(pool);
  hl_literal_release(x);
  hl_literal_release(y);
  hl_literal_release(z);
  hl_literal_release(a);
  hl_literal_release(sx);
  hl_literal_release(sy);
  return 0;
}
