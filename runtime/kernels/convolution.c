// convolution (XLA ConvWithGeneralPadding; StableHLO convolution): every
// dimension-number order, window strides, padding (negative too), lhs
// (base) and rhs (window) dilation, window reversal, feature and batch
// groups, any number of spatial dimensions.
//
// Path: the kernel is packed as W[O][I * KS] (KS = kernel spatial size);
// for each group the input windows are gathered (im2col) into
// col[I * KS][n * P] (P = output spatial size, n a chunk of the batch), so
// out[g] = W[g] x col is one GEMM with M = O/G, N = n*P, K = I*KS:
//   f32 / f64 / c64 / c128 through BLAS (f16 / bf16 and the f8 / f4 types
//   computed in f32 and rounded once at the end), integers and pred in a plain 64-bit loop with
//   wrap-around (pred: sum != 0).
// Padding, dilation holes and windows hanging over the edge read as zero, so
// NaN in the kernel still propagates through padded positions (0 * NaN), as
// the spec's padded dot product says. With lhs_dilate > 1 the per-phase path
// (below) skips hole taps altogether, as XLA's HloEvaluator does.
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/gemm_tiles.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_scratch.h"
#include "runtime/threads/thread_pool.h"

// Elements of the im2col buffer per chunk (the batch is split to stay below).
#define COL_CHUNK_ELEMS (INT64_C(16) << 20)
// Pixel-major gathers (NHWC): bytes of colT per GEMM, so a chunk is still in
// the cache (L2 / L3) when the GEMM reads it, and rows per pool task.
#define COL_CACHE_BYTES (INT64_C(4) << 20)
#define GATHER_TASK_ROWS 64
// Feature-major phase gathers (NCHW lhs_dilate): bytes of col per GEMM.
#define PHASE_COL_BYTES (INT64_C(512) << 10)

typedef struct conv_plan {
  int ns;                                   // spatial dimensions
  int64_t n_in, c_in, o_out, n_out;         // batch, input features, output features
  int64_t fgc, bgc, groups, ig, og;         // ig = kernel input features, og = O / groups
  int64_t ks, p;                            // kernel / output spatial element counts
  int64_t in_sp[HL_MAX_RANK], k_sp[HL_MAX_RANK], out_sp[HL_MAX_RANK];
  int64_t s_b, s_f, s_sp[HL_MAX_RANK];      // lhs strides
  int64_t s_ki, s_ko, s_ksp[HL_MAX_RANK];   // rhs strides
  int64_t s_ob, s_of, s_osp[HL_MAX_RANK];   // result strides
  const hl_window_dim_t *win;               // ns entries (NULL when ns == 0)
} conv_plan_t;

// Element counts for allocations (a zero-size request still gets a block).
static size_t at_least_one(int64_t n) { return n > 0 ? (size_t)n : 1; }

static bool dims_unique(const int64_t *d, int n, int rank) {
  bool seen[HL_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    if (d[i] < 0 || d[i] >= rank || seen[d[i]]) return false;
    seen[d[i]] = true;
  }
  return true;
}

// num_windows of the spec's (C25).
static int64_t num_windows(int64_t in, int64_t k, const hl_window_dim_t *w) {
  int64_t dil_in = in == 0 ? 0 : (in - 1) * w->base_dilation + 1;
  int64_t padded = w->padding_low + dil_in + w->padding_high;
  int64_t dil_k = k == 0 ? 0 : (k - 1) * w->window_dilation + 1;
  if (padded <= 0 || dil_k > padded) return 0;
  return (padded - dil_k) / w->stride + 1;
}

static hl_status_t plan_conv(const hl_instruction_t *inst, const hl_shape_t *ls,
                             const hl_shape_t *rs, conv_plan_t *p) {
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *os = &inst->shape;
  const hl_conv_dims_t *dn = &inst->attrs.convolution_dimension_numbers;
  if (!inst->attrs.has_convolution_dimension_numbers)
    return HL_INVALID("%s: convolution has no dim_labels / dimension numbers", loc);
  int r = ls->rank, ns = r - 2;
  if (r < 2 || rs->rank != r || !hl_shape_is_array(os) || os->rank != r)
    return HL_INVALID("%s: convolution needs lhs, rhs and result of one rank >= 2, got %s, %s, %s",
                      loc, HL_SHAPE_STR(ls), HL_SHAPE_STR(rs), HL_SHAPE_STR(os));
  if (dn->input_spatial_dimensions.n != ns || dn->kernel_spatial_dimensions.n != ns ||
      dn->output_spatial_dimensions.n != ns)
    return HL_INVALID("%s: dimension numbers list %d/%d/%d spatial dimensions, rank %d needs %d",
                      loc, dn->input_spatial_dimensions.n, dn->kernel_spatial_dimensions.n,
                      dn->output_spatial_dimensions.n, r, ns);
  int64_t ind[HL_MAX_RANK], kd[HL_MAX_RANK], od[HL_MAX_RANK];
  ind[0] = dn->input_batch_dimension, ind[1] = dn->input_feature_dimension;
  kd[0] = dn->kernel_input_feature_dimension, kd[1] = dn->kernel_output_feature_dimension;
  od[0] = dn->output_batch_dimension, od[1] = dn->output_feature_dimension;
  for (int i = 0; i < ns; i++) {
    ind[2 + i] = dn->input_spatial_dimensions.v[i];
    kd[2 + i] = dn->kernel_spatial_dimensions.v[i];
    od[2 + i] = dn->output_spatial_dimensions.v[i];
  }
  if (!dims_unique(ind, r, r) || !dims_unique(kd, r, r) || !dims_unique(od, r, r))
    return HL_INVALID("%s: convolution dimension numbers repeat a dimension or are out of range",
                      loc);
  const hl_window_t *w = &inst->attrs.window;
  if ((ns > 0 && !inst->attrs.has_window) || (inst->attrs.has_window && w->n != ns))
    return HL_INVALID("%s: window has %d dimensions, convolution has %d spatial dimensions", loc,
                      inst->attrs.has_window ? w->n : 0, ns);
  p->ns = ns;
  p->win = ns ? w->dims : NULL;
  int64_t ls_str[HL_MAX_RANK], rs_str[HL_MAX_RANK], os_str[HL_MAX_RANK];
  hl_shape_strides(ls, ls_str);
  hl_shape_strides(rs, rs_str);
  hl_shape_strides(os, os_str);
  p->n_in = ls->dims[ind[0]], p->c_in = ls->dims[ind[1]];
  p->ig = rs->dims[kd[0]], p->o_out = rs->dims[kd[1]];
  p->fgc = inst->attrs.feature_group_count, p->bgc = inst->attrs.batch_group_count;
  if (p->fgc < 1 || p->bgc < 1 || (p->fgc > 1 && p->bgc > 1))
    return HL_INVALID("%s: feature_group_count=%lld, batch_group_count=%lld: both must be >= 1 "
                      "and one of them 1", loc, (long long)p->fgc, (long long)p->bgc);
  p->groups = p->fgc * p->bgc;
  if (p->c_in % p->fgc || p->ig != p->c_in / p->fgc)
    return HL_INVALID("%s: kernel input features %lld != input features %lld / "
                      "feature_group_count %lld", loc, (long long)p->ig, (long long)p->c_in,
                      (long long)p->fgc);
  if (p->n_in % p->bgc)
    return HL_INVALID("%s: input batch %lld is not a multiple of batch_group_count %lld", loc,
                      (long long)p->n_in, (long long)p->bgc);
  if (p->o_out % p->groups)
    return HL_INVALID("%s: kernel output features %lld not a multiple of the group count %lld",
                      loc, (long long)p->o_out, (long long)p->groups);
  p->og = p->o_out / p->groups;
  p->n_out = p->n_in / p->bgc;
  p->s_b = ls_str[ind[0]], p->s_f = ls_str[ind[1]];
  p->s_ki = rs_str[kd[0]], p->s_ko = rs_str[kd[1]];
  p->s_ob = os_str[od[0]], p->s_of = os_str[od[1]];
  bool ok = os->dims[od[0]] == p->n_out && os->dims[od[1]] == p->o_out;
  p->ks = p->p = 1;
  for (int i = 0; i < ns; i++) {
    const hl_window_dim_t *wd = &w->dims[i];
    p->in_sp[i] = ls->dims[ind[2 + i]], p->s_sp[i] = ls_str[ind[2 + i]];
    p->k_sp[i] = rs->dims[kd[2 + i]], p->s_ksp[i] = rs_str[kd[2 + i]];
    p->out_sp[i] = os->dims[od[2 + i]], p->s_osp[i] = os_str[od[2 + i]];
    if (wd->stride < 1 || wd->base_dilation < 1 || wd->window_dilation < 1)
      return HL_INVALID("%s: window dimension %d has stride %lld, lhs_dilate %lld, rhs_dilate "
                        "%lld; all must be >= 1", loc, i, (long long)wd->stride,
                        (long long)wd->base_dilation, (long long)wd->window_dilation);
    if (wd->size != p->k_sp[i])
      return HL_INVALID("%s: window size %lld in spatial dimension %d differs from the kernel's "
                        "%lld", loc, (long long)wd->size, i, (long long)p->k_sp[i]);
    ok = ok && os->dims[od[2 + i]] == num_windows(p->in_sp[i], p->k_sp[i], wd);
    p->ks *= p->k_sp[i];
    p->p *= p->out_sp[i];
  }
  if (!ok)
    return HL_INVALID("%s: result %s does not match the convolution of %s and %s", loc,
                      HL_SHAPE_STR(os), HL_SHAPE_STR(ls), HL_SHAPE_STR(rs));
  return NULL;
}

