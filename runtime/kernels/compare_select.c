// compare, select and clamp (XLA "Element-wise comparison operations",
// Select, Clamp; StableHLO compare / select / clamp).
//
// compare: comparison_type DEFAULT follows the operand type
// (hl_comparison_type_default). FLOAT is IEEE-754 quiet comparison (NaN is
// unordered: only NE holds). TOTALORDER orders floats as XLA does:
// -NaN < -Inf < -finite < -0 < +0 < +finite < +Inf < +NaN, on the bits, so
// -0 != +0 and a NaN equals a NaN with the same bits (total_order.h has the
// fnuz and f8e8m0fnu cases). SIGNED/UNSIGNED read
// integer bits as two's complement or unsigned of the operand width.
// Complex operands support EQ/NE (both parts compared as floats).
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/float_minmax.h"
#include "runtime/base/half_arrays.h"
#include "runtime/base/simd_clones.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/total_order.h"

//===----------------------------------------------------------------------===//
// compare
//===----------------------------------------------------------------------===//

// The same comparison loop for every compute type: the direction switch is
// outside the element loop.
#define HL_CMP_BLOCK_(dir, u, v, m, r)                                          \
  switch (dir) {                                                                \
    case HL_CMP_EQ: for (int64_t i = 0; i < m; i++) r[i] = u[i] == v[i]; break; \
    case HL_CMP_NE: for (int64_t i = 0; i < m; i++) r[i] = u[i] != v[i]; break; \
    case HL_CMP_GE: for (int64_t i = 0; i < m; i++) r[i] = u[i] >= v[i]; break; \
    case HL_CMP_GT: for (int64_t i = 0; i < m; i++) r[i] = u[i] > v[i]; break;  \
    case HL_CMP_LE: for (int64_t i = 0; i < m; i++) r[i] = u[i] <= v[i]; break; \
    case HL_CMP_LT: for (int64_t i = 0; i < m; i++) r[i] = u[i] < v[i]; break;  \
    default: break;                                                             \
  }

static hl_status_t compare_complex(const hl_instruction_t *inst, hl_comparison_direction_t dir,
                                   const hl_literal_t *a, const hl_literal_t *b,
                                   uint8_t *r, int64_t n) {
  if (dir != HL_CMP_EQ && dir != HL_CMP_NE)
    return HL_INVALID("%s: complex operands support only EQ and NE, not %s",
                      hl_instruction_location(inst), hl_comparison_direction_name(dir));
  bool c64 = a->shape.dtype == HL_C64;
  for (int64_t i = 0; i < 2 * n; i += 2) {
    double ar = c64 ? ((const float *)a->data)[i] : ((const double *)a->data)[i];
    double ai = c64 ? ((const float *)a->data)[i + 1] : ((const double *)a->data)[i + 1];
    double br = c64 ? ((const float *)b->data)[i] : ((const double *)b->data)[i];
    double bi = c64 ? ((const float *)b->data)[i + 1] : ((const double *)b->data)[i + 1];
    bool eq = ar == br && ai == bi;
    r[i / 2] = dir == HL_CMP_EQ ? eq : !eq;
  }
  return NULL;
}

bool hl_compare_supported(hl_comparison_direction_t dir, hl_comparison_type_t type,
                          hl_dtype_t t) {
  if (dir < HL_CMP_EQ || dir > HL_CMP_LT) return false;
  bool is_float = hl_dtype_is_float(t), is_int = hl_dtype_is_integer(t) || t == HL_PRED;
  return (type == HL_CMPTYPE_FLOAT || type == HL_CMPTYPE_TOTALORDER)
             ? is_float && hl_elem_is_real_or_int(t)
             : (type == HL_CMPTYPE_SIGNED || type == HL_CMPTYPE_UNSIGNED) && is_int;
}

