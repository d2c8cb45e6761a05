// Physical layouts (runtime/base/layout.c): order, byte sizes, the bitcast
// rules, printing, and the owned extension's copy / free paths.
// hl-test-libs: hl_base
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "tests/unit/test_util.h"

static hl_shape_t arr(hl_dtype_t t, int rank, const int64_t *dims, const int64_t *m2m) {
  hl_shape_t s = hl_shape_array(t, rank, dims);
  if (m2m) {
    s.has_layout = true;
    for (int i = 0; i < rank; i++) s.minor_to_major[i] = m2m[i];
  }
  return s;
}

static void test_order_and_sizes(void) {
  hl_shape_t s = arr(HL_F32, 3, (int64_t[]){2, 1, 3}, (int64_t[]){0, 2, 1});
  int64_t mtm[3];
  hl_layout_major_to_minor(&s, mtm);
  CU_ASSERT(mtm[0] == 1 && mtm[1] == 2 && mtm[2] == 0);
  CU_ASSERT_FALSE(hl_layout_is_row_major_order(&s));  // dim 0 (size 2) is minor
  hl_shape_t r = arr(HL_F32, 3, (int64_t[]){1, 2, 3}, (int64_t[]){2, 0, 1});
  CU_ASSERT_TRUE(hl_layout_is_row_major_order(&r));  // the size-1 dimension moved
  CU_ASSERT_TRUE(hl_layout_is_row_major_order(&(hl_shape_t){.dtype = HL_F32, .rank = 0}));
  hl_shape_t p = arr(HL_S4, 1, (int64_t[]){5}, (int64_t[]){0});
  CU_ASSERT_EQUAL(hl_layout_physical_byte_size(&p), 5);  // unpacked: a byte each
  p.element_size_in_bits = 4;
  CU_ASSERT_EQUAL(hl_layout_physical_byte_size(&p), 3);  // ceil(5 * 4 / 8)
  CU_ASSERT_EQUAL(hl_layout_element_bits(&p), 4);
  hl_shape_t bad = arr(HL_F32, 2, (int64_t[]){2, 2}, (int64_t[]){1, 1});
  CU_ASSERT_FALSE(hl_layout_is_permutation(&bad));
}

static void test_bitcast_rules(void) {
  hl_shape_t a = arr(HL_F32, 2, (int64_t[]){2, 3}, (int64_t[]){1, 0});
  hl_shape_t b = arr(HL_F32, 2, (int64_t[]){3, 2}, (int64_t[]){0, 1});
  HL_ASSERT_OK(hl_layout_check_bitcast(&a, &b));
  b.memory_space = 1;  // never changes bytes
  HL_ASSERT_OK(hl_layout_check_bitcast(&a, &b));
  hl_shape_t u = arr(HL_U8, 1, (int64_t[]){24}, (int64_t[]){0});
  HL_ASSERT_OK(hl_layout_check_bitcast(&a, &u));
  hl_shape_t big = arr(HL_U8, 1, (int64_t[]){25}, (int64_t[]){0});
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&a, &big),
                           "operand f32[2,3]{1,0} has 24 bytes, result u8[25]{0} has 25");
  hl_shape_t s4 = arr(HL_S4, 1, (int64_t[]){8}, (int64_t[]){0});
  hl_shape_t s4b = arr(HL_S4, 2, (int64_t[]){2, 4}, (int64_t[]){0, 1});
  s4.element_size_in_bits = s4b.element_size_in_bits = 4;
  HL_ASSERT_OK(hl_layout_check_bitcast(&s4, &s4b));
  s4b.element_size_in_bits = 0;
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &s4b), "packed and unpacked s4");
  hl_shape_t u8 = arr(HL_U8, 1, (int64_t[]){4}, (int64_t[]){0});
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &u8), "packed sub-byte storage");
  hl_shape_t u4 = arr(HL_U4, 2, (int64_t[]){4, 2}, (int64_t[]){0, 1});
  u4.element_size_in_bits = 4;  // same width, both packed: exact
  HL_ASSERT_OK(hl_layout_check_bitcast(&s4, &u4));
  u4.element_size_in_bits = 0;
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &u4), "packed sub-byte storage");
  s4.element_size_in_bits = 0;
  HL_ASSERT_OK(hl_layout_check_bitcast(&s4, &u4));  // both unpacked
  hl_shape_t s2 = arr(HL_S2, 1, (int64_t[]){8}, (int64_t[]){0});
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &s2), "unused bits of sub-byte");
  hl_shape_t s8 = arr(HL_S8, 1, (int64_t[]){8}, (int64_t[]){0});
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &s8), "unused bits of sub-byte");
  hl_shape_t pr = arr(HL_PRED, 1, (int64_t[]){8}, (int64_t[]){0});
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&pr, &s8), "between pred and s8");
  s4.element_size_in_bits = 2;
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&s4, &s4), "E(2) on s4[8]{0:E(2)}");
  hl_shape_t t = arr(HL_F32, 2, (int64_t[]){3, 2}, (int64_t[]){1, 0});
  hl_layout_ext_t *e;
  HL_ASSERT_OK(hl_layout_ext_ensure(&t, &e));
  e->tile_count = 1;
  e->tiles[0].rank = 2;
  e->tiles[0].dims[0] = 8;
  e->tiles[0].dims[1] = 128;
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&a, &t),
                           "tiled layout (T(...)) on its result (f32[3,2]{1,0:T(8,128)})");
  CU_ASSERT_PTR_NOT_NULL(hl_layout_unimplemented_part(&t));
  e->tile_count = 0;
  e->dim_level_count = 2;
  e->dim_level_types[0] = HL_DIM_COMPRESSED;
  HL_ASSERT_ERROR_CONTAINS(hl_layout_check_bitcast(&t, &a), "sparse layout");
  hl_shape_deinit(&t);
}

