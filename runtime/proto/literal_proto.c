// ShapeProto / LiteralProto <-> hl_shape_t / hl_literal_t.
//
// A LiteralProto holds its array data in the physical order its layout
// gives (shared/reference/HLO_FORMAT_FACTS.md §1.5), while literals in memory
// are always row-major, so decoding re-lays the elements out. Encoding writes
// row-major data under the default layout, which XLA reads back unchanged.
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "runtime/proto/proto_internal.h"
#include "runtime/proto/proto_io.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "LiteralProto byte fields are little-endian; this code copies them as-is"
#endif

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

static hl_status_t shape_from_message(const Xla__ShapeProto *m, hl_shape_t *out, int depth) {
  memset(out, 0, sizeof(*out));
  if (depth > HL_PROTO_MAX_DEPTH) return HL_INVALID("shape nested too deeply");
  int t = (int)m->element_type;
  if (t == HL_TUPLE) {
    out->dtype = HL_TUPLE;
    if (m->n_tuple_shapes == 0) return NULL;
    if (m->n_tuple_shapes > (size_t)INT32_MAX) return HL_INVALID("tuple shape too large");
    out->tuple = hl_calloc(m->n_tuple_shapes, sizeof(hl_shape_t));
    if (!out->tuple) return HL_OOM();
    out->tuple_count = (int)m->n_tuple_shapes;
    for (size_t i = 0; i < m->n_tuple_shapes; i++) {
      hl_status_t st = shape_from_message(m->tuple_shapes[i], &out->tuple[i], depth + 1);
      if (st) {
        hl_shape_deinit(out);
        return hl_status_annotate(st, "tuple element %zu", i);
      }
    }
    return NULL;
  }
  if (t == 34) return HL_UNIMPL("buffer shapes (element type BUFFER) are not supported");
  if (t == HL_F6E2M3FN || t == HL_F6E3M2FN)  // runtime-only values (dtype.h)
    return HL_INVALID("invalid element type %d", t);
  if (!hl_dtype_is_valid(t)) return HL_INVALID("invalid element type %d", t);
  out->dtype = (hl_dtype_t)t;
  if (m->n_dimensions > HL_MAX_RANK)
    return HL_INVALID("rank %zu exceeds the supported maximum of %d", m->n_dimensions,
                      HL_MAX_RANK);
  if (!hl_dtype_is_array(out->dtype) && m->n_dimensions)
    return HL_INVALID("%s shape cannot have dimensions", hl_dtype_name(out->dtype));
  if (m->n_is_dynamic_dimension && m->n_is_dynamic_dimension != m->n_dimensions)
    return HL_INVALID("is_dynamic_dimension has %zu entries for rank %zu",
                      m->n_is_dynamic_dimension, m->n_dimensions);
  out->rank = (int)m->n_dimensions;
  for (int i = 0; i < out->rank; i++) {
    int64_t d = m->dimensions[i];
    bool dynamic = m->n_is_dynamic_dimension && m->is_dynamic_dimension[i];
    if (dynamic) {
      out->dynamic_mask |= 1u << i;
      if (d == HL_PROTO_UNBOUNDED_DIM) d = -1;
      else if (d < 0) return HL_INVALID("dimension %d has negative bound %lld", i, (long long)d);
    } else if (d < 0) {
      return HL_INVALID("dimension %d has negative size %lld", i, (long long)d);
    }
    out->dims[i] = d;
  }
  // Later stages multiply dimensions (and the element size) in int64; refuse
  // shapes where that overflows, whatever zero-sized dimension follows.
  if (!hl_shape_size_fits(out))
    return HL_INVALID("dimensions of a %s shape are too large (their product overflows)",
                      hl_dtype_name(out->dtype));
  if (m->layout && hl_dtype_is_array(out->dtype))
    HL_RETURN_IF_ERROR(hl_proto_layout_from_message(m->layout, out, depth));
  return NULL;
}

hl_status_t hl_proto_shape_from_message(const Xla__ShapeProto *m, hl_shape_t *out) {
  return hl_proto_shape_from_message_at_depth(m, out, 0);
}

hl_status_t hl_proto_shape_from_message_at_depth(const Xla__ShapeProto *m, hl_shape_t *out,
                                                 int depth) {
  hl_status_t st = shape_from_message(m, out, depth);
  if (st) hl_shape_deinit(out);
  return st;
}