//===----------------------------------------------------------------------===//
// Conversion to the compute type
//===----------------------------------------------------------------------===//

// dst[0..n) = src elements [base, base+n) in compute type ct (F32, F64, S64,
// or a complex type equal to the source's).
static void to_ct(hl_dtype_t t, const void *src, int64_t base, int64_t n, hl_dtype_t ct,
                  void *dst) {
  if (t == ct) {
    size_t es = hl_dtype_size(t);
    memcpy(dst, (const char *)src + (size_t)base * es, (size_t)n * es);
    return;
  }
  if (ct == HL_S64) {
    hl_elem_load_int(t, src, base, n, dst);
    return;
  }
  double v[HL_ELEM_BLOCK];
  for (int64_t i = 0; i < n; i += HL_ELEM_BLOCK) {
    int64_t m = n - i < HL_ELEM_BLOCK ? n - i : HL_ELEM_BLOCK;
    hl_elem_load_f64(t, src, base + i, m, v);
    if (ct == HL_F32) {
      float *d = (float *)dst + i;
      for (int64_t j = 0; j < m; j++) d[j] = (float)v[j];
    } else {
      memcpy((double *)dst + i, v, (size_t)m * sizeof(double));
    }
  }
}

// The lhs in compute type, same layout: its own buffer when the types agree.
static hl_status_t lhs_in_ct(const hl_literal_t *x, hl_dtype_t ct, const void **data,
                             void **owned) {
  *owned = NULL;
  *data = x->data;
  if (x->shape.dtype == ct) return NULL;
  int64_t n = hl_literal_element_count(x);
  *owned = hl_malloc((size_t)(n ? n : 1) * hl_dtype_size(ct));
  if (!*owned) return HL_OOM();
  to_ct(x->shape.dtype, x->data, 0, n, ct, *owned);
  *data = *owned;
  return NULL;
}

