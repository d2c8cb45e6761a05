// Convolutions with holes (lhs_dilate > 1: transposed convolutions,
// gradients) through hl_execute against OpenBLAS sgemm doing the same useful
// math (only the multiply-adds whose lhs element is real input, not a
// dilation hole or padding) in the same process. Figure: useful GFLOP/s of
// the convolution against sgemm's on the same flops (best of several runs,
// the median of paired rounds). Target: ratio >= 1 / 1.5 (the convolution
// takes at most 1.5x its GEMM time).
//   runner: XLA's multihost runner test convolution scaled down
//     (dim_labels=0bf1_0oi1->0bf1, window 32xK stride 31x1 lhs_dilate 32x1:
//     each output row meets one real kernel row, so the useful math is 32
//     GEMMs of M = O, N = batch, K = features * K); the GEMMs read 32
//     separate kernel blocks, as the convolution reads the rhs.
//   transposed: a 4x4 transposed convolution (lhs_dilate 2x2, pad 2), NHWC
//     and NCHW;
//     the GEMM is M = N * output pixels, N = O, K = C * 4 interior taps,
//     scaled to the exact useful count (edges meet fewer taps).
#include <cblas.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/blas_threads.h"
#include "bench/bench_util.h"

typedef struct holes_case {
  const char *name;
  const char *text;       // HLO module
  const char *lhs, *rhs;  // parameter shapes
  double useful_flops;
  int batch, m, n, k;     // baseline: `batch` sgemms of m x n x k
} holes_case_t;

