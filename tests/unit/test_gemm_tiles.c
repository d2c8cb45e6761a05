// The gemm tiles (runtime/kernels/gemm_tiles.c): the tiling covers each
// product exactly and depends on the shape alone; the tiled products match a
// double-precision loop (every transpose flag, batches, row and column
// tiles, f32 / f64 / c64); and pools of 1, 2 and 3 threads give the same
// bits, also while OpenBLAS itself was told to use more threads (a
// 1449x16x1800 sgemm differs in most elements between OpenBLAS's 1- and
// 2-thread drivers).
#include <CUnit/CUnit.h>
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/blas_threads.h"
#include "runtime/kernels/gemm_tiles.h"
#include "runtime/threads/thread_pool.h"
#include "tests/unit/test_util.h"

static void test_tiling_covers_by_shape(void) {
  // Small products stay whole.
  hl_gemm_tiling_t t = hl_gemm_tiling(64, 64, 64);
  CU_ASSERT_EQUAL(t.count, 1);
  t = hl_gemm_tiling(1000, 1000, 1);  // 10^6 multiply-adds
  CU_ASSERT_EQUAL(t.count, 1);
  // Empty and overflowing shapes: one tile, no arithmetic past int64.
  CU_ASSERT_EQUAL(hl_gemm_tiling(0, 100, 100).count, 1);
  CU_ASSERT_EQUAL(hl_gemm_tiling(INT64_MAX / 2, INT64_MAX / 2, 4).count, 1);
  // Tall: row tiles; wide: column tiles.
  t = hl_gemm_tiling(1449, 16, 1800);
  CU_ASSERT_TRUE(t.by_rows);
  CU_ASSERT_TRUE(t.count > 1);
  t = hl_gemm_tiling(64, 1000, 700);
  CU_ASSERT_FALSE(t.by_rows);
  CU_ASSERT_TRUE(t.count > 1);
  // Every tiling: a power-of-two count at most 16, tiles of a multiple of
  // 16 and at least 256, covering the side exactly (the last one nonempty).
  static const int64_t sides[] = {128, 255, 256, 257, 511, 1000, 1449, 4096, 100000};
  for (size_t i = 0; i < sizeof sides / sizeof *sides; i++)
    for (int64_t other = 1; other <= 4096; other *= 8) {
      t = hl_gemm_tiling(sides[i], other, 1024);
      int64_t side = t.by_rows ? sides[i] : other;
      CU_ASSERT_TRUE(t.count >= 1 && t.count <= 16);
      if (t.count > 1) {
        CU_ASSERT_EQUAL(t.size % 16, 0);
        CU_ASSERT_TRUE(t.size >= 256);
        CU_ASSERT_TRUE((t.count - 1) * t.size < side && t.count * t.size >= side);
      } else {
        CU_ASSERT_EQUAL(t.size, side);
      }
    }
}

// A seeded fill in [-1, 1).
static void fill(float *x, int64_t n, unsigned seed) {
  srand(seed);
  for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
}

typedef struct product {
  int64_t batch, m, n, k;
  bool ta, tb;
} product_t;

static const product_t kProducts[] = {
    {1, 1449, 16, 1800, false, false},  // row tiles, k in OpenBLAS's split range
    {1, 64, 1000, 700, false, true},    // column tiles, B stored [n, k]
    {1, 600, 300, 500, true, false},    // row tiles, A stored [k, m]
    {3, 520, 300, 200, true, true},     // a batch of tiled products
    {5, 20, 30, 40, false, false},      // a batch of whole ones
    {3, 4, 6, 5, true, true},           // small: the in-order loop (below)
    {2, 7, 3, 9, true, false},
};

// Element (r, j) of op(A) op(B) of batch element i, in double.
static double complex reference(hl_dtype_t ct, const product_t *p, const void *a,
                                const void *b, int64_t i, int64_t r, int64_t j) {
  double complex s = 0;
  for (int64_t q = 0; q < p->k; q++) {
    int64_t ai = i * p->m * p->k + (p->ta ? q * p->m + r : r * p->k + q);
    int64_t bi = i * p->k * p->n + (p->tb ? j * p->k + q : q * p->n + j);
    double complex x, y;
    if (ct == HL_F32) {
      x = ((const float *)a)[ai];
      y = ((const float *)b)[bi];
    } else if (ct == HL_F64) {
      x = ((const double *)a)[ai];
      y = ((const double *)b)[bi];
    } else {
      x = ((const float complex *)a)[ai];
      y = ((const float complex *)b)[bi];
    }
    s += x * y;
  }
  return s;
}

static void *run_product(hl_dtype_t ct, const product_t *p, const void *a, const void *b,
                         int threads, int blas_threads) {
  size_t es = hl_dtype_size(ct);
  void *c = hl_malloc((size_t)(p->batch * p->m * p->n) * es);
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
  hl_blas_threads_set(blas_threads);
  hl_gemm_t g = {.ct = ct,
                 .trans_a = p->ta,
                 .trans_b = p->tb,
                 .m = p->m,
                 .n = p->n,
                 .k = p->k,
                 .a = a,
                 .b = b,
                 .c = c,
                 .lda = p->ta ? p->m : p->k,
                 .ldb = p->tb ? p->k : p->n,
                 .ldc = p->n,
                 .batch = p->batch,
                 .stride_a = p->m * p->k,
                 .stride_b = p->k * p->n,
                 .stride_c = p->m * p->n};
  hl_gemm_run(pool, &g);
  // Restored after the run: the tiles do not leave BLAS at one thread.
  if (hl_blas_threads_get() > 0) CU_ASSERT_EQUAL(hl_blas_threads_get(), blas_threads);
  hl_blas_threads_set(1);
  hl_thread_pool_destroy(pool);
  return c;
}

