#include "runtime/base/literal.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/minifloat.h"

static hl_status_t literal_alloc(const hl_shape_t *shape, bool zero, hl_literal_t **out) {
  *out = NULL;
  hl_literal_t *lit = hl_calloc(1, sizeof(*lit));
  if (!lit) return HL_OOM();
  lit->refcount = 1;
  hl_status_t st = hl_shape_copy(shape, &lit->shape);
  if (st) {
    hl_free(lit);
    return st;
  }
  if (shape->dtype == HL_TUPLE) {
    lit->elements = hl_calloc((size_t)(shape->tuple_count ? shape->tuple_count : 1),
                              sizeof(hl_literal_t *));
    if (!lit->elements) {
      hl_literal_release(lit);
      return HL_OOM();
    }
    for (int i = 0; i < shape->tuple_count; i++) {
      st = literal_alloc(&shape->tuple[i], zero, &lit->elements[i]);
      if (st) {
        hl_literal_release(lit);
        return st;
      }
    }
  } else if (hl_shape_is_array(shape)) {
    for (int i = 0; i < shape->rank; i++)
      if (shape->dims[i] < 0) {
        hl_literal_release(lit);
        return HL_INVALID("cannot allocate a literal of unbounded shape %s",
                          hl_shape_debug_string(shape));
      }
    lit->byte_size = (size_t)hl_shape_byte_size(shape);
    // Large arrays start on a cache line: whole vectors of every block then
    // fall on the same alignment, as the fusion JIT's streaming stores need.
    if (zero)
      lit->data = hl_calloc(1, lit->byte_size);
    else if (lit->byte_size >= 4096)
      lit->data = hl_malloc_aligned(lit->byte_size, 64);
    else
      lit->data = hl_malloc(lit->byte_size);
    if (!lit->data) {
      hl_literal_release(lit);
      return HL_OOM();
    }
  }
  *out = lit;
  return NULL;
}

hl_status_t hl_literal_create(const hl_shape_t *shape, hl_literal_t **out) {
  return literal_alloc(shape, true, out);
}

hl_status_t hl_literal_create_uninitialized(const hl_shape_t *shape, hl_literal_t **out) {
  return literal_alloc(shape, false, out);
}

hl_status_t hl_literal_create_tuple(hl_literal_t *const *elements, int count,
                                    hl_literal_t **out) {
  *out = NULL;
  hl_shape_t *shapes = hl_calloc((size_t)(count ? count : 1), sizeof(hl_shape_t));
  if (!shapes) return HL_OOM();
  for (int i = 0; i < count; i++) shapes[i] = elements[i]->shape;  // shallow, copied below
  hl_literal_t *lit = hl_calloc(1, sizeof(*lit));
  hl_status_t st = lit ? hl_shape_tuple(shapes, count, &lit->shape) : HL_OOM();
  hl_free(shapes);
  if (st) {
    hl_free(lit);
    return st;
  }
  lit->refcount = 1;
  lit->elements = hl_calloc((size_t)(count ? count : 1), sizeof(hl_literal_t *));
  if (!lit->elements) {
    hl_literal_release(lit);
    return HL_OOM();
  }
  for (int i = 0; i < count; i++) lit->elements[i] = hl_literal_retain(elements[i]);
  *out = lit;
  return NULL;
}

hl_status_t hl_literal_create_token(hl_literal_t **out) {
  hl_shape_t tok = hl_shape_token();
  return hl_literal_create(&tok, out);
}

hl_status_t hl_literal_clone(const hl_literal_t *src, hl_literal_t **out) {
  *out = NULL;
  if (src->shape.dtype == HL_TUPLE) {
    int n = src->shape.tuple_count;
    hl_literal_t **parts = hl_calloc((size_t)(n ? n : 1), sizeof(hl_literal_t *));
    if (!parts) return HL_OOM();
    hl_status_t st = NULL;
    for (int i = 0; i < n && !st; i++) st = hl_literal_clone(src->elements[i], &parts[i]);
    if (!st) st = hl_literal_create_tuple(parts, n, out);
    for (int i = 0; i < n; i++) hl_literal_release(parts[i]);
    hl_free(parts);
    return st;
  }
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&src->shape, out));
  if (src->byte_size) memcpy((*out)->data, src->data, src->byte_size);
  return NULL;
}

hl_literal_t *hl_literal_retain(hl_literal_t *lit) {
  if (lit) lit->refcount++;
  return lit;
}

void hl_literal_release(hl_literal_t *lit) {
  if (!lit || --lit->refcount > 0) return;
  if (lit->elements) {
    for (int i = 0; i < lit->shape.tuple_count; i++) hl_literal_release(lit->elements[i]);
    hl_free(lit->elements);
  }
  hl_free(lit->data);
  hl_shape_deinit(&lit->shape);
  hl_free(lit);
}

int64_t hl_literal_element_count(const hl_literal_t *lit) {
  return hl_shape_element_count(&lit->shape);
}