// f32 FLOAT comparisons stay in float (exact, as in double).
HL_SIMD_CLONES static bool compare_f32(hl_comparison_direction_t dir, const float *restrict u,
                        const float *restrict v, uint8_t *restrict r, int64_t m) {
  HL_CMP_BLOCK_(dir, u, v, m, r)
  return true;
}

void hl_compare_array(hl_comparison_direction_t dir, hl_comparison_type_t type, hl_dtype_t t,
                      const void *a, const void *b, uint8_t *r, int64_t n) {
  if (type == HL_CMPTYPE_FLOAT && t == HL_F32 && compare_f32(dir, a, b, r, n)) return;
  if (type == HL_CMPTYPE_FLOAT && (t == HL_BF16 || t == HL_F16)) {  // widened exactly to f32
    float u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
      int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
      const uint16_t *pa = (const uint16_t *)a + base, *pb = (const uint16_t *)b + base;
      if (t == HL_BF16) hl_bf16_to_f32_array(pa, u, m), hl_bf16_to_f32_array(pb, v, m);
      else hl_f16_to_f32_array(pa, u, m), hl_f16_to_f32_array(pb, v, m);
      compare_f32(dir, u, v, r + base, m);
    }
    return;
  }
  int bits = hl_dtype_bit_width(t);
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    uint8_t *rb = r + base;
    if (type == HL_CMPTYPE_FLOAT) {
      double u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
      hl_elem_load_f64(t, a, base, m, u);
      hl_elem_load_f64(t, b, base, m, v);
      HL_CMP_BLOCK_(dir, u, v, m, rb)
    } else if (type == HL_CMPTYPE_TOTALORDER) {
      int64_t u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
      hl_total_order_keys(t, a, base, m, u);
      hl_total_order_keys(t, b, base, m, v);
      HL_CMP_BLOCK_(dir, u, v, m, rb)
    } else {
      int64_t u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
      hl_elem_load_int(t, a, base, m, u);
      hl_elem_load_int(t, b, base, m, v);
      if (type == HL_CMPTYPE_SIGNED) {
        for (int64_t i = 0; i < m; i++) {
          u[i] = hl_elem_sext((uint64_t)u[i], bits);
          v[i] = hl_elem_sext((uint64_t)v[i], bits);
        }
        HL_CMP_BLOCK_(dir, u, v, m, rb)
      } else {
        uint64_t p[HL_ELEM_BLOCK], q[HL_ELEM_BLOCK];
        for (int64_t i = 0; i < m; i++) {
          p[i] = (uint64_t)u[i] & hl_elem_mask(bits);
          q[i] = (uint64_t)v[i] & hl_elem_mask(bits);
        }
        HL_CMP_BLOCK_(dir, p, q, m, rb)
      }
    }
  }
}

hl_status_t hl_kernel_compare(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const hl_literal_t *a = operands[0], *b = operands[1];
  hl_dtype_t t = a->shape.dtype;
  if (!hl_shape_is_array(&a->shape) || !hl_shape_equal(&a->shape, &b->shape) ||
      !hl_shape_same_dims(&a->shape, &inst->shape) || inst->shape.dtype != HL_PRED)
    return HL_INVALID("%s: operands %s and %s do not match the result %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(&a->shape),
                      HL_SHAPE_STR(&b->shape), HL_SHAPE_STR(&inst->shape));
  hl_comparison_direction_t dir = inst->attrs.comparison_direction;
  if (dir < HL_CMP_EQ || dir > HL_CMP_LT)
    return HL_INVALID("%s: missing comparison direction", hl_instruction_location(inst));
  hl_comparison_type_t type = inst->attrs.comparison_type;
  if (type == HL_CMPTYPE_DEFAULT) type = hl_comparison_type_default(t);
  bool is_float = hl_dtype_is_float(t), is_int = hl_dtype_is_integer(t) || t == HL_PRED;
  bool ok = hl_dtype_is_complex(t) ? type == HL_CMPTYPE_FLOAT
            : (type == HL_CMPTYPE_FLOAT || type == HL_CMPTYPE_TOTALORDER)
                ? is_float && hl_elem_is_real_or_int(t)
                : is_int;
  if (!ok)
    return HL_INVALID("%s: comparison type %s is not supported for element type %s",
                      hl_instruction_location(inst), hl_comparison_type_name(type),
                      hl_dtype_name(t));
  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  uint8_t *r = y->data;
  int64_t n = hl_literal_element_count(y);
  if (hl_dtype_is_complex(t)) {
    hl_status_t st = compare_complex(inst, dir, a, b, r, n);
    if (st) hl_literal_release(y);
    if (!st) *out = y;
    return st;
  }
  hl_compare_array(dir, type, t, a->data, b->data, r, n);
  *out = y;
  return NULL;
}
#undef HL_CMP_BLOCK_