static char *print(const hl_shape_t *s) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_shape_print(s, true, &sb);
  return hl_strbuf_take(&sb);
}

// A shape whose extension owns a physical shape with its own extension.
static hl_shape_t rich_shape(void) {
  hl_shape_t s = arr(HL_S4, 2, (int64_t[]){8, 128}, (int64_t[]){0, 1});
  s.element_size_in_bits = 4;
  s.memory_space = 3;
  hl_layout_ext_t *e;
  HL_ASSERT_OK(hl_layout_ext_ensure(&s, &e));
  e->tile_count = 2;
  e->tiles[0] = (hl_layout_tile_t){2, {8, 128}};
  e->tiles[1] = (hl_layout_tile_t){2, {2, HL_LAYOUT_COMBINE_DIM}};
  e->tail_padding_alignment = 4;
  e->index_type = HL_S32;
  e->split_count = 1;
  e->splits[0] = (hl_layout_split_t){.dimension = 1, .count = 2, .indices = {64, 96}};
  e->dynamic_metadata_prefix_bytes = 8;
  e->physical_shape = hl_calloc(1, sizeof(hl_shape_t));
  CU_ASSERT_PTR_NOT_NULL_FATAL(e->physical_shape);
  *e->physical_shape = arr(HL_S4, 1, (int64_t[]){1024}, (int64_t[]){0});
  e->physical_shape->memory_space = 1;
  hl_layout_ext_t *pe;
  HL_ASSERT_OK(hl_layout_ext_ensure(e->physical_shape, &pe));
  pe->pointer_type = HL_U64;
  return s;
}

static void test_print_and_copy(void) {
  hl_shape_t s = rich_shape();
  char *text = print(&s);
  CU_ASSERT_STRING_EQUAL(text, "s4[8,128]{0,1:T(8,128)(2,*)L(4)#(s32)E(4)S(3)SC(1:64,96)"
                               "P(s4[1024]{0:*(u64)S(1)})M(8)}");
  hl_shape_t c;
  HL_ASSERT_OK(hl_shape_copy(&s, &c));
  CU_ASSERT_PTR_NOT_EQUAL(c.layout_ext, s.layout_ext);
  CU_ASSERT_PTR_NOT_EQUAL(c.layout_ext->physical_shape, s.layout_ext->physical_shape);
  hl_shape_deinit(&s);  // the copy owns its own extension
  char *again = print(&c);
  CU_ASSERT_STRING_EQUAL(again, text);
  hl_free(text);
  hl_free(again);
  hl_shape_deinit(&c);
  CU_ASSERT_PTR_NULL(c.layout_ext);
}

// Every allocation of a deep copy may fail: OOM, nothing leaked (ASan).
static void test_copy_allocation_failures(void) {
  hl_shape_t s = rich_shape();
  for (long n = 0; n < 8; n++) {
    hl_shape_t c;
    hl_alloc_fail_after(n);
    hl_status_t st = hl_shape_copy(&s, &c);
    hl_alloc_fail_after(-1);
    if (!st) {
      hl_shape_deinit(&c);
      break;
    }
    CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
    hl_status_free(st);
  }
  hl_shape_deinit(&s);
}

static CU_TestInfo tests[] = {
    {"order_and_sizes", test_order_and_sizes},
    {"bitcast_rules", test_bitcast_rules},
    {"print_and_copy", test_print_and_copy},
    {"copy_allocation_failures", test_copy_allocation_failures},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("layout", tests)