bool hl_literal_equal(const hl_literal_t *a, const hl_literal_t *b) {
  if (!hl_shape_equal(&a->shape, &b->shape)) return false;
  if (a->shape.dtype == HL_TUPLE) {
    for (int i = 0; i < a->shape.tuple_count; i++)
      if (!hl_literal_equal(a->elements[i], b->elements[i])) return false;
    return true;
  }
  return a->byte_size == b->byte_size &&
         (a->byte_size == 0 || memcmp(a->data, b->data, a->byte_size) == 0);
}

#define LOAD(T, i) (((const T *)lit->data)[i])

double hl_literal_get_f64(const hl_literal_t *lit, int64_t i) {
  switch (lit->shape.dtype) {
    case HL_PRED: return LOAD(uint8_t, i) != 0;
    case HL_S8: case HL_S4: case HL_S2: case HL_S1: return LOAD(int8_t, i);
    case HL_S16: return LOAD(int16_t, i);
    case HL_S32: return LOAD(int32_t, i);
    case HL_S64: return (double)LOAD(int64_t, i);
    case HL_U8: case HL_U4: case HL_U2: case HL_U1: return LOAD(uint8_t, i);
    case HL_U16: return LOAD(uint16_t, i);
    case HL_U32: return LOAD(uint32_t, i);
    case HL_U64: return (double)LOAD(uint64_t, i);
    case HL_F16: return hl_f16_to_f32(LOAD(uint16_t, i));
    case HL_BF16: return hl_bf16_to_f32(LOAD(uint16_t, i));
    case HL_F32: return LOAD(float, i);
    case HL_F64: return LOAD(double, i);
    case HL_C64: return LOAD(float, 2 * i);
    case HL_C128: return LOAD(double, 2 * i);
    default: return hl_minifloat_is(lit->shape.dtype)
                        ? hl_minifloat_to_f64(lit->shape.dtype, LOAD(uint8_t, i))
                        : 0;
  }
}

int64_t hl_literal_get_s64(const hl_literal_t *lit, int64_t i) {
  switch (lit->shape.dtype) {
    case HL_PRED: return LOAD(uint8_t, i) != 0;
    case HL_S8: case HL_S4: case HL_S2: case HL_S1: return LOAD(int8_t, i);
    case HL_S16: return LOAD(int16_t, i);
    case HL_S32: return LOAD(int32_t, i);
    case HL_S64: return LOAD(int64_t, i);
    case HL_U8: case HL_U4: case HL_U2: case HL_U1: return LOAD(uint8_t, i);
    case HL_U16: return LOAD(uint16_t, i);
    case HL_U32: return LOAD(uint32_t, i);
    case HL_U64: return (int64_t)LOAD(uint64_t, i);
    default: return (int64_t)hl_literal_get_f64(lit, i);
  }
}

uint64_t hl_literal_get_u64(const hl_literal_t *lit, int64_t i) {
  if (lit->shape.dtype == HL_U64) return LOAD(uint64_t, i);
  return (uint64_t)hl_literal_get_s64(lit, i);
}

#undef LOAD
#define STORE(T, i, v) (((T *)lit->data)[i] = (T)(v))

void hl_literal_set_f64(hl_literal_t *lit, int64_t i, double v) {
  switch (lit->shape.dtype) {
    case HL_PRED: STORE(uint8_t, i, v != 0); break;
    case HL_S8: STORE(int8_t, i, v); break;
    case HL_S4: case HL_S2: case HL_S1: {
      // Wrapped to the width and kept sign-extended in the byte.
      int bits = hl_dtype_bit_width(lit->shape.dtype);
      uint64_t u = (uint64_t)(int64_t)v & ((UINT64_C(1) << bits) - 1);
      uint64_t m = UINT64_C(1) << (bits - 1);
      STORE(int8_t, i, (int64_t)((u ^ m) - m));
      break;
    }
    case HL_U4: case HL_U2: case HL_U1:
      STORE(uint8_t, i, (uint64_t)(int64_t)v & ((1u << hl_dtype_bit_width(lit->shape.dtype)) - 1));
      break;
    case HL_S16: STORE(int16_t, i, v); break;
    case HL_S32: STORE(int32_t, i, v); break;
    case HL_S64: STORE(int64_t, i, v); break;
    case HL_U8: STORE(uint8_t, i, v); break;
    case HL_U16: STORE(uint16_t, i, v); break;
    case HL_U32: STORE(uint32_t, i, v); break;
    case HL_U64: STORE(uint64_t, i, v); break;
    case HL_F16: STORE(uint16_t, i, hl_f64_to_f16(v)); break;
    case HL_BF16: STORE(uint16_t, i, hl_f64_to_bf16(v)); break;
    case HL_F32: STORE(float, i, v); break;
    case HL_F64: STORE(double, i, v); break;
    case HL_C64: STORE(float, 2 * i, v); STORE(float, 2 * i + 1, 0); break;
    case HL_C128: STORE(double, 2 * i, v); STORE(double, 2 * i + 1, 0); break;
    default:
      if (hl_minifloat_is(lit->shape.dtype))
        STORE(uint8_t, i, hl_minifloat_from_f64(lit->shape.dtype, v));
      break;
  }
}
