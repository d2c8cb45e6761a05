// LiteralProto <-> literal (runtime/proto/literal_proto.c). Re-layout
// expectations were computed with numpy (reshape to the physical dim order,
// transpose back to logical order); field choices follow the facts sheet §1.5.
// hl-test-libs: hl_proto
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.pb-c.h"
#include "runtime/base/alloc.h"
#include "runtime/proto/proto_io.h"
#include "test_util.h"

static uint8_t *pack_literal(const Xla__LiteralProto *m, size_t *n) {
  *n = xla__literal_proto__get_packed_size(m);
  uint8_t *b = malloc(*n ? *n : 1);
  xla__literal_proto__pack(m, b);
  return b;
}

static hl_status_t decode(const Xla__LiteralProto *m, hl_literal_t **out) {
  size_t n;
  uint8_t *b = pack_literal(m, &n);
  hl_status_t st = hl_proto_decode_literal(b, n, out);
  free(b);
  return st;
}

// A shape message with optional layout (m2m == NULL: no layout).
typedef struct shape_buf {
  Xla__ShapeProto shape;
  Xla__LayoutProto layout;
  int64_t dims[4], m2m[4];
} shape_buf_t;

static Xla__ShapeProto *make_shape(shape_buf_t *s, Xla__PrimitiveType t, int rank,
                                   const int64_t *dims, const int64_t *m2m) {
  xla__shape_proto__init(&s->shape);
  xla__layout_proto__init(&s->layout);
  s->shape.element_type = t;
  s->shape.n_dimensions = (size_t)rank;
  s->shape.dimensions = s->dims;
  for (int i = 0; i < rank; i++) s->dims[i] = dims[i];
  if (m2m) {
    for (int i = 0; i < rank; i++) s->m2m[i] = m2m[i];
    s->layout.n_minor_to_major = (size_t)rank;
    s->layout.minor_to_major = s->m2m;
    s->shape.layout = &s->layout;
  }
  return &s->shape;
}

static void test_column_major_s32_and_s16(void) {
  shape_buf_t sb;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  int32_t phys[6] = {10, 40, 20, 50, 30, 60};  // 2x3 column-major
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__S32, 2, (int64_t[]){2, 3}, (int64_t[]){0, 1});
  m.n_s32s = 6;
  m.s32s = phys;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&m, &l));
  int expect[6] = {10, 20, 30, 40, 50, 60};
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(l, i), expect[i]);
  hl_literal_release(l);

  // Same through a bytes field (2-byte little-endian elements).
  Xla__LiteralProto b = XLA__LITERAL_PROTO__INIT;
  uint8_t bytes[12];
  for (int i = 0; i < 6; i++) {
    bytes[2 * i] = (uint8_t)(phys[i] & 0xff);
    bytes[2 * i + 1] = (uint8_t)(phys[i] >> 8);
  }
  b.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__S16, 2, (int64_t[]){2, 3}, (int64_t[]){0, 1});
  b.s16s.len = 12;
  b.s16s.data = bytes;
  HL_ASSERT_OK(decode(&b, &l));
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(l, i), expect[i]);
  hl_literal_release(l);
}

static void test_rank3_permuted_layout(void) {
  shape_buf_t sb;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  int64_t phys[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__S64, 3, (int64_t[]){2, 2, 2},
                       (int64_t[]){0, 2, 1});
  m.n_s64s = 8;
  m.s64s = phys;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&m, &l));
  int64_t expect[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(l, i), expect[i]);
  hl_literal_release(l);
}

static void test_missing_layout_is_row_major(void) {
  shape_buf_t sb;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  float v[4] = {1, 2, 3, 4};
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__F32, 2, (int64_t[]){2, 2}, NULL);
  m.n_f32s = 4;
  m.f32s = v;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&m, &l));
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 1), 2.0);
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 2), 3.0);
  hl_literal_release(l);
}

