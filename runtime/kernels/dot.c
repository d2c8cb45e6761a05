// dot (XLA Dot / DotGeneral; StableHLO dot_general): contracts lhs and rhs
// over the contracting dimensions, batching over the batch dimensions. The
// result dimensions are the batch dimensions, then lhs's free dimensions,
// then rhs's free dimensions, each group in order.
//
// Every case is viewed as B independent [M,K] x [K,N] products:
//   f32 / f64 / c64 / c128 results (and f16 / bf16 results, accumulated in
//   f32 then rounded once) go to BLAS gemm. An operand already laid out as
//   [batch.., free.., contracting..] or [batch.., contracting.., free..] is
//   passed as is with gemm's transpose flag; any other layout or element type
//   is first packed (permuted and converted) into the compute type.
//   The gemms run as shape-determined tiles over the thread pool, BLAS
//   single-threaded (gemm_tiles.h), so the bits do not depend on --threads.
//   Integer and pred results use a plain loop, accumulating in 64 bits with
//   wrap-around and keeping the low bits (pred: sum != 0).
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/half_arrays.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/gemm_tiles.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_scratch.h"
#include "runtime/kernels/blas_threads.h"

typedef struct dot_plan {
  int64_t batch, m, k, n;
  int lhs_mk[HL_MAX_RANK], lhs_km[HL_MAX_RANK];  // dim orders [b.., m.., k..] / [b.., k.., m..]
  int rhs_kn[HL_MAX_RANK], rhs_nk[HL_MAX_RANK];
} dot_plan_t;

static bool is_identity(const int *perm, int rank) {
  for (int i = 0; i < rank; i++)
    if (perm[i] != i) return false;
  return true;
}

// Validates the dimension numbers against the operands and the result and
// builds the [B, M, K] x [B, K, N] view.
static hl_status_t plan_dot(const hl_instruction_t *inst, const hl_shape_t *ls,
                            const hl_shape_t *rs, dot_plan_t *p) {
  const char *loc = hl_instruction_location(inst);
  const hl_dot_dims_t *dn = &inst->attrs.dot_dimension_numbers;
  // Without dimension numbers: the classic dot of vectors / matrices.
  int64_t def_lc = ls->rank - 1, def_rc = 0;
  hl_i64_list_t lc = {&def_lc, ls->rank > 0}, rc = {&def_rc, rs->rank > 0};
  hl_i64_list_t lb = {NULL, 0}, rb = {NULL, 0};
  if (inst->attrs.has_dot_dimension_numbers) {
    lc = dn->lhs_contracting_dimensions;
    rc = dn->rhs_contracting_dimensions;
    lb = dn->lhs_batch_dimensions;
    rb = dn->rhs_batch_dimensions;
  }
  if (lc.n != rc.n || lb.n != rb.n)
    return HL_INVALID("%s: lhs and rhs list %d/%d contracting and %d/%d batch dimensions", loc,
                      lc.n, rc.n, lb.n, rb.n);
  bool lused[HL_MAX_RANK] = {0}, rused[HL_MAX_RANK] = {0};
  p->batch = p->k = p->m = p->n = 1;
  int nl = 0, nr = 0, nkl = 0, nkr = 0;
  for (int pass = 0; pass < 2; pass++) {  // batch dimensions, then contracting ones
    const hl_i64_list_t *l = pass ? &lc : &lb, *r = pass ? &rc : &rb;
    for (int i = 0; i < l->n; i++) {
      int64_t a = l->v[i], b = r->v[i];
      if (a < 0 || a >= ls->rank || b < 0 || b >= rs->rank || lused[a] || rused[b] ||
          ls->dims[a] != rs->dims[b])
        return HL_INVALID("%s: bad %s dimension pair lhs %lld / rhs %lld", loc,
                          pass ? "contracting" : "batch", (long long)a, (long long)b);
      lused[a] = rused[b] = true;
      if (pass) {
        p->k *= ls->dims[a];
      } else {
        p->batch *= ls->dims[a];
        p->lhs_mk[nl++] = p->lhs_km[nkl++] = (int)a;
        p->rhs_kn[nr++] = p->rhs_nk[nkr++] = (int)b;
      }
    }
  }
  // [b.., m.., k..] and [b.., k.., m..]; free dimensions keep their order.
  int64_t want[HL_MAX_RANK];
  int nw = 0;
  for (int i = 0; i < lb.n; i++) want[nw++] = ls->dims[lb.v[i]];
  for (int d = 0; d < ls->rank; d++)
    if (!lused[d]) p->lhs_mk[nl++] = d, p->m *= ls->dims[d], want[nw++] = ls->dims[d];
  for (int i = 0; i < lc.n; i++) p->lhs_mk[nl++] = (int)lc.v[i];
  for (int i = 0; i < lc.n; i++) p->lhs_km[nkl++] = (int)lc.v[i];
  for (int d = 0; d < ls->rank; d++)
    if (!lused[d]) p->lhs_km[nkl++] = d;
  for (int i = 0; i < rc.n; i++) p->rhs_kn[nr++] = (int)rc.v[i];
  for (int d = 0; d < rs->rank; d++)
    if (!rused[d]) p->rhs_kn[nr++] = d, p->n *= rs->dims[d], want[nw++] = rs->dims[d];
  for (int d = 0; d < rs->rank; d++)
    if (!rused[d]) p->rhs_nk[nkr++] = d;
  for (int i = 0; i < rc.n; i++) p->rhs_nk[nkr++] = (int)rc.v[i];
  bool ok = hl_shape_is_array(&inst->shape) && inst->shape.rank == nw;
  for (int i = 0; ok && i < nw; i++) ok = inst->shape.dims[i] == want[i];
  if (!ok)
    return HL_INVALID("%s: result %s does not match dot of %s and %s", loc,
                      HL_SHAPE_STR(&inst->shape), HL_SHAPE_STR(ls), HL_SHAPE_STR(rs));
  return NULL;
}

