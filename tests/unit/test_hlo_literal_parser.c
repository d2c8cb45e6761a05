// Literal values of every dtype (HLO_FORMAT_FACTS.md §3.6). Expected bit
// patterns are hand-worked from the IEEE / OCP float formats (noted inline)
// or from numpy (np.float16(x).view(np.uint16)).
#include <math.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static hl_literal_t *parse_ok(const char *shape_text, const char *value) {
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape(shape_text, &shape));
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_parse_literal(value, &shape, &lit);
  if (st) fprintf(stderr, "\n  %s %s: %s\n", shape_text, value, hl_status_message(st));
  CU_ASSERT_PTR_NULL(st);
  hl_status_free(st);
  hl_shape_deinit(&shape);
  return lit;
}

static void expect_error(const char *shape_text, const char *value, const char *needle) {
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape(shape_text, &shape));
  hl_literal_t *lit = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_parse_literal(value, &shape, &lit), needle);
  CU_ASSERT_PTR_NULL(lit);
  hl_shape_deinit(&shape);
}

static uint16_t u16_at(const hl_literal_t *lit, int i) { return ((const uint16_t *)lit->data)[i]; }
static uint8_t u8_at(const hl_literal_t *lit, int i) { return ((const uint8_t *)lit->data)[i]; }

static void test_f32_matrix_row_major(void) {
  hl_literal_t *lit = parse_ok("f32[2,3]{0,1}", "{{1, 2, 3}, {4, 5.5, -6e-1}}");
  CU_ASSERT_EQUAL(hl_literal_element_count(lit), 6);
  const float want[] = {1, 2, 3, 4, 5.5f, -0.6f};
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(((float *)lit->data)[i], want[i]);
  hl_literal_release(lit);
}

static void test_scalars_and_specials(void) {
  hl_literal_t *lit = parse_ok("f32[4]", "{inf, -inf, nan, -nan}");
  uint32_t b[4];
  memcpy(b, lit->data, 16);
  CU_ASSERT_EQUAL(b[0], 0x7f800000u);
  CU_ASSERT_EQUAL(b[1], 0xff800000u);
  CU_ASSERT_EQUAL(b[2], 0x7fc00000u);  // quiet NaN
  CU_ASSERT_EQUAL(b[3], 0xffc00000u);
  hl_literal_release(lit);
  lit = parse_ok("f32[]", "nan(0x7f)");
  memcpy(b, lit->data, 4);
  CU_ASSERT_EQUAL(b[0], 0x7f80007fu);
  hl_literal_release(lit);
  lit = parse_ok("bf16[2]", "{-nan(0x7f), -nan(0x3f)}");  // XLA's NanPayload test
  CU_ASSERT_EQUAL(u16_at(lit, 0), 0xffff);
  CU_ASSERT_EQUAL(u16_at(lit, 1), 0xffbf);
  hl_literal_release(lit);
  lit = parse_ok("f64[]", "-2.5");
  CU_ASSERT_EQUAL(((double *)lit->data)[0], -2.5);
  hl_literal_release(lit);
}

static void test_bf16_rounding(void) {
  // 0.15625 = 1.25 * 2^-3: exponent 124, mantissa 0100000 -> 0x3E20 (exact).
  // 1 + 2^-8 lies halfway between 1.0 (0x3F80) and 1 + 2^-7 (0x3F81): ties to even.
  // 1 + 3*2^-8 lies halfway between 0x3F81 and 0x3F82: ties to even 0x3F82.
  hl_literal_t *lit = parse_ok("bf16[4]", "{0.15625, 1.00390625, 1.01171875, -65505}");
  CU_ASSERT_EQUAL(u16_at(lit, 0), 0x3e20);
  CU_ASSERT_EQUAL(u16_at(lit, 1), 0x3f80);
  CU_ASSERT_EQUAL(u16_at(lit, 2), 0x3f82);
  CU_ASSERT_EQUAL(u16_at(lit, 3), 0xc780);  // -65536: in range for bf16 (XLA test)
  hl_literal_release(lit);
  expect_error("bf16[]", "1e100", "out of range for literal's primitive type bf16");
}

