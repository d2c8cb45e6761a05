// jaxlib's `tridiagonal_solve_perturbed_ffi` (CPU and GPU; lowered by
// jax/_src/lax/linalg.py's tridiagonal_solve with perturb_singular=True):
// dl, d, du ([batch..., n]; dl[0] and du[n-1] unused), b ([batch..., n, k],
// column-major) -> x (b's shape and layout).
//
// A port of jaxlib/tridiagonal_solve_perturbed.h's
// SolveWithGaussianEliminationWithPivotingAndPerturbSingular and
// MaybePerturbPivot (LAPACK xLAGTF + xLAGTS: row-pivoted LU fused with the
// forward solve, then back substitution that perturbs tiny pivots by
// eps * max |U| instead of failing), one instantiation per element type with
// the same operation order, so singular systems give jaxlib's numbers.
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

#define TRIDIAG_SOLVER(NAME, T, R, ABS, RABS, REAL, R_MIN, R_MAX, R_EPS)                            \
  static void NAME##_perturb(R perturb, T *pivot, T *row, int k) {                              \
    const R one = 1;                                                                            \
    const R tiny = R_MIN, small = one / R_MAX;                                                  \
    const R safemin = small < tiny ? tiny : small * (one + R_EPS);                              \
    const R bignum = one / safemin;                                                             \
    R abs_pivot = ABS(*pivot);                                                                  \
    if (abs_pivot >= one) return;                                                               \
    perturb = RABS(perturb) > safemin ? RABS(perturb) : safemin;                                \
    perturb = copysign(perturb, REAL(*pivot));                                                  \
    bool stop = false;                                                                          \
    R max_factor = 0;                                                                           \
    for (int j = 0; j < k; j++)                                                                 \
      if (ABS(row[j]) > max_factor || j == 0) max_factor = ABS(row[j]);                         \
    while (abs_pivot < one && !stop) {                                                          \
      if (abs_pivot < safemin) {                                                                \
        if (abs_pivot == (R)0 || max_factor * safemin > abs_pivot) {                            \
          *pivot += perturb;                                                                    \
          perturb *= (R)2;                                                                      \
        } else {                                                                                \
          *pivot *= bignum;                                                                     \
          for (int j = 0; j < k; j++) row[j] *= bignum;                                         \
          stop = true;                                                                          \
        }                                                                                       \
      } else if (max_factor > abs_pivot * bignum) {                                             \
        *pivot += perturb;                                                                      \
        perturb *= (R)2;                                                                        \
      } else {                                                                                  \
        stop = true;                                                                            \
      }                                                                                         \
      abs_pivot = ABS(*pivot);                                                                  \
    }                                                                                           \
  }                                                                                             \
  /* x, rhs: n x k column-major; u: 3n; row: k. */                                              \
  static void NAME(int n, int k, const T *sub, const T *diag, const T *sup, const T *rhs, T *x,  \
                   T *u0, T *row) {                                                             \
    if (n == 0) return;                                                                         \
    if (n == 1) {                                                                               \
      T p = diag[0];                                                                            \
      R perturb = R_EPS * ABS(p);                                                               \
      for (int j = 0; j < k; j++) row[j] = rhs[j * n];                                          \
      NAME##_perturb(perturb, &p, row, k);                                                      \
      for (int j = 0; j < k; j++) x[j * n] = row[j] / p;                                        \
      return;                                                                                   \
    }                                                                                           \
    T *u1 = u0 + n, *u2 = u0 + 2 * n; /* U's diagonal and two superdiagonals */                 \
    for (int i = 0; i < 3 * n; i++) u0[i] = 0;                                                  \
    u0[0] = diag[0];                                                                            \
    u1[0] = sup[0];                                                                             \
    R max_abs_u = ABS(u0[0]) > ABS(u1[0]) ? ABS(u0[0]) : ABS(u1[0]);                            \
    R scale1 = ABS(u0[0]) + ABS(u1[0]);                                                         \
    for (int j = 0; j < k; j++) x[j * n] = rhs[j * n];                                          \
    for (int r = 0; r < n - 1; ++r) {                                                           \
      u0[r + 1] = diag[r + 1];                                                                  \
      R scale2 = ABS(sub[r + 1]) + ABS(u0[r + 1]);                                              \
      if (r < n - 2) scale2 += ABS(sup[r + 1]);                                                 \
      if (sub[r + 1] == (T)0) {                                                                 \
        scale1 = scale2;                                                                        \
        u1[r + 1] = sup[r + 1];                                                                 \
        u2[r] = 0;                                                                              \
        for (int j = 0; j < k; j++) x[r + 1 + j * n] = rhs[r + 1 + j * n];                      \
      } else {                                                                                  \
        const R piv1 = u0[r] == (T)0 ? (R)0 : ABS(u0[r]) / scale1;                              \
        const R piv2 = ABS(sub[r + 1]) / scale2;                                                \
        if (piv2 <= piv1) {                                                                     \
          scale1 = scale2;                                                                      \
          const T factor = sub[r + 1] / u0[r];                                                  \
          u0[r + 1] -= factor * u1[r];                                                          \
          u1[r + 1] = sup[r + 1];                                                               \
          u2[r] = 0;                                                                            \
          for (int j = 0; j < k; j++)                                                           \
            x[r + 1 + j * n] = rhs[r + 1 + j * n] - factor * x[r + j * n];                      \
        } else {                                                                                \
          const T factor = u0[r] / sub[r + 1];                                                  \
          const T utmp = u1[r];                                                                 \
          u0[r] = sub[r + 1];                                                                   \
          u0[r + 1] = utmp - factor * diag[r + 1];                                              \
          u1[r] = diag[r + 1];                                                                  \
          if (r < n - 2) {                                                                      \
            u2[r] = sup[r + 1];                                                                 \
            u1[r + 1] = -factor * sup[r + 1];                                                   \
          }                                                                                     \
          for (int j = 0; j < k; j++) {                                                         \
            T xr = x[r + j * n];                                                                \
            x[r + 1 + j * n] = xr - factor * rhs[r + 1 + j * n];                                \
            x[r + j * n] = rhs[r + 1 + j * n];                                                  \
          }                                                                                     \
          scale1 = ABS(u0[r + 1]) + ABS(u1[r + 1]);                                             \
        }                                                                                       \
      }                                                                                         \
      if (r < n - 2) {                                                                          \
        R a0 = ABS(u0[r]), a1 = ABS(u1[r]), a2 = ABS(u2[r]);                                    \
        if (a0 > max_abs_u) max_abs_u = a0;                                                     \
        if (a1 > max_abs_u) max_abs_u = a1;                                                     \
        if (a2 > max_abs_u) max_abs_u = a2;                                                     \
      }                                                                                         \
    }                                                                                           \
    if (ABS(u0[n - 1]) > max_abs_u) max_abs_u = ABS(u0[n - 1]);                                 \
    R perturb = R_EPS * max_abs_u;                                                              \
    T p = u0[n - 1];                                                                            \
    for (int j = 0; j < k; j++) row[j] = x[n - 1 + j * n];                                      \
    NAME##_perturb(perturb, &p, row, k);                                                        \
    for (int j = 0; j < k; j++) x[n - 1 + j * n] = row[j] * ((T)1 / p);                         \
    p = u0[n - 2];                                                                              \
    for (int j = 0; j < k; j++) row[j] = x[n - 2 + j * n] - u1[n - 2] * x[n - 1 + j * n];       \
    NAME##_perturb(copysign(perturb, REAL(p)), &p, row, k);                                     \
    for (int j = 0; j < k; j++) x[n - 2 + j * n] = row[j] * ((T)1 / p);                         \
    for (int r = n - 3; r >= 0; --r) {                                                          \
      p = u0[r];                                                                                \
      for (int j = 0; j < k; j++)                                                               \
        row[j] = x[r + j * n] - u1[r] * x[r + 1 + j * n] - u2[r] * x[r + 2 + j * n];            \
      NAME##_perturb(copysign(perturb, REAL(p)), &p, row, k);                                   \
      for (int j = 0; j < k; j++) x[r + j * n] = row[j] * ((T)1 / p);                           \
    }                                                                                           \
  }