static hl_status_t shape_to_message(hl_proto_arena_t *a, const hl_shape_t *s, bool force_layout,
                                    Xla__ShapeProto **out) {
  *out = NULL;
  Xla__ShapeProto *m = hl_proto_arena_alloc(a, sizeof(*m));
  if (!m) return HL_OOM();
  xla__shape_proto__init(m);
  if (s->dtype == HL_F6E2M3FN || s->dtype == HL_F6E3M2FN)
    return HL_UNIMPL("element type %s has no XLA PrimitiveType; it cannot be written as an "
                     "HloProto", hl_dtype_name(s->dtype));
  m->element_type = (Xla__PrimitiveType)s->dtype;
  if (s->dtype == HL_TUPLE) {
    if (s->tuple_count > 0) {
      m->tuple_shapes = hl_proto_arena_alloc(a, (size_t)s->tuple_count * sizeof(void *));
      if (!m->tuple_shapes) return HL_OOM();
      m->n_tuple_shapes = (size_t)s->tuple_count;
      for (int i = 0; i < s->tuple_count; i++)
        HL_RETURN_IF_ERROR(shape_to_message(a, &s->tuple[i], force_layout, &m->tuple_shapes[i]));
    }
    *out = m;
    return NULL;
  }
  if (s->rank > 0) {
    m->dimensions = hl_proto_arena_alloc(a, (size_t)s->rank * sizeof(int64_t));
    if (!m->dimensions) return HL_OOM();
    m->n_dimensions = (size_t)s->rank;
    for (int i = 0; i < s->rank; i++)
      m->dimensions[i] = ((s->dynamic_mask >> i) & 1) && s->dims[i] < 0 ? HL_PROTO_UNBOUNDED_DIM
                                                                      : s->dims[i];
    if (s->dynamic_mask) {
      m->is_dynamic_dimension =
          hl_proto_arena_alloc(a, (size_t)s->rank * sizeof(protobuf_c_boolean));
      if (!m->is_dynamic_dimension) return HL_OOM();
      m->n_is_dynamic_dimension = (size_t)s->rank;
      for (int i = 0; i < s->rank; i++) m->is_dynamic_dimension[i] = (s->dynamic_mask >> i) & 1;
    }
  }
  if (hl_dtype_is_array(s->dtype) && (s->has_layout || force_layout)) {
    Xla__LayoutProto *l = hl_proto_arena_alloc(a, sizeof(*l));
    if (!l) return HL_OOM();
    xla__layout_proto__init(l);
    HL_RETURN_IF_ERROR(hl_proto_layout_to_message(a, s, l));
    m->layout = l;
  }
  *out = m;
  return NULL;
}

hl_status_t hl_proto_shape_to_message(hl_proto_arena_t *a, const hl_shape_t *s,
                                      Xla__ShapeProto **out) {
  return shape_to_message(a, s, false, out);
}

hl_status_t hl_proto_shape_to_message_with_layout(hl_proto_arena_t *a, const hl_shape_t *s,
                                                  Xla__ShapeProto **out) {
  return shape_to_message(a, s, true, out);
}

//===----------------------------------------------------------------------===//
// Literal data fields
//===----------------------------------------------------------------------===//

// The bytes field holding `t`'s data, or NULL when `t` uses a repeated field.
static ProtobufCBinaryData *bytes_field(Xla__LiteralProto *m, hl_dtype_t t) {
  switch (t) {
    case HL_S1: return &m->s1s;
    case HL_S2: return &m->s2s;
    case HL_S4: return &m->s4s;
    case HL_S8: return &m->s8s;
    case HL_U1: return &m->u1s;
    case HL_U2: return &m->u2s;
    case HL_U4: return &m->u4s;
    case HL_U8: return &m->u8s;
    case HL_S16: return &m->s16s;
    case HL_U16: return &m->u16s;
    case HL_F16: return &m->f16s;
    case HL_BF16: return &m->bf16s;
    case HL_F4E2M1FN: return &m->f4e2m1fns;
    case HL_F8E3M4: return &m->f8e3m4s;
    case HL_F8E4M3B11FNUZ: return &m->f8e4m3b11fnuzs;
    case HL_F8E4M3FN: return &m->f8e4m3fns;
    case HL_F8E4M3FNUZ: return &m->f8e4m3fnuzs;
    case HL_F8E4M3: return &m->f8e4m3s;
    case HL_F8E5M2FNUZ: return &m->f8e5m2fnuzs;
    case HL_F8E5M2: return &m->f8e5m2s;
    case HL_F8E8M0FNU: return &m->f8e8m0fnus;
    default: return NULL;
  }
}