static void check_product(hl_dtype_t ct, const product_t *p, unsigned seed) {
  size_t es = hl_dtype_size(ct);
  int64_t na = p->batch * p->m * p->k, nb = p->batch * p->k * p->n;
  // Random f32 values, widened for f64, pairs of them for c64.
  int64_t fa = ct == HL_C64 ? 2 * na : na, fb = ct == HL_C64 ? 2 * nb : nb;
  float *ra = hl_malloc((size_t)fa * sizeof(float)), *rb = hl_malloc((size_t)fb * sizeof(float));
  fill(ra, fa, seed);
  fill(rb, fb, seed + 1);
  void *a = ra, *b = rb;
  if (ct == HL_F64) {
    double *da = hl_malloc((size_t)na * es), *db = hl_malloc((size_t)nb * es);
    for (int64_t i = 0; i < na; i++) da[i] = ra[i];
    for (int64_t i = 0; i < nb; i++) db[i] = rb[i];
    a = da;
    b = db;
  }
  void *one = run_product(ct, p, a, b, 1, 1);
  // Against the double loop on a sample of elements (every 7th).
  int64_t nc = p->batch * p->m * p->n, bad = 0;
  double tol = (ct == HL_F64 ? 1e-12 : 1e-5) * sqrt((double)p->k);
  for (int64_t e = 0; e < nc; e += 7) {
    int64_t i = e / (p->m * p->n), r = e / p->n % p->m, j = e % p->n;
    double complex want = reference(ct, p, a, b, i, r, j), got;
    if (ct == HL_F32) got = ((const float *)one)[e];
    else if (ct == HL_F64) got = ((const double *)one)[e];
    else got = ((const float complex *)one)[e];
    if (cabs(got - want) > tol) bad++;
  }
  CU_ASSERT_EQUAL(bad, 0);
  // The same bits on 2 and 3 threads, with OpenBLAS asked for 2 meanwhile.
  for (int threads = 2; threads <= 3; threads++) {
    void *many = run_product(ct, p, a, b, threads, 2);
    CU_ASSERT_EQUAL(memcmp(one, many, (size_t)nc * es), 0);
    hl_free(many);
  }
  hl_free(one);
  if (a != ra) hl_free(a);
  if (b != rb) hl_free(b);
  hl_free(ra);
  hl_free(rb);
}

static void test_products_match_and_agree_across_threads(void) {
  static const hl_dtype_t types[] = {HL_F32, HL_F64, HL_C64};
  for (size_t t = 0; t < sizeof types / sizeof *types; t++)
    for (size_t i = 0; i < sizeof kProducts / sizeof *kProducts; i++)
      check_product(types[t], &kProducts[i], (unsigned)(10 * i + t));
}

// Products of up to 2^14 multiply-adds are summed in order over k with every
// product rounded (as XLA's CPU backend does, so results match JAX's to the
// bit): the same bits as that loop here, each step forced through memory.
static void test_small_products_sum_in_order(void) {
  enum { M = 3, N = 4, K = 7 };
  float a[2 * M * K], b[2 * K * N], c[2 * M * N];
  fill(a, 2 * M * K, 5);
  fill(b, 2 * K * N, 6);
  for (int cplx = 0; cplx <= 1; cplx++)
    for (int tr = 0; tr < 4; tr++) {
      bool ta = tr & 1, tb = tr & 2;
      hl_gemm_t g = {.ct = cplx ? HL_C64 : HL_F32, .trans_a = ta, .trans_b = tb, .m = M, .n = N,
                     .k = K, .a = a, .b = b, .c = c, .lda = ta ? M : K, .ldb = tb ? K : N,
                     .ldc = N, .batch = 1};
      hl_gemm_run(NULL, &g);
      int w = cplx ? 2 : 1, bad = 0;
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          volatile float re = 0, im = 0;
          for (int q = 0; q < K; q++) {
            const float *x = a + w * (ta ? q * M + i : i * K + q);
            const float *y = b + w * (tb ? j * K + q : q * N + j);
            volatile float pr = x[0] * y[0], pi = x[w - 1] * y[w - 1];
            volatile float qr = x[0] * y[w - 1], qi = x[w - 1] * y[0];
            if (cplx) {
              volatile float d = pr - pi, s2 = qr + qi;
              re = re + d;
              im = im + s2;
            } else {
              re = re + pr;
            }
          }
          const float *got = c + w * (i * N + j);
          if (got[0] != re || (cplx && got[1] != im)) bad++;
        }
      CU_ASSERT_EQUAL(bad, 0);
    }
}

static CU_TestInfo tests[] = {
    {"small_products_sum_in_order", test_small_products_sum_in_order},
    {"tiling_covers_by_shape", test_tiling_covers_by_shape},
    {"products_match_and_agree_across_threads", test_products_match_and_agree_across_threads},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("gemm_tiles", tests)