// dst = src with its dimensions permuted to `perm` order, converted to ct
// (the same type: a byte copy; F32/F64: via double; S64: integer bits).
static void pack(const hl_literal_t *src, const int *perm, hl_dtype_t ct, void *dst) {
  const hl_shape_t *s = &src->shape;
  int r = s->rank;
  int64_t n = hl_literal_element_count(src);
  if (n == 0) return;
  int64_t strides[HL_MAX_RANK], pd[HL_MAX_RANK], ps[HL_MAX_RANK], idx[HL_MAX_RANK] = {0};
  hl_shape_strides(s, strides);
  for (int i = 0; i < r; i++) pd[i] = s->dims[perm[i]], ps[i] = strides[perm[i]];
  int64_t inner = r ? pd[r - 1] : 1, istride = r ? ps[r - 1] : 0, off = 0;
  size_t es = hl_dtype_size(s->dtype), cs = hl_dtype_size(ct);
  char *out = dst;
  // Floats into f32 / f64 a row at a time through convert's array loop (the
  // same values as via double: these conversions round once, or not at all);
  // a strided row is gathered first.
  bool rows = ct != s->dtype && hl_dtype_is_float(s->dtype) && (ct == HL_F32 || ct == HL_F64) &&
              hl_convert_supported(s->dtype, ct);
  char *gathered = rows && istride != 1 ? hl_malloc((size_t)inner * es) : NULL;
  if (rows && istride != 1 && !gathered) rows = false;  // out of memory: the element loop
  for (int64_t row = 0; row < n / inner; row++) {
    if (rows) {
      const char *base = (const char *)src->data + (size_t)off * es;
      if (gathered && es == 2) {  // f16 / bf16: a typed gather, not a memcpy per element
        const uint16_t *from = (const uint16_t *)(const void *)base;
        uint16_t *to = (uint16_t *)(void *)gathered;
        for (int64_t j = 0; j < inner; j++) to[j] = from[j * istride];
        base = gathered;
      } else if (gathered) {
        for (int64_t j = 0; j < inner; j++)
          memcpy(gathered + (size_t)j * es, base + (size_t)(j * istride) * es, es);
        base = gathered;
      }
      hl_convert_array(s->dtype, ct, base, out, inner);
      out += (size_t)inner * cs;
    } else if (s->dtype == ct) {
      for (int64_t j = 0; j < inner; j++, out += cs)
        memcpy(out, (const char *)src->data + (size_t)(off + j * istride) * es, es);
    } else {
      for (int64_t j = 0; j < inner; j++, out += cs) {
        int64_t at = off + j * istride;
        if (ct == HL_S64) {
          hl_elem_load_int(s->dtype, src->data, at, 1, (int64_t *)(void *)out);
        } else {
          double v;
          hl_elem_load_f64(s->dtype, src->data, at, 1, &v);
          if (ct == HL_F32) *(float *)(void *)out = (float)v;
          else *(double *)(void *)out = v;
        }
      }
    }
    for (int k = r - 2; k >= 0; k--) {
      off += ps[k];
      if (++idx[k] < pd[k]) break;
      off -= ps[k] * pd[k];
      idx[k] = 0;
    }
  }
  hl_free(gathered);
}

