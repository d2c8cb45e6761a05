// shuffle (runtime/kernels/shuffle.c), parsed from HLO text and run through
// the executor. Expected values are hand-worked from XLA's semantics
// (shuffle_expander.cc: rotate = left rotation, slice [s, n) then [0, s);
// permute = gather of operand[indices]); the XLA test's HLO lines are used
// where they exist (shuffle_expander_test.cc).
// hl-test-libs: hl_exec hl_verifier hl_proto hl_text hl_ir hl_base
#include "runtime/proto/proto_io.h"
#include "runtime/text/hlo_printer.h"
#include "tests/unit/hlo_run_util.h"

#define MODULE(body) "HloModule m\nENTRY e {\n" body "\n}\n"

static void test_rotate(void) {
  // ExpandsRotate1D: {1,2,3,4} rotated left by 1.
  hr_expect(MODULE("  x = f32[4]{0} constant({1, 2, 3, 4})\n"
                   "  ROOT s = f32[4]{0} shuffle(x), dimensions={0}, mode=rotate, shifts={1}"),
            "f32[4]", "{2, 3, 4, 1}");
  // ExpandsRotate2D: rows rotated by 1 ({4,5,6} first), then columns by 2.
  hr_expect(MODULE("  x = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})\n"
                   "  ROOT s = s32[2,3]{1,0} shuffle(x), dimensions={0,1}, mode=rotate, "
                   "shifts={1,2}"),
            "s32[2,3]", "{{6, 4, 5}, {3, 1, 2}}");
  // Negative and oversized shifts wrap: -1 on 3 = 2, 7 on 2 = 1.
  hr_expect(MODULE("  x = u8[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n"
                   "  ROOT s = u8[2,3] shuffle(x), dimensions={1,0}, mode=rotate, "
                   "shifts={-1,7}"),
            "u8[2,3]", "{{6, 4, 5}, {3, 1, 2}}");
  // Only the middle dimension of a rank-3 array.
  hr_expect(MODULE("  x = s16[2,3,1] constant({{{1}, {2}, {3}}, {{4}, {5}, {6}}})\n"
                   "  ROOT s = s16[2,3,1] shuffle(x), dimensions={1}, mode=rotate, shifts={2}"),
            "s16[2,3,1]", "{{{3}, {1}, {2}}, {{6}, {4}, {5}}}");
  // No shuffled dimension, and zero-size arrays, leave the operand.
  hr_expect(MODULE("  x = f64[2] constant({1.5, -2})\n"
                   "  ROOT s = f64[2] shuffle(x), dimensions={}, mode=rotate, shifts={}"),
            "f64[2]", "{1.5, -2}");
  hr_expect(MODULE("  x = f32[2,0] constant({{}, {}})\n"
                   "  ROOT s = f32[2,0] shuffle(x), dimensions={1,0}, mode=rotate, shifts={3,1}"),
            "f32[2,0]", "{{}, {}}");
}

static void test_permute(void) {
  // ExpandsPermuteOfRank1.
  hr_expect(MODULE("  x = f32[4]{0} constant({10, 20, 30, 40})\n"
                   "  ROOT s = f32[4]{0} shuffle(x), dimensions={0}, mode=permute, "
                   "indices=s32[4]{0} {3, 1, 0, 2}"),
            "f32[4]", "{40, 20, 10, 30}");
  // ExpandsPermuteOfOneDimension: indices shared along dimension 1.
  hr_expect(MODULE("  x = f32[3,2]{1,0} constant({{1, 2}, {3, 4}, {5, 6}})\n"
                   "  ROOT s = f32[3,2]{1,0} shuffle(x), dimensions={0}, mode=permute, "
                   "indices=s32[3,1]{1,0} { {2}, {0}, {1} }"),
            "f32[3,2]", "{{5, 6}, {1, 2}, {3, 4}}");
  // ExpandsPermuteOfEveryDimensionOutOfOrder: coordinate j is dimension
  // dimensions[j] (1, then 0): result[0][0] = x[2][0] = 5, ...
  hr_expect(MODULE("  x = f32[3,2]{1,0} constant({{1, 2}, {3, 4}, {5, 6}})\n"
                   "  ROOT s = f32[3,2]{1,0} shuffle(x), dimensions={1,0}, mode=permute, "
                   "indices=s32[3,2,2]{2,1,0} { { {0,2}, {1,0} }, { {0,0}, {1,2} }, "
                   "{ {0,1}, {1,1} } }"),
            "f32[3,2]", "{{5, 2}, {1, 6}, {3, 4}}");
  // s8 indices with the coordinate axis present for one dimension.
  hr_expect(MODULE("  x = s64[3] constant({7, 8, 9})\n"
                   "  ROOT s = s64[3] shuffle(x), dimensions={0}, mode=permute, "
                   "indices=s8[3,1]{1,0} { {1}, {1}, {0} }"),
            "s64[3]", "{8, 8, 7}");
}