// W[o][c][k...] (kernel spatial dims in the order of the dimension numbers).
static void pack_kernel(const hl_literal_t *rhs, const conv_plan_t *p, hl_dtype_t ct, char *w) {
  size_t cs = hl_dtype_size(ct);
  int64_t kidx[HL_MAX_RANK];
  for (int64_t o = 0; o < p->o_out; o++) {
    for (int64_t c = 0; c < p->ig; c++) {
      memset(kidx, 0, sizeof(kidx));
      for (int64_t k = 0; k < p->ks; k++) {
        int64_t off = o * p->s_ko + c * p->s_ki;
        for (int d = 0; d < p->ns; d++) off += kidx[d] * p->s_ksp[d];
        to_ct(rhs->shape.dtype, rhs->data, off, 1, ct, w);
        w += cs;
        for (int d = p->ns - 1; d >= 0; d--) {
          if (++kidx[d] < p->k_sp[d]) break;
          kidx[d] = 0;
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// im2col
//===----------------------------------------------------------------------===//

// tab[d][kk * out_sp[d] + o]: lhs offset along spatial dim d read by kernel
// element kk at output position o, or -1 for padding / a dilation hole.
static hl_status_t build_tables(const conv_plan_t *p, int64_t **out_tab) {
  int64_t total = 0, start[HL_MAX_RANK];
  for (int d = 0; d < p->ns; d++) start[d] = total, total += p->k_sp[d] * p->out_sp[d];
  int64_t *tab = hl_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
  if (!tab) return HL_OOM();
  for (int d = 0; d < p->ns; d++) {
    const hl_window_dim_t *w = &p->win[d];
    int64_t dil_extent = (p->in_sp[d] - 1) * w->base_dilation;
    for (int64_t kk = 0; kk < p->k_sp[d]; kk++) {
      int64_t q = w->window_reversal ? p->k_sp[d] - 1 - kk : kk;
      for (int64_t o = 0; o < p->out_sp[d]; o++) {
        int64_t x = o * w->stride + q * w->window_dilation - w->padding_low;
        int64_t v = -1;
        if (x >= 0 && x <= dil_extent && x % w->base_dilation == 0)
          v = (x / w->base_dilation) * p->s_sp[d];
        tab[start[d] + kk * p->out_sp[d] + o] = v;
      }
    }
  }
  *out_tab = tab;
  return NULL;
}

typedef struct im2col_args {
  const conv_plan_t *p;
  const int64_t *tab;
  const char *in;       // lhs in compute type
  size_t es;            // compute element size
  int64_t g, n0, nb;    // group, first output batch, batch count
} im2col_args_t;

#define COPY_ROW_(T)                                                            \
  do {                                                                          \
    const T *s = (const T *)(const void *)src;                                  \
    T *o = (T *)(void *)dst;                                                    \
    for (int64_t j = 0; j < len; j++) o[j] = t_last[j] >= 0 ? s[t_last[j]] : (T){0}; \
  } while (0)

typedef struct c128_ {
  double re, im;
} c128_t;

// col[(c * KS + k)][(n * P + pidx)]
static void im2col(const im2col_args_t *a, char *col) {
  const conv_plan_t *p = a->p;
  int ns = p->ns;
  int64_t tstart[HL_MAX_RANK], t = 0;
  for (int d = 0; d < ns; d++) tstart[d] = t, t += p->k_sp[d] * p->out_sp[d];
  int64_t ncols = a->nb * p->p;
  int64_t len = ns ? p->out_sp[ns - 1] : 1, rows_per = len ? p->p / len : 0;
  static const int64_t zero_tab[1] = {0};
  int64_t kidx[HL_MAX_RANK], oidx[HL_MAX_RANK];
  int64_t c0 = p->fgc > 1 ? a->g * p->ig : 0;
  for (int64_t c = 0; c < p->ig; c++) {
    memset(kidx, 0, sizeof(kidx));
    for (int64_t k = 0; k < p->ks; k++) {
      char *row = col + (size_t)((c * p->ks + k) * ncols) * a->es;
      const int64_t *t_last =
          ns ? a->tab + tstart[ns - 1] + kidx[ns - 1] * p->out_sp[ns - 1] : zero_tab;
      for (int64_t n = 0; n < a->nb; n++) {
        int64_t b = p->bgc > 1 ? a->g * p->n_out + a->n0 + n : a->n0 + n;
        int64_t base = b * p->s_b + (c0 + c) * p->s_f;
        memset(oidx, 0, sizeof(oidx));
        for (int64_t rrow = 0; rrow < rows_per; rrow++) {
          char *dst = row + (size_t)(n * p->p + rrow * len) * a->es;
          int64_t off = base;
          bool hole = false;
          for (int d = 0; d < ns - 1; d++) {
            int64_t v = a->tab[tstart[d] + kidx[d] * p->out_sp[d] + oidx[d]];
            if (v < 0) hole = true;
            off += v;
          }
          if (hole) {
            memset(dst, 0, (size_t)len * a->es);
          } else {
            const char *src = a->in + (size_t)off * a->es;
            switch (a->es) {
              case 4: COPY_ROW_(uint32_t); break;
              case 8: COPY_ROW_(uint64_t); break;
              default: COPY_ROW_(c128_t); break;
            }
          }
          for (int d = ns - 2; d >= 0; d--) {
            if (++oidx[d] < p->out_sp[d]) break;
            oidx[d] = 0;
          }
        }
      }
      for (int d = ns - 1; d >= 0; d--) {
        if (++kidx[d] < p->k_sp[d]) break;
        kidx[d] = 0;
      }
    }
  }
}
#undef COPY_ROW_

//===----------------------------------------------------------------------===//
// GEMM and scatter into the result layout
//===----------------------------------------------------------------------===//

// c[m][n] = a[m][k] x b[k][n] in compute type ct, row-major with leading
// dimensions lda / ldb / ldc; with trans_b, b is stored [n][k]. Floats: BLAS
// tiles over the pool (gemm_tiles.h, the same bits for every thread count);
// S64: a wrap-around loop.
static void gemm(hl_thread_pool_t *pool, hl_dtype_t ct, bool trans_b, int64_t m, int64_t n,
                 int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                 int64_t ldc) {
  if (ct != HL_S64) {
    hl_gemm_t g = {.ct = ct, .trans_b = trans_b, .m = m, .n = n, .k = k, .a = a, .b = b,
                   .c = c, .lda = lda, .ldb = ldb, .ldc = ldc, .batch = 1};
    hl_gemm_run(pool, &g);
    return;
  }
  const uint64_t *ai = a, *bi = b;
  uint64_t *ci = c;
  for (int64_t r = 0; r < m; r++) {
    uint64_t *crow = ci + r * ldc;
    if (trans_b) {  // a dot product per result element
      for (int64_t j = 0; j < n; j++) {
        uint64_t s = 0;
        for (int64_t q = 0; q < k; q++) s += ai[r * lda + q] * bi[j * ldb + q];
        crow[j] = s;
      }
      continue;
    }
    for (int64_t j = 0; j < n; j++) crow[j] = 0;
    for (int64_t q = 0; q < k; q++) {
      uint64_t av = ai[r * lda + q];
      const uint64_t *brow = bi + q * ldb;
      for (int64_t j = 0; j < n; j++) crow[j] += av * brow[j];
    }
  }
}

// out[(n0+n)*s_ob + (g*og+o)*s_of + pofs[pidx]] = tmp[o][n*P + pidx]
static void scatter_out(const conv_plan_t *p, const int64_t *pofs, size_t es, int64_t g,
                        int64_t n0, int64_t nb, const char *tmp, char *out) {
  int64_t ncols = nb * p->p;
  for (int64_t o = 0; o < p->og; o++) {
    for (int64_t n = 0; n < nb; n++) {
      const char *src = tmp + (size_t)(o * ncols + n * p->p) * es;
      int64_t base = (n0 + n) * p->s_ob + (g * p->og + o) * p->s_of;
      for (int64_t q = 0; q < p->p; q++)
        memcpy(out + (size_t)(base + pofs[q]) * es, src + (size_t)q * es, es);
    }
  }
}

// The spatial dims of a result (or lhs) are row-major behind `inner` (the
// stride of the last spatial dim) and the batch comes right before them.
static bool spatial_row_major(int ns, const int64_t *dims, const int64_t *strides, int64_t inner,
                              int64_t n_batch, int64_t batch_stride) {
  int64_t s = inner;
  for (int d = ns - 1; d >= 0; d--) {
    if (dims[d] > 1 && strides[d] != s) return false;
    s *= dims[d];
  }
  return n_batch <= 1 || batch_stride == s;
}

// Pixel-major results ([batch, spatial..., feature] in memory, as NHWC):
// out[(n, q)][o] = colT[(n, q)][k * Ig + c] x W2[k * Ig + c][o], so the GEMM
// writes the result in place (ldc = O). For a 1x1 kernel without stride,
// padding or dilation over a pixel-major lhs, the lhs itself is colT
// (lda = C): no copy at all.
typedef struct pixel_args {
  const conv_plan_t *p;
  const int64_t *tab;
  const char *in;
  size_t es;
  int64_t g;        // group
  int64_t r0;       // first colT row of the chunk: row r is (n, q) = (r / P, r % P)
  int64_t rows;     // rows in the chunk
  char *colT;       // the chunk's rows
} pixel_args_t;

// colT rows [r0 + lo, r0 + hi) of the pixel-major gather.
static void im2col_pixel_rows(const pixel_args_t *a, int64_t lo, int64_t hi) {
  const conv_plan_t *p = a->p;
  int ns = p->ns;
  int64_t tstart[HL_MAX_RANK], t = 0;
  for (int d = 0; d < ns; d++) tstart[d] = t, t += p->k_sp[d] * p->out_sp[d];
  int64_t kdim = p->ig * p->ks, c0 = p->fgc > 1 ? a->g * p->ig : 0;
  size_t run = (size_t)p->ig * a->es;
  char *row = a->colT + (size_t)(lo * kdim) * a->es;
  int64_t r = a->r0 + lo, n = r / p->p, q = r % p->p;
  int64_t oidx[HL_MAX_RANK] = {0}, rest = q;
  for (int d = ns - 1; d >= 0; d--) oidx[d] = rest % p->out_sp[d], rest /= p->out_sp[d];
  for (int64_t i = lo; i < hi; i++, row += (size_t)kdim * a->es) {
    int64_t b = p->bgc > 1 ? a->g * p->n_out + n : n;
    int64_t base = b * p->s_b + c0 * p->s_f;
    int64_t kidx[HL_MAX_RANK] = {0};
    for (int64_t k = 0; k < p->ks; k++) {
      char *dst = row + (size_t)k * run;
      int64_t off = base;
      bool hole = false;
      for (int d = 0; d < ns && !hole; d++) {
        int64_t v = a->tab[tstart[d] + kidx[d] * p->out_sp[d] + oidx[d]];
        hole = v < 0;
        off += v;
      }
      if (hole) {
        memset(dst, 0, run);
      } else if (p->s_f == 1) {
        memcpy(dst, a->in + (size_t)off * a->es, run);
      } else {
        for (int64_t c = 0; c < p->ig; c++)
          memcpy(dst + (size_t)c * a->es, a->in + (size_t)(off + c * p->s_f) * a->es, a->es);
      }
      for (int d = ns - 1; d >= 0; d--) {
        if (++kidx[d] < p->k_sp[d]) break;
        kidx[d] = 0;
      }
    }
    if (++q == p->p) q = 0, n++;
    for (int d = ns - 1; d >= 0; d--) {
      if (++oidx[d] < p->out_sp[d]) break;
      oidx[d] = 0;
    }
  }
}

static void im2col_pixel_task(void *arg, int64_t task, int worker) {
  const pixel_args_t *a = arg;
  int64_t lo = task * GATHER_TASK_ROWS;
  im2col_pixel_rows(a, lo, lo + GATHER_TASK_ROWS < a->rows ? lo + GATHER_TASK_ROWS : a->rows);
}

// True when the lhs already is colT: a 1x1 window that reads every pixel in
// place, with the lhs pixel-major like the result.
static bool lhs_is_colT(const conv_plan_t *p) {
  if (p->s_f != 1 || !spatial_row_major(p->ns, p->in_sp, p->s_sp, p->c_in,
                                        p->n_in, p->s_b))
    return false;
  for (int d = 0; d < p->ns; d++) {
    const hl_window_dim_t *w = &p->win[d];
    if (p->k_sp[d] != 1 || w->stride != 1 || w->padding_low != 0 || w->padding_high != 0 ||
        w->base_dilation != 1 || p->in_sp[d] != p->out_sp[d])
      return false;
  }
  return true;
}

// W2[k][c][o] (all groups' outputs side by side, as conv_pixel_major's
// GEMMs read it) straight from the rhs. A row of outputs is one memcpy when
// the rhs keeps them contiguous in the computation type (HWIO layouts such
// as 01io): per-element packing cost about 10% of a 1x1 convolution.
static void pack_kernel_kco(const hl_literal_t *rhs, const conv_plan_t *p, hl_dtype_t ct,
                            char *w2) {
  size_t cs = hl_dtype_size(ct);
  bool rows = rhs->shape.dtype == ct && p->s_ko == 1;
  int64_t kidx[HL_MAX_RANK] = {0};
  for (int64_t k = 0; k < p->ks; k++) {
    int64_t koff = 0;
    for (int d = 0; d < p->ns; d++) koff += kidx[d] * p->s_ksp[d];
    for (int64_t c = 0; c < p->ig; c++) {
      char *dst = w2 + (size_t)((k * p->ig + c) * p->o_out) * cs;
      int64_t off = koff + c * p->s_ki;
      if (rows) {
        memcpy(dst, (const char *)rhs->data + (size_t)off * cs, (size_t)p->o_out * cs);
        continue;
      }
      for (int64_t o = 0; o < p->o_out; o++, dst += cs)
        to_ct(rhs->shape.dtype, rhs->data, off + o * p->s_ko, 1, ct, dst);
    }
    for (int d = p->ns - 1; d >= 0; d--) {
      if (++kidx[d] < p->k_sp[d]) break;
      kidx[d] = 0;
    }
  }
}

// Rows (n, q) per GEMM of conv_pixel_major: the whole batch in place, else
// a chunk of colT that stays in the cache between its gather and its GEMM.
// The chunk does not depend on the thread count, so neither do the GEMMs'
// results.
static int64_t pixel_chunk_rows(const conv_plan_t *p, size_t es) {
  int64_t kdim = p->ig * p->ks, rows_total = p->n_out * p->p;
  int64_t mc = rows_total;
  if (!lhs_is_colT(p)) {
    mc = COL_CACHE_BYTES / (int64_t)es / (kdim > 0 ? kdim : 1);
    if (mc < GATHER_TASK_ROWS) mc = GATHER_TASK_ROWS;
    if (mc > rows_total) mc = rows_total;
  }
  return mc;
}

// Feature-major results ([batch, feature, spatial...], as NCHW): one batch
// element per GEMM, written in place (ldc = P), else `nb` of them per im2col
// chunk.
static bool feature_in_place(const conv_plan_t *p) {
  return spatial_row_major(p->ns, p->out_sp, p->s_osp, 1, 1, 0) &&
         (p->o_out <= 1 || p->s_of == p->p);
}

static int64_t feature_chunk(const conv_plan_t *p) {
  int64_t kdim = p->ig * p->ks;
  int64_t per_n = kdim * p->p > 0 ? kdim * p->p : 1;
  int64_t nb = feature_in_place(p) ? 1 : COL_CHUNK_ELEMS / per_n;
  if (nb < 1) nb = 1;
  if (nb > p->n_out) nb = p->n_out;
  return nb;
}

static hl_status_t conv_pixel_major(const conv_plan_t *p, hl_dtype_t ct, const int64_t *tab,
                                    const void *in, const hl_literal_t *rhs, char *out,
                                    hl_thread_pool_t *pool) {
  size_t es = hl_dtype_size(ct);
  int64_t kdim = p->ig * p->ks, rows_total = p->n_out * p->p;
  bool direct = lhs_is_colT(p);
  int64_t mc = pixel_chunk_rows(p, es);
  if (mc > INT_MAX || p->o_out > INT_MAX || kdim > INT_MAX || p->c_in > INT_MAX ||
      (direct && p->n_out * p->p > INT_MAX))
    return HL_UNIMPL("convolution dimensions exceed the BLAS index range");
  char *w2 = hl_malloc(at_least_one(kdim * p->o_out) * es);
  char *colT = direct ? NULL : hl_malloc(at_least_one(mc * kdim) * es);
  if (!w2 || (!direct && !colT)) {
    hl_free(w2);
    hl_free(colT);
    return HL_OOM();
  }
  pack_kernel_kco(rhs, p, ct, w2);
  for (int64_t g = 0; g < p->groups; g++) {
    const char *b = w2 + (size_t)(g * p->og) * es;
    if (direct) {
      int64_t b0 = p->bgc > 1 ? g * p->n_out : 0;
      int64_t c0 = p->fgc > 1 ? g * p->ig : 0;
      const char *lhs = (const char *)in + (size_t)(b0 * p->s_b + c0) * es;
      char *c = out + (size_t)(g * p->og) * es;
      gemm(pool, ct, false, rows_total, p->og, kdim, lhs, p->c_in, b, p->o_out, c, p->o_out);
      continue;
    }
    for (int64_t r0 = 0; r0 < rows_total; r0 += mc) {
      int64_t cnt = rows_total - r0 < mc ? rows_total - r0 : mc;
      pixel_args_t a = {p, tab, in, es, g, r0, cnt, colT};
      hl_thread_pool_run(pool, (cnt + GATHER_TASK_ROWS - 1) / GATHER_TASK_ROWS,
                         im2col_pixel_task, &a);
      char *c = out + (size_t)(r0 * p->o_out + g * p->og) * es;
      gemm(pool, ct, false, cnt, p->og, kdim, colT, kdim, b, p->o_out, c, p->o_out);
    }
  }
  hl_free(w2);
  hl_free(colT);
  return NULL;
}

//===----------------------------------------------------------------------===//
// lhs dilation by output phase
//===----------------------------------------------------------------------===//
// With lhs_dilate L > 1 most taps of a window land in the holes between the
// real input elements, and im2col would fill the GEMM's K dimension mostly
// with zeros (a transposed convolution with L = 32 wastes 31/32 of its
// multiply-adds). Along each spatial dimension, output o reads the dilated
// position x = o*stride + q*rhs_dilate - pad_low with tap q, and x hits a real
// element only when x mod L == 0; so the outputs with the same phase
// (o*stride - pad_low) mod L use the same subset of taps. Each combination of
// per-dimension phases is an ordinary convolution over the undilated input
// (its outputs a sub-grid, its taps a sub-window): gathered, multiplied as one
// GEMM with only the real taps in K, and scattered into its output positions.
// Taps past the input's ends still read as zero (the tables say -1), as in
// the plain path, so every result element is the same sum minus hole terms.

typedef struct conv_phase_dim {
  int64_t *o_of;   // [L][out_sp]: outputs of phase c at o_of[c*out_sp + i]
  int64_t *k_of;   // [L][k_sp]:   taps (kernel indices) of phase c
  int64_t *n_o, *n_k;  // [L] counts
  int64_t l;
} conv_phase_dim_t;

static void free_phase_dims(conv_phase_dim_t *pd, int ns) {
  for (int d = 0; d < ns; d++) {
    hl_free(pd[d].o_of);
    hl_free(pd[d].k_of);
    hl_free(pd[d].n_o);
    hl_free(pd[d].n_k);
  }
}

static int64_t pos_mod(int64_t x, int64_t m) { return ((x % m) + m) % m; }

static hl_status_t build_phase_dims(const conv_plan_t *p, conv_phase_dim_t *pd) {
  for (int d = 0; d < p->ns; d++) {
    const hl_window_dim_t *w = &p->win[d];
    int64_t l = w->base_dilation, no = p->out_sp[d], nk = p->k_sp[d];
    pd[d].l = l;
    pd[d].o_of = hl_malloc(at_least_one(l * no) * sizeof(int64_t));
    pd[d].k_of = hl_malloc(at_least_one(l * nk) * sizeof(int64_t));
    pd[d].n_o = hl_calloc((size_t)l, sizeof(int64_t));
    pd[d].n_k = hl_calloc((size_t)l, sizeof(int64_t));
    if (!pd[d].o_of || !pd[d].k_of || !pd[d].n_o || !pd[d].n_k) return HL_OOM();
    for (int64_t o = 0; o < no; o++) {
      int64_t c = pos_mod(o * w->stride - w->padding_low, l);
      pd[d].o_of[c * no + pd[d].n_o[c]++] = o;
    }
    for (int64_t c = 0; c < l; c++) {
      for (int64_t kk = 0; kk < nk; kk++) {
        int64_t q = w->window_reversal ? nk - 1 - kk : kk;
        if (pos_mod(c + q * w->window_dilation, l) == 0) pd[d].k_of[c * nk + pd[d].n_k[c]++] = kk;
      }
    }
  }
  return NULL;
}

// Feature-major colT row: row[c * ks + k] = lhs[base + qo[k] + c * s_f], 0
// where qo[k] < 0 (padding).
#define GATHER_FM_(T)                                                            \
  do {                                                                           \
    T *r = (T *)(void *)row;                                                     \
    const T *src = (const T *)(const void *)lhs + base;                          \
    for (int64_t c = 0; c < ig; c++, r += ks, src += p->s_f)                     \
      for (int64_t k = 0; k < ks; k++) r[k] = qo[k] >= 0 ? src[qo[k]] : (T){0};  \
  } while (0)

// A tmpT row of features into a result whose features are s_of apart.
#define SCATTER_FM_(T)                                                     \
  do {                                                                     \
    T *d = (T *)(void *)dst;                                               \
    const T *v = (const T *)(const void *)src;                             \
    for (int64_t o = 0; o < p->og; o++) d[o * p->s_of] = v[o];             \
  } while (0)

// col_layout: gather col[(c * ks + k)][(n, q)], tmp[o][(n, q)] = W x col,
// then each tmp row into the result at the phase's output offsets. A tap's
// outputs read the lhs in runs (consecutive q, consecutive offsets: a row of
// the phase's outputs along the last spatial dim) or zeros (padding), so
// the gather copies runs instead of looking up every element.
#define PHASE_COL_(T)                                                                       \
  do {                                                                                      \
    int64_t ncols = cnt * np;                                                               \
    phase_gather_t ga = {p, lhs, colT, es, runs, run_start, g, n0, cnt, np, ks, c0};        \
    hl_thread_pool_run_ranges(pool, ig, phase_gather_task, &ga);                            \
    gemm(pool, ct, false, p->og, ncols, kdim, wg, ldw, colT, ncols, tmp, ncols);            \
    const T *tv = (const T *)(const void *)tmp;                                             \
    for (int64_t o = 0; o < p->og; o++)                                                     \
      for (int64_t n = 0; n < cnt; n++, tv += np) {                                         \
        T *d = (T *)(void *)out + (n0 + n) * p->s_ob + (g * p->og + o) * p->s_of;           \
        for (int64_t q = 0; q < np; q++) d[pofs[q]] = tv[q];                                \
      }                                                                                     \
  } while (0)

typedef struct phase_run {
  int64_t q, len, src;  // outputs q .. q+len-1 read lhs src .. src+len-1 (src -1: zeros)
} phase_run_t;

// The col rows of one feature c (its ks taps, each over the chunk's batch).
typedef struct phase_gather {
  const conv_plan_t *p;
  const char *lhs;
  char *col;
  size_t es;
  const phase_run_t *runs;
  const int64_t *run_start;
  int64_t g, n0, cnt, np, ks, c0;
} phase_gather_t;

#define PHASE_GATHER_(T)                                                                \
  do {                                                                                  \
    T *cr = (T *)(void *)a->col + c * a->ks * ncols;                                    \
    for (int64_t k = 0; k < a->ks; k++, cr += ncols)                                    \
      for (int64_t n = 0; n < a->cnt; n++) {                                            \
        int64_t b = p->bgc > 1 ? a->g * p->n_out + a->n0 + n : a->n0 + n;               \
        const T *src = (const T *)(const void *)a->lhs + b * p->s_b + (a->c0 + c) * p->s_f; \
        T *dst = cr + n * a->np;                                                        \
        for (int64_t r = a->run_start[k]; r < a->run_start[k + 1]; r++) {               \
          const phase_run_t *run = &a->runs[r];                                         \
          T *d = dst + run->q;                                                          \
          if (run->src < 0) {                                                           \
            for (int64_t j = 0; j < run->len; j++) d[j] = (T){0};                       \
          } else {                                                                      \
            const T *sv = src + run->src;                                               \
            for (int64_t j = 0; j < run->len; j++) d[j] = sv[j];                        \
          }                                                                             \
        }                                                                               \
      }                                                                                 \
  } while (0)

static void phase_gather_task(void *arg, int64_t c, int worker) {
  const phase_gather_t *a = arg;
  const conv_plan_t *p = a->p;
  int64_t ncols = a->cnt * a->np;
  switch (a->es) {
    case 4: PHASE_GATHER_(uint32_t); break;
    case 8: PHASE_GATHER_(uint64_t); break;
    default: PHASE_GATHER_(c128_t); break;
  }
}
#undef PHASE_GATHER_

// One phase combination: its outputs (a sub-grid) and taps (a sub-window).
// Rows of colT[(n, q)][K] gather the real input each output q of batch n
// reads, K ordered tap-major (k * Ig + c) when features are contiguous in
// the lhs (NHWC: runs of Ig elements), else feature-major (c * KS' + k, as
// 0bf1 / NCHW keep a feature's taps together); a row that is one contiguous
// run of the lhs is one memcpy. The kernel W[o][K] in the same order is
// the rhs itself when that is one run per output feature, else gathered.
// tmpT[(n, q)][o] = colT x W^T is written to the result by rows of features.
static hl_status_t conv_one_phase(const conv_plan_t *p, const conv_phase_dim_t *pd,
                                  const int64_t *cls, hl_dtype_t ct, const int64_t *tab,
                                  const hl_literal_t *rhs, const void *in, char *out,
                                  hl_thread_pool_t *pool) {
  size_t es = hl_dtype_size(ct);
  int ns = p->ns;
  int64_t ks = 1, np = 1, sub_k[HL_MAX_RANK], sub_o[HL_MAX_RANK], full_start[HL_MAX_RANK];
  for (int64_t d = 0, t = 0; d < ns; d++) {
    sub_o[d] = pd[d].n_o[cls[d]], sub_k[d] = pd[d].n_k[cls[d]];
    ks *= sub_k[d], np *= sub_o[d];
    full_start[d] = t, t += p->k_sp[d] * p->out_sp[d];
  }
  int64_t ig = p->ig, kdim = ig * ks;
  bool tap_major = p->s_f == 1;
  // Feature-major lhs and result (NCHW): col[K][(n, q)] rows read the lhs
  // and tmp[o][(n, q)] rows write the result along their spatial runs; the
  // batch goes in chunks whose col fits in L2 next to the GEMM's panels.
  bool col_layout = !tap_major && p->s_of != 1;
  int64_t nb = (col_layout ? PHASE_COL_BYTES / (int64_t)es : COL_CHUNK_ELEMS) /
               (kdim * np > 0 ? kdim * np : 1);
  if (nb < 1) nb = 1;
  if (nb > p->n_out) nb = p->n_out;
  if (ct != HL_S64 && (p->og > INT_MAX || kdim > INT_MAX || nb * np > INT_MAX ||
                       p->s_ko > INT_MAX))
    return HL_UNIMPL("convolution dimensions exceed the BLAS index range");
  int64_t *qoff = hl_malloc(at_least_one(np * ks) * sizeof(int64_t));  // lhs tap offsets per q
  int64_t *pofs = hl_malloc(at_least_one(np) * sizeof(int64_t));
  int64_t *koff = hl_malloc(at_least_one(kdim) * sizeof(int64_t));   // rhs offsets per K
  bool *qrun = hl_malloc(at_least_one(np) * sizeof(bool));
  char *w = NULL;  // the gathered kernel, when the rhs cannot be read in place
  char *colT = hl_malloc(at_least_one(kdim * nb * np) * es);
  char *tmp = hl_malloc(at_least_one(p->og * nb * np) * es);
  hl_status_t st = (!qoff || !pofs || !koff || !qrun || !colT || !tmp) ? HL_OOM() : NULL;
  if (!st) {
    // Per output q: its result offset, each sub-tap's lhs offset (-1: hole /
    // padding), and whether the whole K row is one lhs run.
    int64_t oidx[HL_MAX_RANK] = {0};
    for (int64_t q = 0; q < np; q++) {
      int64_t off = 0;
      for (int d = 0; d < ns; d++)
        off += pd[d].o_of[cls[d] * p->out_sp[d] + oidx[d]] * p->s_osp[d];
      pofs[q] = off;
      int64_t kidx[HL_MAX_RANK] = {0};
      for (int64_t k = 0; k < ks; k++) {
        int64_t v = 0;
        for (int d = 0; d < ns && v >= 0; d++) {
          int64_t o = pd[d].o_of[cls[d] * p->out_sp[d] + oidx[d]];
          int64_t kk = pd[d].k_of[cls[d] * p->k_sp[d] + kidx[d]];
          int64_t t = tab[full_start[d] + kk * p->out_sp[d] + o];
          v = t < 0 ? -1 : v + t;
        }
        qoff[q * ks + k] = v;
        for (int d = ns - 1; d >= 0; d--) {
          if (++kidx[d] < sub_k[d]) break;
          kidx[d] = 0;
        }
      }
      bool run = true;
      const int64_t *qo = qoff + q * ks;
      for (int64_t j = 0; run && j < kdim; j++) {
        int64_t k = tap_major ? j / ig : j % ks, c = tap_major ? j % ig : j / ks;
        run = qo[k] >= 0 && qo[k] + c * p->s_f == qo[0] + j;
      }
      qrun[q] = run;
      for (int d = ns - 1; d >= 0; d--) {
        if (++oidx[d] < sub_o[d]) break;
        oidx[d] = 0;
      }
    }
    // Kernel offsets in K order; a view when they are one run.
    int64_t kidx[HL_MAX_RANK] = {0};
    for (int64_t k = 0; k < ks; k++) {
      int64_t off = 0;
      for (int d = 0; d < ns; d++)
        off += pd[d].k_of[cls[d] * p->k_sp[d] + kidx[d]] * p->s_ksp[d];
      for (int64_t c = 0; c < ig; c++)
        koff[tap_major ? k * ig + c : c * ks + k] = off + c * p->s_ki;
      for (int d = ns - 1; d >= 0; d--) {
        if (++kidx[d] < sub_k[d]) break;
        kidx[d] = 0;
      }
    }
    bool view = rhs->shape.dtype == ct && (p->o_out <= 1 || p->s_ko >= kdim);
    for (int64_t j = 0; view && j < kdim; j++) view = koff[j] == koff[0] + j;
    const char *wk = NULL;
    int64_t ldw = kdim;
    if (view) {
      wk = (const char *)rhs->data + (size_t)koff[0] * es;
      ldw = p->o_out <= 1 ? kdim : p->s_ko;
    } else if (!(w = hl_malloc(at_least_one(p->o_out * kdim) * es))) {
      st = HL_OOM();
    } else {
      wk = w;
      bool same = rhs->shape.dtype == ct;
      char *dst = w;
      for (int64_t o = 0; o < p->o_out; o++) {
        const char *src = (const char *)rhs->data + (size_t)(o * p->s_ko) * es;
        if (same && es == 4) {  // typed copies: a memcpy call per element cost ~10%
          for (int64_t j = 0; j < kdim; j++)
            ((uint32_t *)(void *)dst)[j] = ((const uint32_t *)(const void *)src)[koff[j]];
          dst += (size_t)kdim * es;
          continue;
        }
        for (int64_t j = 0; j < kdim; j++, dst += es) {
          if (same) memcpy(dst, src + (size_t)koff[j] * es, es);
          else to_ct(rhs->shape.dtype, rhs->data, o * p->s_ko + koff[j], 1, ct, dst);
        }
      }
    }
    const char *lhs = in;
    // Runs of each tap k: runs[run_start[k] .. run_start[k + 1]).
    phase_run_t *runs = col_layout ? hl_malloc(at_least_one(np * ks) * sizeof(phase_run_t)) : NULL;
    int64_t *run_start = col_layout ? hl_malloc((size_t)(ks + 1) * sizeof(int64_t)) : NULL;
    if (!st && col_layout && (!runs || !run_start)) st = HL_OOM();
    if (!st && col_layout) {
      int64_t nr = 0;
      for (int64_t k = 0; k < ks; k++) {
        run_start[k] = nr;
        for (int64_t q = 0; q < np;) {
          int64_t v = qoff[q * ks + k], len = 1;
          while (q + len < np && (v < 0 ? qoff[(q + len) * ks + k] < 0
                                        : qoff[(q + len) * ks + k] == v + len))
            len++;
          runs[nr++] = (phase_run_t){q, len, v < 0 ? -1 : v};
          q += len;
        }
      }
      run_start[ks] = nr;
    }
    for (int64_t g = 0; !st && g < p->groups; g++) {
      const char *wg = wk + (size_t)(g * p->og * ldw) * es;
      int64_t c0 = p->fgc > 1 ? g * ig : 0;
      for (int64_t n0 = 0; n0 < p->n_out; n0 += nb) {
        int64_t cnt = p->n_out - n0 < nb ? p->n_out - n0 : nb;
        if (col_layout) {
          switch (es) {
            case 4: PHASE_COL_(uint32_t); break;
            case 8: PHASE_COL_(uint64_t); break;
            default: PHASE_COL_(c128_t); break;
          }
          continue;
        }
        char *row = colT;
        for (int64_t n = 0; n < cnt; n++) {
          int64_t b = p->bgc > 1 ? g * p->n_out + n0 + n : n0 + n;
          int64_t base = b * p->s_b + c0 * p->s_f;
          for (int64_t q = 0; q < np; q++, row += (size_t)kdim * es) {
            const int64_t *qo = qoff + q * ks;
            if (qrun[q]) {
              memcpy(row, lhs + (size_t)(base + qo[0]) * es, (size_t)kdim * es);
              continue;
            }
            if (tap_major) {  // s_f == 1: each tap's features are one run
              for (int64_t k = 0; k < ks; k++) {
                char *dst = row + (size_t)(k * ig) * es;
                if (qo[k] < 0) memset(dst, 0, (size_t)ig * es);
                else memcpy(dst, lhs + (size_t)(base + qo[k]) * es, (size_t)ig * es);
              }
              continue;
            }
            switch (es) {  // row[c * KS' + k], typed copies (no memcpy call per element)
              case 4: GATHER_FM_(uint32_t); break;
              case 8: GATHER_FM_(uint64_t); break;
              default: GATHER_FM_(c128_t); break;
            }
          }
        }
        gemm(pool, ct, true, cnt * np, p->og, kdim, colT, kdim, wg, ldw, tmp, p->og);
        const char *src = tmp;
        for (int64_t n = 0; n < cnt; n++) {
          for (int64_t q = 0; q < np; q++, src += (size_t)p->og * es) {
            char *dst = out + (size_t)((n0 + n) * p->s_ob + g * p->og * p->s_of + pofs[q]) * es;
            if (p->s_of == 1) {
              memcpy(dst, src, (size_t)p->og * es);
            } else {
              switch (es) {
                case 4: SCATTER_FM_(uint32_t); break;
                case 8: SCATTER_FM_(uint64_t); break;
                default: SCATTER_FM_(c128_t); break;
              }
            }
          }
        }
      }
    }
    hl_free(runs);
    hl_free(run_start);
  }
  hl_free(qoff);
  hl_free(pofs);
  hl_free(koff);
  hl_free(qrun);
  hl_free(w);
  hl_free(colT);
  hl_free(tmp);
  return st;
}

#undef GATHER_FM_
#undef SCATTER_FM_
#undef PHASE_COL_

static bool has_lhs_dilation(const conv_plan_t *p) {
  for (int d = 0; d < p->ns; d++)
    if (p->win[d].base_dilation > 1) return true;
  return false;
}

static hl_status_t conv_by_phases(const conv_plan_t *p, hl_dtype_t ct, const int64_t *tab,
                                  const void *in, const hl_literal_t *rhs, char *out,
                                  hl_thread_pool_t *pool) {
  size_t es = hl_dtype_size(ct);
  conv_phase_dim_t pd[HL_MAX_RANK];
  memset(pd, 0, sizeof(pd));
  hl_status_t st = build_phase_dims(p, pd);
  if (!st) {
    // Outputs whose phase has no real tap are zero sums; clear everything
    // once when any exists (the others are overwritten below).
    bool empty = false;
    for (int d = 0; d < p->ns; d++)
      for (int64_t c = 0; c < pd[d].l; c++) empty = empty || (pd[d].n_o[c] && !pd[d].n_k[c]);
    if (empty) memset(out, 0, (size_t)(p->n_out * p->o_out * p->p) * es);
    int64_t cls[HL_MAX_RANK] = {0};
    for (;;) {
      bool live = true;
      for (int d = 0; d < p->ns; d++) live = live && pd[d].n_o[cls[d]] && pd[d].n_k[cls[d]];
      if (live) st = conv_one_phase(p, pd, cls, ct, tab, rhs, in, out, pool);
      if (st) break;
      int d = p->ns - 1;
      for (; d >= 0; d--) {
        if (++cls[d] < pd[d].l) break;
        cls[d] = 0;
      }
      if (d < 0) break;
    }
  }
  free_phase_dims(pd, p->ns);
  return st;
}

static hl_status_t conv_compute(const conv_plan_t *p, hl_dtype_t ct, const void *in,
                                const hl_literal_t *rhs, char *out, hl_thread_pool_t *pool) {
  size_t es = hl_dtype_size(ct);
  int64_t kdim = p->ig * p->ks;
  int64_t *tab = NULL, *pofs = NULL;
  char *col = NULL, *tmp = NULL;
  if (kdim == 0) {  // an empty sum: zeros
    memset(out, 0, (size_t)(p->n_out * p->o_out * p->p) * es);
    return NULL;
  }
  HL_RETURN_IF_ERROR(build_tables(p, &tab));
  if (has_lhs_dilation(p)) {
    hl_status_t st = conv_by_phases(p, ct, tab, in, rhs, out, pool);
    hl_free(tab);
    return st;
  }
  if (p->s_of == 1 && spatial_row_major(p->ns, p->out_sp, p->s_osp, p->o_out, p->n_out,
                                        p->s_ob)) {
    hl_status_t st = conv_pixel_major(p, ct, tab, in, rhs, out, pool);
    hl_free(tab);
    return st;
  }
  bool in_place = feature_in_place(p);
  int64_t nb = feature_chunk(p);
  if (ct != HL_S64 && (p->og > INT_MAX || kdim > INT_MAX || nb * p->p > INT_MAX)) {
    hl_free(tab);
    return HL_UNIMPL("convolution dimensions exceed the BLAS index range");
  }
  pofs = hl_malloc((size_t)(p->p ? p->p : 1) * sizeof(int64_t));
  col = hl_malloc(at_least_one(kdim * nb * p->p) * es);
  tmp = in_place ? NULL : hl_malloc(at_least_one(p->og * nb * p->p) * es);
  char *w = hl_malloc(at_least_one(p->o_out * kdim) * es);
  hl_status_t st = (!pofs || !col || !w || (!in_place && !tmp)) ? HL_OOM() : NULL;
  if (!st) {
    pack_kernel(rhs, p, ct, w);
    int64_t oidx[HL_MAX_RANK] = {0};
    for (int64_t q = 0; q < p->p; q++) {
      int64_t off = 0;
      for (int d = 0; d < p->ns; d++) off += oidx[d] * p->s_osp[d];
      pofs[q] = off;
      for (int d = p->ns - 1; d >= 0; d--) {
        if (++oidx[d] < p->out_sp[d]) break;
        oidx[d] = 0;
      }
    }
    for (int64_t g = 0; g < p->groups; g++) {
      const char *wg = (const char *)w + (size_t)(g * p->og * kdim) * es;
      for (int64_t n0 = 0; n0 < p->n_out; n0 += nb) {
        int64_t cnt = p->n_out - n0 < nb ? p->n_out - n0 : nb;
        im2col_args_t a = {p, tab, in, es, g, n0, cnt};
        im2col(&a, col);
        if (in_place) {
          char *c = out + (size_t)(n0 * p->s_ob + g * p->og * p->s_of) * es;
          gemm(pool, ct, false, p->og, p->p, kdim, wg, kdim, col, p->p, c, p->p);
        } else {
          gemm(pool, ct, false, p->og, cnt * p->p, kdim, wg, kdim, col, cnt * p->p, tmp,
               cnt * p->p);
          scatter_out(p, pofs, es, g, n0, cnt, tmp, out);
        }
      }
    }
  }
  hl_free(tab);
  hl_free(pofs);
  hl_free(col);
  hl_free(tmp);
  hl_free(w);
  return st;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

// The type a convolution computes in (false: not supported).
static bool compute_type(hl_dtype_t lt, hl_dtype_t rt, hl_dtype_t ot, hl_dtype_t *ct) {
  bool real_in = hl_elem_is_real_or_int(lt) && hl_elem_is_real_or_int(rt);
  if (hl_dtype_is_complex(ot) && lt == ot && rt == ot) *ct = ot;
  else if (ot == HL_F64 && real_in) *ct = HL_F64;
  else if (hl_dtype_is_float(ot) && real_in) *ct = HL_F32;  // f16 / bf16 / f8 / f4 round once
  else if ((hl_dtype_is_integer(ot) || ot == HL_PRED) && real_in && !hl_dtype_is_float(lt) &&
           !hl_dtype_is_float(rt)) *ct = HL_S64;
  else
    return false;
  return true;
}

hl_status_t hl_kernel_convolution(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                  hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  if (inst->operand_count != 2)
    return HL_INVALID("%s: convolution takes 2 operands, got %d", loc, inst->operand_count);
  const hl_literal_t *lhs = operands[0], *rhs = operands[1];
  if (!hl_shape_is_array(&lhs->shape) || !hl_shape_is_array(&rhs->shape))
    return HL_INVALID("%s: convolution operands must be arrays", loc);
  conv_plan_t p = {0};
  HL_RETURN_IF_ERROR(plan_conv(inst, &lhs->shape, &rhs->shape, &p));
  hl_dtype_t lt = lhs->shape.dtype, rt = rhs->shape.dtype, ot = inst->shape.dtype;
  hl_dtype_t ct;
  if (!compute_type(lt, rt, ot, &ct))
    return HL_UNIMPL("%s: convolution of %s and %s into %s is not supported", loc,
                     hl_dtype_name(lt), hl_dtype_name(rt), hl_dtype_name(ot));

  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  int64_t n_out = hl_literal_element_count(y);
  if (n_out == 0) {
    *out = y;
    return NULL;
  }
  size_t cs = hl_dtype_size(ct);
  const void *in = NULL;
  void *in_owned = NULL;
  void *c = ot == ct ? y->data : hl_malloc((size_t)n_out * cs);
  hl_status_t st = c ? NULL : HL_OOM();
  if (!st) st = lhs_in_ct(lhs, ct, &in, &in_owned);
  if (!st) {
    const hl_exec_options_t *o = hl_kernel_options(ctx);
    st = conv_compute(&p, ct, in, rhs, c, o ? o->pool : NULL);
    if (st) st = hl_status_annotate(st, "%s", loc);
  }
  if (!st && c != y->data) {
    if (ct == HL_S64) {
      hl_elem_store_int(ot, y->data, 0, n_out, c);
    } else {
      double v[HL_ELEM_BLOCK];
      for (int64_t base = 0; base < n_out; base += HL_ELEM_BLOCK) {
        int64_t m = n_out - base < HL_ELEM_BLOCK ? n_out - base : HL_ELEM_BLOCK;
        hl_elem_load_f64(ct, c, base, m, v);
        hl_elem_store_f64(ot, y->data, base, m, v);
      }
    }
  }
  hl_free(in_owned);
  if (c != y->data) hl_free(c);
  if (st) {
    hl_literal_release(y);
    return st;
  }
  *out = y;
  return NULL;
}

// The buffers hl_kernel_convolution allocates besides its result, in its
// order (kernel_scratch.h): the f32 / s64 result and lhs when their types
// differ from the computation's, the im2col tables, then the path's packed
// kernel, columns and GEMM output. The lhs-dilation phases' buffers (per
// phase, each a chunk of PHASE_COL_BYTES or the batch) are not declared.
void hl_convolution_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out) {
  out->count = 0;
  if (inst->operand_count != 2) return;
  const hl_shape_t *ls = &inst->operands[0]->shape, *rs = &inst->operands[1]->shape;
  if (!hl_shape_is_array(ls) || !hl_shape_is_array(rs)) return;
  conv_plan_t p = {0};
  hl_status_t st = plan_conv(inst, ls, rs, &p);
  hl_dtype_t ct;
  if (st || !compute_type(ls->dtype, rs->dtype, inst->shape.dtype, &ct)) {
    hl_status_free(st);
    return;
  }
  int64_t n_out = hl_shape_element_count(&inst->shape), cs = (int64_t)hl_dtype_size(ct);
  if (n_out == 0) return;
  if (inst->shape.dtype != ct) hl_kernel_scratch_add(out, n_out * cs);
  if (ls->dtype != ct) hl_kernel_scratch_add(out, hl_shape_element_count(ls) * cs);
  int64_t kdim = p.ig * p.ks;
  if (kdim == 0) return;
  int64_t tab = 0;
  for (int d = 0; d < p.ns; d++) tab += p.k_sp[d] * p.out_sp[d];
  hl_kernel_scratch_add(out, (tab ? tab : 1) * 8);
  if (has_lhs_dilation(&p)) return;
  if (p.s_of == 1 && spatial_row_major(p.ns, p.out_sp, p.s_osp, p.o_out, p.n_out, p.s_ob)) {
    hl_kernel_scratch_add(out, (int64_t)at_least_one(kdim * p.o_out) * cs);
    if (!lhs_is_colT(&p))
      hl_kernel_scratch_add(out, (int64_t)at_least_one(pixel_chunk_rows(&p, (size_t)cs) * kdim) * cs);
    return;
  }
  int64_t nb = feature_chunk(&p);
  hl_kernel_scratch_add(out, (p.p ? p.p : 1) * 8);
  hl_kernel_scratch_add(out, (int64_t)at_least_one(kdim * nb * p.p) * cs);
  if (!feature_in_place(&p)) hl_kernel_scratch_add(out, (int64_t)at_least_one(p.og * nb * p.p) * cs);
  hl_kernel_scratch_add(out, (int64_t)at_least_one(p.o_out * kdim) * cs);
}
