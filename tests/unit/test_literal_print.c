// Literal printing: expected strings follow XLA's Literal::ToString and
// ToStringWithoutShapeOneline (xla/literal.cc) and RoundTripFpToString
// (xla/util.cc), worked out by hand from those rules.
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/text/hlo_parser.h"
#include "test_util.h"

static hl_literal_t *make(hl_dtype_t t, int rank, const int64_t *dims, const void *data) {
  hl_shape_t s = hl_shape_array(t, rank, dims);
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_literal_create_uninitialized(&s, &lit);
  CU_ASSERT_PTR_NULL_FATAL(st);
  if (lit->byte_size && data) memcpy(lit->data, data, lit->byte_size);
  return lit;
}

// Checks both printers of `lit` and releases it.
static void expect(hl_literal_t *lit, const char *full, const char *value) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_literal_print(lit, &sb);
  if (strcmp(hl_strbuf_cstr(&sb), full) != 0) {
    fprintf(stderr, "\n  full: got '%s' want '%s'\n", hl_strbuf_cstr(&sb), full);
    CU_FAIL("hl_literal_print");
  }
  hl_strbuf_deinit(&sb);
  hl_strbuf_init(&sb);
  hl_literal_print_value(lit, &sb);
  if (strcmp(hl_strbuf_cstr(&sb), value) != 0) {
    fprintf(stderr, "\n  value: got '%s' want '%s'\n", hl_strbuf_cstr(&sb), value);
    CU_FAIL("hl_literal_print_value");
  }
  hl_strbuf_deinit(&sb);
  hl_literal_release(lit);
}

static void test_matrix(void) {
  float v[] = {1, 2, 3, 4, 5, 6};
  int64_t d[] = {2, 3};
  expect(make(HL_F32, 2, d, v), "f32[2,3] {\n  { 1, 2, 3 },\n  { 4, 5, 6 }\n}",
         "{ { 1, 2, 3 }, { 4, 5, 6 } }");
}

static void test_scalars_and_vectors(void) {
  int32_t s = 42;
  expect(make(HL_S32, 0, NULL, &s), "s32[] 42", "42");
  uint8_t t = 1, f = 0;
  expect(make(HL_PRED, 0, NULL, &t), "pred[] true", "true");
  expect(make(HL_PRED, 0, NULL, &f), "pred[] false", "false");
  uint8_t p[] = {1, 0, 1};
  int64_t d3[] = {3};
  expect(make(HL_PRED, 1, d3, p), "pred[3] {1, 0, 1}", "{1, 0, 1}");
  int32_t v[] = {-1, 0, 7};
  expect(make(HL_S32, 1, d3, v), "s32[3] {-1, 0, 7}", "{-1, 0, 7}");
  int64_t one[] = {1};
  expect(make(HL_S32, 1, one, v), "s32[1] {-1}", "{-1}");
}

static void test_integer_ranges(void) {
  int64_t d2[] = {2};
  uint64_t u64[] = {UINT64_MAX, 0};
  expect(make(HL_U64, 1, d2, u64), "u64[2] {18446744073709551615, 0}",
         "{18446744073709551615, 0}");
  int64_t s64[] = {INT64_MIN, INT64_MAX};
  expect(make(HL_S64, 1, d2, s64), "s64[2] {-9223372036854775808, 9223372036854775807}",
         "{-9223372036854775808, 9223372036854775807}");
  int8_t s8[] = {-128, 127};
  expect(make(HL_S8, 1, d2, s8), "s8[2] {-128, 127}", "{-128, 127}");
  uint8_t u8[] = {255, 0};
  expect(make(HL_U8, 1, d2, u8), "u8[2] {255, 0}", "{255, 0}");
  int16_t s16[] = {-32768, 32767};
  expect(make(HL_S16, 1, d2, s16), "s16[2] {-32768, 32767}", "{-32768, 32767}");
  uint16_t u16[] = {65535, 1};
  expect(make(HL_U16, 1, d2, u16), "u16[2] {65535, 1}", "{65535, 1}");
  uint32_t u32[] = {4294967295u, 2};
  expect(make(HL_U32, 1, d2, u32), "u32[2] {4294967295, 2}", "{4294967295, 2}");
  int8_t s4[] = {-8, 7};
  expect(make(HL_S4, 1, d2, s4), "s4[2] {-8, 7}", "{-8, 7}");
  uint8_t u4[] = {15, 3};
  expect(make(HL_U4, 1, d2, u4), "u4[2] {15, 3}", "{15, 3}");
}

