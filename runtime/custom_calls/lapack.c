// jaxlib's CPU LAPACK targets (typed FFI, `lapack_?<routine>_ffi`), run with
// LAPACK through LAPACKE's column-major `_work` entry points.
//
// Each target reads and writes its buffers exactly as jaxlib's
// jaxlib/cpu/lapack_kernels.cc does: matrices column-major with the batch
// dimensions major (the layouts jax/_src/lax/linalg.py sets; frame.c hands
// the buffers over in whatever layout the instruction declares), LAPACK's
// own outputs unchanged (1-based pivots, info > 0 for a singular or
// non-converged matrix: a result, not an error). Attributes are the ui8
// characters / integers jaxlib declares (uplo, mode, compute_left, ...).
#include <complex.h>
#include <ctype.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/ffi_attrs.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

_Static_assert(sizeof(lapack_int) == 4, "jaxlib's LAPACK targets use 32-bit integers");

typedef enum routine {
  GETRF, GEQRF, ORGQR, POTRF, GESDD, GESVD, SYEVD, GEEV, GEES, GEHRD, SYTRD, GTSV, ORMQR, GEQP3,
} routine_t;

typedef struct lapack_target {
  routine_t routine;
  hl_dtype_t dtype;  // HL_INVALID: any of f32/f64/c64/c128, from the operand (cuSOLVER)
  bool cusolver;     // jaxlib/gpu/solver_kernels_ffi.cc's attributes (lower: bool)
} lapack_target_t;

// LAPACKE_<s|d|c|z><name>_work chosen by element type; pointer arguments are
// passed as void * so one call site serves all four.
#define LAPACK4(dt, s, d, c, z, ...)                                           \
  ((dt) == HL_F32   ? LAPACKE_##s##_work(__VA_ARGS__)                           \
   : (dt) == HL_F64 ? LAPACKE_##d##_work(__VA_ARGS__)                           \
   : (dt) == HL_C64 ? LAPACKE_##c##_work(__VA_ARGS__)                           \
                    : LAPACKE_##z##_work(__VA_ARGS__))

static bool is_complex(hl_dtype_t t) { return t == HL_C64 || t == HL_C128; }
static hl_dtype_t real_of(hl_dtype_t t) {
  return t == HL_C64 ? HL_F32 : t == HL_C128 ? HL_F64 : t;
}
static hl_dtype_t complex_of(hl_dtype_t t) {
  return t == HL_F32 ? HL_C64 : t == HL_F64 ? HL_C128 : t;
}

// The size a workspace query wrote into its first element.
static lapack_int query_size(hl_dtype_t t, const void *q) {
  double v = (t == HL_F32 || t == HL_C64) ? (double)*(const float *)q : *(const double *)q;
  return v < 1 ? 1 : (lapack_int)v;
}

static lapack_int ld(int64_t n) { return n < 1 ? 1 : (lapack_int)n; }

// Checks one buffer: element type and dimensions batch + trailing.
static hl_status_t check(const hl_custom_call_t *call, const hl_cc_buffer_t *b, const char *what,
                         hl_dtype_t dtype, const hl_cc_buffer_t *batch_of, int batch_rank,
                         int trailing_rank, const int64_t *trailing) {
  bool ok = b->dtype == dtype && b->rank == batch_rank + trailing_rank;
  for (int i = 0; ok && i < batch_rank; i++) ok = b->dims[i] == batch_of->dims[i];
  for (int i = 0; ok && i < trailing_rank; i++) ok = b->dims[batch_rank + i] == trailing[i];
  if (ok) return NULL;
  char want[256];
  int n = snprintf(want, sizeof(want), "%s[", hl_dtype_name(dtype));
  for (int i = 0; i < batch_rank; i++)
    n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%lld", i ? "," : "",
                  (long long)batch_of->dims[i]);
  for (int i = 0; i < trailing_rank; i++)
    n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%lld", (i || batch_rank) ? "," : "",
                  (long long)trailing[i]);
  snprintf(want + n, sizeof(want) - (size_t)n, "]");
  hl_shape_t got = hl_shape_array(b->dtype, b->rank, b->dims);
  return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected %s (jaxlib's signature)",
                    hl_instruction_location(call->inst), call->name, what, HL_SHAPE_STR(&got),
                    want);
}

#define CHECK(b, what, dtype, nt, ...) \
  HL_RETURN_IF_ERROR(check(call, (b), (what), (dtype), x, nb, (nt), (const int64_t[]){__VA_ARGS__}))

// Attributes of a pre-FFI call, taken from its scalar operands (see legacy below).
typedef struct legacy_attrs {
  int n;
  const char *keys[4];
  int64_t values[4];
} legacy_attrs_t;

// An attribute from the backend_config, or from `la` for a pre-FFI call.
static hl_status_t attr_int(const hl_custom_call_t *call, const legacy_attrs_t *la,
                            const char *key, int64_t *out) {
  if (!la) return hl_ffi_attr_int(call, key, out);
  for (int i = 0; i < la->n; i++)
    if (strcmp(la->keys[i], key) == 0) {
      *out = la->values[i];
      return NULL;
    }
  return HL_INTERNAL_ERROR("%s: custom-call \"%s\": no %s from the operands",
                           hl_instruction_location(call->inst), call->name, key);
}

static hl_status_t char_attr(const hl_custom_call_t *call, const legacy_attrs_t *la,
                             const char *key, const char *allowed, char *out) {
  int64_t v;
  HL_RETURN_IF_ERROR(attr_int(call, la, key, &v));
  if (v <= 0 || v > 127 || !strchr(allowed, (int)v))
    return HL_UNIMPL("%s: custom-call \"%s\" attribute %s=%lld is not one of the supported "
                     "values '%s'", hl_instruction_location(call->inst), call->name, key,
                     (long long)v, allowed);
  *out = (char)v;
  return NULL;
}

// uplo: jaxlib's CPU targets pass the ui8 character, cuSOLVER's the bool `lower`.
static hl_status_t uplo_attr(const hl_custom_call_t *call, const legacy_attrs_t *la,
                             const lapack_target_t *spec, char *out) {
  if (!spec->cusolver) return char_attr(call, la, "uplo", "LU", out);
  int64_t lower;
  HL_RETURN_IF_ERROR(attr_int(call, la, "lower", &lower));
  *out = lower ? 'L' : 'U';
  return NULL;
}