static void test_errors(void) {
  hr_expect_error(MODULE("  x = f32[4] constant({1, 2, 3, 4})\n"
                         "  ROOT s = f32[4] shuffle(x), dimensions={0}, mode=permute, "
                         "indices=s32[4]{0} {0, 1, 2, -1}"),
                  "index -1 for dimension 0 is out of range [0, 4)");
  hr_expect_error(MODULE("  x = f32[2,2] constant({{1, 2}, {3, 4}})\n"
                         "  ROOT s = f32[2,2] shuffle(x), dimensions={0,1}, mode=permute, "
                         "indices=s32[2,2]{1,0} {{0, 1}, {1, 0}}"),
                  "do not fit operand");
  hr_expect_error(MODULE("  x = f32[2] constant({1, 2})\n"
                         "  ROOT s = f32[2] shuffle(x), dimensions={0}, mode=rotate, "
                         "shifts={1,2}"),
                  "mode=rotate needs one shift per dimension (1), has 2");
  hr_expect_error(MODULE("  x = f32[2] constant({1, 2})\n"
                         "  ROOT s = f32[2] shuffle(x), dimensions={1}, mode=rotate, shifts={1}"),
                  "out of range for rank 1");
  hr_expect_error(MODULE("  x = f32[2] constant({1, 2})\n"
                         "  ROOT s = f32[2] shuffle(x), dimensions={0}, mode=permute"),
                  "mode=permute needs indices");
}

// Parse -> print -> parse keeps the mode attributes.
static void test_print_round_trip(void) {
  const char *text = MODULE("  x = f32[3,2]{1,0} constant({{1, 2}, {3, 4}, {5, 6}})\n"
                            "  r = f32[3,2]{1,0} shuffle(x), dimensions={0,1}, mode=rotate, "
                            "shifts={-1,4}\n"
                            "  ROOT s = f32[3,2]{1,0} shuffle(r), dimensions={0}, mode=permute, "
                            "indices=s32[3,1]{1,0} { {2}, {0}, {1} }");
  hl_module_t *m = NULL, *m2 = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  hl_strbuf_t a, b;
  hl_strbuf_init(&a);
  hl_strbuf_init(&b);
  HL_ASSERT_OK(hl_print_hlo_module(m, &a));
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&a), "mode=rotate, shifts={-1,4}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&a), "mode=permute, indices=s32[3,1]{1,0} {"));
  HL_ASSERT_OK(hl_parse_hlo_module(hl_strbuf_cstr(&a), a.length, "t2.hlo", &m2));
  HL_ASSERT_OK(hl_print_hlo_module(m2, &b));
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&a), hl_strbuf_cstr(&b));
  // No proto field is known for the mode: writing it is refused, not dropped.
  uint8_t *data = NULL;
  size_t size = 0;
  HL_ASSERT_ERROR_CONTAINS(hl_proto_encode_hlo_proto(m, &data, &size),
                           "the shuffle mode cannot be written as a proto");
  hl_strbuf_deinit(&a);
  hl_strbuf_deinit(&b);
  hl_module_destroy(m);
  hl_module_destroy(m2);
}

static CU_TestInfo tests[] = {
    {"rotate", test_rotate},
    {"permute", test_permute},
    {"errors", test_errors},
    {"print round trip", test_print_round_trip},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("shuffle", tests)
