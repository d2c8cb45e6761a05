// Shapes in HLO text (HLO_FORMAT_FACTS.md §3.5).
#include "runtime/base/layout.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static void test_array_with_layout(void) {
  hl_shape_t s;
  HL_ASSERT_OK(hl_parse_shape("f32[2,3]{0,1}", &s));
  CU_ASSERT_EQUAL(s.dtype, HL_F32);
  CU_ASSERT_EQUAL(s.rank, 2);
  CU_ASSERT_EQUAL(s.dims[0], 2);
  CU_ASSERT_EQUAL(s.dims[1], 3);
  CU_ASSERT_TRUE(s.has_layout);
  CU_ASSERT_EQUAL(s.minor_to_major[0], 0);
  CU_ASSERT_EQUAL(s.minor_to_major[1], 1);
  hl_shape_deinit(&s);
  HL_ASSERT_OK(hl_parse_shape("bf16[4]", &s));
  CU_ASSERT_FALSE(s.has_layout);
  hl_shape_deinit(&s);
}

static void test_scalar_token_tuple(void) {
  hl_shape_t s;
  HL_ASSERT_OK(hl_parse_shape("(f32[], (s32[2]{0}, token[]), ())", &s));
  CU_ASSERT_EQUAL(s.dtype, HL_TUPLE);
  CU_ASSERT_EQUAL(s.tuple_count, 3);
  CU_ASSERT_EQUAL(s.tuple[0].dtype, HL_F32);
  CU_ASSERT_EQUAL(s.tuple[0].rank, 0);
  CU_ASSERT_EQUAL(s.tuple[1].tuple_count, 2);
  CU_ASSERT_EQUAL(s.tuple[1].tuple[1].dtype, HL_TOKEN);
  CU_ASSERT_EQUAL(s.tuple[2].dtype, HL_TUPLE);
  CU_ASSERT_EQUAL(s.tuple[2].tuple_count, 0);
  hl_shape_deinit(&s);
}

static void test_tiled_layout_and_dynamic(void) {
  hl_shape_t s;
  HL_ASSERT_OK(hl_parse_shape("f32[8,<=128,?]{2,1,0:T(8,128)(2,1)E(4)S(1)}", &s));
  CU_ASSERT_EQUAL(s.rank, 3);
  CU_ASSERT_EQUAL(s.dims[1], 128);
  CU_ASSERT_EQUAL(s.dims[2], -1);
  CU_ASSERT_EQUAL(s.dynamic_mask, 6u);
  CU_ASSERT_TRUE(s.has_layout);
  CU_ASSERT_EQUAL(s.minor_to_major[0], 2);
  CU_ASSERT_EQUAL(s.element_size_in_bits, 4);
  CU_ASSERT_EQUAL(s.memory_space, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s.layout_ext);
  CU_ASSERT_EQUAL(s.layout_ext->tile_count, 2);
  CU_ASSERT_EQUAL(s.layout_ext->tiles[0].dims[1], 128);
  CU_ASSERT_EQUAL(s.layout_ext->tiles[1].dims[0], 2);
  hl_shape_deinit(&s);
}

// Every part XLA's Layout printer writes (xla/layout.cc), in its order,
// parsed into the shape and printed back byte for byte.
static void test_layout_parts_round_trip(void) {
  static const char *const kShapes[] = {
      "f32[2,3]{0,1:D(D,C+~)T(8,128)(2,*)L(4)#(s32)*(u64)E(32)S(1)SC(0:1,2)(1:3)P(f32[6]{0})M(8)}",
      "s4[64]{0:E(4)}",
      "bf16[16,128]{1,0:T(8,128)(2,1)}",
      "f32[]{:S(5)}",
      "(f32[2]{0:S(1)}, u8[4,4]{0,1})",
  };
  for (size_t i = 0; i < sizeof(kShapes) / sizeof(kShapes[0]); i++) {
    hl_shape_t s;
    HL_ASSERT_OK(hl_parse_shape(kShapes[i], &s));
    hl_shape_t c;
    HL_ASSERT_OK(hl_shape_copy(&s, &c));
    hl_shape_deinit(&s);
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_shape_print(&c, true, &sb);
    CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), kShapes[i]);
    hl_strbuf_deinit(&sb);
    hl_shape_deinit(&c);
  }
  hl_shape_t s;
  HL_ASSERT_OK(hl_parse_shape("f32[2,3]{0,1:D(D,C+~)T(8,128)(2,*)E(32)S(1)SC(0:1,2)}", &s));
  CU_ASSERT_EQUAL(s.layout_ext->dim_level_types[1], HL_DIM_COMPRESSED);
  CU_ASSERT_FALSE(s.layout_ext->dim_unique[1]);
  CU_ASSERT_TRUE(s.layout_ext->dim_unique[0]);
  CU_ASSERT_EQUAL(s.layout_ext->tiles[1].dims[1], HL_LAYOUT_COMBINE_DIM);
  CU_ASSERT_EQUAL(s.layout_ext->splits[0].count, 2);
  hl_shape_deinit(&s);
}

static void test_layout_errors(void) {
  hl_shape_t s;
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{0:S(1)E(4)}", &s), "out of order");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{0:Q(1)}", &s), "unknown layout part");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{0:T(8,-1)}", &s), "tile dimension");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{0:#(f32)}", &s), "needs an integer type");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{:S(1)}", &s), "layout has 0 entries");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2,2]{0,0}", &s), "is repeated");
}

static void test_errors(void) {
  hl_shape_t s;
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2,3", &s), "<shape>:1:8: expected ']' to close "
                           "the dimensions near '<eof>'");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2]{1}", &s), "<shape>:1:8: layout entry 1 is "
                           "not a dimension");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2,2]{0}", &s), "layout has 1 entries");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("(f32[], s32[]", &s), "expected ')'");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("xyz[2]", &s), "expected a shape near 'xyz'");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("token[2]", &s), "token shapes have no dimensions");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[-1]", &s), "expected a dimension size");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", &s),
                           "more than 16 dimensions");
  // Shapes whose byte size overflows int64 (later size arithmetic would wrap),
  // also when a zero dimension makes the element count 0.
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[4611686018427387905,4]", &s), "<shape>:1:26: "
                           "the dimensions of this f32 shape are too large (their product "
                           "overflows int64)");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("f32[2305843009213693952]", &s), "too large");
  HL_ASSERT_ERROR_CONTAINS(hl_parse_shape("(f32[], s8[4294967296,4294967296,0])", &s),
                           "too large");
  // The largest byte size that fits is accepted.
  HL_ASSERT_OK(hl_parse_shape("s8[9223372036854775807]", &s));
  hl_shape_deinit(&s);
  HL_ASSERT_OK(hl_parse_shape("f32[1000000000000,0]", &s));
  hl_shape_deinit(&s);
}

static CU_TestInfo tests[] = {
    {"array_with_layout", test_array_with_layout},
    {"scalar_token_tuple", test_scalar_token_tuple},
    {"tiled_layout_and_dynamic", test_tiled_layout_and_dynamic},
    {"layout_parts_round_trip", test_layout_parts_round_trip},
    {"layout_errors", test_layout_errors},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("hlo_shape_parser", tests)
