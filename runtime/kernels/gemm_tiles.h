// BLAS gemm calls that give the same bits for every thread count.
//
// OpenBLAS's result bits depend on how a product is cut up: its threaded
// driver blocks the sum over k differently from the single-threaded one (a
// 1449x16x1800 sgemm differs in 16284 of 23184 elements between 1 and 2
// threads, OpenBLAS 0.3.21), and even single-threaded, a product cut into
// row blocks can differ from the whole. So the runtime never lets BLAS
// thread: it cuts each product into tiles (row or column blocks of C) whose
// boundaries depend only on the shape, calls single-threaded BLAS once per
// tile and spreads the tiles over its own thread pool. --threads 1 runs the
// same tiles one after the other, so every element is computed by the same
// call with the same arguments whatever the thread count.
#ifndef HL_RUNTIME_KERNELS_GEMM_TILES_H_
#define HL_RUNTIME_KERNELS_GEMM_TILES_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/threads/thread_pool.h"

// C = op(A) op(B), row-major, element type ct (F32, F64, C64 or C128);
// op(A) is [m, k] (stored [k, m] when trans_a), op(B) [k, n] (stored [n, k]
// when trans_b); leading dimensions in elements. With batch > 1, product i
// reads A + i * stride_a, B + i * stride_b and writes C + i * stride_c
// (elements). Dimensions and leading dimensions must fit in int (the
// caller checks: BLAS's index type).
typedef struct hl_gemm {
  hl_dtype_t ct;
  bool trans_a, trans_b;
  int64_t m, n, k;
  const void *a, *b;
  void *c;
  int64_t lda, ldb, ldc;
  int64_t batch, stride_a, stride_b, stride_c;
} hl_gemm_t;

// Runs every product's tiles on `pool` (NULL: on the caller), BLAS
// single-threaded meanwhile.
void hl_gemm_run(hl_thread_pool_t *pool, const hl_gemm_t *g);

// The tiles one product is cut into and along which side (exposed for the
// unit test): rows of C (true) or columns, `size` each but the last.
typedef struct hl_gemm_tiling {
  bool by_rows;
  int64_t count, size;
} hl_gemm_tiling_t;
hl_gemm_tiling_t hl_gemm_tiling(int64_t m, int64_t n, int64_t k);

// For callers that prepare each tile's operands themselves (dot's 16-bit
// panels, issue 24): hl_gemm_one computes one tile of a product whose
// whole is m x n x k exactly as hl_gemm_run does -- the plain loop when
// the whole product is small enough for it (each element summed alone,
// so a tile of it gives the same bits), else one single-threaded BLAS call
// (the caller sets BLAS to one thread: hl_gemm_blas_single / _restore).
// `tile` has batch 1 and the tile's m or n.
void hl_gemm_one(int64_t m, int64_t n, int64_t k, const hl_gemm_t *tile);
int hl_gemm_blas_single(void);         // returns the count to restore
void hl_gemm_blas_restore(int count);

#endif  // HL_RUNTIME_KERNELS_GEMM_TILES_H_