static void *at(const hl_cc_buffer_t *b, int64_t batch, int64_t step) {
  return (char *)b->data + (size_t)(batch * step) * hl_dtype_size(b->dtype);
}

static void copy_in(hl_cc_buffer_t *dst, const hl_cc_buffer_t *src) {
  memcpy(dst->data, src->data, (size_t)src->count * hl_dtype_size(src->dtype));
}

static bool all_finite(hl_dtype_t t, const void *p, int64_t n) {
  int64_t m = is_complex(t) ? 2 * n : n;
  if (real_of(t) == HL_F32) {
    for (int64_t i = 0; i < m; i++)
      if (!isfinite(((const float *)p)[i])) return false;
  } else {
    for (int64_t i = 0; i < m; i++)
      if (!isfinite(((const double *)p)[i])) return false;
  }
  return true;
}

// Real geev's eigenvectors come as real columns, a conjugate pair (j, j+1)
// stored as its real and imaginary parts; jaxlib unpacks them to complex.
static void unpack_eigenvectors(hl_dtype_t t, int64_t n, const void *wi, const void *v,
                                void *out) {
  for (int64_t j = 0; j < n; j++) {
    double im = t == HL_F32 ? ((const float *)wi)[j] : ((const double *)wi)[j];
    for (int64_t r = 0; r < n; r++) {
      double a, b = 0;
      if (t == HL_F32) {
        a = ((const float *)v)[j * n + r];
        if (im != 0) b = ((const float *)v)[(j + 1) * n + r];
      } else {
        a = ((const double *)v)[j * n + r];
        if (im != 0) b = ((const double *)v)[(j + 1) * n + r];
      }
      if (t == HL_F32) {
        ((float complex *)out)[j * n + r] = (float)a + (float)b * I;
        if (im != 0) ((float complex *)out)[(j + 1) * n + r] = (float)a - (float)b * I;
      } else {
        ((double complex *)out)[j * n + r] = a + b * I;
        if (im != 0) ((double complex *)out)[(j + 1) * n + r] = a - b * I;
      }
    }
    if (im != 0) j++;
  }
}

static int32_t *info_at(const hl_cc_buffer_t *b, int64_t i) { return (int32_t *)b->data + i; }

