// Shape-determined gemm tiles over the thread pool (gemm_tiles.h).
#include "runtime/kernels/gemm_tiles.h"

#include <cblas.h>

#include "runtime/kernels/blas_threads.h"

// A tile's rows (or columns) of C: each tile packs the whole other operand
// again, about 13 / size of the multiply-adds' time with OpenBLAS's packing
// at ~0.4 ns an element against ~0.03 ns a multiply-add, so tiles keep at
// least 256 (bench_dot: 128-row tiles of a 1024^3 product ran at 0.90 of
// one whole gemm, 256-row ones at 0.95-0.99), and products under 2^21
// multiply-adds stay whole.
enum { kTileMinSide = 256, kTileRound = 16, kMaxTiles = 16 };
#define TILE_MIN_MACS (INT64_C(1) << 21)
// Below this many multiply-adds in all, waking the pool costs more than it saves.
enum { kPoolMinMacs = 1 << 16 };
// Products up to this many multiply-adds run as a plain loop (see plain_gemm).
enum { kPlainMaxMacs = 1 << 14 };

hl_gemm_tiling_t hl_gemm_tiling(int64_t m, int64_t n, int64_t k) {
  hl_gemm_tiling_t t = {m >= n, 1, m >= n ? m : n};
  int64_t side = t.size, macs;
  if (m <= 0 || n <= 0 || k <= 0 || __builtin_mul_overflow(m, n, &macs) ||
      __builtin_mul_overflow(macs, k, &macs))
    return t;  // empty (BLAS writes zeros), or past int64
  int64_t most = side / kTileMinSide, by_work = macs / TILE_MIN_MACS;
  if (most > by_work) most = by_work;
  if (most > kMaxTiles) most = kMaxTiles;
  // A power of two shares out evenly over 2, 4, 8 or 16 threads.
  int64_t count = 1;
  while (count * 2 <= most) count *= 2;
  if (count == 1) return t;
  int64_t size = (side + count - 1) / count;
  size = (size + kTileRound - 1) / kTileRound * kTileRound;
  t.size = size;
  t.count = (side + size - 1) / size;
  return t;
}

// One BLAS call: C = op(A) op(B) of m x n, g's k, leading dimensions and type.
static void blas_call(const hl_gemm_t *g, int m, int n, const char *a, const char *b, char *c) {
  enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
  int k = (int)g->k, lda = (int)g->lda, ldb = (int)g->ldb, ldc = (int)g->ldc;
  switch (g->ct) {
    case HL_F32:
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, (const float *)(const void *)a, lda,
                  (const float *)(const void *)b, ldb, 0.0f, (float *)(void *)c, ldc);
      break;
    case HL_F64:
      cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, (const double *)(const void *)a, lda,
                  (const double *)(const void *)b, ldb, 0.0, (double *)(void *)c, ldc);
      break;
    case HL_C64: {
      const float one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, one, a, lda, b, ldb, zero, c, ldc);
      break;
    }
    default: {
      const double one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, one, a, lda, b, ldb, zero, c, ldc);
      break;
    }
  }
}

typedef struct gemm_job {
  const hl_gemm_t *g;
  hl_gemm_tiling_t t;
  size_t es;
} gemm_job_t;

// One tile: rows [lo, lo + len) of C (the same rows of op(A)), or columns
// (the same columns of op(B)).
static void gemm_tile(void *arg, int64_t task, int worker) {
  (void)worker;
  const gemm_job_t *j = arg;
  const hl_gemm_t *g = j->g;
  int64_t i = task / j->t.count, lo = task % j->t.count * j->t.size;
  int64_t side = j->t.by_rows ? g->m : g->n;
  int64_t len = side - lo < j->t.size ? side - lo : j->t.size;
  const char *a = (const char *)g->a + (size_t)(i * g->stride_a) * j->es;
  const char *b = (const char *)g->b + (size_t)(i * g->stride_b) * j->es;
  char *c = (char *)g->c + (size_t)(i * g->stride_c) * j->es;
  int m = (int)g->m, n = (int)g->n;
  if (j->t.by_rows) {
    a += (size_t)(g->trans_a ? lo : lo * g->lda) * j->es;
    c += (size_t)(lo * g->ldc) * j->es;
    m = (int)len;
  } else {
    b += (size_t)(g->trans_b ? lo * g->ldb : lo) * j->es;
    c += (size_t)lo * j->es;
    n = (int)len;
  }
  blas_call(g, m, n, a, b, c);
}

