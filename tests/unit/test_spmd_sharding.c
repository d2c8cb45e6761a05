// The partitioner's sharding representation (runtime/spmd/spmd_sharding.h):
// every form XLA prints parsed from HLO text, compared by the tile each
// device holds (expected tiles worked out by hand from XLA's definitions),
// printed, and the collective groups derived from it.
// hl-test-libs: hl_spmd hl_text hl_verifier hl_ir hl_base
#include <string.h>

#include "runtime/spmd/spmd_sharding.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

// Parses `sharding` on a parameter of the given rank and converts it.
static hl_status_t from_text(const char *sharding, int rank, int n, hl_spmd_sharding_t *out) {
  char text[1024];
  const char *shapes[] = {"f32[]", "f32[8]", "f32[8,8]", "f32[8,8,8]"};
  snprintf(text, sizeof(text), "HloModule m\n\nENTRY e {\n  ROOT p = %s parameter(0), sharding=%s\n}\n",
           shapes[rank], sharding);
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "test", &m);
  if (!st) st = hl_spmd_from_ir(m->entry->root->attrs.sharding, rank, n, out);
  hl_module_destroy(m);
  return st;
}

static void expect_coords(const hl_spmd_sharding_t *s, int device, int c0, int c1) {
  CU_ASSERT_EQUAL(s->coords[device][0], c0);
  CU_ASSERT_EQUAL(s->coords[device][1], c1);
}

static void test_iota_and_explicit_agree(void) {
  hl_spmd_sharding_t a, b;
  HL_ASSERT_OK(from_text("{devices=[2,4]<=[8]}", 2, 8, &a));
  HL_ASSERT_OK(from_text("{devices=[2,4]0,1,2,3,4,5,6,7}", 2, 8, &b));
  CU_ASSERT_TRUE(hl_spmd_equal(&a, &b));
  CU_ASSERT_EQUAL(a.tiles[0], 2);
  CU_ASSERT_EQUAL(a.tiles[1], 4);
  expect_coords(&a, 5, 1, 1);
  expect_coords(&a, 3, 0, 3);
  HL_ASSERT_OK(from_text("{devices=[2,4]0,1,2,3,4,5,7,6}", 2, 8, &b));
  CU_ASSERT_FALSE(hl_spmd_equal(&a, &b));
}

static void test_transposed_iota(void) {
  // arange(8).reshape(2,4).T = [[0,4],[1,5],[2,6],[3,7]] as a [4,2] grid.
  hl_spmd_sharding_t a, b;
  HL_ASSERT_OK(from_text("{devices=[4,2]<=[2,4]T(1,0)}", 2, 8, &a));
  HL_ASSERT_OK(from_text("{devices=[4,2]0,4,1,5,2,6,3,7}", 2, 8, &b));
  CU_ASSERT_TRUE(hl_spmd_equal(&a, &b));
  expect_coords(&a, 4, 0, 1);
  expect_coords(&a, 1, 1, 0);
  expect_coords(&a, 7, 3, 1);
}

static void test_partial_replication(void) {
  hl_spmd_sharding_t a, b, c;
  HL_ASSERT_OK(from_text("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2, 8, &a));
  HL_ASSERT_OK(from_text("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dims={replicated}}", 2, 8, &b));
  CU_ASSERT_TRUE(hl_spmd_equal(&a, &b));
  // Column j of the [4,2] transposed grid {j, j+4} holds tile j of dim 1.
  expect_coords(&a, 2, 0, 2);
  expect_coords(&a, 6, 0, 2);
  CU_ASSERT_TRUE(hl_spmd_is_valid(&a));
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_spmd_print(&a, &sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}");
  // The printed text reads back to the same sharding.
  HL_ASSERT_OK(from_text(hl_strbuf_cstr(&sb), 2, 8, &c));
  CU_ASSERT_TRUE(hl_spmd_equal(&a, &c));
  hl_strbuf_deinit(&sb);
}

static void test_replicated_and_maximal(void) {
  hl_spmd_sharding_t a, b;
  HL_ASSERT_OK(from_text("{replicated}", 2, 4, &a));
  CU_ASSERT_TRUE(hl_spmd_is_replicated(&a));
  HL_ASSERT_OK(from_text("{devices=[1,1,4]<=[4] last_tile_dim_replicate}", 2, 4, &b));
  CU_ASSERT_TRUE(hl_spmd_equal(&a, &b));
  HL_ASSERT_OK(from_text("{maximal device=3}", 2, 4, &a));
  CU_ASSERT_EQUAL(a.kind, HL_SPMD_MAXIMAL);
  CU_ASSERT_EQUAL(a.maximal_device, 3);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_spmd_print(&a, &sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "{maximal device=3}");
  hl_strbuf_deinit(&sb);
}

static void test_refusals(void) {
  hl_spmd_sharding_t a;
  HL_ASSERT_ERROR_CONTAINS(from_text("{manual}", 2, 4, &a), "manual sharding");
  HL_ASSERT_ERROR_CONTAINS(from_text("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", 2, 4, &a),
                           "manual subgroup");
  HL_ASSERT_ERROR_CONTAINS(from_text("{devices=[2,4]<=[8]}", 2, 4, &a), "has 8 devices");
  HL_ASSERT_ERROR_CONTAINS(from_text("{devices=[2,2]0,1,1,3}", 2, 4, &a), "not a permutation");
  HL_ASSERT_ERROR_CONTAINS(from_text("{devices=[2,2]<=[4]}", 1, 4, &a), "2 tiled dimensions");
}

static void test_groups(void) {
  hl_spmd_sharding_t a;
  int64_t g[8];
  int count, size;
  HL_ASSERT_OK(from_text("{devices=[2,4]<=[8]}", 2, 8, &a));
  HL_ASSERT_OK(hl_spmd_groups(&a, 1u << 1, g, &count, &size));
  CU_ASSERT_EQUAL(count, 2);
  CU_ASSERT_EQUAL(size, 4);
  int64_t want1[] = {0, 1, 2, 3, 4, 5, 6, 7};
  CU_ASSERT_EQUAL(memcmp(g, want1, sizeof(want1)), 0);
  HL_ASSERT_OK(hl_spmd_groups(&a, 1u << 0, g, &count, &size));
  int64_t want0[] = {0, 4, 1, 5, 2, 6, 3, 7};
  CU_ASSERT_EQUAL(count, 4);
  CU_ASSERT_EQUAL(memcmp(g, want0, sizeof(want0)), 0);
  // Replicated pairs: groups along dim 0 take one device of each pair per
  // tile, in tile order: tile 0 = {0,1}, tile 1 = {2,3}.
  HL_ASSERT_OK(from_text("{devices=[2,2]<=[4] last_tile_dim_replicate}", 1, 4, &a));
  HL_ASSERT_OK(hl_spmd_groups(&a, 1u << 0, g, &count, &size));
  int64_t wantr[] = {0, 2, 1, 3};
  CU_ASSERT_EQUAL(count, 2);
  CU_ASSERT_EQUAL(memcmp(g, wantr, sizeof(wantr)), 0);
}

static CU_TestInfo tests[] = {
    {"iota_and_explicit_agree", test_iota_and_explicit_agree},
    {"transposed_iota", test_transposed_iota},
    {"partial_replication", test_partial_replication},
    {"replicated_and_maximal", test_replicated_and_maximal},
    {"refusals", test_refusals},
    {"groups", test_groups},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("spmd_sharding", tests)
