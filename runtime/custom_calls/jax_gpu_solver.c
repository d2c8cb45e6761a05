// jaxlib's GPU SVD, rank-k update and tridiagonal solve targets, replayed on
// the CPU with LAPACK / CBLAS on the same bytes cuSOLVER / cuBLAS / cuSPARSE
// would see (jaxlib/gpu/solver_kernels_ffi.cc, sparse_kernels; lowerings in
// jax/_src/lax/linalg.py). frame.c hands over the buffers in the layouts the
// instruction declares, so the column-major reads below are the GPU's.
//
//   cusolver_gesvd_ffi  (full_matrices, compute_uv, transposed): a -> out, s, u,
//       vt, info. The buffer is m x n column-major with m = transposed ? cols :
//       rows (m >= n), job 'A' / 'S' / 'N'; u is m x (full ? m : n), vt n x n.
//   cusolver_gesvdj_ffi (full_matrices, compute_uv): a -> out, s, u, v, info with
//       m = rows, n = cols, u m x (full ? m : k), v n x (full ? n : k): V, not
//       V^H (jax transposes and conjugates it afterwards).
//   cusolver_syrk_ffi   (transpose): a, c_in, alpha, beta -> c_out = alpha op(A)
//       op(A)^T + beta c_in on the upper triangle of the column-major n x n c
//       (cuBLAS syrk, fill mode upper); the other triangle keeps c_in.
//   cusparse_gtsv2_ffi: dl, d, du, b -> x (the solution; no info output).
//   cusolver_geev_ffi   (left, right): a -> out, w (complex), vl, vr, info; vl / vr
//       have a's element type: for a real a, conjugate pairs packed as LAPACK
//       (and cuSOLVER's Xgeev) pack them: re / im in adjacent columns.
// Singular vectors come from LAPACK's ?gesvd, so their signs (phases) may
// differ from cuSOLVER's, as any two SVD implementations' may; the `out`
// result holds LAPACK's overwritten matrix where cuSOLVER leaves its own
// scratch contents (jax discards it). A non-converged SVD sets info > 0.
#include <cblas.h>
#include <complex.h>
#include <lapacke.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/ffi_attrs.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

typedef enum solver_op { OP_GESVD, OP_GESVDJ, OP_SYRK, OP_GTSV2, OP_GEEV } solver_op_t;

static const char *loc_of(const hl_custom_call_t *call) {
  return hl_instruction_location(call->inst);
}

static bool lapack_type(hl_dtype_t t) {
  return t == HL_F32 || t == HL_F64 || t == HL_C64 || t == HL_C128;
}

static hl_dtype_t real_of(hl_dtype_t t) {
  return t == HL_C64 ? HL_F32 : t == HL_C128 ? HL_F64 : t;
}

static void *at(const hl_cc_buffer_t *b, int64_t i, int64_t step) {
  return (char *)b->data + (size_t)(i * step) * hl_dtype_size(b->dtype);
}

// A buffer of element type t whose element count is batch * per.
static hl_status_t expect(const hl_custom_call_t *call, const hl_cc_buffer_t *b, const char *what,
                          hl_dtype_t t, int64_t count) {
  if (b->dtype != t || b->count != count)
    return HL_INVALID("%s: custom-call \"%s\" %s is %s with %lld elements, expected %s with %lld "
                      "(jaxlib's signature)", loc_of(call), call->name, what,
                      hl_dtype_name(b->dtype), (long long)b->count, hl_dtype_name(t),
                      (long long)count);
  return NULL;
}

static lapack_int gesvd(hl_dtype_t t, char job, lapack_int m, lapack_int n, void *a, void *s,
                        void *u, lapack_int ldu, void *vt, lapack_int ldvt, void *work,
                        lapack_int lwork, void *rwork) {
  switch (t) {
    case HL_F32: return LAPACKE_sgesvd_work(LAPACK_COL_MAJOR, job, job, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork);
    case HL_F64: return LAPACKE_dgesvd_work(LAPACK_COL_MAJOR, job, job, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork);
    case HL_C64: return LAPACKE_cgesvd_work(LAPACK_COL_MAJOR, job, job, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork, rwork);
    default: return LAPACKE_zgesvd_work(LAPACK_COL_MAJOR, job, job, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork, rwork);
  }
}

static lapack_int ld(int64_t n) { return n < 1 ? 1 : (lapack_int)n; }