static double best_time_gemm(const holes_case_t *c, const float *a, const float *b, float *out,
                             int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    for (int i = 0; i < c->batch; i++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->m, c->n, c->k, 1.0f,
                  a + (size_t)i * c->m * c->k, c->k, b + (size_t)i * c->k * c->n, c->n, 0.0f,
                  out + (size_t)i * c->m * c->n, c->n);
    double t = hl_bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static void run_case(const holes_case_t *c, int reps) {
  hl_module_t *mod = hl_bench_module(c->text);
  hl_literal_t *args[2] = {hl_bench_literal(c->lhs, 1), hl_bench_literal(c->rhs, 2)};
  size_t na = (size_t)c->batch * c->m * c->k, nb = (size_t)c->batch * c->k * c->n;
  float *a = hl_calloc(na, sizeof(float)), *b = hl_calloc(nb, sizeof(float));
  float *out = hl_calloc((size_t)c->batch * c->m * c->n, sizeof(float));
  if (!a || !b || !out) hl_bench_check(HL_OOM(), "gemm buffers");
  for (size_t i = 0; i < na; i++) a[i] = (float)(i % 7) * 0.25f;
  for (size_t i = 0; i < nb; i++) b[i] = (float)(i % 5) * 0.5f;
  double gemm_flops = 2.0 * c->batch * (double)c->m * c->n * c->k;
  hl_bench_execute(mod, args, 2);
  best_time_gemm(c, a, b, out, 1);
  int rounds = reps > 1 ? 9 : 1;
  double t_exec[HL_BENCH_MAX_ROUNDS], t_gemm[HL_BENCH_MAX_ROUNDS];
  for (int round = 0; round < rounds; round++) {
    t_exec[round] = hl_bench_best_execute(mod, args, 2, reps);
    // The GEMM's time for exactly the useful flops.
    t_gemm[round] = best_time_gemm(c, a, b, out, reps) * c->useful_flops / gemm_flops;
  }
  int med = hl_bench_median_round(t_exec, t_gemm, rounds);
  printf("%-28s conv %.3f ms, sgemm %.3f ms for the same useful flops: %.3fx\n", c->name,
         t_exec[med] * 1e3, t_gemm[med] * 1e3, t_exec[med] / t_gemm[med]);
  // Useful GFLOP/s against sgemm's on the same flops: ratio >= 1 / 1.5.
  hl_bench_report(c->name, c->useful_flops / t_exec[med] * 1e-9, "GFLOP/s", "cblas_sgemm",
                  c->useful_flops / t_gemm[med] * 1e-9, true, 1.0 / 1.5);
  hl_free(a);
  hl_free(b);
  hl_free(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(mod);
}

// Real taps summed over the outputs of one spatial dimension.
static double taps_sum(int in, int k, int stride, int pad_lo, int pad_hi, int ld) {
  int out = ((in - 1) * ld + 1 + pad_lo + pad_hi - k) / stride + 1;
  double sum = 0;
  for (int o = 0; o < out; o++)
    for (int q = 0; q < k; q++) {
      int x = o * stride + q - pad_lo;
      sum += x >= 0 && x <= (in - 1) * ld && x % ld == 0;
    }
  return sum;
}

static void runner_case(holes_case_t *c, char *text, size_t cap, char *lhs, char *rhs, int b,
                        int cin, int o, int kw) {
  // H = 32 rows dilated by 32, window 32 rows, stride 31: 32 output rows.
  snprintf(lhs, 64, "f32[32,%d,%d,%d]", b, cin, kw);
  snprintf(rhs, 64, "f32[32,%d,%d,%d]", o, cin, kw);
  snprintf(text, cap,
           "HloModule runner\nENTRY main {\n  x = %s parameter(0)\n  k = %s parameter(1)\n"
           "  ROOT y = f32[32,%d,%d,1] convolution(x, k), dim_labels=0bf1_0oi1->0bf1, "
           "window={size=32x%d stride=31x1 lhs_dilate=32x1}\n}\n",
           lhs, rhs, b, o, kw);
  c->text = text, c->lhs = lhs, c->rhs = rhs;
  c->batch = 32, c->m = o, c->n = b, c->k = cin * kw;
  c->useful_flops = 2.0 * 32 * o * b * (double)cin * kw;
}

static void transposed_case(holes_case_t *c, char *text, size_t cap, char *lhs, char *rhs,
                            int n, int hw, int cin, int o, bool nchw) {
  int out = (hw - 1) * 2 + 1 + 2 + 2 - 4 + 1;
  if (nchw) {
    snprintf(lhs, 64, "f32[%d,%d,%d,%d]", n, cin, hw, hw);
    snprintf(rhs, 64, "f32[%d,%d,4,4]", o, cin);
  } else {
    snprintf(lhs, 64, "f32[%d,%d,%d,%d]", n, hw, hw, cin);
    snprintf(rhs, 64, "f32[4,4,%d,%d]", cin, o);
  }
  char res[64];
  if (nchw) snprintf(res, sizeof res, "f32[%d,%d,%d,%d]", n, o, out, out);
  else snprintf(res, sizeof res, "f32[%d,%d,%d,%d]", n, out, out, o);
  snprintf(text, cap,
           "HloModule transposed\nENTRY main {\n  x = %s parameter(0)\n  k = %s parameter(1)\n"
           "  ROOT y = %s convolution(x, k), dim_labels=%s, "
           "window={size=4x4 pad=2_2x2_2 lhs_dilate=2x2}\n}\n",
           lhs, rhs, res, nchw ? "bf01_oi01->bf01" : "b01f_01io->b01f");
  c->text = text, c->lhs = lhs, c->rhs = rhs;
  c->batch = 1, c->m = n * out * out, c->n = o, c->k = cin * 4;
  double t = taps_sum(hw, 4, 1, 2, 2, 2);
  c->useful_flops = 2.0 * n * o * (double)cin * t * t;
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int reps = quick ? 1 : 3;
  hl_bench_tune_malloc();
  hl_blas_threads_set(1);  // as the runtime's gemm tiles call it (gemm_tiles.h)
  enum { NCASES = 3 };
  static char text[NCASES][1024], lhs[NCASES][64], rhs[NCASES][64];
  holes_case_t cases[NCASES] = {{.name = "conv_holes_runner_f32"},
                                {.name = "conv_holes_transposed_nhwc_f32"},
                                {.name = "conv_holes_transposed_nchw_f32"}};
  bool xla = argc > 1 && strcmp(argv[1], "--xla-size") == 0;
  if (quick)  // tiny sizes: the ctest smoke run
    runner_case(&cases[0], text[0], sizeof text[0], lhs[0], rhs[0], 3, 4, 8, 4);
  else if (xla)  // the runner test's own shapes: rhs 32 x 1024 x 64 x 128 f32 = 1 GiB
    runner_case(&cases[0], text[0], sizeof text[0], lhs[0], rhs[0], 24, 64, 1024, 128);
  else  // rhs 32 x 256 x 32 x 64 f32 = 64 MiB (the runner's is 1 GiB: --xla-size)
    runner_case(&cases[0], text[0], sizeof text[0], lhs[0], rhs[0], 24, 32, 256, 64);
  for (int i = 1; i < NCASES; i++) {
    if (quick)
      transposed_case(&cases[i], text[i], sizeof text[i], lhs[i], rhs[i], 1, 5, 4, 4, i == 2);
    else
      transposed_case(&cases[i], text[i], sizeof text[i], lhs[i], rhs[i], 8, 14, 64, 64, i == 2);
  }
  for (int i = 0; i < NCASES; i++) run_case(&cases[i], reps);
  return 0;
}
