// Element-wise comparison of a result with its expectation (result_check.h).
#include "runtime/debug/result_check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"

// Mantissa bits (without the implicit one) of each floating type.
static int mantissa_bits(hl_dtype_t t) {
  switch (t) {
    case HL_F64: case HL_C128: return 52;
    case HL_F32: case HL_C64: return 23;
    case HL_F16: return 10;
    case HL_BF16: return 7;
    case HL_F8E3M4: return 4;
    case HL_F8E4M3FN: case HL_F8E4M3B11FNUZ: case HL_F8E4M3FNUZ: case HL_F8E4M3: return 3;
    case HL_F8E5M2: case HL_F8E5M2FNUZ: return 2;
    case HL_F6E2M3FN: return 3;
    case HL_F6E3M2FN: return 2;
    case HL_F4E2M1FN: return 1;
    default: return 0;
  }
}

// |got - want| for one real part (inf when only one is NaN, 0 when both are).
static double part_error(double got, double want) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want) ? 0 : INFINITY;
  if (got == want) return 0;
  return fabs(got - want);
}

static bool part_matches(double got, double want, hl_dtype_t t, const hl_tolerance_t *tol) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (got == want) return true;
  if (isinf(got) || isinf(want)) return false;
  double err = fabs(got - want);
  if (err <= tol->atol + tol->rtol * fabs(want)) return true;
  if (tol->ulp > 0) {
    int e = 0;
    frexp(want != 0 ? want : DBL_MIN, &e);  // want = f * 2^e, f in [0.5, 1)
    double ulp = ldexp(1.0, e - 1 - mantissa_bits(t));
    if (err <= tol->ulp * ulp) return true;
  }
  return false;
}

void hl_result_check_format_index(const hl_shape_t *shape, int64_t flat, char *buf, size_t cap) {
  int64_t idx[HL_MAX_RANK];
  for (int d = shape->rank - 1; d >= 0; d--) {
    int64_t dim = shape->dims[d] > 0 ? shape->dims[d] : 1;
    idx[d] = flat % dim;
    flat /= dim;
  }
  size_t used = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < shape->rank && used < cap; d++)
    used += (size_t)snprintf(buf + used, cap - used, d ? ",%lld" : "%lld", (long long)idx[d]);
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

void hl_result_leaves(const hl_literal_t *lit, const hl_literal_t **out, int *n, int cap) {
  if (lit->shape.dtype == HL_TUPLE) {
    for (int i = 0; i < lit->shape.tuple_count; i++) hl_result_leaves(lit->elements[i], out, n, cap);
    return;
  }
  if (*n < cap) out[*n] = lit;
  (*n)++;
}

static void compare_leaf(const hl_literal_t *got, const hl_literal_t *want, int leaf,
                         const hl_tolerance_t *tol, hl_result_check_stats_t *s) {
  hl_dtype_t t = got->shape.dtype;
  int64_t n = hl_literal_element_count(got);
  s->elements += n;
  bool complex = hl_dtype_is_complex(t);
  bool real = hl_dtype_is_float(t) || complex;
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    double g = 0, w = 0, err = 0;
    if (complex) {
      // Parts are adjacent floats of the element's precision.
      double gp[2], wp[2];
      for (int k = 0; k < 2; k++) {
        gp[k] = t == HL_C64 ? ((const float *)got->data)[2 * i + k]
                            : ((const double *)got->data)[2 * i + k];
        wp[k] = t == HL_C64 ? ((const float *)want->data)[2 * i + k]
                            : ((const double *)want->data)[2 * i + k];
      }
      ok = part_matches(gp[0], wp[0], t, tol) && part_matches(gp[1], wp[1], t, tol);
      double e0 = part_error(gp[0], wp[0]), e1 = part_error(gp[1], wp[1]);
      int k = e1 > e0 ? 1 : 0;
      g = gp[k];
      w = wp[k];
      err = e1 > e0 ? e1 : e0;
    } else if (real) {
      g = hl_literal_get_f64(got, i);
      w = hl_literal_get_f64(want, i);
      ok = part_matches(g, w, t, tol);
      err = part_error(g, w);
    } else if (hl_dtype_is_unsigned_int(t)) {
      uint64_t a = hl_literal_get_u64(got, i), b = hl_literal_get_u64(want, i);
      ok = a == b;
      g = (double)a;
      w = (double)b;
      err = fabs(g - w);
    } else {
      int64_t a = hl_literal_get_s64(got, i), b = hl_literal_get_s64(want, i);
      ok = a == b;
      g = (double)a;
      w = (double)b;
      err = fabs(g - w);
    }
    if (ok) continue;
    s->mismatches++;
    if (s->worst_leaf < 0 || err > s->worst_error) {
      s->worst_leaf = leaf;
      s->worst_index = i;
      s->worst_got = g;
      s->worst_want = w;
      s->worst_error = err;
    }
  }
}

hl_status_t hl_result_check(const hl_literal_t *got, hl_literal_t *const *want, int want_count,
                            const hl_tolerance_t *tol, hl_result_check_stats_t *s) {
  memset(s, 0, sizeof(*s));
  s->worst_leaf = -1;
  s->worst_index = -1;
  int n = 0;
  hl_result_leaves(got, NULL, &n, 0);
  if (n != want_count)
    return HL_INVALID("the result has %d array%s, the expectation %d", n, n == 1 ? "" : "s",
                      want_count);
  const hl_literal_t **leaves = hl_calloc((size_t)(n ? n : 1), sizeof(*leaves));
  if (!leaves) return HL_OOM();
  n = 0;
  hl_result_leaves(got, leaves, &n, want_count);
  hl_status_t st = NULL;
  for (int i = 0; i < n && !st; i++) {
    const hl_literal_t *g = leaves[i], *w = want[i];
    if (g->shape.dtype != w->shape.dtype || !hl_shape_same_dims(&g->shape, &w->shape)) {
      char expected[256];
      snprintf(expected, sizeof(expected), "%s", hl_shape_debug_string(&w->shape));
      st = HL_INVALID("result %d is %s, the expectation %s", i,
                      hl_shape_debug_string(&g->shape), expected);
      break;
    }
    if (hl_shape_is_array(&g->shape)) compare_leaf(g, w, i, tol, s);
  }
  hl_free(leaves);
  return st;
}