// An operand as gemm wants it: its own buffer with a transpose flag when
// the layout and type fit, else a packed copy (owned).
typedef struct gemm_operand {
  const void *data;
  void *owned;
  bool trans;
} gemm_operand_t;

// The 16-bit float conversions around the gemms (operands widened to f32,
// f32 sums rounded once), in chunks over the pool: element by element, so
// the split does not change a bit.
typedef enum { kWiden, kRoundBf16, kRoundF16 } half_conversion_t;

typedef struct half_job {
  half_conversion_t kind;
  hl_dtype_t from;  // kWiden: bf16 or f16
  const char *x;
  char *y;
} half_job_t;

static void half_chunk(void *arg, int64_t lo, int64_t len, int worker) {
  (void)worker;
  const half_job_t *j = arg;
  switch (j->kind) {
    case kWiden:
      hl_convert_array(j->from, HL_F32, j->x + lo * 2, j->y + lo * 4, len);
      break;
    case kRoundBf16:
      hl_f32_to_bf16_array_canon((const float *)(const void *)(j->x + lo * 4),
                                 (uint16_t *)(void *)(j->y + lo * 2), len);
      break;
    case kRoundF16:
      hl_f32_to_f16_array_canon((const float *)(const void *)(j->x + lo * 4),
                                (uint16_t *)(void *)(j->y + lo * 2), len);
      break;
  }
}

static void convert_half(hl_thread_pool_t *pool, half_conversion_t kind, hl_dtype_t from,
                         const void *x, void *y, int64_t n) {
  half_job_t j = {kind, from, x, y};
  hl_thread_pool_run_chunks(pool, n, half_chunk, &j);
}

static hl_status_t gemm_operand(hl_thread_pool_t *pool, const hl_literal_t *x, const int *plain,
                                const int *transposed, hl_dtype_t ct, gemm_operand_t *g) {
  *g = (gemm_operand_t){x->data, NULL, false};
  if (x->shape.dtype == ct && is_identity(plain, x->shape.rank)) return NULL;
  if (x->shape.dtype == ct && is_identity(transposed, x->shape.rank)) {
    g->trans = true;
    return NULL;
  }
  int64_t n = hl_literal_element_count(x);
  g->owned = hl_malloc((size_t)(n ? n : 1) * hl_dtype_size(ct));
  if (!g->owned) return HL_OOM();
  // A 16-bit float operand in either gemm layout: converted whole, in
  // place order (one vectorised pass, O(n^2) against gemm's O(n^3)).
  bool half = (x->shape.dtype == HL_BF16 || x->shape.dtype == HL_F16) && ct == HL_F32;
  if (half && (is_identity(plain, x->shape.rank) || is_identity(transposed, x->shape.rank))) {
    convert_half(pool, kWiden, x->shape.dtype, x->data, g->owned, n);
    g->trans = !is_identity(plain, x->shape.rank);
    g->data = g->owned;
    return NULL;
  }
  pack(x, plain, ct, g->owned);
  g->data = g->owned;
  return NULL;
}

// Every batch element C_i = A_i B_i: shape-determined tiles over the pool,
// single-threaded BLAS each (gemm_tiles.h: the bits do not depend on the
// thread count). Attention's batch x heads of small matrices are one tile
// each; a large matrix is cut into row or column blocks.
static void gemm_batch(hl_kernel_context_t *ctx, hl_dtype_t ct, const dot_plan_t *p,
                       const gemm_operand_t *a, const gemm_operand_t *b, void *c) {
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  hl_gemm_t g = {.ct = ct,
                 .trans_a = a->trans,
                 .trans_b = b->trans,
                 .m = p->m,
                 .n = p->n,
                 .k = p->k,
                 .a = a->data,
                 .b = b->data,
                 .c = c,
                 .lda = a->trans ? p->m : p->k,
                 .ldb = b->trans ? p->k : p->n,
                 .ldc = p->n,
                 .batch = p->batch,
                 .stride_a = p->m * p->k,
                 .stride_b = p->k * p->n,
                 .stride_c = p->m * p->n};
  hl_gemm_run(o ? o->pool : NULL, &g);
}