static float f32_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static void test_f32_special_values(void) {
  // 16777216 needs 8 digits: "%.6g" gives 1.67772e+07, which reads back wrong.
  float v[] = {INFINITY, -INFINITY, f32_bits(0x7fc00000u), -0.0f, 0.1f, 16777216.0f,
               f32_bits(0x00000001u), f32_bits(0x7f7fffffu), f32_bits(0x7f800001u),
               f32_bits(0xffc00000u)};
  int64_t d[] = {10};
  expect(make(HL_F32, 1, d, v),
         "f32[10] {inf, -inf, nan, -0, 0.1, 16777216, 1.4013e-45, 3.40282347e+38, "
         "nan(0x1), -nan}",
         "{inf, -inf, nan, -0, 0.1, 16777216, 1.4013e-45, 3.40282347e+38, nan(0x1), -nan}");
  float one = 1.5f;
  expect(make(HL_F32, 0, NULL, &one), "f32[] 1.5", "1.5");
  float big = 1e6f;
  expect(make(HL_F32, 0, NULL, &big), "f32[] 1e+06", "1e+06");
}

static void test_f64(void) {
  double v[] = {0.1, 1.0 / 3.0, -2.5, 1e300};
  int64_t d[] = {4};
  expect(make(HL_F64, 1, d, v), "f64[4] {0.1, 0.33333333333333331, -2.5, 1e+300}",
         "{0.1, 0.33333333333333331, -2.5, 1e+300}");
}

static void test_f16_bf16(void) {
  // f16: 1, 0.333251953125, inf, -inf, 2^-24, 65504, quiet NaN, NaN payload 1.
  uint16_t h[] = {0x3c00, 0x3555, 0x7c00, 0xfc00, 0x0001, 0x7bff, 0x7e00, 0x7c01};
  int64_t d[] = {8};
  expect(make(HL_F16, 1, d, h),
         "f16[8] {1, 0.33325, inf, -inf, 5.9605e-08, 65504, nan, nan(0x1)}",
         "{1, 0.33325, inf, -inf, 5.9605e-08, 65504, nan, nan(0x1)}");
  // bf16: 1, 0.333984375, inf, -0, -nan.
  uint16_t b[] = {0x3f80, 0x3eab, 0x7f80, 0x8000, 0xffc0};
  int64_t d5[] = {5};
  expect(make(HL_BF16, 1, d5, b), "bf16[5] {1, 0.334, inf, -0, -nan}",
         "{1, 0.334, inf, -0, -nan}");
}

static void test_f8(void) {
  // e4m3fn: 0x38 = 1, 0x7e = 1.75 * 2^8 = 448, 0x7f = NaN, 0x01 = 2^-9.
  uint8_t a[] = {0x38, 0x7e, 0x7f, 0x01};
  int64_t d4[] = {4};
  expect(make(HL_F8E4M3FN, 1, d4, a), "f8e4m3fn[4] {1, 448, nan, 0.00195}",
         "{1, 448, nan, 0.00195}");
  // e5m2: 0x3c = 1, 0x7b = 1.75 * 2^15 = 57344, 0x7c = inf, 0x7d = NaN payload 1.
  uint8_t b[] = {0x3c, 0x7b, 0x7c, 0x7d};
  expect(make(HL_F8E5M2, 1, d4, b), "f8e5m2[4] {1, 5.7e+04, inf, nan(0x1)}",
         "{1, 5.7e+04, inf, nan(0x1)}");
  // e8m0fnu: 2^(e-127).
  uint8_t c[] = {0x7f, 0x80};
  int64_t d2[] = {2};
  expect(make(HL_F8E8M0FNU, 1, d2, c), "f8e8m0fnu[2] {1, 2}", "{1, 2}");
}

static void test_complex(void) {
  float c[] = {1, 2, 3, -4};
  int64_t d[] = {2};
  expect(make(HL_C64, 1, d, c), "c64[2] {(1, 2), (3, -4)}", "{(1, 2), (3, -4)}");
  double z[] = {0.5, INFINITY};
  expect(make(HL_C128, 0, NULL, z), "c128[] (0.5, inf)", "(0.5, inf)");
}