static float real_f(float v) { return v; }
static double real_d(double v) { return v; }
static float real_c(float complex v) { return crealf(v); }
static double real_z(double complex v) { return creal(v); }

TRIDIAG_SOLVER(solve_s, float, float, fabsf, fabsf, real_f, FLT_MIN, FLT_MAX, FLT_EPSILON)
TRIDIAG_SOLVER(solve_d, double, double, fabs, fabs, real_d, DBL_MIN, DBL_MAX, DBL_EPSILON)
TRIDIAG_SOLVER(solve_c, float complex, float, cabsf, fabsf, real_c, FLT_MIN, FLT_MAX, FLT_EPSILON)
TRIDIAG_SOLVER(solve_z, double complex, double, cabs, fabs, real_z, DBL_MIN, DBL_MAX, DBL_EPSILON)

static hl_status_t run_perturbed(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(call->inst);
  hl_cc_frame_t f;
  HL_RETURN_IF_ERROR(hl_cc_frame_init(call, &f));
  hl_status_t st = NULL;
  const hl_cc_buffer_t *b = f.arg_count == 4 ? &f.args[3] : NULL;
  hl_dtype_t t = b ? b->dtype : HL_INVALID;
  if (!b || f.ret_count != 1 || b->rank < 2 ||
      (t != HL_F32 && t != HL_F64 && t != HL_C64 && t != HL_C128))
    st = HL_INVALID("%s: custom-call \"%s\" takes (dl, d, du, b) with b a f32, f64, c64 or c128 "
                    "matrix (batch dims leading) and returns x", loc, call->name);
  int64_t n = st ? 0 : b->dims[b->rank - 2], k = st ? 0 : b->dims[b->rank - 1];
  int64_t batch = st ? 0 : hl_cc_dims_product(b, 0, b->rank - 2);
  for (int i = 0; !st && i < 3; i++)
    if (f.args[i].dtype != t || f.args[i].count != batch * n)
      st = HL_INVALID("%s: custom-call \"%s\" operand %d has %lld %s elements, expected %lld %s "
                      "(one diagonal of n per batch)", loc, call->name, i,
                      (long long)f.args[i].count, hl_dtype_name(f.args[i].dtype),
                      (long long)(batch * n), hl_dtype_name(t));
  if (!st && (f.rets[0].dtype != t || f.rets[0].count != b->count))
    st = HL_INVALID("%s: custom-call \"%s\" result must have b's type and shape", loc, call->name);
  size_t es = hl_dtype_size(t);
  void *u = st ? NULL : hl_calloc((size_t)(3 * n + 1), es);
  void *row = st ? NULL : hl_calloc((size_t)(k + 1), es);
  if (!st && (!u || !row)) st = HL_OOM();
  for (int64_t i = 0; !st && i < batch; i++) {
#define PTR(buf, step) ((char *)(buf)->data + (size_t)(i * (step)) * es)
    const void *dl = PTR(&f.args[0], n), *dd = PTR(&f.args[1], n), *du = PTR(&f.args[2], n),
               *rhs = PTR(b, n * k);
    void *x = PTR(&f.rets[0], n * k);
#undef PTR
    switch (t) {
      case HL_F32: solve_s((int)n, (int)k, dl, dd, du, rhs, x, u, row); break;
      case HL_F64: solve_d((int)n, (int)k, dl, dd, du, rhs, x, u, row); break;
      case HL_C64: solve_c((int)n, (int)k, dl, dd, du, rhs, x, u, row); break;
      default: solve_z((int)n, (int)k, dl, dd, du, rhs, x, u, row); break;
    }
  }
  hl_free(u);
  hl_free(row);
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

const hl_custom_call_target_t hl_custom_calls_jax_tridiagonal[] = {
    {"tridiagonal_solve_perturbed_ffi", run_perturbed, NULL},
    {NULL, NULL, NULL},
};