// Small products: each element summed over k in order, every multiply
// rounded before its add (this file is built with -ffp-contract=off), the
// way XLA's CPU backend computes them (its naive loop for small dots; its
// Eigen kernels do not fuse either). OpenBLAS's kernels fuse multiply and
// add and sum in another order: equally accurate, but where terms cancel
// the last bits differ from JAX's by more than the few ULPs its tests
// allow (StableHLO testdata: a depthwise f32 conv off by 4 ULP, a bf16 x
// c128 dot whose imaginary part cancels off by 22 ULP). Complex products
// as (ar br - ai bi) + (ar bi + ai br) i.
#define PLAIN_GEMM_(name, T, CPLX)                                                         \
  static void name(const hl_gemm_t *g, const T *a, const T *b, T *c) {                     \
    int64_t w = CPLX ? 2 : 1;                                                              \
    for (int64_t i = 0; i < g->m; i++)                                                     \
      for (int64_t j = 0; j < g->n; j++) {                                                 \
        T re = 0, im = 0;                                                                  \
        for (int64_t q = 0; q < g->k; q++) {                                               \
          const T *x = a + w * (g->trans_a ? q * g->lda + i : i * g->lda + q);             \
          const T *y = b + w * (g->trans_b ? j * g->ldb + q : q * g->ldb + j);             \
          if (CPLX) {                                                                      \
            T pr = x[0] * y[0], pi = x[w - 1] * y[w - 1], qr = x[0] * y[w - 1], qi = x[w - 1] * y[0]; \
            re = re + (pr - pi);                                                           \
            im = im + (qr + qi);                                                           \
          } else {                                                                         \
            T pr = x[0] * y[0];                                                            \
            re = re + pr;                                                                  \
          }                                                                                \
        }                                                                                  \
        c[w * (i * g->ldc + j)] = re;                                                      \
        if (CPLX) c[w * (i * g->ldc + j) + w - 1] = im;                                    \
      }                                                                                    \
  }
PLAIN_GEMM_(plain_f32, float, 0)
PLAIN_GEMM_(plain_f64, double, 0)
PLAIN_GEMM_(plain_c64, float, 1)
PLAIN_GEMM_(plain_c128, double, 1)
#undef PLAIN_GEMM_

static void plain_gemm(const hl_gemm_t *g) {
  size_t es = hl_dtype_size(g->ct);
  for (int64_t i = 0; i < g->batch; i++) {
    const void *a = (const char *)g->a + (size_t)(i * g->stride_a) * es;
    const void *b = (const char *)g->b + (size_t)(i * g->stride_b) * es;
    void *c = (char *)g->c + (size_t)(i * g->stride_c) * es;
    switch (g->ct) {
      case HL_F32: plain_f32(g, a, b, c); break;
      case HL_F64: plain_f64(g, a, b, c); break;
      case HL_C64: plain_c64(g, a, b, c); break;
      default: plain_c128(g, a, b, c); break;
    }
  }
}

void hl_gemm_run(hl_thread_pool_t *pool, const hl_gemm_t *g) {
  if (g->batch <= 0 || g->m <= 0 || g->n <= 0) return;
  int64_t one;
  if (!__builtin_mul_overflow(g->m * g->n, g->k, &one) && one <= kPlainMaxMacs) {
    plain_gemm(g);
    return;
  }
  gemm_job_t j = {g, hl_gemm_tiling(g->m, g->n, g->k), hl_dtype_size(g->ct)};
  // Single-threaded BLAS for every tile, whoever set another count (the
  // launcher sets 1; OPENBLAS_NUM_THREADS or an embedding program may not).
  int blas = hl_blas_threads_get();
  if (blas > 1) hl_blas_threads_set(1);
  // Tiny products run on the caller: waking the pool costs more than they
  // do (the same tiles either way, so the same bits).
  int64_t macs;
  if (!__builtin_mul_overflow(g->m * g->n, g->k, &macs) &&
      !__builtin_mul_overflow(macs, g->batch, &macs) && macs < kPoolMinMacs)
    pool = NULL;
  hl_thread_pool_run(pool, g->batch * j.t.count, gemm_tile, &j);
  if (blas > 1) hl_blas_threads_set(blas);
}

void hl_gemm_one(int64_t m, int64_t n, int64_t k, const hl_gemm_t *tile) {
  int64_t whole;
  if (!__builtin_mul_overflow(m * n, k, &whole) && whole <= kPlainMaxMacs) {
    plain_gemm(tile);
    return;
  }
  blas_call(tile, (int)tile->m, (int)tile->n, tile->a, tile->b, tile->c);
}

int hl_gemm_blas_single(void) {
  int blas = hl_blas_threads_get();
  if (blas > 1) hl_blas_threads_set(1);
  return blas;
}

void hl_gemm_blas_restore(int count) {
  if (count > 1) hl_blas_threads_set(count);
}