static void test_shapes(void) {
  int64_t d0[] = {0};
  expect(make(HL_F32, 1, d0, NULL), "f32[0] {}", "{}");
  int64_t d20[] = {2, 0};
  expect(make(HL_F32, 2, d20, NULL), "f32[2,0] {\n  {},\n  {}\n}", "{ {}, {} }");
  // A huge outer dimension before the zero prints the single "{}" XLA's
  // parser also reads, not 10^12 empty blocks (this used to loop and grow).
  int64_t dhuge[] = {1000000000000LL, 0};
  expect(make(HL_F32, 2, dhuge, NULL), "f32[1000000000000,0] {}", "{}");
  int64_t dmany[] = {4, 70000, 0, 3};
  expect(make(HL_S8, 4, dmany, NULL), "s8[4,70000,0,3] {}", "{}");
  float five = 5;
  int64_t d11[] = {1, 1};
  expect(make(HL_F32, 2, d11, &five), "f32[1,1] {\n  {5}\n}", "{ {5} }");
  int32_t v[] = {1, 2, 3, 4};
  int64_t d212[] = {2, 1, 2};
  expect(make(HL_S32, 3, d212, v), "s32[2,1,2] {\n{\n  { 1, 2 }\n},\n{\n  { 3, 4 }\n}\n}",
         "{ { { 1, 2 } }, { { 3, 4 } } }");
  int64_t d1111[] = {1, 1, 1, 1};
  expect(make(HL_S32, 4, d1111, v), "s32[1,1,1,1] {\n{ /*i0=0*/\n{ /*i1=0*/\n  {1}\n}\n}\n}",
         "{ { /*i0=0*/ { /*i1=0*/ {1} } } }");
}

static void test_tuple(void) {
  float one = 1;
  int32_t v[] = {1, 2};
  int64_t d2[] = {2};
  hl_literal_t *e[2] = {make(HL_F32, 0, NULL, &one), make(HL_S32, 1, d2, v)};
  hl_literal_t *t = NULL;
  HL_ASSERT_OK(hl_literal_create_tuple(e, 2, &t));
  hl_literal_release(e[0]);
  hl_literal_release(e[1]);
  expect(t, "(\nf32[] 1,\ns32[2] {1, 2}\n)", "( 1, {1, 2} )");
}

static void test_element(void) {
  double z[] = {-0.0, 2};
  int64_t d[] = {2};
  hl_literal_t *lit = make(HL_F64, 1, d, z);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_literal_print_element(lit, 0, &sb);
  hl_strbuf_append_char(&sb, '|');
  hl_literal_print_element(lit, 1, &sb);
  hl_strbuf_append_char(&sb, '|');
  hl_literal_print_element(lit, 2, &sb);  // out of range: no crash
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "-0|2|?");
  hl_strbuf_deinit(&sb);
  hl_literal_release(lit);
}