static void test_f16_rounding(void) {
  // numpy: float16(0.1) = 0x2E66, 65504 = 0x7BFF (max), 65519 rounds down to it,
  // 2^-24 = 0x0001 (smallest subnormal), -inf = 0xFC00, nan = 0x7E00.
  hl_literal_t *lit =
      parse_ok("f16[6]", "{0.1, 65504, 65519, 5.9604644775390625e-08, -inf, nan}");
  CU_ASSERT_EQUAL(u16_at(lit, 0), 0x2e66);
  CU_ASSERT_EQUAL(u16_at(lit, 1), 0x7bff);
  CU_ASSERT_EQUAL(u16_at(lit, 2), 0x7bff);
  CU_ASSERT_EQUAL(u16_at(lit, 3), 0x0001);
  CU_ASSERT_EQUAL(u16_at(lit, 4), 0xfc00);
  CU_ASSERT_EQUAL(u16_at(lit, 5), 0x7e00);
  hl_literal_release(lit);
  // 65520 is the midpoint between 65504 and 2^16 and rounds (to even) to
  // infinity; XLA's parser rejects it (test ConstantF16Overflow).
  expect_error("f16[]", "-65520", "<literal>:1:1: value is out of range for literal's primitive "
               "type f16 near '-65520'");
}

