// jaxlib's CPU triangular solve: `lapack_?trsm_ffi` (typed FFI) and the
// older `blas_?trsm` (operands carry the parameters), through CBLAS ?trsm.
//
// Both follow jaxlib/cpu/lapack_kernels.cc: y_out starts as a copy of y (b),
// the matrices are column-major (frame.c honours the declared layouts),
// lda = rows of y when solving from the left, else its columns, and the
// triangular matrix advances lda * lda elements per batch.
#include <cblas.h>
#include <complex.h>
#include <string.h>

#include "runtime/custom_calls/ffi_attrs.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

typedef struct trsm_target {
  hl_dtype_t dtype;
  bool legacy;  // blas_?trsm: 7 s32 scalars, alpha, a, b
} trsm_target_t;

static void trsm(hl_dtype_t t, char side, char uplo, char trans, char diag, int m, int n,
                 const void *alpha, const void *a, int lda, void *b, int ldb) {
  enum CBLAS_SIDE cs = side == 'L' ? CblasLeft : CblasRight;
  enum CBLAS_UPLO cu = uplo == 'L' ? CblasLower : CblasUpper;
  enum CBLAS_TRANSPOSE ct = trans == 'N' ? CblasNoTrans : trans == 'T' ? CblasTrans : CblasConjTrans;
  enum CBLAS_DIAG cd = diag == 'U' ? CblasUnit : CblasNonUnit;
  switch (t) {
    case HL_F32: cblas_strsm(CblasColMajor, cs, cu, ct, cd, m, n, *(const float *)alpha, a, lda, b, ldb); break;
    case HL_F64: cblas_dtrsm(CblasColMajor, cs, cu, ct, cd, m, n, *(const double *)alpha, a, lda, b, ldb); break;
    case HL_C64: cblas_ctrsm(CblasColMajor, cs, cu, ct, cd, m, n, alpha, a, lda, b, ldb); break;
    default: cblas_ztrsm(CblasColMajor, cs, cu, ct, cd, m, n, alpha, a, lda, b, ldb); break;
  }
}

static hl_status_t char_attr(const hl_custom_call_t *call, const char *key, const char *allowed,
                             char *out) {
  int64_t v;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, key, &v));
  if (v <= 0 || v > 127 || !strchr(allowed, (int)v))
    return HL_INVALID("%s: custom-call \"%s\" attribute %s=%lld is not one of '%s'",
                      hl_instruction_location(call->inst), call->name, key, (long long)v, allowed);
  *out = (char)v;
  return NULL;
}

static int32_t s32_scalar(const hl_cc_buffer_t *b) { return *(const int32_t *)b->data; }