//===----------------------------------------------------------------------===//
// select
//===----------------------------------------------------------------------===//

#define HL_SELECT_LOOP_(T)                                                   \
  do {                                                                       \
    const T *restrict pt = on_true, *restrict pf = on_false;                 \
    T *restrict r = y;                                                       \
    for (int64_t i = 0; i < n; i++) r[i] = p[i] ? pt[i] : pf[i];             \
  } while (0)

// The clones are static and the exported function a plain call: clang 14
// emits no ifunc for a target_clones function that other files call
// through a declaration without the attribute (undefined at link time).
static HL_SIMD_CLONES void select_array(size_t es, const uint8_t *p, const void *on_true,
                                        const void *on_false, void *y, int64_t n) {
  switch (es) {
    case 1: HL_SELECT_LOOP_(uint8_t); break;
    case 2: HL_SELECT_LOOP_(uint16_t); break;
    case 4: HL_SELECT_LOOP_(uint32_t); break;
    case 8: HL_SELECT_LOOP_(uint64_t); break;
    default:
      for (int64_t i = 0; i < n; i++)
        memcpy((char *)y + (size_t)i * es,
               (const char *)(p[i] ? on_true : on_false) + (size_t)i * es, es);
  }
}

void hl_select_array(size_t es, const uint8_t *p, const void *on_true, const void *on_false,
                     void *y, int64_t n) {
  select_array(es, p, on_true, on_false, y, n);
}

// select(pred, on_true, on_false): pred is a scalar or has the operands'
// dimensions; a scalar pred may also pick between two tuples.
hl_status_t hl_kernel_select(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const hl_literal_t *pred = operands[0];
  hl_literal_t *on_true = operands[1], *on_false = operands[2];
  bool scalar_pred = pred->shape.rank == 0;
  if (pred->shape.dtype != HL_PRED ||
      (!scalar_pred && !hl_shape_same_dims(&pred->shape, &inst->shape)) ||
      !hl_shape_equal(&on_true->shape, &inst->shape) ||
      !hl_shape_equal(&on_false->shape, &inst->shape))
    return HL_INVALID("%s: operands %s, %s, %s do not fit the result %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(&pred->shape),
                      HL_SHAPE_STR(&on_true->shape),
                      HL_SHAPE_STR(&on_false->shape),
                      HL_SHAPE_STR(&inst->shape));
  if (scalar_pred) {
    *out = hl_literal_retain(((const uint8_t *)pred->data)[0] ? on_true : on_false);
    return NULL;
  }
  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  hl_select_array(hl_dtype_size(inst->shape.dtype), pred->data, on_true->data, on_false->data,
                  y->data, hl_literal_element_count(y));
  *out = y;
  return NULL;
}
#undef HL_SELECT_LOOP_

//===----------------------------------------------------------------------===//
// clamp
//===----------------------------------------------------------------------===//