static hl_status_t run_routine(const hl_custom_call_t *call, const legacy_attrs_t *la,
                               const lapack_target_t *spec,
                               hl_cc_frame_t *f) {
  const hl_instruction_t *inst = call->inst;
  hl_dtype_t t = spec->dtype;
  if (t == HL_INVALID && f->arg_count > 0) {
    t = f->args[0].dtype;
    if (t != HL_F32 && t != HL_F64 && t != HL_C64 && t != HL_C128)
      return HL_INVALID("%s: custom-call \"%s\" operand 0 is %s; it takes f32, f64, c64 or c128",
                        hl_instruction_location(inst), call->name, hl_dtype_name(t));
  }
  hl_dtype_t rt = real_of(t);
  static const int kArgs[] = {1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 4, 3, 2};
  static const int kRetsReal[] = {3, 2, 1, 2, 5, 5, 3, 5, 6, 3, 5, 5, 1, 3};
  static const int kRetsComplex[] = {3, 2, 1, 2, 5, 5, 3, 4, 5, 3, 5, 5, 1, 3};
  int want_args = kArgs[spec->routine];
  int want_rets = is_complex(t) ? kRetsComplex[spec->routine] : kRetsReal[spec->routine];
  if (f->arg_count != want_args || f->ret_count != want_rets)
    return HL_INVALID("%s: custom-call \"%s\" takes %d operands and returns %d results "
                      "(jaxlib's signature), got %d operands and %d results",
                      hl_instruction_location(inst), call->name, want_args, want_rets,
                      f->arg_count, f->ret_count);
  // The matrix operand (b for gtsv, c for ormqr) fixes the batch.
  const hl_cc_buffer_t *x =
      &f->args[spec->routine == GTSV ? 3 : spec->routine == ORMQR ? 2 : 0];
  if (x->dtype != t || x->rank < 2)
    return HL_INVALID("%s: custom-call \"%s\" needs a %s operand of rank >= 2, got %s[rank %d]",
                      hl_instruction_location(inst), call->name, hl_dtype_name(t),
                      hl_dtype_name(x->dtype), x->rank);
  int nb = x->rank - 2;
  int64_t batch = hl_cc_dims_product(x, 0, nb);
  int64_t m = x->dims[nb], n = x->dims[nb + 1], k = m < n ? m : n;
  hl_cc_buffer_t *r = f->rets;
  lapack_int lm = (lapack_int)m, ln = (lapack_int)n;
  _Alignas(16) char q[16] = {0};
  void *work = NULL, *rwork = NULL, *scratch1 = NULL, *scratch2 = NULL;
  lapack_int *iwork = NULL;
  hl_status_t st = NULL;
  size_t es = hl_dtype_size(t), rs = hl_dtype_size(rt);
#define ALLOC(p, count, size)                      \
  do {                                             \
    p = hl_calloc((size_t)(count) + 1, (size));    \
    if (!p) { st = HL_OOM(); goto done; }          \
  } while (0)
  switch (spec->routine) {
    case GETRF: {
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      CHECK(&r[1], "result 1 (ipiv)", HL_S32, 1, k);
      CHECK(&r[2], "result 2 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      for (int64_t b = 0; b < batch; b++)
        *info_at(&r[2], b) = LAPACK4(t, sgetrf, dgetrf, cgetrf, zgetrf, LAPACK_COL_MAJOR, lm, ln,
                                     at(&r[0], b, m * n), ld(m), (lapack_int *)at(&r[1], b, k));
      break;
    }
    case GEQRF: {
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      CHECK(&r[1], "result 1 (tau)", t, 1, k);
      copy_in(&r[0], x);
      LAPACK4(t, sgeqrf, dgeqrf, cgeqrf, zgeqrf, LAPACK_COL_MAJOR, lm, ln, NULL, ld(m), NULL,
              (void *)q, -1);
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++)
        LAPACK4(t, sgeqrf, dgeqrf, cgeqrf, zgeqrf, LAPACK_COL_MAJOR, lm, ln, at(&r[0], b, m * n),
                ld(m), at(&r[1], b, k), work, lw);
      break;
    }
    case GEQP3: {
      // jaxlib's PivotingQrFactorization: x, jpvt (s32, 1-based, 0 = free
      // column) -> x_out, jpvt_out, tau; no info output.
      CHECK(&f->args[1], "operand 1 (jpvt)", HL_S32, 1, n);
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      CHECK(&r[1], "result 1 (jpvt_out)", HL_S32, 1, n);
      CHECK(&r[2], "result 2 (tau)", t, 1, k);
      copy_in(&r[0], x);
      copy_in(&r[1], &f->args[1]);
      if (is_complex(t)) ALLOC(rwork, 2 * n, rs);
      switch (t) {  // workspace query
        case HL_F32: LAPACKE_sgeqp3_work(LAPACK_COL_MAJOR, lm, ln, NULL, ld(m), NULL, NULL, (void *)q, -1); break;
        case HL_F64: LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, lm, ln, NULL, ld(m), NULL, NULL, (void *)q, -1); break;
        case HL_C64: LAPACKE_cgeqp3_work(LAPACK_COL_MAJOR, lm, ln, NULL, ld(m), NULL, NULL, (void *)q, -1, rwork); break;
        default: LAPACKE_zgeqp3_work(LAPACK_COL_MAJOR, lm, ln, NULL, ld(m), NULL, NULL, (void *)q, -1, rwork); break;
      }
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++) {
        void *a = at(&r[0], b, m * n), *tau = at(&r[2], b, k);
        lapack_int *jp = (lapack_int *)at(&r[1], b, n);
        switch (t) {
          case HL_F32: LAPACKE_sgeqp3_work(LAPACK_COL_MAJOR, lm, ln, a, ld(m), jp, tau, work, lw); break;
          case HL_F64: LAPACKE_dgeqp3_work(LAPACK_COL_MAJOR, lm, ln, a, ld(m), jp, tau, work, lw); break;
          case HL_C64: LAPACKE_cgeqp3_work(LAPACK_COL_MAJOR, lm, ln, a, ld(m), jp, tau, work, lw, rwork); break;
          default: LAPACKE_zgeqp3_work(LAPACK_COL_MAJOR, lm, ln, a, ld(m), jp, tau, work, lw, rwork); break;
        }
      }
      break;
    }
    case ORGQR: {
      const hl_cc_buffer_t *tau = &f->args[1];
      if (tau->rank != nb + 1)
        return HL_INVALID("%s: custom-call \"%s\" tau must have rank %d", hl_instruction_location(inst),
                          call->name, nb + 1);
      int64_t kt = tau->dims[nb];
      CHECK(tau, "operand 1 (tau)", t, 1, kt);
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      if (kt > n || n > m)
        return HL_INVALID("%s: custom-call \"%s\" needs m >= n >= k, got m=%lld n=%lld k=%lld",
                          hl_instruction_location(inst), call->name, (long long)m, (long long)n,
                          (long long)kt);
      copy_in(&r[0], x);
      LAPACK4(t, sorgqr, dorgqr, cungqr, zungqr, LAPACK_COL_MAJOR, lm, ln, (lapack_int)kt, NULL,
              ld(m), NULL, (void *)q, -1);
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++)
        LAPACK4(t, sorgqr, dorgqr, cungqr, zungqr, LAPACK_COL_MAJOR, lm, ln, (lapack_int)kt,
                at(&r[0], b, m * n), ld(m), at(tau, b, kt), work, lw);
      break;
    }
    case POTRF: {
      char uplo = 0;
      HL_RETURN_IF_ERROR(uplo_attr(call, la, spec, &uplo));
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      CHECK(&r[1], "result 1 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      for (int64_t b = 0; b < batch; b++)
        *info_at(&r[1], b) = LAPACK4(t, spotrf, dpotrf, cpotrf, zpotrf, LAPACK_COL_MAJOR, uplo,
                                     ln, at(&r[0], b, m * n), ld(m));
      break;
    }
    case GESDD:
    case GESVD: {
      char mode = 0;
      HL_RETURN_IF_ERROR(char_attr(call, la, "mode", "ASN", &mode));
      int64_t ucols = mode == 'A' ? m : k, vtrows = mode == 'A' ? n : k;
      CHECK(&r[0], "result 0 (x_out)", t, 2, m, n);
      CHECK(&r[1], "result 1 (s)", rt, 1, k);
      // With mode 'N' jax still allocates u and vt; their sizes follow
      // full_matrices, so only their element types and ranks are fixed.
      if (mode == 'N') {
        ucols = r[2].rank == nb + 2 ? r[2].dims[nb + 1] : 0;
        vtrows = r[3].rank == nb + 2 ? r[3].dims[nb] : 0;
      }
      CHECK(&r[2], "result 2 (u)", t, 2, m, ucols);
      CHECK(&r[3], "result 3 (vt)", t, 2, vtrows, n);
      CHECK(&r[4], "result 4 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      lapack_int ldvt = ld(vtrows);
      int64_t mx = m > n ? m : n;
      int64_t lrw = 7 * k;
      if (5 * k * k + 5 * k > lrw) lrw = 5 * k * k + 5 * k;
      if (2 * mx * k + 2 * k * k + k > lrw) lrw = 2 * mx * k + 2 * k * k + k;
      if (is_complex(t)) ALLOC(rwork, lrw, rs);
      ALLOC(iwork, 8 * k, sizeof(lapack_int));
      void *a0 = r[0].data, *s0 = r[1].data, *u0 = r[2].data, *v0 = r[3].data;
      if (spec->routine == GESDD) {
        switch (t) {
          case HL_F32: LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, iwork); break;
          case HL_F64: LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, iwork); break;
          case HL_C64: LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, rwork, iwork); break;
          default: LAPACKE_zgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, rwork, iwork); break;
        }
      } else {
        switch (t) {
          case HL_F32: LAPACKE_sgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1); break;
          case HL_F64: LAPACKE_dgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1); break;
          case HL_C64: LAPACKE_cgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, rwork); break;
          default: LAPACKE_zgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a0, ld(m), s0, u0, ld(m), v0, ldvt, (void *)q, -1, rwork); break;
        }
      }
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++) {
        void *a = at(&r[0], b, m * n), *s = at(&r[1], b, k), *u = at(&r[2], b, m * ucols),
             *v = at(&r[3], b, vtrows * n);
        lapack_int info;
        if (spec->routine == GESDD) {
          switch (t) {
            case HL_F32: info = LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, iwork); break;
            case HL_F64: info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, iwork); break;
            case HL_C64: info = LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, rwork, iwork); break;
            default: info = LAPACKE_zgesdd_work(LAPACK_COL_MAJOR, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, rwork, iwork); break;
          }
        } else {
          switch (t) {
            case HL_F32: info = LAPACKE_sgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw); break;
            case HL_F64: info = LAPACKE_dgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw); break;
            case HL_C64: info = LAPACKE_cgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, rwork); break;
            default: info = LAPACKE_zgesvd_work(LAPACK_COL_MAJOR, mode, mode, lm, ln, a, ld(m), s, u, ld(m), v, ldvt, work, lw, rwork); break;
          }
        }
        *info_at(&r[4], b) = info;
      }
      break;
    }
    case SYEVD: {
      char uplo = 0, mode = 'V';
      HL_RETURN_IF_ERROR(uplo_attr(call, la, spec, &uplo));
      if (!spec->cusolver) {
        HL_RETURN_IF_ERROR(char_attr(call, la, "mode", "NV", &mode));
      } else {
        // cuSOLVER's algorithm (0 default, 1 divide and conquer, 2 Jacobi)
        // changes how, not what: LAPACK's divide and conquer serves all three.
        int64_t algorithm;
        HL_RETURN_IF_ERROR(attr_int(call, la, "algorithm", &algorithm));
        if (algorithm < 0 || algorithm > 2)
          return HL_INVALID("%s: custom-call \"%s\" algorithm=%lld is not 0, 1 or 2",
                            hl_instruction_location(inst), call->name, (long long)algorithm);
      }
      CHECK(&r[0], "result 0 (x_out)", t, 2, n, n);
      CHECK(&r[1], "result 1 (eigenvalues)", rt, 1, n);
      CHECK(&r[2], "result 2 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      _Alignas(16) char rq[16] = {0};
      lapack_int iq = 0, lw, lrw = 0, liw;
      void *a0 = r[0].data, *w0 = r[1].data;
      switch (t) {
        case HL_F32: LAPACKE_ssyevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a0, ld(n), w0, (void *)q, -1, &iq, -1); break;
        case HL_F64: LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a0, ld(n), w0, (void *)q, -1, &iq, -1); break;
        case HL_C64: LAPACKE_cheevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a0, ld(n), w0, (void *)q, -1, (void *)rq, -1, &iq, -1); break;
        default: LAPACKE_zheevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a0, ld(n), w0, (void *)q, -1, (void *)rq, -1, &iq, -1); break;
      }
      lw = query_size(t, q);
      liw = iq < 1 ? 1 : iq;
      ALLOC(work, lw, es);
      ALLOC(iwork, liw, sizeof(lapack_int));
      if (is_complex(t)) {
        lrw = query_size(rt, rq);
        ALLOC(rwork, lrw, rs);
      }
      for (int64_t b = 0; b < batch; b++) {
        void *a = at(&r[0], b, n * n), *w = at(&r[1], b, n);
        lapack_int info;
        switch (t) {
          case HL_F32: info = LAPACKE_ssyevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a, ld(n), w, work, lw, iwork, liw); break;
          case HL_F64: info = LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a, ld(n), w, work, lw, iwork, liw); break;
          case HL_C64: info = LAPACKE_cheevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a, ld(n), w, work, lw, rwork, lrw, iwork, liw); break;
          default: info = LAPACKE_zheevd_work(LAPACK_COL_MAJOR, mode, uplo, ln, a, ld(n), w, work, lw, rwork, lrw, iwork, liw); break;
        }
        *info_at(&r[2], b) = info;
      }
      break;
    }
    case GEEV: {
      char jl = 0, jr = 0;
      if (spec->cusolver) {  // jaxlib/gpu/hybrid_kernels.cc: bools left / right
        int64_t left, right;
        HL_RETURN_IF_ERROR(attr_int(call, la, "left", &left));
        HL_RETURN_IF_ERROR(attr_int(call, la, "right", &right));
        jl = left ? 'V' : 'N';
        jr = right ? 'V' : 'N';
      } else {
        HL_RETURN_IF_ERROR(char_attr(call, la, "compute_left", "NV", &jl));
        HL_RETURN_IF_ERROR(char_attr(call, la, "compute_right", "NV", &jr));
      }
      hl_dtype_t ct = complex_of(t);
      int w = is_complex(t) ? 1 : 2;  // eigenvalue results before the vectors
      CHECK(&r[0], is_complex(t) ? "result 0 (eigvals)" : "result 0 (eigvals_real)", t, 1, n);
      if (w == 2) CHECK(&r[1], "result 1 (eigvals_imag)", t, 1, n);
      CHECK(&r[w], "eigvecs_left", ct, 2, n, n);
      CHECK(&r[w + 1], "eigvecs_right", ct, 2, n, n);
      CHECK(&r[w + 2], "info", HL_S32, 0, 0);
      void *acopy, *vl = NULL, *vr = NULL;
      ALLOC(acopy, n * n, es);
      scratch1 = acopy;
      if (!is_complex(t)) {
        ALLOC(vl, n * n, es);
        ALLOC(vr, n * n, es);
        scratch2 = vl;
        rwork = vr;  // freed with the workspaces
      } else {
        ALLOC(rwork, 2 * n, rs);
      }
      lapack_int lw;
      switch (t) {
        case HL_F32: LAPACKE_sgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), r[0].data, r[1].data, vl, ld(n), vr, ld(n), (void *)q, -1); break;
        case HL_F64: LAPACKE_dgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), r[0].data, r[1].data, vl, ld(n), vr, ld(n), (void *)q, -1); break;
        case HL_C64: LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), r[0].data, r[1].data, ld(n), r[2].data, ld(n), (void *)q, -1, rwork); break;
        default: LAPACKE_zgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), r[0].data, r[1].data, ld(n), r[2].data, ld(n), (void *)q, -1, rwork); break;
      }
      lw = query_size(t, q);
      void *wk;
      ALLOC(wk, lw, es);
      work = wk;
      for (int64_t b = 0; b < batch; b++) {
        memcpy(acopy, at(x, b, n * n), (size_t)(n * n) * es);
        int32_t *info = info_at(&r[w + 2], b);
        if (!all_finite(t, acopy, n * n)) {
          *info = -4;  // jaxlib's answer for a non-finite input
          continue;
        }
        void *w0 = at(&r[0], b, n), *l = at(&r[w], b, n * n), *rr = at(&r[w + 1], b, n * n);
        switch (t) {
          case HL_F32: *info = LAPACKE_sgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), w0, at(&r[1], b, n), vl, ld(n), vr, ld(n), wk, lw); break;
          case HL_F64: *info = LAPACKE_dgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), w0, at(&r[1], b, n), vl, ld(n), vr, ld(n), wk, lw); break;
          case HL_C64: *info = LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), w0, l, ld(n), rr, ld(n), wk, lw, rwork); break;
          default: *info = LAPACKE_zgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, acopy, ld(n), w0, l, ld(n), rr, ld(n), wk, lw, rwork); break;
        }
        if (!is_complex(t) && *info == 0) {
          if (jl == 'V') unpack_eigenvectors(t, n, at(&r[1], b, n), vl, l);
          if (jr == 'V') unpack_eigenvectors(t, n, at(&r[1], b, n), vr, rr);
        }
      }
      break;
    }
    case GEES: {
      char mode = 0, sort = 0;
      HL_RETURN_IF_ERROR(char_attr(call, la, "mode", "NV", &mode));
      HL_RETURN_IF_ERROR(char_attr(call, la, "sort", "NS", &sort));
      if (sort != 'N')
        return HL_UNIMPL("%s: custom-call \"%s\": sorted Schur eigenvalues (sort='S') need a "
                         "select function jaxlib does not pass either",
                         hl_instruction_location(inst), call->name);
      int e = is_complex(t) ? 1 : 2;
      CHECK(&r[0], "result 0 (x_out)", t, 2, n, n);
      CHECK(&r[1], "result 1 (schur_vectors)", t, 2, n, n);
      CHECK(&r[2], "result 2 (eigvals)", t, 1, n);
      if (e == 2) CHECK(&r[3], "result 3 (eigvals_imag)", t, 1, n);
      CHECK(&r[2 + e], "selected_eigvals", HL_S32, 0, 0);
      CHECK(&r[3 + e], "info", HL_S32, 0, 0);
      copy_in(&r[0], x);
      if (is_complex(t)) ALLOC(rwork, n, rs);
      lapack_int sdim = 0;
      switch (t) {
        case HL_F32: LAPACKE_sgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, r[0].data, ld(n), &sdim, r[2].data, r[3].data, r[1].data, ld(n), (void *)q, -1, NULL); break;
        case HL_F64: LAPACKE_dgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, r[0].data, ld(n), &sdim, r[2].data, r[3].data, r[1].data, ld(n), (void *)q, -1, NULL); break;
        case HL_C64: LAPACKE_cgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, r[0].data, ld(n), &sdim, r[2].data, r[1].data, ld(n), (void *)q, -1, rwork, NULL); break;
        default: LAPACKE_zgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, r[0].data, ld(n), &sdim, r[2].data, r[1].data, ld(n), (void *)q, -1, rwork, NULL); break;
      }
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++) {
        void *a = at(&r[0], b, n * n), *vs = at(&r[1], b, n * n), *w0 = at(&r[2], b, n);
        lapack_int info;
        switch (t) {
          case HL_F32: info = LAPACKE_sgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, a, ld(n), &sdim, w0, at(&r[3], b, n), vs, ld(n), work, lw, NULL); break;
          case HL_F64: info = LAPACKE_dgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, a, ld(n), &sdim, w0, at(&r[3], b, n), vs, ld(n), work, lw, NULL); break;
          case HL_C64: info = LAPACKE_cgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, a, ld(n), &sdim, w0, vs, ld(n), work, lw, rwork, NULL); break;
          default: info = LAPACKE_zgees_work(LAPACK_COL_MAJOR, mode, 'N', NULL, ln, a, ld(n), &sdim, w0, vs, ld(n), work, lw, rwork, NULL); break;
        }
        *info_at(&r[2 + e], b) = sdim;
        *info_at(&r[3 + e], b) = info;
      }
      break;
    }
    case GEHRD: {
      int64_t low, high;
      HL_RETURN_IF_ERROR(attr_int(call, la, "low", &low));
      HL_RETURN_IF_ERROR(attr_int(call, la, "high", &high));
      int64_t nt = n > 1 ? n - 1 : 0;
      CHECK(&r[0], "result 0 (x_out)", t, 2, n, n);
      CHECK(&r[1], "result 1 (tau)", t, 1, nt);
      CHECK(&r[2], "result 2 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      LAPACK4(t, sgehrd, dgehrd, cgehrd, zgehrd, LAPACK_COL_MAJOR, ln, (lapack_int)low,
              (lapack_int)high, NULL, ld(n), NULL, (void *)q, -1);
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      // LAPACK writes tau(1..n-1); a scratch row keeps n == 0 / 1 safe.
      for (int64_t b = 0; b < batch; b++)
        *info_at(&r[2], b) = LAPACK4(t, sgehrd, dgehrd, cgehrd, zgehrd, LAPACK_COL_MAJOR, ln,
                                     (lapack_int)low, (lapack_int)high, at(&r[0], b, n * n),
                                     ld(n), at(&r[1], b, nt), work, lw);
      break;
    }
    case SYTRD: {
      char uplo = 0;
      HL_RETURN_IF_ERROR(uplo_attr(call, la, spec, &uplo));
      int64_t nt = n > 1 ? n - 1 : 0;
      CHECK(&r[0], "result 0 (x_out)", t, 2, n, n);
      CHECK(&r[1], "result 1 (diag)", rt, 1, n);
      CHECK(&r[2], "result 2 (offdiag)", rt, 1, nt);
      CHECK(&r[3], "result 3 (tau)", t, 1, nt);
      CHECK(&r[4], "result 4 (info)", HL_S32, 0, 0);
      copy_in(&r[0], x);
      LAPACK4(t, ssytrd, dsytrd, chetrd, zhetrd, LAPACK_COL_MAJOR, uplo, ln, NULL, ld(n), NULL,
              NULL, NULL, (void *)q, -1);
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++)
        *info_at(&r[4], b) = LAPACK4(t, ssytrd, dsytrd, chetrd, zhetrd, LAPACK_COL_MAJOR, uplo,
                                     ln, at(&r[0], b, n * n), ld(n), at(&r[1], b, n),
                                     at(&r[2], b, nt), at(&r[3], b, nt), work, lw);
      break;
    }
    case ORMQR: {
      // c_out = op(Q) c or c op(Q), Q from a's reflectors and tau (jaxlib's
      // OrthogonalQrMultiply: lda = m when left, else n).
      int64_t left, transpose;
      HL_RETURN_IF_ERROR(attr_int(call, la, "left", &left));
      HL_RETURN_IF_ERROR(attr_int(call, la, "transpose", &transpose));
      const hl_cc_buffer_t *a = &f->args[0], *tau = &f->args[1];
      int64_t k = tau->rank == nb + 1 ? tau->dims[nb] : -1;
      int64_t lda = left ? m : n;
      CHECK(tau, "operand 1 (tau)", t, 1, k);
      int64_t acols = a->rank == nb + 2 ? a->dims[nb + 1] : -1;
      CHECK(a, "operand 0 (a)", t, 2, lda, acols);
      CHECK(&r[0], "result 0 (c_out)", t, 2, m, n);
      if (k > acols || k > lda)
        return HL_INVALID("%s: custom-call \"%s\" has %lld reflectors for a %lldx%lld a",
                          hl_instruction_location(inst), call->name, (long long)k,
                          (long long)lda, (long long)acols);
      char side = left ? 'L' : 'R', trans = !transpose ? 'N' : is_complex(t) ? 'C' : 'T';
      copy_in(&r[0], x);
      LAPACK4(t, sormqr, dormqr, cunmqr, zunmqr, LAPACK_COL_MAJOR, side, trans, lm, ln,
              (lapack_int)k, NULL, ld(lda), NULL, NULL, ld(m), (void *)q, -1);
      lapack_int lw = query_size(t, q);
      ALLOC(work, lw, es);
      for (int64_t b = 0; b < batch; b++)
        LAPACK4(t, sormqr, dormqr, cunmqr, zunmqr, LAPACK_COL_MAJOR, side, trans, lm, ln,
                (lapack_int)k, at(a, b, lda * acols), ld(lda), at(tau, b, k),
                at(&r[0], b, m * n), ld(m), work, lw);
      break;
    }
    case GTSV: {
      // dl, d, du: (batch..., m); b: (batch..., m, nrhs). dl[0] and du[m-1]
      // are outside the matrix (jaxlib passes dl + 1 to LAPACK).
      for (int i = 0; i < 3; i++) {
        static const char *const kNames[] = {"operand 0 (dl)", "operand 1 (d)", "operand 2 (du)"};
        CHECK(&f->args[i], kNames[i], t, 1, m);
      }
      CHECK(&r[0], "result 0 (dl_out)", t, 1, m);
      CHECK(&r[1], "result 1 (d_out)", t, 1, m);
      CHECK(&r[2], "result 2 (du_out)", t, 1, m);
      CHECK(&r[3], "result 3 (b_out)", t, 2, m, n);
      CHECK(&r[4], "result 4 (info)", HL_S32, 0, 0);
      for (int i = 0; i < 4; i++) copy_in(&r[i], &f->args[i]);
      for (int64_t b = 0; b < batch; b++)
        *info_at(&r[4], b) = LAPACK4(
            t, sgtsv, dgtsv, cgtsv, zgtsv, LAPACK_COL_MAJOR, lm, ln,
            (void *)((char *)at(&r[0], b, m) + (m > 0 ? es : 0)), at(&r[1], b, m), at(&r[2], b, m),
            at(&r[3], b, m * n), ld(m));
      break;
    }
  }