// A repeated numeric field: its count (in scalars) and array, and how many
// scalars make one element (2 for complex).
typedef struct repeated_field {
  size_t *count;
  void **values;
  size_t scalar_size;
  int per_element;
  const char *name;
} repeated_field_t;

static bool repeated_field(Xla__LiteralProto *m, hl_dtype_t t, repeated_field_t *r) {
  switch (t) {
#define RF_(dt, field, ctype, per)                                                      \
  case dt:                                                                              \
    *r = (repeated_field_t){&m->n_##field, (void **)&m->field, sizeof(ctype), per, #field}; \
    return true;
    RF_(HL_PRED, preds, protobuf_c_boolean, 1)
    RF_(HL_S32, s32s, int32_t, 1)
    RF_(HL_S64, s64s, int64_t, 1)
    RF_(HL_U32, u32s, uint32_t, 1)
    RF_(HL_U64, u64s, uint64_t, 1)
    RF_(HL_F32, f32s, float, 1)
    RF_(HL_F64, f64s, double, 1)
    RF_(HL_C64, c64s, float, 2)
    RF_(HL_C128, c128s, double, 2)
#undef RF_
    default:
      return false;
  }
}

// Element count with overflow checks (dimensions are known non-negative).
static hl_status_t element_count(const hl_shape_t *s, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return HL_INVALID("literal of unbounded dynamic shape");
    if (s->dims[i] && n > INT64_MAX / s->dims[i]) return HL_INVALID("literal too large");
    n *= s->dims[i];
  }
  *out = n;
  return NULL;
}

static bool is_default_layout(const hl_shape_t *s) {
  for (int i = 0; i < s->rank; i++)
    if (s->minor_to_major[i] != s->rank - 1 - i) return false;
  return true;
}

// Copies `count` elements of `esize` bytes from physical order (given by the
// shape's layout) into row-major order.
static void relayout_to_row_major(const uint8_t *phys, uint8_t *out, const hl_shape_t *s,
                                  int64_t count, size_t esize) {
  if (!s->has_layout || is_default_layout(s)) {
    memcpy(out, phys, (size_t)count * esize);
    return;
  }
  int64_t strides[HL_MAX_RANK], idx[HL_MAX_RANK] = {0};
  hl_shape_strides(s, strides);
  for (int64_t p = 0; p < count; p++) {
    int64_t off = 0;
    for (int d = 0; d < s->rank; d++) off += idx[d] * strides[d];
    memcpy(out + (size_t)off * esize, phys + (size_t)p * esize, esize);
    for (int k = 0; k < s->rank; k++) {
      int64_t d = s->minor_to_major[k];
      if (++idx[d] < s->dims[d]) break;
      idx[d] = 0;
    }
  }
}