static void test_small_floats(void) {
  // f8e4m3fn: max 448 = 1.75*2^8 -> 0x7E; 464 ties to even back to 448; NaN 0x7F.
  hl_literal_t *lit = parse_ok("f8e4m3fn[4]", "{448, 464, nan, -1}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 0x7e);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0x7e);
  CU_ASSERT_EQUAL(u8_at(lit, 2), 0x7f);
  CU_ASSERT_EQUAL(u8_at(lit, 3), 0xb8);  // sign | exponent 7 << 3
  hl_literal_release(lit);
  expect_error("f8e4m3fn[]", "480", "out of range");
  expect_error("f8e4m3fn[]", "inf", "out of range");
  // f8e5m2 (IEEE-like, bias 15): 1.0 -> 15 << 2 = 0x3C, inf -> 0x7C.
  lit = parse_ok("f8e5m2[2]", "{1, inf}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 0x3c);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0x7c);
  hl_literal_release(lit);
  // f8e4m3fnuz (bias 8): 1.0 -> 0x40, -0 -> 0x00 (no negative zero), NaN -> 0x80.
  lit = parse_ok("f8e4m3fnuz[3]", "{1, -0.0, nan}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 0x40);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0x00);
  CU_ASSERT_EQUAL(u8_at(lit, 2), 0x80);
  hl_literal_release(lit);
  // f4e2m1fn (bias 1): 6 = 1.5*2^2 -> 0b0111, 0.5 subnormal -> 0b0001, -1 -> 0b1010.
  lit = parse_ok("f4e2m1fn[3]", "{6, 0.5, -1}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 0x07);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0x01);
  CU_ASSERT_EQUAL(u8_at(lit, 2), 0x0a);
  hl_literal_release(lit);
  // f8e8m0fnu: 2^(e-127): 1 -> 127, 0.5 -> 126.
  lit = parse_ok("f8e8m0fnu[2]", "{1, 0.5}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 0x7f);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0x7e);
  hl_literal_release(lit);
}

static void test_integers_full_range(void) {
  hl_literal_t *lit = parse_ok("u64[2]", "{18446744073709551615, 0}");
  CU_ASSERT_EQUAL(((uint64_t *)lit->data)[0], UINT64_MAX);
  hl_literal_release(lit);
  lit = parse_ok("s64[2]", "{-9223372036854775808, 9223372036854775807}");
  CU_ASSERT_EQUAL(((int64_t *)lit->data)[0], INT64_MIN);
  CU_ASSERT_EQUAL(((int64_t *)lit->data)[1], INT64_MAX);
  hl_literal_release(lit);
  lit = parse_ok("u64[]", "-1");  // XLA reads u64 via int64: ConstantUnsignedUnderflow is OK
  CU_ASSERT_EQUAL(((uint64_t *)lit->data)[0], UINT64_MAX);
  hl_literal_release(lit);
  lit = parse_ok("s8[2]", "{-128, 127}");
  CU_ASSERT_EQUAL(((int8_t *)lit->data)[0], -128);
  CU_ASSERT_EQUAL(((int8_t *)lit->data)[1], 127);
  hl_literal_release(lit);
  lit = parse_ok("s4[2]", "{-8, 7}");
  CU_ASSERT_EQUAL(((int8_t *)lit->data)[0], -8);
  hl_literal_release(lit);
  lit = parse_ok("u16[1]", "{65535}");
  CU_ASSERT_EQUAL(((uint16_t *)lit->data)[0], 65535);
  hl_literal_release(lit);
  expect_error("s8[]", "128", "<literal>:1:1: value is out of range for literal's primitive "
               "type s8 near '128'");
  expect_error("u8[2]", "{1, 256}", "<literal>:1:5: value is out of range");
  expect_error("u32[]", "-1", "out of range");
  expect_error("s4[]", "8", "out of range");
  expect_error("u1[]", "2", "out of range");
  expect_error("s64[]", "9223372036854775808", "out of range");
  expect_error("s32[]", "1.5", "expected an integer");
}

static void test_pred(void) {
  hl_literal_t *lit = parse_ok("pred[4]", "{true, false, 1, 0}");
  CU_ASSERT_EQUAL(u8_at(lit, 0), 1);
  CU_ASSERT_EQUAL(u8_at(lit, 1), 0);
  CU_ASSERT_EQUAL(u8_at(lit, 2), 1);
  CU_ASSERT_EQUAL(u8_at(lit, 3), 0);
  hl_literal_release(lit);
  expect_error("pred[]", "maybe", "expected true or false");
}

static void test_complex(void) {
  hl_literal_t *lit = parse_ok("c64[2]", "{(1, 0), (0, -2.5)}");
  const float want[] = {1, 0, 0, -2.5f};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(((float *)lit->data)[i], want[i]);
  hl_literal_release(lit);
  lit = parse_ok("c128[]", "(3, 4)");
  CU_ASSERT_EQUAL(((double *)lit->data)[1], 4.0);
  hl_literal_release(lit);
  expect_error("c64[]", "(1e100, 0)", "out of range");
  expect_error("c64[]", "(1 2)", "expected ',' between the real and imaginary parts");
}

static void test_float_overflow(void) {
  expect_error("f64[]", "1.8e308", "out of range for literal's primitive type f64");
  expect_error("f32[]", "1e39", "out of range");
  hl_literal_t *lit = parse_ok("f32[]", "3.4028234663852886e38");
  CU_ASSERT_EQUAL(((float *)lit->data)[0], 3.4028234663852886e38f);
  hl_literal_release(lit);
}

static void test_tuple(void) {
  hl_literal_t *lit = parse_ok("(f32[], (s32[2], pred[]))", "(1.5, ({2, 3}, true))");
  CU_ASSERT_EQUAL(lit->shape.dtype, HL_TUPLE);
  CU_ASSERT_EQUAL(lit->shape.tuple_count, 2);
  CU_ASSERT_EQUAL(((float *)lit->elements[0]->data)[0], 1.5f);
  hl_literal_t *inner = lit->elements[1];
  CU_ASSERT_EQUAL(((int32_t *)inner->elements[0]->data)[1], 3);
  CU_ASSERT_EQUAL(u8_at(inner->elements[1], 0), 1);
  hl_literal_release(lit);
  // Stand-alone form with shapes in front of the elements.
  lit = parse_ok("(s32[2], f32[])", "(s32[2]{0} {1, 2}, f32[] 4)");
  CU_ASSERT_EQUAL(((int32_t *)lit->elements[0]->data)[1], 2);
  hl_literal_release(lit);
  expect_error("(s32[2])", "(s32[3]{0} {1, 2, 3})", "literal shape does not match s32[2]");
  lit = parse_ok("()", "()");
  CU_ASSERT_EQUAL(lit->shape.tuple_count, 0);
  hl_literal_release(lit);
}

static void test_zero_size(void) {
  hl_literal_t *lit = parse_ok("f32[0]", "{}");
  CU_ASSERT_EQUAL(hl_literal_element_count(lit), 0);
  hl_literal_release(lit);
  lit = parse_ok("f32[2,0]", "{{}, {}}");
  hl_literal_release(lit);
  lit = parse_ok("f32[2,0]", "{}");
  hl_literal_release(lit);
}

static void test_brace_errors(void) {
  expect_error("f32[2,3]", "{{1,2,3},{4,5}}",
               "<literal>:1:10: expected 3 elements in dimension 1 of f32[2,3] but found 2 "
               "near '{'");
  expect_error("f32[2,3]", "{{1,2,3},{4,5,6},{7,8,9}}",
               "<literal>:1:18: too many elements in dimension 0: expected 2 near '{'");
  expect_error("f32[2]", "{{1},{2}}", "braces nested deeper than the rank 1");
  expect_error("f32[2,2]", "{1,2,3,4}", "<literal>:1:2: expected '{' for dimension 1");
  expect_error("f32[2]", "{1, 2", "<literal>:1:6: expected ',' or '}' near '<eof>'");
  expect_error("f32[2]", "{1, 2} x", "unexpected text after the literal near 'x'");
  expect_error("f32[12]", "{...}", "elided");
}

// A declared shape far larger than its literal is an error at the brace
// before anything of that size is allocated (400 GB used to end as "out of
// memory" with no position).
static void test_counts_before_allocating(void) {
  expect_error("f32[100000000000]", "{1, 2}",
               "<literal>:1:1: expected 100000000000 elements in dimension 0 of "
               "f32[100000000000] but found 2 near '{'");
  expect_error("s8[2,100000000]", "{{1}, {2}}", "<literal>:1:2: expected 100000000 elements");
  // A literal past the counting threshold (4 MiB) that is complete parses
  // exactly as a small one: element i holds i % 7.
  enum { kCount = 1 << 20 };
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_append_char(&sb, '{');
  for (int i = 0; i < kCount; i++) hl_strbuf_appendf(&sb, i ? ",%d" : "%d", i % 7);
  hl_strbuf_append_char(&sb, '}');
  hl_literal_t *lit = parse_ok("s32[1048576]", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  CU_ASSERT_PTR_NOT_NULL_FATAL(lit);
  const int32_t *v = lit->data;
  int bad = 0;
  for (int i = 0; i < kCount; i++) bad += v[i] != i % 7;
  CU_ASSERT_EQUAL(bad, 0);
  hl_literal_release(lit);
}

static void test_oom_paths(void) {
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape("(f32[2], s32[])", &shape));
  for (long n = 0; n < 40; n++) {
    hl_alloc_fail_after(n);
    hl_literal_t *lit = NULL;
    hl_status_t st = hl_parse_literal("({1, 2}, 3)", &shape, &lit);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      hl_status_free(st);
    }
    hl_literal_release(lit);
  }
  hl_shape_deinit(&shape);
}

static CU_TestInfo tests[] = {
    {"f32_matrix_row_major", test_f32_matrix_row_major},
    {"scalars_and_specials", test_scalars_and_specials},
    {"bf16_rounding", test_bf16_rounding},
    {"f16_rounding", test_f16_rounding},
    {"small_floats", test_small_floats},
    {"integers_full_range", test_integers_full_range},
    {"pred", test_pred},
    {"complex", test_complex},
    {"float_overflow", test_float_overflow},
    {"tuple", test_tuple},
    {"zero_size", test_zero_size},
    {"brace_errors", test_brace_errors},
    {"counts_before_allocating", test_counts_before_allocating},
    {"oom_paths", test_oom_paths},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("hlo_literal_parser", tests)