// Loads a block of a clamp bound: a scalar bound is broadcast.
static void load_bound_f64(hl_dtype_t t, const void *x, bool scalar, int64_t base, int64_t m,
                           double *v) {
  if (scalar) {
    hl_elem_load_f64(t, x, 0, 1, v);
    for (int64_t i = 1; i < m; i++) v[i] = v[0];
  } else {
    hl_elem_load_f64(t, x, base, m, v);
  }
}

static void load_bound_int(hl_dtype_t t, const void *x, bool scalar, int64_t base, int64_t m,
                           int64_t *v) {
  if (scalar) {
    hl_elem_load_int(t, x, 0, 1, v);
    for (int64_t i = 1; i < m; i++) v[i] = v[0];
  } else {
    hl_elem_load_int(t, x, base, m, v);
  }
}

bool hl_clamp_supported(hl_dtype_t t) { return hl_elem_is_real_or_int(t); }

void hl_clamp_array(hl_dtype_t t, const void *lo, bool lo_scalar, const void *x, const void *hi,
                    bool hi_scalar, void *y, int64_t n) {
  int bits = hl_dtype_bit_width(t);
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    if (hl_dtype_is_float(t)) {
      double a[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK], b[HL_ELEM_BLOCK];
      load_bound_f64(t, lo, lo_scalar, base, m, a);
      hl_elem_load_f64(t, x, base, m, v);
      load_bound_f64(t, hi, hi_scalar, base, m, b);
      for (int64_t i = 0; i < m; i++) v[i] = hl_minimum_f64(hl_maximum_f64(v[i], a[i]), b[i]);
      hl_elem_store_f64(t, y, base, m, v);
    } else {
      int64_t a[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK], b[HL_ELEM_BLOCK];
      load_bound_int(t, lo, lo_scalar, base, m, a);
      hl_elem_load_int(t, x, base, m, v);
      load_bound_int(t, hi, hi_scalar, base, m, b);
      if (hl_dtype_is_signed_int(t)) {
        for (int64_t i = 0; i < m; i++) {
          int64_t r = v[i] > a[i] ? v[i] : a[i];
          v[i] = r < b[i] ? r : b[i];
        }
      } else {
        uint64_t mask = hl_elem_mask(bits);
        for (int64_t i = 0; i < m; i++) {
          uint64_t va = (uint64_t)v[i] & mask, aa = (uint64_t)a[i] & mask;
          uint64_t ba = (uint64_t)b[i] & mask;
          uint64_t r = va > aa ? va : aa;
          v[i] = (int64_t)(r < ba ? r : ba);
        }
      }
      hl_elem_store_int(t, y, base, m, v);
    }
  }
}

// clamp(min, operand, max) = minimum(maximum(operand, min), max), with min
// and max either scalars or of the operand's shape.
hl_status_t hl_kernel_clamp(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const hl_literal_t *lo = operands[0], *x = operands[1], *hi = operands[2];
  hl_dtype_t t = x->shape.dtype;
  bool fits = hl_shape_equal(&x->shape, &inst->shape) && lo->shape.dtype == t &&
              hi->shape.dtype == t &&
              (lo->shape.rank == 0 || hl_shape_same_dims(&lo->shape, &x->shape)) &&
              (hi->shape.rank == 0 || hl_shape_same_dims(&hi->shape, &x->shape));
  if (!fits)
    return HL_INVALID("%s: operands %s, %s, %s do not fit the result %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(&lo->shape),
                      HL_SHAPE_STR(&x->shape), HL_SHAPE_STR(&hi->shape),
                      HL_SHAPE_STR(&inst->shape));
  if (!hl_elem_is_real_or_int(t))
    return HL_UNIMPL("%s: clamp on element type %s is not supported",
                     hl_instruction_location(inst), hl_dtype_name(t));
  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  hl_clamp_array(t, lo->data, lo->shape.rank == 0, x->data, hi->data, hi->shape.rank == 0,
                 y->data, hl_literal_element_count(y));
  *out = y;
  return NULL;
}