static hl_status_t array_from_message(const Xla__LiteralProto *m, const hl_shape_t *shape,
                                      hl_literal_t **out) {
  const char *layout_part = hl_layout_unimplemented_part(shape);
  if (layout_part)
    return HL_UNIMPL("literal of shape %s has %s; only dense minor_to_major literal data is "
                     "supported",
                     hl_shape_layout_debug_string(shape), layout_part);
  int64_t count = 0;
  HL_RETURN_IF_ERROR(element_count(shape, &count));
  size_t esize = hl_dtype_size(shape->dtype);
  const uint8_t *src = NULL;
  uint8_t *tmp = NULL;
  Xla__LiteralProto *mm = (Xla__LiteralProto *)m;  // field lookup only; not written
  ProtobufCBinaryData *bytes = bytes_field(mm, shape->dtype);
  repeated_field_t rf;
  if (bytes) {
    if (bytes->len / esize != (uint64_t)count || bytes->len % esize)
      return HL_INVALID("%s literal of shape %s needs %lld element%s (%lld bytes) but its "
                        "bytes field holds %zu bytes",
                        hl_dtype_name(shape->dtype), hl_shape_debug_string(shape),
                        (long long)count, hl_plural(count), (long long)count * (long long)esize,
                        bytes->len);
    src = bytes->data;
  } else if (repeated_field(mm, shape->dtype, &rf)) {
    size_t n = *rf.count;
    if (n % (size_t)rf.per_element || n / (size_t)rf.per_element != (uint64_t)count)
      return HL_INVALID("%s literal of shape %s needs %lld element%s but field %s holds %zu "
                        "value%s",
                        hl_dtype_name(shape->dtype), hl_shape_debug_string(shape),
                        (long long)count, hl_plural(count), rf.name, n,
                        hl_plural((long long)n));
    src = *rf.values;
    if (shape->dtype == HL_PRED && count > 0) {
      // protobuf_c_boolean is an int; pred elements are single bytes.
      tmp = hl_malloc((size_t)count);
      if (!tmp) return HL_OOM();
      for (int64_t i = 0; i < count; i++) tmp[i] = m->preds[i] ? 1 : 0;
      src = tmp;
    }
  } else {
    return HL_UNIMPL("literals of element type %s are not supported",
                     hl_dtype_name(shape->dtype));
  }
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_literal_create_uninitialized(shape, &lit);
  if (!st && count > 0) relayout_to_row_major(src, lit->data, shape, count, esize);
  hl_free(tmp);
  if (st) return st;
  *out = lit;
  return NULL;
}

static hl_status_t literal_from_message(const Xla__LiteralProto *m, hl_literal_t **out,
                                        int depth) {
  *out = NULL;
  if (depth > HL_PROTO_MAX_DEPTH) return HL_INVALID("literal nested too deeply");
  if (!m->shape) return HL_INVALID("literal has no shape");
  if (m->shape->element_type == XLA__PRIMITIVE_TYPE__TUPLE) {
    size_t n = m->shape->n_tuple_shapes;
    if (m->n_tuple_literals != n)
      return HL_INVALID("tuple literal has %zu element%s but its shape has %zu",
                        m->n_tuple_literals, hl_plural((long long)m->n_tuple_literals), n);
    hl_literal_t **parts = hl_calloc(n ? n : 1, sizeof(hl_literal_t *));
    if (!parts) return HL_OOM();
    hl_status_t st = NULL;
    for (size_t i = 0; i < n && !st; i++) {
      st = literal_from_message(m->tuple_literals[i], &parts[i], depth + 1);
      if (st) {
        st = hl_status_annotate(st, "tuple element %zu", i);
        break;
      }
      hl_shape_t declared;
      st = hl_proto_shape_from_message(m->shape->tuple_shapes[i], &declared);
      if (st) {
        st = hl_status_annotate(st, "tuple element %zu", i);
        break;
      }
      if (!hl_shape_equal(&declared, &parts[i]->shape)) {
        char have[256];
        snprintf(have, sizeof(have), "%s", hl_shape_debug_string(&parts[i]->shape));
        st = HL_INVALID("tuple element %zu has shape %s but the tuple shape says %s", i, have,
                        hl_shape_debug_string(&declared));
      }
      hl_shape_deinit(&declared);
    }
    if (!st) st = hl_literal_create_tuple(parts, (int)n, out);
    for (size_t i = 0; i < n; i++) hl_literal_release(parts[i]);
    hl_free(parts);
    return st;
  }
  hl_shape_t shape;
  HL_RETURN_IF_ERROR(hl_proto_shape_from_message(m->shape, &shape));
  hl_status_t st;
  if (shape.dtype == HL_TOKEN) {
    st = hl_literal_create_token(out);
  } else if (!hl_dtype_is_array(shape.dtype)) {
    st = HL_INVALID("a literal cannot have element type %s", hl_dtype_name(shape.dtype));
  } else {
    st = array_from_message(m, &shape, out);
  }
  hl_shape_deinit(&shape);
  return st;
}

hl_status_t hl_proto_literal_from_message(const Xla__LiteralProto *m, hl_literal_t **out) {
  return literal_from_message(m, out, 0);
}