static void int_matmul(const dot_plan_t *p, const int64_t *a, const int64_t *b, int64_t *c) {
  for (int64_t i = 0; i < p->batch; i++) {
    const int64_t *ai = a + i * p->m * p->k, *bi = b + i * p->k * p->n;
    uint64_t *ci = (uint64_t *)(c + i * p->m * p->n);
    for (int64_t r = 0; r < p->m; r++) {
      uint64_t *crow = ci + r * p->n;
      for (int64_t j = 0; j < p->n; j++) crow[j] = 0;
      for (int64_t q = 0; q < p->k; q++) {
        uint64_t av = (uint64_t)ai[r * p->k + q];
        const int64_t *brow = bi + q * p->n;
        for (int64_t j = 0; j < p->n; j++) crow[j] += av * (uint64_t)brow[j];
      }
    }
  }
}

// The type a dot computes in (false: not supported).
static bool compute_type(hl_dtype_t lt, hl_dtype_t rt, hl_dtype_t ot, hl_dtype_t *ct) {
  bool real_in = hl_elem_is_real_or_int(lt) && hl_elem_is_real_or_int(rt);
  if (hl_dtype_is_complex(ot) && lt == ot && rt == ot) *ct = ot;
  else if (ot == HL_F64 && real_in) *ct = HL_F64;
  else if ((ot == HL_F32 || ot == HL_F16 || ot == HL_BF16 || hl_minifloat_is(ot)) && real_in)
    *ct = HL_F32;  // f8/f4 accumulate in f32 and round once, as XLA CPU upcasts them
  else if ((hl_dtype_is_integer(ot) || ot == HL_PRED) && real_in && !hl_dtype_is_float(lt) &&
           !hl_dtype_is_float(rt)) *ct = HL_S64;
  else
    return false;
  return true;
}

//===----------------------------------------------------------------------===//
// 16-bit float products in panels (issue 24)
//===----------------------------------------------------------------------===//
// A product with bf16 / f16 operands or result runs in f32: widened
// operands, f32 sums rounded once. Widened whole, each 16-bit operand took
// twice its bytes in scratch and the f32 sums twice the result's (the bf16
// transformer step peaked at 2.66x its live-set bound). Instead each gemm
// tile (gemm_tiles.h: shape-determined blocks of C's rows or columns) widens
// the rows or columns of op(A) / op(B) it reads into its thread's panel,
// computes its block of sums there and rounds it into the result. Only an
// operand that several tiles of one product share is widened whole, once.
// Every tile's BLAS call has the same m, n, k and operand values as
// hl_gemm_run's, so the bits are the same.

// Operands and result in f32 / bf16 / f16, each operand in a gemm layout
// (plain or transposed), at least one 16-bit: the panel path applies.
static bool half_panels_apply(const dot_plan_t *p, const hl_shape_t *ls, const hl_shape_t *rs,
                              hl_dtype_t ot, hl_dtype_t ct) {
  if (ct != HL_F32) return false;
  hl_dtype_t t[3] = {ls->dtype, rs->dtype, ot};
  bool half = false;
  for (int i = 0; i < 3; i++) {
    if (t[i] != HL_F32 && t[i] != HL_BF16 && t[i] != HL_F16) return false;
    half = half || t[i] != HL_F32;
  }
  return half && (is_identity(p->lhs_mk, ls->rank) || is_identity(p->lhs_km, ls->rank)) &&
         (is_identity(p->rhs_kn, rs->rank) || is_identity(p->rhs_nk, rs->rank));
}

// The panel path's buffers, in f32 elements: the shared operand widened
// whole (0: none), and one thread's panel; `workers` panels.
typedef struct half_sizes {
  hl_gemm_tiling_t t;
  int64_t shared, panel;
  int workers;
  bool shared_is_a;
} half_sizes_t;