// One SVD per matrix; vt_out NULL: write V (n x vcols, column-major) into v.
static hl_status_t run_svd(const hl_custom_call_t *call, hl_cc_frame_t *f, bool jacobi) {
  int64_t full, uv, transposed = 0;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "full_matrices", &full));
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "compute_uv", &uv));
  if (!jacobi) HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "transposed", &transposed));
  if (f->arg_count != 1 || f->ret_count != 5)
    return HL_INVALID("%s: custom-call \"%s\" takes 1 operand and returns (out, s, u, v, info), "
                      "got %d operands and %d results", loc_of(call), call->name, f->arg_count,
                      f->ret_count);
  const hl_cc_buffer_t *a = &f->args[0];
  hl_dtype_t t = a->dtype, rt = real_of(t);
  if (!lapack_type(t) || a->rank < 2)
    return HL_INVALID("%s: custom-call \"%s\" operand is %s of rank %d; it takes a f32, f64, c64 "
                      "or c128 matrix (batch dims leading)", loc_of(call), call->name,
                      hl_dtype_name(t), a->rank);
  int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
  int64_t batch = hl_cc_dims_product(a, 0, a->rank - 2);
  int64_t m = transposed ? cols : rows, n = transposed ? rows : cols, k = m < n ? m : n;
  if (!jacobi && n > m)
    return HL_INVALID("%s: custom-call \"%s\" needs m >= n (m=%lld n=%lld, transposed=%lld), as "
                      "cuSOLVER's gesvd does", loc_of(call), call->name, (long long)m,
                      (long long)n, (long long)transposed);
  char job = !uv ? 'N' : full ? 'A' : 'S';
  int64_t ucols = full ? m : k, vrows = full ? n : k;  // vt is vrows x n
  hl_cc_buffer_t *r = f->rets;
  HL_RETURN_IF_ERROR(expect(call, &r[0], "result 0 (out)", t, batch * m * n));
  HL_RETURN_IF_ERROR(expect(call, &r[1], "result 1 (s)", rt, batch * k));
  if (jacobi || uv) {
    HL_RETURN_IF_ERROR(expect(call, &r[2], "result 2 (u)", t, batch * m * ucols));
    HL_RETURN_IF_ERROR(expect(call, &r[3], jacobi ? "result 3 (v)" : "result 3 (vt)", t,
                              batch * vrows * n));
  }
  HL_RETURN_IF_ERROR(expect(call, &r[4], "result 4 (info)", HL_S32, batch));
  memcpy(r[0].data, a->data, (size_t)a->count * hl_dtype_size(t));
  size_t es = hl_dtype_size(t);
  _Alignas(16) char q[16] = {0};
  void *rwork = hl_calloc((size_t)(5 * k + 1), hl_dtype_size(rt));
  void *vt = jacobi ? hl_calloc((size_t)(vrows * n + 1), es) : NULL;
  void *ubuf = hl_calloc((size_t)(m * ucols + 1), es);  // 'N': LAPACK does not touch it
  hl_status_t st = NULL;
  if (!rwork || (jacobi && !vt) || !ubuf) st = HL_OOM();
  lapack_int lm = (lapack_int)m, ln = (lapack_int)n;
  if (!st) gesvd(t, job, lm, ln, NULL, NULL, NULL, ld(m), NULL, ld(vrows), q, -1, rwork);
  double qv = (t == HL_F32 || t == HL_C64) ? (double)*(float *)q : *(double *)q;
  lapack_int lw = qv < 1 ? 1 : (lapack_int)qv;
  void *work = st ? NULL : hl_calloc((size_t)lw + 1, es);
  if (!st && !work) st = HL_OOM();
  for (int64_t b = 0; !st && b < batch; b++) {
    void *u = uv ? at(&r[2], b, m * ucols) : ubuf;
    void *v = jacobi ? vt : uv ? at(&r[3], b, vrows * n) : NULL;
    ((int32_t *)r[4].data)[b] = gesvd(t, job, lm, ln, at(&r[0], b, m * n), at(&r[1], b, k), u,
                                      ld(m), v ? v : ubuf, ld(vrows), work, lw, rwork);
    if (!jacobi || !uv) continue;
    // gesvdj returns V (n x vrows, column-major): the conjugate transpose of vt.
    char *dst = at(&r[3], b, vrows * n);
    for (int64_t i = 0; i < vrows; i++)
      for (int64_t j = 0; j < n; j++) {
        const char *src = (const char *)vt + (size_t)(i + j * vrows) * es;  // vt(i, j)
        char *o = dst + (size_t)(j + i * n) * es;                          // v(j, i)
        memcpy(o, src, es);
        if (t == HL_C64) ((float *)o)[1] = -((float *)o)[1];
        if (t == HL_C128) ((double *)o)[1] = -((double *)o)[1];
      }
  }
  hl_free(work);
  hl_free(rwork);
  hl_free(vt);
  hl_free(ubuf);
  return st;
}