hl_status_t hl_proto_literal_to_message(hl_proto_arena_t *a, const hl_literal_t *lit,
                                        Xla__LiteralProto **out) {
  *out = NULL;
  Xla__LiteralProto *m = hl_proto_arena_alloc(a, sizeof(*m));
  if (!m) return HL_OOM();
  xla__literal_proto__init(m);
  // Literals in memory are row-major, so the shape written is the default layout.
  hl_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  if (lit->shape.dtype == HL_TUPLE) {
    HL_RETURN_IF_ERROR(hl_proto_shape_to_message_with_layout(a, &lit->shape, &m->shape));
    int n = lit->shape.tuple_count;
    if (n > 0) {
      m->tuple_literals = hl_proto_arena_alloc(a, (size_t)n * sizeof(void *));
      if (!m->tuple_literals) return HL_OOM();
      m->n_tuple_literals = (size_t)n;
      for (int i = 0; i < n; i++)
        HL_RETURN_IF_ERROR(hl_proto_literal_to_message(a, lit->elements[i], &m->tuple_literals[i]));
    }
    // Tuple element shapes must say row-major like their data.
    for (size_t i = 0; i < m->n_tuple_literals; i++)
      m->shape->tuple_shapes[i] = m->tuple_literals[i]->shape;
    *out = m;
    return NULL;
  }
  shape = lit->shape;  // shallow: arrays and tokens own no children
  shape.has_layout = false;
  // The data is dense, one element per slot (sub-byte ones a byte each, as
  // XLA's literals hold them): no tiles, packing or memory space.
  shape.element_size_in_bits = 0;
  shape.memory_space = 0;
  shape.layout_ext = NULL;
  HL_RETURN_IF_ERROR(hl_proto_shape_to_message_with_layout(a, &shape, &m->shape));
  if (!hl_dtype_is_array(shape.dtype)) {
    *out = m;
    return NULL;
  }
  int64_t count = hl_literal_element_count(lit);
  ProtobufCBinaryData *bytes = bytes_field(m, shape.dtype);
  repeated_field_t rf;
  if (bytes) {
    // The message is only packed, never freed field by field, so it may
    // point at the literal's buffer.
    bytes->len = (size_t)count * hl_dtype_size(shape.dtype);
    bytes->data = count ? (uint8_t *)lit->data : NULL;
  } else if (repeated_field(m, shape.dtype, &rf)) {
    *rf.count = (size_t)count * (size_t)rf.per_element;
    if (shape.dtype == HL_PRED) {
      protobuf_c_boolean *b =
          count ? hl_proto_arena_alloc(a, (size_t)count * sizeof(protobuf_c_boolean)) : NULL;
      if (count && !b) return HL_OOM();
      for (int64_t i = 0; i < count; i++) b[i] = ((const uint8_t *)lit->data)[i] != 0;
      *rf.values = b;
    } else {
      *rf.values = count ? lit->data : NULL;
    }
  } else {
    return HL_UNIMPL("literals of element type %s cannot be encoded",
                     hl_dtype_name(shape.dtype));
  }
  *out = m;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

hl_status_t hl_proto_decode_literal(const uint8_t *data, size_t size, hl_literal_t **out) {
  *out = NULL;
  HL_RETURN_IF_ERROR_CTX(hl_proto_wire_check(data, size, &xla__literal_proto__descriptor),
                         "LiteralProto");
  Xla__LiteralProto *m = xla__literal_proto__unpack(&hl_proto_allocator, size, data);
  if (!m) return HL_INVALID("LiteralProto: malformed message (or out of memory)");
  hl_status_t st = hl_proto_literal_from_message(m, out);
  xla__literal_proto__free_unpacked(m, &hl_proto_allocator);
  return st ? hl_status_annotate(st, "LiteralProto") : NULL;
}

hl_status_t hl_proto_encode_literal(const hl_literal_t *lit, uint8_t **out_data,
                                    size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  hl_proto_arena_t *a;
  HL_RETURN_IF_ERROR(hl_proto_arena_create(&a));
  Xla__LiteralProto *m;
  hl_status_t st = hl_proto_literal_to_message(a, lit, &m);
  if (!st) st = hl_proto_pack(&m->base, out_data, out_size);
  hl_proto_arena_destroy(a);
  return st;
}