static half_sizes_t half_panel_sizes(const dot_plan_t *p, hl_dtype_t at, hl_dtype_t bt,
                                     hl_dtype_t ot, int threads) {
  half_sizes_t z = {hl_gemm_tiling(p->m, p->n, p->k), 0, 0, 1, false};
  int64_t len = z.t.size, m = p->m, n = p->n, k = p->k;
  bool many = z.t.count > 1;
  if (z.t.by_rows) {  // rows of op(A) per tile, op(B) whole
    z.panel = (at != HL_F32 ? len * k : 0) + (bt != HL_F32 && !many ? k * n : 0) +
              (ot != HL_F32 ? len * n : 0);
    if (bt != HL_F32 && many) z.shared = p->batch * k * n;
  } else {  // columns of op(B) per tile, op(A) whole
    z.panel = (bt != HL_F32 ? k * len : 0) + (at != HL_F32 && !many ? m * k : 0) +
              (ot != HL_F32 ? m * len : 0);
    if (at != HL_F32 && many) z.shared = p->batch * m * k, z.shared_is_a = true;
  }
  int64_t tasks = p->batch * z.t.count;
  z.workers = tasks > 1 && threads > 1 ? threads : 1;
  return z;
}

typedef struct half_dot {
  const dot_plan_t *p;
  half_sizes_t z;
  const char *a, *b;  // stored operands: op(A) [m, k] ([k, m] when ta), op(B) [k, n] ([n, k])
  hl_dtype_t at, bt, ot;
  bool ta, tb;
  const float *shared;  // the shared operand widened whole, or NULL
  char *y;
  float *panels;
} half_dot_t;

static size_t dsize(hl_dtype_t t) { return t == HL_F32 ? 4 : 2; }

// rows x cols elements of a row-major [*, ld] array of type t starting at
// element `at`, as f32: the array itself when it is f32 (*ld_out = ld), else
// widened into *panel (advanced; *ld_out = cols).
static const float *f32_block(const char *base, hl_dtype_t t, int64_t at, int64_t rows,
                              int64_t cols, int64_t ld, float **panel, int64_t *ld_out) {
  if (t == HL_F32) {
    *ld_out = ld;
    return (const float *)(const void *)base + at;
  }
  float *dst = *panel;
  if (cols == ld) {
    hl_convert_array(t, HL_F32, base + at * 2, dst, rows * cols);
  } else {
    for (int64_t r = 0; r < rows; r++)
      hl_convert_array(t, HL_F32, base + (at + r * ld) * 2, dst + r * cols, cols);
  }
  *panel += rows * cols;
  *ld_out = cols;
  return dst;
}

static void half_tile(void *arg, int64_t task, int worker) {
  const half_dot_t *j = arg;
  const dot_plan_t *p = j->p;
  int64_t m = p->m, n = p->n, k = p->k;
  int64_t i = task / j->z.t.count, lo = task % j->z.t.count * j->z.t.size;
  int64_t side = j->z.t.by_rows ? m : n;
  int64_t len = side - lo < j->z.t.size ? side - lo : j->z.t.size;
  float *panel = j->panels + (size_t)worker * (size_t)j->z.panel;
  const char *a = j->a + (size_t)(i * m * k) * dsize(j->at);
  const char *b = j->b + (size_t)(i * k * n) * dsize(j->bt);
  hl_gemm_t g = {.ct = HL_F32, .trans_a = j->ta, .trans_b = j->tb, .k = k, .batch = 1};
  int64_t lda, ldb, ldc;
  const float *wa = j->shared && j->z.shared_is_a ? j->shared + i * m * k : NULL;
  const float *wb = j->shared && !j->z.shared_is_a ? j->shared + i * k * n : NULL;
  if (j->z.t.by_rows) {
    g.m = len, g.n = n;
    g.a = j->ta ? f32_block(a, j->at, lo, k, len, m, &panel, &lda)
                : f32_block(a, j->at, lo * k, len, k, k, &panel, &lda);
    if (wb) g.b = wb, ldb = j->tb ? k : n;
    else g.b = j->tb ? f32_block(b, j->bt, 0, n, k, k, &panel, &ldb)
                     : f32_block(b, j->bt, 0, k, n, n, &panel, &ldb);
  } else {
    g.m = m, g.n = len;
    if (wa) g.a = wa, lda = j->ta ? m : k;
    else g.a = j->ta ? f32_block(a, j->at, 0, k, m, m, &panel, &lda)
                     : f32_block(a, j->at, 0, m, k, k, &panel, &lda);
    g.b = j->tb ? f32_block(b, j->bt, lo * k, len, k, k, &panel, &ldb)
                : f32_block(b, j->bt, lo, k, len, n, &panel, &ldb);
  }
  size_t ys = dsize(j->ot);
  char *yc = j->y + (size_t)(i * m * n + (j->z.t.by_rows ? lo * n : lo)) * ys;
  float *c = j->ot == HL_F32 ? (float *)(void *)yc : panel;
  ldc = j->ot == HL_F32 ? n : (int64_t)g.n;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc, g.c = c;
  hl_gemm_one(m, n, k, &g);
  if (j->ot == HL_F32) return;
  // Rounded once from the f32 sums (element by element: the bits of the
  // whole-array rounding); a block of whole rows is one run.
  int64_t runs = g.n == n ? 1 : g.m, run = g.n == n ? g.m * n : g.n;
  for (int64_t r = 0; r < runs; r++) {
    const float *from = c + r * ldc;
    uint16_t *to = (uint16_t *)(void *)(yc + (size_t)(r * n) * 2);
    if (j->ot == HL_BF16) hl_f32_to_bf16_array_canon(from, to, run);
    else hl_f32_to_f16_array_canon(from, to, run);
  }
}