static hl_status_t run_syrk(const hl_custom_call_t *call, hl_cc_frame_t *f) {
  int64_t transpose;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "transpose", &transpose));
  if (f->arg_count != 4 || f->ret_count != 1)
    return HL_INVALID("%s: custom-call \"%s\" takes (a, c_in, alpha, beta) and returns c_out, got "
                      "%d operands and %d results", loc_of(call), call->name, f->arg_count,
                      f->ret_count);
  const hl_cc_buffer_t *a = &f->args[0];
  hl_dtype_t t = a->dtype;
  if (!lapack_type(t) || a->rank < 2)
    return HL_INVALID("%s: custom-call \"%s\" a is %s of rank %d; it takes a f32, f64, c64 or "
                      "c128 matrix", loc_of(call), call->name, hl_dtype_name(t), a->rank);
  int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
  int64_t batch = hl_cc_dims_product(a, 0, a->rank - 2);
  int64_t n = transpose ? cols : rows, k = transpose ? rows : cols;
  HL_RETURN_IF_ERROR(expect(call, &f->args[1], "operand 1 (c_in)", t, batch * n * n));
  HL_RETURN_IF_ERROR(expect(call, &f->args[2], "operand 2 (alpha)", t, 1));
  HL_RETURN_IF_ERROR(expect(call, &f->args[3], "operand 3 (beta)", t, 1));
  HL_RETURN_IF_ERROR(expect(call, &f->rets[0], "result (c_out)", t, batch * n * n));
  memcpy(f->rets[0].data, f->args[1].data, (size_t)(batch * n * n) * hl_dtype_size(t));
  enum CBLAS_TRANSPOSE tr = transpose ? CblasNoTrans : CblasTrans;
  int lda = (int)(transpose ? n : k);
  if (lda < 1) lda = 1;
  const void *alpha = f->args[2].data, *beta = f->args[3].data;
  for (int64_t b = 0; b < batch; b++) {
    const void *ab = at(a, b, n * k);
    void *cb = at(&f->rets[0], b, n * n);
    int ni = (int)n, ki = (int)k, ldc = n < 1 ? 1 : (int)n;
    switch (t) {
      case HL_F32: cblas_ssyrk(CblasColMajor, CblasUpper, tr, ni, ki, *(const float *)alpha, ab, lda, *(const float *)beta, cb, ldc); break;
      case HL_F64: cblas_dsyrk(CblasColMajor, CblasUpper, tr, ni, ki, *(const double *)alpha, ab, lda, *(const double *)beta, cb, ldc); break;
      case HL_C64: cblas_csyrk(CblasColMajor, CblasUpper, tr, ni, ki, alpha, ab, lda, beta, cb, ldc); break;
      default: cblas_zsyrk(CblasColMajor, CblasUpper, tr, ni, ki, alpha, ab, lda, beta, cb, ldc); break;
    }
  }
  return NULL;
}