done:
  hl_free(work);
  hl_free(rwork);
  hl_free(iwork);
  hl_free(scratch1);
  hl_free(scratch2);
  return st;
#undef ALLOC
}

static hl_status_t run_lapack(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  const lapack_target_t *spec = call->target->data;
  hl_cc_frame_t f;
  hl_status_t st = hl_cc_frame_init(call, &f);
  if (!st) st = run_routine(call, NULL, spec, &f);
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

// The pre-FFI spellings (`lapack_sgetrf`, ...) of jaxlib before its FFI
// targets (jaxlib/cpu/lapack_kernels.cc of that time): leading s32 scalar
// operands (batch, sizes, flags; u8 job characters for geev / gees), the
// matrix operands, and a result tuple that also holds LAPACK's workspaces.
// They run through the same routines on a view of the frame.
typedef struct legacy_target {
  lapack_target_t spec;
  int scalars;          // leading scalar operands
  const char *names;    // one letter per scalar: b batch, m rows, n cols, k, l lwork (ignored),
                        // L lower, F full_matrices, U compute_uv, j/J geev jobs, v/s gees jobs
  int rets[2][8];       // result indexes the FFI routine reads, real / complex; -1 ends
} legacy_target_t;

static hl_status_t run_legacy(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  const legacy_target_t *lt = call->target->data;
  const lapack_target_t *spec = &lt->spec;
  const char *loc = hl_instruction_location(call->inst);
  hl_cc_frame_t f;
  hl_status_t st = hl_cc_frame_init(call, &f);
  legacy_attrs_t la = {0};
  int64_t full = 1, uv = 1;
  int64_t dims[3] = {-1, -1, -1};  // b, m, n as passed
  hl_cc_buffer_t args[4], rets[8];
  hl_cc_frame_t view = {0};
  int want_args = spec->routine == ORGQR ? 2 : 1;
  if (!st && f.arg_count != lt->scalars + want_args)
    st = HL_INVALID("%s: custom-call \"%s\" takes %d operands (jaxlib's pre-FFI signature), got %d",
                    loc, call->name, lt->scalars + want_args, f.arg_count);
  for (int i = 0; !st && i < lt->scalars; i++) {
    const hl_cc_buffer_t *b = &f.args[i];
    if (b->count != 1 || (b->dtype != HL_S32 && b->dtype != HL_U8)) {
      st = HL_INVALID("%s: custom-call \"%s\" operand %d must be an s32 or u8 scalar", loc,
                      call->name, i);
      break;
    }
    int64_t v = b->dtype == HL_S32 ? *(const int32_t *)b->data : *(const uint8_t *)b->data;
    switch (lt->names[i]) {
      case 'b': dims[0] = v; break;
      case 'm': dims[1] = v; break;
      case 'n': dims[2] = v; break;
      case 'L': la.keys[la.n] = "uplo", la.values[la.n++] = v ? 'L' : 'U'; break;
      case 'F': full = v; break;
      case 'U': uv = v; break;
      case 'j': la.keys[la.n] = "compute_left", la.values[la.n++] = v; break;
      case 'J': la.keys[la.n] = "compute_right", la.values[la.n++] = v; break;
      case 'v': la.keys[la.n] = "mode", la.values[la.n++] = v; break;
      case 's': la.keys[la.n] = "sort", la.values[la.n++] = v; break;
      default: break;  // k, lwork: LAPACK's own queries size the workspaces here
    }
  }
  if (!st && (spec->routine == GESDD)) {
    la.keys[la.n] = "mode";
    la.values[la.n++] = !uv ? 'N' : full ? 'A' : 'S';
  }
  if (!st && spec->routine == SYEVD) la.keys[la.n] = "mode", la.values[la.n++] = 'V';
  if (!st) {
    const hl_cc_buffer_t *a = &f.args[lt->scalars];
    int64_t batch = a->rank >= 2 ? hl_cc_dims_product(a, 0, a->rank - 2) : -1;
    int64_t want[3] = {batch, a->rank >= 2 ? a->dims[a->rank - 2] : -1,
                       a->rank >= 2 ? a->dims[a->rank - 1] : -1};
    for (int i = 0; i < 3 && !st; i++)
      if (dims[i] >= 0 && dims[i] != want[i])
        st = HL_INVALID("%s: custom-call \"%s\": its %s operand says %lld but the matrix "
                        "operand is %s[%s%lld]", loc, call->name,
                        i == 0 ? "batch" : i == 1 ? "row" : "column", (long long)dims[i],
                        hl_dtype_name(a->dtype), i == 0 ? "batch " : "", (long long)want[i]);
  }
  if (!st) {
    for (int i = 0; i < want_args; i++) args[i] = f.args[lt->scalars + i];
    const int *map = lt->rets[is_complex(spec->dtype) ? 1 : 0];
    int n = 0;
    for (; n < 8 && map[n] >= 0; n++) {
      if (map[n] >= f.ret_count) {
        st = HL_INVALID("%s: custom-call \"%s\" has %d results; jaxlib's pre-FFI signature has "
                        "more", loc, call->name, f.ret_count);
        break;
      }
      rets[n] = f.rets[map[n]];
    }
    view = (hl_cc_frame_t){want_args, n, args, rets};
  }
  if (!st) {
    st = run_routine(call, &la, spec, &view);
  }
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

// The descriptor bytes of a pre-FFI GPU call: its backend_config, which the
// StableHLO path keeps MLIR-escaped ("\00...") when it holds NUL bytes.
static size_t descriptor_bytes(const char *cfg, unsigned char *out, size_t cap) {
  size_t n = 0;
  if (!cfg) return 0;
  if (*cfg != '"') {
    for (; *cfg && n < cap; cfg++) out[n++] = (unsigned char)*cfg;
    return n;
  }
  for (const char *p = cfg + 1; *p && *p != '"' && n < cap; p++) {
    if (*p == '\\' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
      char hex[3] = {p[1], p[2], 0};
      out[n++] = (unsigned char)strtol(hex, NULL, 16);
      p += 2;
    } else {
      out[n++] = (unsigned char)*p;
    }
  }
  return n;
}

// jaxlib's pre-FFI ROCm eigh (jaxlib/gpu/solver_kernels.cc, api_version 2):
// a -> vectors, eigenvalues, info, workspace, with the opaque descriptor
// {int32 type (0 f32, 1 f64, 2 c64, 3 c128), fill mode (hipSOLVER: 121 upper,
// 122 lower), batch, n, lwork} in backend_config. syevj (Jacobi) and syevd
// differ in method, not result: LAPACK's divide and conquer runs for both;
// the workspace result is left zero.
static hl_status_t run_legacy_gpu_eigh(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(call->inst);
  unsigned char d[64];
  size_t len = descriptor_bytes(call->inst->attrs.backend_config, d, sizeof(d));
  int32_t v[5] = {0};
  if (len != 20)
    return HL_INVALID("%s: custom-call \"%s\" needs jaxlib's 20-byte descriptor {type, uplo, "
                      "batch, n, lwork} in backend_config, got %zu bytes", loc, call->name, len);
  memcpy(v, d, sizeof(v));
  static const hl_dtype_t types[4] = {HL_F32, HL_F64, HL_C64, HL_C128};
  hl_cc_frame_t f;
  HL_RETURN_IF_ERROR(hl_cc_frame_init(call, &f));
  hl_status_t st = NULL;
  const hl_cc_buffer_t *a = f.arg_count == 1 ? &f.args[0] : NULL;
  if (!a || f.ret_count != 4 || a->rank < 2)
    st = HL_INVALID("%s: custom-call \"%s\" takes one matrix operand and has 4 results "
                    "(jaxlib's pre-FFI signature)", loc, call->name);
  else if (v[0] < 0 || v[0] > 3 || types[v[0]] != a->dtype || (v[1] != 121 && v[1] != 122) ||
           v[3] != a->dims[a->rank - 1] || v[2] != hl_cc_dims_product(a, 0, a->rank - 2))
    st = HL_INVALID("%s: custom-call \"%s\" descriptor {type %d, uplo %d, batch %d, n %d} does "
                    "not describe its operand %s[%lld x %lld x %lld]", loc, call->name, v[0],
                    v[1], v[2], v[3], hl_dtype_name(a->dtype),
                    (long long)hl_cc_dims_product(a, 0, a->rank - 2),
                    (long long)a->dims[a->rank - 2], (long long)a->dims[a->rank - 1]);
  if (!st) {
    legacy_attrs_t la = {2, {"lower", "algorithm"}, {v[1] == 122, 0}};
    const lapack_target_t spec = {SYEVD, HL_INVALID, true};
    hl_cc_frame_t view = {1, 3, f.args, f.rets};
    st = run_routine(call, &la, &spec, &view);
  }
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

#define SPEC(r, t) ((const void *)&(const lapack_target_t){r, t, false})
#define GPU(name, r)                                                                   \
  {"cusolver_" name "_ffi", run_lapack, &(const lapack_target_t){r, HL_INVALID, true}}, \
  {"hipsolver_" name "_ffi", run_lapack, &(const lapack_target_t){r, HL_INVALID, true}}
#define HYBRID(name, r)                                                                 \
  {"cu_hybrid_" name, run_lapack, &(const lapack_target_t){r, HL_INVALID, true}},       \
  {"hip_hybrid_" name, run_lapack, &(const lapack_target_t){r, HL_INVALID, true}}
#define FOUR(prefix_s, prefix_d, prefix_c, prefix_z, routine)            \
  {"lapack_" prefix_s "_ffi", run_lapack, SPEC(routine, HL_F32)},       \
  {"lapack_" prefix_d "_ffi", run_lapack, SPEC(routine, HL_F64)},       \
  {"lapack_" prefix_c "_ffi", run_lapack, SPEC(routine, HL_C64)},       \
  {"lapack_" prefix_z "_ffi", run_lapack, SPEC(routine, HL_C128)}

#define R(...) (__VA_ARGS__)
#define UNPAREN(...) __VA_ARGS__
#define LEGACY(name, r, t, n, names, real_rets, complex_rets)                           \
  {"lapack_" name, run_legacy,                                                          \
   &(const legacy_target_t){{r, t, false}, n, names,                                    \
                            {{UNPAREN real_rets, -1}, {UNPAREN complex_rets, -1}}}}
#define LEGACY4(real, cplx, r, n, names, real_rets, complex_rets)                        \
  LEGACY("s" real, r, HL_F32, n, names, real_rets, complex_rets),                       \
  LEGACY("d" real, r, HL_F64, n, names, real_rets, complex_rets),                       \
  LEGACY("c" cplx, r, HL_C64, n, names, real_rets, complex_rets),                       \
  LEGACY("z" cplx, r, HL_C128, n, names, real_rets, complex_rets)

const hl_custom_call_target_t hl_custom_calls_lapack[] = {
    FOUR("sgetrf", "dgetrf", "cgetrf", "zgetrf", GETRF),
    FOUR("sgeqrf", "dgeqrf", "cgeqrf", "zgeqrf", GEQRF),
    FOUR("sorgqr", "dorgqr", "cungqr", "zungqr", ORGQR),
    FOUR("spotrf", "dpotrf", "cpotrf", "zpotrf", POTRF),
    FOUR("sgesdd", "dgesdd", "cgesdd", "zgesdd", GESDD),
    FOUR("sgesvd", "dgesvd", "cgesvd", "zgesvd", GESVD),
    FOUR("ssyevd", "dsyevd", "cheevd", "zheevd", SYEVD),
    FOUR("sgeev", "dgeev", "cgeev", "zgeev", GEEV),
    FOUR("sgees", "dgees", "cgees", "zgees", GEES),
    FOUR("sgehrd", "dgehrd", "cgehrd", "zgehrd", GEHRD),
    FOUR("ssytrd", "dsytrd", "chetrd", "zhetrd", SYTRD),
    FOUR("sgtsv", "dgtsv", "cgtsv", "zgtsv", GTSV),
    FOUR("sormqr", "dormqr", "cunmqr", "zunmqr", ORMQR),
    FOUR("sgeqp3", "dgeqp3", "cgeqp3", "zgeqp3", GEQP3),
    // jaxlib's GPU solver targets replayed with LAPACK (same operands,
    // results and layouts; jaxlib/gpu/solver_kernels_ffi.cc).
    GPU("getrf", GETRF), GPU("geqrf", GEQRF), GPU("orgqr", ORGQR), GPU("potrf", POTRF),
    GPU("syevd", SYEVD), GPU("sytrd", SYTRD), GPU("ormqr", ORMQR),
    // jaxlib/gpu/hybrid_kernels.cc: LAPACK geev / geqp3 on the host (MAGMA's geev
    // when its `magma` attribute turns it on; LAPACK runs here either way).
    HYBRID("eig_real", GEEV), HYBRID("eig_comp", GEEV), HYBRID("geqp3", GEQP3),
    LEGACY4("getrf", "getrf", GETRF, 3, "bmn", R(0, 1, 2), R(0, 1, 2)),
    LEGACY4("geqrf", "geqrf", GEQRF, 4, "bmnl", R(0, 1), R(0, 1)),
    LEGACY4("orgqr", "ungqr", ORGQR, 5, "bmnkl", R(0), R(0)),
    LEGACY4("potrf", "potrf", POTRF, 3, "Lbn", R(0, 1), R(0, 1)),
    LEGACY4("gesdd", "gesdd", GESDD, 6, "FUbmnl", R(0, 1, 2, 3, 4), R(0, 1, 2, 3, 4)),
    LEGACY4("syevd", "heevd", SYEVD, 3, "Lbn", R(0, 1, 2), R(0, 1, 2)),
    LEGACY4("geev", "geev", GEEV, 4, "bnjJ", R(3, 4, 5, 6, 7), R(2, 3, 4, 5)),
    LEGACY4("gees", "gees", GEES, 4, "bnvs", R(0, 3, 1, 2, 4, 5), R(0, 3, 2, 4, 5)),
    {"hipsolver_syevd", run_legacy_gpu_eigh, NULL},
    {"hipsolver_syevj", run_legacy_gpu_eigh, NULL},
    {NULL, NULL, NULL},
};