static hl_status_t half_panels_run(hl_thread_pool_t *pool, const dot_plan_t *p,
                                   const hl_literal_t *lhs, const hl_literal_t *rhs,
                                   hl_literal_t *y) {
  int threads = hl_thread_pool_size(pool);
  half_dot_t j = {.p = p,
                  .z = half_panel_sizes(p, lhs->shape.dtype, rhs->shape.dtype, y->shape.dtype,
                                        threads),
                  .a = lhs->data, .b = rhs->data,
                  .at = lhs->shape.dtype, .bt = rhs->shape.dtype, .ot = y->shape.dtype,
                  .ta = !is_identity(p->lhs_mk, lhs->shape.rank),
                  .tb = !is_identity(p->rhs_kn, rhs->shape.rank),
                  .y = y->data};
  float *shared = NULL;
  if (j.z.shared) {
    if (!(shared = hl_malloc((size_t)j.z.shared * sizeof(float)))) return HL_OOM();
    const hl_literal_t *x = j.z.shared_is_a ? lhs : rhs;
    convert_half(pool, kWiden, x->shape.dtype, x->data, shared, j.z.shared);
    j.shared = shared;
  }
  j.panels = hl_malloc((size_t)(j.z.panel * j.z.workers) * sizeof(float) + 1);
  if (!j.panels) {
    hl_free(shared);
    return HL_OOM();
  }
  int blas = hl_gemm_blas_single();
  hl_thread_pool_run(j.z.workers > 1 ? pool : NULL, p->batch * j.z.t.count, half_tile, &j);
  hl_gemm_blas_restore(blas);
  hl_free(j.panels);
  hl_free(shared);
  return NULL;
}