static void test_errors(void) {
  shape_buf_t sb;
  hl_literal_t *l = NULL;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  float v[5] = {1, 2, 3, 4, 5};
  m.n_f32s = 3;
  m.f32s = v;
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "no shape");
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__F32, 2, (int64_t[]){2, 2}, (int64_t[]){1, 0});
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "needs 4 elements but field f32s holds 3");
  m.n_f32s = 5;
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "needs 4 elements");
  m.n_f32s = 4;
  sb.m2m[1] = 1;  // {1,1}
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "not a permutation");
  sb.layout.n_minor_to_major = 1;
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "not a permutation");
  // bytes field of the wrong length (f16 needs 2 bytes each)
  Xla__LiteralProto h = XLA__LITERAL_PROTO__INIT;
  uint8_t raw[3] = {0, 0, 0};
  h.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__F16, 1, (int64_t[]){2}, (int64_t[]){0});
  h.f16s.len = 3;
  h.f16s.data = raw;
  HL_ASSERT_ERROR_CONTAINS(decode(&h, &l), "needs 2 elements (4 bytes)");
  // Data in the wrong field: count check fails.
  h.f16s.len = 0;
  h.bf16s.len = 3;
  h.bf16s.data = raw;
  HL_ASSERT_ERROR_CONTAINS(decode(&h, &l), "holds 0 bytes");
  // Opaque and invalid types.
  Xla__LiteralProto o = XLA__LITERAL_PROTO__INIT;
  o.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__OPAQUE_TYPE, 0, NULL, NULL);
  HL_ASSERT_ERROR_CONTAINS(decode(&o, &l), "cannot have element type opaque");
  o.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__PRIMITIVE_TYPE_INVALID, 0, NULL, NULL);
  HL_ASSERT_ERROR_CONTAINS(decode(&o, &l), "invalid element type 0");
  // Not a message.
  HL_ASSERT_ERROR_CONTAINS(hl_proto_decode_literal((const uint8_t *)"\x0a\x05\x10", 3, &l),
                           "runs past the end");
  CU_ASSERT_PTR_NULL(l);
}

// Encodes `lit`, checks the bytes land in the proto field named by the facts
// sheet (via protobuf-c's unpacker), decodes and compares.
static void round_trip(hl_literal_t *lit, size_t (*count_in_field)(const Xla__LiteralProto *),
                       size_t expect_count) {
  uint8_t *d;
  size_t n;
  HL_ASSERT_OK(hl_proto_encode_literal(lit, &d, &n));
  Xla__LiteralProto *m = xla__literal_proto__unpack(NULL, n, d);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(count_in_field(m), expect_count);
  if (lit->shape.rank > 0) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(m->shape->layout);
    for (int i = 0; i < lit->shape.rank; i++)
      CU_ASSERT_EQUAL(m->shape->layout->minor_to_major[i], lit->shape.rank - 1 - i);
  }
  xla__literal_proto__free_unpacked(m, NULL);
  hl_literal_t *back = NULL;
  HL_ASSERT_OK(hl_proto_decode_literal(d, n, &back));
  CU_ASSERT(hl_literal_equal(lit, back));
  // Every truncation fails cleanly (the last field always ends the message).
  for (size_t k = 1; k < n; k++) {
    uint8_t *cut = malloc(k);
    memcpy(cut, d, k);
    hl_literal_t *t = NULL;
    hl_status_t st = hl_proto_decode_literal(cut, k, &t);
    if (st) hl_status_free(st);
    else hl_literal_release(t);  // a prefix may end at a field boundary
    free(cut);
  }
  hl_literal_release(back);
  hl_free(d);
}

#define FIELD_LEN(f) \
  static size_t len_##f(const Xla__LiteralProto *m) { return m->f.len; }
#define FIELD_N(f) \
  static size_t n_##f(const Xla__LiteralProto *m) { return m->n_##f; }
FIELD_LEN(s8s) FIELD_LEN(u8s) FIELD_LEN(s16s) FIELD_LEN(u16s) FIELD_LEN(f16s) FIELD_LEN(bf16s)
FIELD_LEN(f8e5m2s) FIELD_LEN(f8e4m3fns) FIELD_LEN(s4s) FIELD_LEN(u4s) FIELD_LEN(f8e4m3b11fnuzs)
FIELD_LEN(f8e5m2fnuzs) FIELD_LEN(f8e4m3fnuzs) FIELD_LEN(s2s) FIELD_LEN(u2s) FIELD_LEN(f8e4m3s)
FIELD_LEN(f8e3m4s) FIELD_LEN(s1s) FIELD_LEN(u1s) FIELD_LEN(f4e2m1fns) FIELD_LEN(f8e8m0fnus)
FIELD_N(preds) FIELD_N(s32s) FIELD_N(s64s) FIELD_N(u32s) FIELD_N(u64s) FIELD_N(f32s)
FIELD_N(f64s) FIELD_N(c64s) FIELD_N(c128s)