static hl_status_t run_trsm(const hl_custom_call_t *call, hl_cc_frame_t *f,
                            const trsm_target_t *spec) {
  const hl_instruction_t *inst = call->inst;
  hl_dtype_t t = spec->dtype;
  int first = spec->legacy ? 8 : 0;  // index of a
  if (f->arg_count != first + 2 || f->ret_count != 1)
    return HL_INVALID("%s: custom-call \"%s\" takes %d operands and 1 result (jaxlib's "
                      "signature), got %d and %d", hl_instruction_location(inst), call->name,
                      first + 2, f->arg_count, f->ret_count);
  const hl_cc_buffer_t *a = &f->args[first], *y = &f->args[first + 1];
  hl_cc_buffer_t *out = &f->rets[0];
  char side = 0, uplo = 0, trans = 0, diag = 0;
  int64_t m, n, batch;
  _Alignas(16) unsigned char alpha[16] = {0};
  if (spec->legacy) {
    for (int i = 0; i < 7; i++)
      if (f->args[i].dtype != HL_S32 || f->args[i].count != 1)
        return HL_INVALID("%s: custom-call \"%s\" operand %d must be an s32 scalar",
                          hl_instruction_location(inst), call->name, i);
    if (f->args[7].dtype != t || f->args[7].count != 1)
      return HL_INVALID("%s: custom-call \"%s\" operand 7 (alpha) must be a %s scalar",
                        hl_instruction_location(inst), call->name, hl_dtype_name(t));
    side = s32_scalar(&f->args[0]) ? 'L' : 'R';
    uplo = s32_scalar(&f->args[1]) ? 'L' : 'U';
    int32_t tr = s32_scalar(&f->args[2]);
    trans = tr == 1 ? 'T' : tr == 2 ? 'C' : 'N';
    diag = s32_scalar(&f->args[3]) ? 'U' : 'N';
    m = s32_scalar(&f->args[4]);
    n = s32_scalar(&f->args[5]);
    batch = s32_scalar(&f->args[6]);
    memcpy(alpha, f->args[7].data, hl_dtype_size(t));
  } else {
    HL_RETURN_IF_ERROR(char_attr(call, "side", "LR", &side));
    HL_RETURN_IF_ERROR(char_attr(call, "uplo", "LU", &uplo));
    HL_RETURN_IF_ERROR(char_attr(call, "trans_x", "NTC", &trans));
    HL_RETURN_IF_ERROR(char_attr(call, "diag", "NU", &diag));
    if (y->rank < 2)
      return HL_INVALID("%s: custom-call \"%s\" operand 1 must have rank >= 2",
                        hl_instruction_location(inst), call->name);
    m = y->dims[y->rank - 2];
    n = y->dims[y->rank - 1];
    batch = hl_cc_dims_product(y, 0, y->rank - 2);
    if (t == HL_F32) *(float *)(void *)alpha = 1;
    else if (t == HL_F64) *(double *)(void *)alpha = 1;
    else if (t == HL_C64) *(float complex *)(void *)alpha = 1;
    else *(double complex *)(void *)alpha = 1;
  }
  int64_t lda = side == 'L' ? m : n;
  if (a->dtype != t || y->dtype != t || out->dtype != t || m < 0 || n < 0 || batch < 0 ||
      y->count != batch * m * n || out->count != y->count || a->count != batch * lda * lda)
    return HL_INVALID("%s: custom-call \"%s\": operands %s[%lld elements] and %s[%lld elements] "
                      "do not hold %lld %s systems of %lldx%lld with a %lldx%lld triangular "
                      "matrix each", hl_instruction_location(inst), call->name,
                      hl_dtype_name(a->dtype), (long long)a->count, hl_dtype_name(y->dtype),
                      (long long)y->count, (long long)batch, hl_dtype_name(t), (long long)m,
                      (long long)n, (long long)lda, (long long)lda);
  size_t es = hl_dtype_size(t);
  memcpy(out->data, y->data, (size_t)y->count * es);
  for (int64_t b = 0; b < batch && m > 0 && n > 0; b++)
    trsm(t, side, uplo, trans, diag, (int)m, (int)n, alpha,
         (const char *)a->data + (size_t)(b * lda * lda) * es, (int)(lda < 1 ? 1 : lda),
         (char *)out->data + (size_t)(b * m * n) * es, (int)(m < 1 ? 1 : m));
  return NULL;
}

static hl_status_t run_blas(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  hl_cc_frame_t f;
  hl_status_t st = hl_cc_frame_init(call, &f);
  if (!st) st = run_trsm(call, &f, call->target->data);
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

#define TRSM(name, t, legacy) {name, run_blas, &(const trsm_target_t){t, legacy}}
const hl_custom_call_target_t hl_custom_calls_blas[] = {
    TRSM("lapack_strsm_ffi", HL_F32, false), TRSM("lapack_dtrsm_ffi", HL_F64, false),
    TRSM("lapack_ctrsm_ffi", HL_C64, false), TRSM("lapack_ztrsm_ffi", HL_C128, false),
    TRSM("blas_strsm", HL_F32, true),        TRSM("blas_dtrsm", HL_F64, true),
    TRSM("blas_ctrsm", HL_C64, true),        TRSM("blas_ztrsm", HL_C128, true),
    {NULL, NULL, NULL},
};