static hl_status_t run_gtsv2(const hl_custom_call_t *call, hl_cc_frame_t *f) {
  if (f->arg_count != 4 || f->ret_count != 1)
    return HL_INVALID("%s: custom-call \"%s\" takes (dl, d, du, b) and returns x, got %d operands "
                      "and %d results", loc_of(call), call->name, f->arg_count, f->ret_count);
  const hl_cc_buffer_t *bb = &f->args[3];
  hl_dtype_t t = bb->dtype;
  if (!lapack_type(t) || bb->rank < 2)
    return HL_INVALID("%s: custom-call \"%s\" b is %s of rank %d; it takes a f32, f64, c64 or "
                      "c128 matrix", loc_of(call), call->name, hl_dtype_name(t), bb->rank);
  int64_t m = bb->dims[bb->rank - 2], nrhs = bb->dims[bb->rank - 1];
  int64_t batch = hl_cc_dims_product(bb, 0, bb->rank - 2);
  const char *names[3] = {"operand 0 (dl)", "operand 1 (d)", "operand 2 (du)"};
  for (int i = 0; i < 3; i++) HL_RETURN_IF_ERROR(expect(call, &f->args[i], names[i], t, batch * m));
  HL_RETURN_IF_ERROR(expect(call, &f->rets[0], "result (x)", t, batch * m * nrhs));
  memcpy(f->rets[0].data, bb->data, (size_t)bb->count * hl_dtype_size(t));
  size_t es = hl_dtype_size(t);
  // LAPACK overwrites the diagonals; cuSPARSE's gtsv2 leaves its inputs alone.
  char *diag = hl_malloc((size_t)(3 * m + 1) * es);
  if (!diag) return HL_OOM();
  for (int64_t b = 0; b < batch; b++) {
    char *dl = diag, *d = diag + m * es, *du = diag + 2 * m * es;
    // cuSPARSE's dl[0] and du[m-1] are padding; LAPACK's dl and du have m-1 entries.
    memcpy(dl, (char *)at(&f->args[0], b, m) + es, (size_t)(m > 0 ? m - 1 : 0) * es);
    memcpy(d, at(&f->args[1], b, m), (size_t)m * es);
    memcpy(du, at(&f->args[2], b, m), (size_t)(m > 0 ? m - 1 : 0) * es);
    void *x = at(&f->rets[0], b, m * nrhs);
    lapack_int lm = (lapack_int)m, ln = (lapack_int)nrhs, info;
    switch (t) {
      case HL_F32: info = LAPACKE_sgtsv_work(LAPACK_COL_MAJOR, lm, ln, (void *)dl, (void *)d, (void *)du, x, ld(m)); break;
      case HL_F64: info = LAPACKE_dgtsv_work(LAPACK_COL_MAJOR, lm, ln, (void *)dl, (void *)d, (void *)du, x, ld(m)); break;
      case HL_C64: info = LAPACKE_cgtsv_work(LAPACK_COL_MAJOR, lm, ln, (void *)dl, (void *)d, (void *)du, x, ld(m)); break;
      default: info = LAPACKE_zgtsv_work(LAPACK_COL_MAJOR, lm, ln, (void *)dl, (void *)d, (void *)du, x, ld(m)); break;
    }
    if (info != 0) {
      // cuSPARSE reports a zero pivot as an error status (jaxlib returns it).
      hl_free(diag);
      return HL_INVALID("%s: custom-call \"%s\": the tridiagonal system of batch %lld is "
                        "singular (zero pivot %d)", loc_of(call), call->name, (long long)b,
                        (int)info);
    }
  }
  hl_free(diag);
  return NULL;
}