static void test_every_dtype_round_trips(void) {
  static const struct {
    hl_dtype_t t;
    size_t (*field)(const Xla__LiteralProto *);
    int per_element;  // count in the field per element (bytes, or 2 for complex)
  } cases[] = {
      {HL_S8, len_s8s, 1},       {HL_U8, len_u8s, 1},
      {HL_S16, len_s16s, 2},     {HL_U16, len_u16s, 2},
      {HL_F16, len_f16s, 2},     {HL_BF16, len_bf16s, 2},
      {HL_F8E5M2, len_f8e5m2s, 1}, {HL_F8E4M3FN, len_f8e4m3fns, 1},
      {HL_S4, len_s4s, 1},       {HL_U4, len_u4s, 1},
      {HL_F8E4M3B11FNUZ, len_f8e4m3b11fnuzs, 1}, {HL_F8E5M2FNUZ, len_f8e5m2fnuzs, 1},
      {HL_F8E4M3FNUZ, len_f8e4m3fnuzs, 1}, {HL_S2, len_s2s, 1},
      {HL_U2, len_u2s, 1},       {HL_F8E4M3, len_f8e4m3s, 1},
      {HL_F8E3M4, len_f8e3m4s, 1}, {HL_S1, len_s1s, 1},
      {HL_U1, len_u1s, 1},       {HL_F4E2M1FN, len_f4e2m1fns, 1},
      {HL_F8E8M0FNU, len_f8e8m0fnus, 1},
      {HL_PRED, n_preds, 1},     {HL_S32, n_s32s, 1},
      {HL_S64, n_s64s, 1},       {HL_U32, n_u32s, 1},
      {HL_U64, n_u64s, 1},       {HL_F32, n_f32s, 1},
      {HL_F64, n_f64s, 1},       {HL_C64, n_c64s, 2},
      {HL_C128, n_c128s, 2},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    hl_shape_t s = hl_shape_array(cases[c].t, 2, (int64_t[]){2, 3});
    hl_literal_t *lit;
    HL_ASSERT_OK(hl_literal_create(&s, &lit));
    uint8_t *bytes = lit->data;
    for (size_t i = 0; i < lit->byte_size; i++) bytes[i] = (uint8_t)(i * 37 + 1);
    if (cases[c].t == HL_PRED)
      for (size_t i = 0; i < lit->byte_size; i++) bytes[i] = (uint8_t)(i % 2);
    round_trip(lit, cases[c].field, 6 * (size_t)cases[c].per_element);
    hl_literal_release(lit);
  }
  // A scalar keeps an (empty) layout and one element.
  hl_shape_t s = hl_shape_scalar(HL_S32);
  hl_literal_t *lit;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  ((int32_t *)lit->data)[0] = -7;
  round_trip(lit, n_s32s, 1);
  hl_literal_release(lit);
}

static void test_complex_interleaving(void) {
  shape_buf_t sb;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  double v[4] = {1.5, -2, 3, 4.25};
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__C128, 1, (int64_t[]){2}, (int64_t[]){0});
  m.n_c128s = 4;
  m.c128s = v;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&m, &l));
  const double *d = l->data;
  CU_ASSERT(d[0] == 1.5 && d[1] == -2 && d[2] == 3 && d[3] == 4.25);
  hl_literal_release(l);
  m.n_c128s = 3;  // half an element
  HL_ASSERT_ERROR_CONTAINS(decode(&m, &l), "needs 2 elements");
}