hl_status_t hl_kernel_dot(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                          hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  if (inst->operand_count != 2)
    return HL_UNIMPL("%s: dot with %d operands (sparsity metadata) is not supported", loc,
                     inst->operand_count);
  const hl_literal_t *lhs = operands[0], *rhs = operands[1];
  hl_dtype_t lt = lhs->shape.dtype, rt = rhs->shape.dtype, ot = inst->shape.dtype;
  if (!hl_shape_is_array(&lhs->shape) || !hl_shape_is_array(&rhs->shape))
    return HL_INVALID("%s: dot operands must be arrays", loc);
  dot_plan_t p;
  HL_RETURN_IF_ERROR(plan_dot(inst, &lhs->shape, &rhs->shape, &p));

  hl_dtype_t ct;
  if (!compute_type(lt, rt, ot, &ct))
    return HL_UNIMPL("%s: dot of %s and %s into %s is not supported", loc, hl_dtype_name(lt),
                     hl_dtype_name(rt), hl_dtype_name(ot));
  if (ct != HL_S64 && (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX))
    return HL_UNIMPL("%s: dot dimensions exceed the BLAS index range", loc);

  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  int64_t n_out = hl_literal_element_count(y);
  if (n_out == 0 || p.k == 0) {  // an empty sum is zero
    if (y->byte_size) memset(y->data, 0, y->byte_size);
    *out = y;
    return NULL;
  }
  if (half_panels_apply(&p, &lhs->shape, &rhs->shape, ot, ct)) {
    const hl_exec_options_t *o = hl_kernel_options(ctx);
    hl_status_t st = half_panels_run(o ? o->pool : NULL, &p, lhs, rhs, y);
    if (st) {
      hl_literal_release(y);
      return st;
    }
    *out = y;
    return NULL;
  }
  gemm_operand_t a = {0}, b = {0};
  void *c = ot == ct ? y->data : hl_malloc((size_t)n_out * hl_dtype_size(ct));
  hl_status_t st = c ? NULL : HL_OOM();
  if (ct == HL_S64) {
    // The loop reads [B, M, K] and [B, K, N]: pack both.
    a.owned = st ? NULL : hl_malloc((size_t)(p.batch * p.m * p.k) * sizeof(int64_t));
    b.owned = st ? NULL : hl_malloc((size_t)(p.batch * p.k * p.n) * sizeof(int64_t));
    if (!st && (!a.owned || !b.owned)) st = HL_OOM();
    if (!st) {
      pack(lhs, p.lhs_mk, HL_S64, a.owned);
      pack(rhs, p.rhs_kn, HL_S64, b.owned);
      int_matmul(&p, a.owned, b.owned, c);
      hl_elem_store_int(ot, y->data, 0, n_out, c);
    }
  } else {
    const hl_exec_options_t *o = hl_kernel_options(ctx);
    hl_thread_pool_t *pool = o ? o->pool : NULL;
    if (!st) st = gemm_operand(pool, lhs, p.lhs_mk, p.lhs_km, ct, &a);
    if (!st) st = gemm_operand(pool, rhs, p.rhs_kn, p.rhs_nk, ct, &b);
    if (!st) gemm_batch(ctx, ct, &p, &a, &b, c);
    if (!st && c != y->data && (ot == HL_BF16 || ot == HL_F16)) {
      // Rounded once from the f32 sums (vectorised; the bits of the
      // double loop below).
      convert_half(pool, ot == HL_BF16 ? kRoundBf16 : kRoundF16, HL_F32, c, y->data, n_out);
    } else if (!st && c != y->data) {
      double v[HL_ELEM_BLOCK];
      for (int64_t base = 0; base < n_out; base += HL_ELEM_BLOCK) {
        int64_t m = n_out - base < HL_ELEM_BLOCK ? n_out - base : HL_ELEM_BLOCK;
        hl_elem_load_f64(ct, c, base, m, v);
        hl_elem_store_f64(ot, y->data, base, m, v);
      }
    }
  }
  hl_free(a.owned);
  hl_free(b.owned);
  if (c != y->data) hl_free(c);
  if (st) {
    hl_literal_release(y);
    return st;
  }
  *out = y;
  return NULL;
}

// The buffers hl_kernel_dot allocates besides its result, in its order
// (kernel_scratch.h).
void hl_dot_scratch(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out) {
  out->count = 0;
  if (inst->operand_count != 2) return;
  const hl_shape_t *ls = &inst->operands[0]->shape, *rs = &inst->operands[1]->shape;
  hl_dtype_t ot = inst->shape.dtype, ct;
  dot_plan_t p;
  if (!hl_shape_is_array(ls) || !hl_shape_is_array(rs) ||
      !compute_type(ls->dtype, rs->dtype, ot, &ct))
    return;
  hl_status_t st = plan_dot(inst, ls, rs, &p);
  if (st) {
    hl_status_free(st);
    return;
  }
  int64_t n_out = hl_shape_element_count(&inst->shape);
  if (n_out == 0 || p.k == 0) return;
  if (half_panels_apply(&p, ls, rs, ot, ct)) {
    half_sizes_t z = half_panel_sizes(&p, ls->dtype, rs->dtype, ot, threads);
    if (z.shared) hl_kernel_scratch_add(out, z.shared * 4);
    hl_kernel_scratch_add(out, z.panel * z.workers * 4 + 1);
    return;
  }
  size_t cs = hl_dtype_size(ct);
  if (ot != ct) hl_kernel_scratch_add(out, n_out * (int64_t)cs);
  if (ct == HL_S64) {
    hl_kernel_scratch_add(out, p.batch * p.m * p.k * 8);
    hl_kernel_scratch_add(out, p.batch * p.k * p.n * 8);
    return;
  }
  // gemm_operand: a packed copy unless the operand is ct in a gemm layout.
  const hl_shape_t *sh[2] = {ls, rs};
  const int *plain[2] = {p.lhs_mk, p.rhs_kn}, *trans[2] = {p.lhs_km, p.rhs_nk};
  for (int i = 0; i < 2; i++)
    if (sh[i]->dtype != ct ||
        (!is_identity(plain[i], sh[i]->rank) && !is_identity(trans[i], sh[i]->rank)))
      hl_kernel_scratch_add(out, hl_shape_element_count(sh[i]) * (int64_t)cs);
}