static hl_status_t run_geev(const hl_custom_call_t *call, hl_cc_frame_t *f) {
  int64_t left, right;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "left", &left));
  HL_RETURN_IF_ERROR(hl_ffi_attr_int(call, "right", &right));
  if (f->arg_count != 1 || f->ret_count != 5)
    return HL_INVALID("%s: custom-call \"%s\" takes 1 operand and returns (out, w, vl, vr, info), "
                      "got %d operands and %d results", loc_of(call), call->name, f->arg_count,
                      f->ret_count);
  const hl_cc_buffer_t *a = &f->args[0];
  hl_dtype_t t = a->dtype, rt = real_of(t);
  hl_dtype_t ct = t == HL_F32 ? HL_C64 : t == HL_F64 ? HL_C128 : t;
  if (!lapack_type(t) || a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2])
    return HL_INVALID("%s: custom-call \"%s\" operand is %s of rank %d; it takes square f32, f64, "
                      "c64 or c128 matrices", loc_of(call), call->name, hl_dtype_name(t),
                      a->rank);
  int64_t n = a->dims[a->rank - 1], batch = hl_cc_dims_product(a, 0, a->rank - 2);
  hl_cc_buffer_t *r = f->rets;
  HL_RETURN_IF_ERROR(expect(call, &r[0], "result 0 (out)", t, batch * n * n));
  HL_RETURN_IF_ERROR(expect(call, &r[1], "result 1 (w)", ct, batch * n));
  HL_RETURN_IF_ERROR(expect(call, &r[2], "result 2 (vl)", t, batch * n * n));
  HL_RETURN_IF_ERROR(expect(call, &r[3], "result 3 (vr)", t, batch * n * n));
  HL_RETURN_IF_ERROR(expect(call, &r[4], "result 4 (info)", HL_S32, batch));
  memcpy(r[0].data, a->data, (size_t)a->count * hl_dtype_size(t));
  char jl = left ? 'V' : 'N', jr = right ? 'V' : 'N';
  size_t es = hl_dtype_size(t), rs = hl_dtype_size(rt);
  bool cplx = t == HL_C64 || t == HL_C128;
  void *wr = hl_calloc((size_t)(2 * n + 1), rs);  // real: wr then wi
  void *rwork = hl_calloc((size_t)(2 * n + 1), rs);
  _Alignas(16) char q[16] = {0};
  lapack_int ln = (lapack_int)n, ldn = ld(n);
  hl_status_t st = !wr || !rwork ? HL_OOM() : NULL;
  void *wi = (char *)wr + (size_t)n * rs;
  if (!st) {
    switch (t) {
      case HL_F32: LAPACKE_sgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, NULL, ldn, wr, wi, NULL, ldn, NULL, ldn, (void *)q, -1); break;
      case HL_F64: LAPACKE_dgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, NULL, ldn, wr, wi, NULL, ldn, NULL, ldn, (void *)q, -1); break;
      case HL_C64: LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, NULL, ldn, NULL, NULL, ldn, NULL, ldn, (void *)q, -1, rwork); break;
      default: LAPACKE_zgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, NULL, ldn, NULL, NULL, ldn, NULL, ldn, (void *)q, -1, rwork); break;
    }
  }
  double qv = (t == HL_F32 || t == HL_C64) ? (double)*(float *)q : *(double *)q;
  lapack_int lw = qv < 1 ? 1 : (lapack_int)qv;
  void *work = st ? NULL : hl_calloc((size_t)lw + 1, es);
  if (!st && !work) st = HL_OOM();
  for (int64_t b = 0; !st && b < batch; b++) {
    void *ab = at(&r[0], b, n * n), *w = at(&r[1], b, n), *vl = at(&r[2], b, n * n),
         *vr = at(&r[3], b, n * n);
    lapack_int info;
    switch (t) {
      case HL_F32: info = LAPACKE_sgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, ab, ldn, wr, wi, vl, ldn, vr, ldn, work, lw); break;
      case HL_F64: info = LAPACKE_dgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, ab, ldn, wr, wi, vl, ldn, vr, ldn, work, lw); break;
      case HL_C64: info = LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, ab, ldn, w, vl, ldn, vr, ldn, work, lw, rwork); break;
      default: info = LAPACKE_zgeev_work(LAPACK_COL_MAJOR, jl, jr, ln, ab, ldn, w, vl, ldn, vr, ldn, work, lw, rwork); break;
    }
    ((int32_t *)r[4].data)[b] = info;
    for (int64_t i = 0; !cplx && i < n; i++) {  // w = wr + i wi
      if (t == HL_F32) {
        ((float *)w)[2 * i] = ((float *)wr)[i];
        ((float *)w)[2 * i + 1] = ((float *)wi)[i];
      } else {
        ((double *)w)[2 * i] = ((double *)wr)[i];
        ((double *)w)[2 * i + 1] = ((double *)wi)[i];
      }
    }
  }
  hl_free(work);
  hl_free(wr);
  hl_free(rwork);
  return st;
}

static hl_status_t run_solver(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  solver_op_t op = (solver_op_t)(intptr_t)call->target->data;
  hl_cc_frame_t f;
  hl_status_t st = hl_cc_frame_init(call, &f);
  if (!st) {
    switch (op) {
      case OP_GESVD: st = run_svd(call, &f, false); break;
      case OP_GESVDJ: st = run_svd(call, &f, true); break;
      case OP_SYRK: st = run_syrk(call, &f); break;
      case OP_GEEV: st = run_geev(call, &f); break;
      default: st = run_gtsv2(call, &f); break;
    }
  }
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

#define OP(x) ((const void *)(intptr_t)(x))
const hl_custom_call_target_t hl_custom_calls_jax_gpu_solver[] = {
    {"cusolver_gesvd_ffi", run_solver, OP(OP_GESVD)},
    {"hipsolver_gesvd_ffi", run_solver, OP(OP_GESVD)},
    // ROCm's divide-and-conquer SVD: gesvd's operands, attributes and results.
    {"hipsolver_gesdd_ffi", run_solver, OP(OP_GESVD)},
    {"cusolver_gesvdj_ffi", run_solver, OP(OP_GESVDJ)},
    {"hipsolver_gesvdj_ffi", run_solver, OP(OP_GESVDJ)},
    {"cusolver_syrk_ffi", run_solver, OP(OP_SYRK)},
    {"hipsolver_syrk_ffi", run_solver, OP(OP_SYRK)},
    {"cusolver_geev_ffi", run_solver, OP(OP_GEEV)},
    {"hipsolver_geev_ffi", run_solver, OP(OP_GEEV)},
    {"cusparse_gtsv2_ffi", run_solver, OP(OP_GTSV2)},
    {"hipsparse_gtsv2_ffi", run_solver, OP(OP_GTSV2)},
    {NULL, NULL, NULL},
};