static void test_tuples_and_tokens(void) {
  shape_buf_t s0, s1, st;
  Xla__LiteralProto e0 = XLA__LITERAL_PROTO__INIT, e1 = XLA__LITERAL_PROTO__INIT;
  Xla__LiteralProto t = XLA__LITERAL_PROTO__INIT;
  int32_t a[2] = {5, 6};
  e0.shape = make_shape(&s0, XLA__PRIMITIVE_TYPE__S32, 1, (int64_t[]){2}, (int64_t[]){0});
  e0.n_s32s = 2;
  e0.s32s = a;
  e1.shape = make_shape(&s1, XLA__PRIMITIVE_TYPE__TOKEN, 0, NULL, NULL);
  Xla__ShapeProto *tsh[2] = {e0.shape, e1.shape};
  Xla__LiteralProto *parts[2] = {&e0, &e1};
  t.shape = make_shape(&st, XLA__PRIMITIVE_TYPE__TUPLE, 0, NULL, NULL);
  st.shape.n_tuple_shapes = 2;
  st.shape.tuple_shapes = tsh;
  t.n_tuple_literals = 2;
  t.tuple_literals = parts;
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&t, &l));
  CU_ASSERT_EQUAL(l->shape.dtype, HL_TUPLE);
  CU_ASSERT_EQUAL_FATAL(l->shape.tuple_count, 2);
  CU_ASSERT_EQUAL(hl_literal_get_s64(l->elements[0], 1), 6);
  CU_ASSERT_EQUAL(l->elements[1]->shape.dtype, HL_TOKEN);
  // Round trip through the encoder.
  uint8_t *d;
  size_t n;
  HL_ASSERT_OK(hl_proto_encode_literal(l, &d, &n));
  hl_literal_t *back = NULL;
  HL_ASSERT_OK(hl_proto_decode_literal(d, n, &back));
  CU_ASSERT(hl_literal_equal(l, back));
  hl_literal_release(back);
  hl_free(d);
  hl_literal_release(l);
  // Element count mismatch, and element shape mismatch.
  t.n_tuple_literals = 1;
  HL_ASSERT_ERROR_CONTAINS(decode(&t, &l), "tuple literal has 1 element but its shape has 2");
  t.n_tuple_literals = 2;
  tsh[1] = e0.shape;
  HL_ASSERT_ERROR_CONTAINS(decode(&t, &l), "tuple element 1");
}

static void test_encode_allocation_failures(void) {
  hl_shape_t s = hl_shape_array(HL_PRED, 1, (int64_t[]){5});
  hl_literal_t *lit;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  bool ok = false;
  for (long k = 0; k < 100 && !ok; k++) {
    uint8_t *d = NULL;
    size_t n;
    hl_alloc_fail_after(k);
    hl_status_t st = hl_proto_encode_literal(lit, &d, &n);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      hl_status_free(st);
    } else {
      ok = true;
      hl_literal_t *back = NULL;
      HL_ASSERT_OK(hl_proto_decode_literal(d, n, &back));
      CU_ASSERT(hl_literal_equal(lit, back));
      hl_literal_release(back);
      hl_free(d);
    }
  }
  CU_ASSERT(ok);
  hl_literal_release(lit);
}

static void test_zero_elements(void) {
  shape_buf_t sb;
  Xla__LiteralProto m = XLA__LITERAL_PROTO__INIT;
  m.shape = make_shape(&sb, XLA__PRIMITIVE_TYPE__PRED, 2, (int64_t[]){0, 3}, (int64_t[]){0, 1});
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(decode(&m, &l));
  CU_ASSERT_EQUAL(hl_literal_element_count(l), 0);
  CU_ASSERT_EQUAL(l->shape.dims[1], 3);
  round_trip(l, n_preds, 0);
  hl_literal_release(l);
}

static CU_TestInfo tests[] = {
    {"zero_elements", test_zero_elements},
    {"column_major_s32_and_s16", test_column_major_s32_and_s16},
    {"rank3_permuted_layout", test_rank3_permuted_layout},
    {"missing_layout_is_row_major", test_missing_layout_is_row_major},
    {"errors", test_errors},
    {"every_dtype_round_trips", test_every_dtype_round_trips},
    {"complex_interleaving", test_complex_interleaving},
    {"tuples_and_tokens", test_tuples_and_tokens},
    {"encode_allocation_failures", test_encode_allocation_failures},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("literal_proto", tests)