// print_value -> hl_parse_literal must give back identical bits.
static void expect_round_trip(hl_literal_t *lit) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_literal_print_value(lit, &sb);
  char *text = hl_strbuf_take(&sb);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  hl_literal_t *back = NULL;
  hl_status_t st = hl_parse_literal(text, &lit->shape, &back);
  if (st) {
    fprintf(stderr, "\n  %s: parse failed: %s\n", hl_shape_debug_string(&lit->shape),
            hl_status_message(st));
    hl_status_free(st);
    CU_FAIL("round trip parse");
  } else if (!hl_literal_equal(lit, back)) {
    int64_t n = hl_literal_element_count(lit);
    size_t es = hl_dtype_size(lit->shape.dtype);
    for (int64_t i = 0; i < n; i++) {
      if (memcmp((char *)lit->data + i * es, (char *)back->data + i * es, es) != 0) {
        hl_strbuf_t e;
        hl_strbuf_init(&e);
        hl_literal_print_element(lit, i, &e);
        fprintf(stderr, "\n  %s element %lld ('%s') changed\n",
                hl_shape_debug_string(&lit->shape), (long long)i, hl_strbuf_cstr(&e));
        hl_strbuf_deinit(&e);
        break;
      }
    }
    CU_FAIL("round trip bits");
  }
  hl_literal_release(back);
  hl_free(text);
  hl_literal_release(lit);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {  // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

// Every bit pattern of the 8- and 16-bit types, random and special patterns
// of the wider ones, and integer extremes.
static void test_round_trip(void) {
  static const hl_dtype_t narrow[] = {HL_F16, HL_BF16, HL_F8E5M2, HL_F8E4M3FN, HL_F8E4M3,
                                      HL_F8E3M4, HL_F8E4M3B11FNUZ, HL_F8E5M2FNUZ,
                                      HL_F8E4M3FNUZ};
  for (size_t t = 0; t < sizeof(narrow) / sizeof(narrow[0]); t++) {
    size_t size = hl_dtype_size(narrow[t]);
    int64_t n = size == 2 ? 65536 : 256;
    hl_shape_t s = hl_shape_array(narrow[t], 1, &n);
    hl_literal_t *lit = NULL;
    HL_ASSERT_OK(hl_literal_create_uninitialized(&s, &lit));
    for (int64_t i = 0; i < n; i++) {
      if (size == 2)
        ((uint16_t *)lit->data)[i] = (uint16_t)i;
      else
        ((uint8_t *)lit->data)[i] = (uint8_t)i;
    }
    expect_round_trip(lit);
  }
  // f4e2m1fn has 16 patterns (one per byte); f8e8m0fnu all 256.
  uint8_t nibbles[16], e8m0[256];
  for (int i = 0; i < 256; i++) {
    e8m0[i] = (uint8_t)i;
    if (i < 16) nibbles[i] = (uint8_t)i;
  }
  int64_t n16 = 16, n256 = 256;
  expect_round_trip(make(HL_F4E2M1FN, 1, &n16, nibbles));
  expect_round_trip(make(HL_F8E8M0FNU, 1, &n256, e8m0));
  enum { N = 4096 };
  int64_t n = N;
  hl_shape_t sf32 = hl_shape_array(HL_F32, 1, &n), sf64 = hl_shape_array(HL_F64, 1, &n);
  hl_shape_t sc = hl_shape_array(HL_C64, 1, &n);
  hl_literal_t *f = NULL, *d = NULL, *c = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&sf32, &f));
  HL_ASSERT_OK(hl_literal_create_uninitialized(&sf64, &d));
  HL_ASSERT_OK(hl_literal_create_uninitialized(&sc, &c));
  static const uint32_t f_special[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                       0xffc00000u, 0x7f800001u, 0x7fffffffu, 1, 0x807fffffu,
                                       0x7f7fffffu, 0x00800000u, 0x3f800000u, 0x3dcccccdu};
  static const uint64_t d_special[] = {0, 0x8000000000000000ull, 0x7ff0000000000000ull,
                                       0x7ff8000000000000ull, 0xfff8000000000000ull,
                                       0x7ff0000000000001ull, 1, 0x7fefffffffffffffull,
                                       0x3fb999999999999aull};
  for (int i = 0; i < N; i++) {
    uint64_t r = next_random();
    uint32_t fb = i < (int)(sizeof(f_special) / 4) ? f_special[i] : (uint32_t)r;
    uint64_t db = i < (int)(sizeof(d_special) / 8) ? d_special[i] : r;
    memcpy((uint32_t *)f->data + i, &fb, 4);
    memcpy((uint64_t *)d->data + i, &db, 8);
    uint32_t cb[2] = {(uint32_t)r, (uint32_t)(r >> 32)};
    memcpy((uint32_t *)c->data + 2 * i, cb, 8);
  }
  expect_round_trip(f);
  expect_round_trip(d);
  expect_round_trip(c);

  int64_t two = 2;
  uint64_t u64[] = {UINT64_MAX, 0};
  expect_round_trip(make(HL_U64, 1, &two, u64));
  int64_t s64[] = {INT64_MIN, INT64_MAX};
  expect_round_trip(make(HL_S64, 1, &two, s64));
  int8_t s4[] = {-8, 7};
  expect_round_trip(make(HL_S4, 1, &two, s4));
  uint8_t pred[] = {1, 0};
  expect_round_trip(make(HL_PRED, 1, &two, pred));
  expect_round_trip(make(HL_PRED, 0, NULL, pred));
  int32_t v[] = {1, 2, 3, 4, 5, 6};
  int64_t d1111[] = {1, 2, 1, 3};
  expect_round_trip(make(HL_S32, 4, d1111, v));
  int64_t d20[] = {2, 0};
  expect_round_trip(make(HL_F32, 2, d20, NULL));
  double z[] = {-0.0, 1e-310};
  expect_round_trip(make(HL_C128, 0, NULL, z));

  float one = 1;
  hl_literal_t *e[2] = {make(HL_F32, 0, NULL, &one), make(HL_S32, 1, &two, v)};
  hl_literal_t *t = NULL;
  HL_ASSERT_OK(hl_literal_create_tuple(e, 2, &t));
  hl_literal_release(e[0]);
  hl_literal_release(e[1]);
  expect_round_trip(t);
}

static CU_TestInfo tests[] = {
    {"matrix", test_matrix},
    {"scalars_and_vectors", test_scalars_and_vectors},
    {"integer_ranges", test_integer_ranges},
    {"f32_special_values", test_f32_special_values},
    {"f64", test_f64},
    {"f16_bf16", test_f16_bf16},
    {"f8", test_f8},
    {"complex", test_complex},
    {"shapes", test_shapes},
    {"tuple", test_tuple},
    {"element", test_element},
    {"round_trip", test_round_trip},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("literal_print", tests)
