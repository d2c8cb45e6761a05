// Halo exchanges (runtime/spmd/halo.c) in the partitioned text: which
// collective-permutes a windowed op along a split dimension emits, their
// source-target pairs under iota, transposed and partially replicated
// tilings, the window offsets, and where the rule gives way to a gather.
// Expected halos and pairs are worked out by hand from the geometry
// (output o reads input [o*stride + offset, + extent)) and the tilings.
// hl-test-libs: hl_spmd hl_text hl_verifier hl_ir hl_base
#include <stdio.h>
#include <string.h>

#include "runtime/spmd/partitioner.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/spmd_test_util.h"
#include "tests/unit/test_util.h"

// x[1:] - x[:-1] over rows split by `sharding` on n partitions.
static void stencil(const char *sharding, int n, hl_spmd_result_t *r) {
  char text[1024];
  snprintf(text, sizeof(text),
           "HloModule m\n\nENTRY e {\n"
           "  x = s32[16,6] parameter(0), sharding=%s\n"
           "  a = s32[15,6] slice(x), slice={[1:16], [0:6]}\n"
           "  b = s32[15,6] slice(x), slice={[0:15], [0:6]}\n"
           "  ROOT d = s32[15,6] subtract(a, b), sharding=%s\n}\n",
           sharding, sharding);
  HL_ASSERT_OK(spmd_test_partition(text, n, r));
}

static void test_shift_by_one_row(void) {
  // Shards of 4 rows; x[1:] on partition i reads rows 4i+1 .. 4i+4: one row
  // from the right neighbour (tile i+1 -> i), the window a static slice [1:5].
  hl_spmd_result_t r;
  stencil("{devices=[4,1]<=[4]}", 4, &r);
  CU_ASSERT_EQUAL(hl_test_count(r.text, " collective-permute("), 1);
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "source_target_pairs={{1,0},{2,1},{3,2}}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "s32[1,6] collective-permute("));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "slice={[1:5], [0:6]}"));
  CU_ASSERT_EQUAL(r.bytes_per_partition, 1 * 6 * 4);
  hl_spmd_result_deinit(&r);
}

static void test_pairs_follow_the_tiling(void) {
  hl_spmd_result_t r;
  // <=[2,2]T(1,0): tiles 0..3 on devices 0, 2, 1, 3.
  stencil("{devices=[4,1]<=[2,2]T(1,0)}", 4, &r);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "source_target_pairs={{2,0},{1,2},{3,1}}"));
  hl_spmd_result_deinit(&r);
  // Two tiles, each held by two devices (0,1: tile 0; 2,3: tile 1): one
  // pair per group member.
  stencil("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4, &r);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "source_target_pairs={{2,0},{3,1}}"));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 0);
  hl_spmd_result_deinit(&r);
}

static void test_wider_than_a_shard_gathers(void) {
  // 16 rows over 8: shards of 2; x[3:] needs 3 rows of the right: gathered.
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  x = s32[16,6] parameter(0), sharding={devices=[8,1]<=[8]}\n"
      "  c = s32[13,6] slice(x), slice={[3:16], [0:6]}\n"
      "  ROOT d = s32[13,6] negate(c), sharding={devices=[8,1]<=[8]}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 8, &r));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " collective-permute("), 0);
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 1);
  hl_spmd_result_deinit(&r);
}

static void test_pad_windows_differ_per_partition(void) {
  // pad 2_1 of 16 rows over 2: output 19 rows, shards of 10 against 8.
  // Partition i reads from r_i = i*(10 - 8) - 2 = -2, 0 past its shard,
  // len 10: 2 rows from the left, 2 from the right; windows start at
  // r_i + 2 = 0, 2 of the 12 halo'd rows (a dynamic-slice by partition-id),
  // and rows outside [0, 16) become the pad value (a select).
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  x = s32[16,6] parameter(0), sharding={devices=[2,1]<=[2]}\n"
      "  v = s32[] constant(7)\n"
      "  ROOT p = s32[19,6] pad(x, v), padding=2_1x0_0, sharding={devices=[2,1]<=[2]}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 2, &r));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " collective-permute("), 2);
  CU_ASSERT_EQUAL(hl_test_count(r.text, "s32[2,6] collective-permute("), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "s32[12,6] concatenate("));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "constant({0, 2})"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "s32[10,6] dynamic-slice("));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, " select("));
  CU_ASSERT_EQUAL(r.bytes_per_partition, 2 * (2 * 6 * 4));
  hl_spmd_result_deinit(&r);
}

static void test_roll_is_cyclic(void) {
  // concatenate(x[1:], x[:1]): out[o] = x[(o + 1) mod 16]; the last
  // partition's row comes from partition 0 (pair {0,3}); the slices are not computed.
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  x = s32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}\n"
      "  a = s32[15,6] slice(x), slice={[1:16], [0:6]}\n"
      "  b = s32[1,6] slice(x), slice={[0:1], [0:6]}\n"
      "  ROOT r = s32[16,6] concatenate(a, b), dimensions={0}, sharding={devices=[4,1]<=[4]}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 4, &r));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " collective-permute("), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "source_target_pairs={{1,0},{2,1},{3,2},{0,3}}"));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 0);
  // The edge row only: a and b are not computed.
  CU_ASSERT_EQUAL(hl_test_count(r.text, " slice(x)"), 1);
  CU_ASSERT_PTR_NULL(strstr(r.text, "  a.spmd"));
  CU_ASSERT_PTR_NULL(strstr(r.text, "  b.spmd"));
  CU_ASSERT_EQUAL(r.bytes_per_partition, 6 * 4);
  hl_spmd_result_deinit(&r);
}

static void test_strided_conv_needs_left_halo_only(void) {
  // 3-tap window, stride 2, pad 1 on 8 rows over 2: out 4 rows, shards of 2
  // against 4; r_i = i*(2*2 - 4) - 1 = -1, len (2-1)*2 + 3 = 5: one row from
  // the left, none from the right.
  const char *text =
      "HloModule m\n\nENTRY e {\n"
      "  x = f32[1,8,8,2] parameter(0), sharding={devices=[1,2,1,1]<=[2]}\n"
      "  k = f32[3,3,2,2] parameter(1), sharding={replicated}\n"
      "  ROOT y = f32[1,4,4,2] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
      "dim_labels=b01f_01io->b01f, sharding={devices=[1,2,1,1]<=[2]}\n}\n";
  hl_spmd_result_t r;
  HL_ASSERT_OK(spmd_test_partition(text, 2, &r));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " collective-permute("), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "f32[1,1,8,2] collective-permute("));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "source_target_pairs={{0,1}}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "f32[1,2,4,2] convolution("));
  CU_ASSERT_EQUAL(hl_test_count(r.text, " all-gather("), 0);
  hl_spmd_result_deinit(&r);
}

static CU_TestInfo tests[] = {
    {"shift_by_one_row", test_shift_by_one_row},
    {"pairs_follow_the_tiling", test_pairs_follow_the_tiling},
    {"wider_than_a_shard_gathers", test_wider_than_a_shard_gathers},
    {"pad_windows_differ_per_partition", test_pad_windows_differ_per_partition},
    {"roll_is_cyclic", test_roll_is_cyclic},
    {"strided_conv_needs_left_halo_only", test_strided_conv_needs_left_halo_only},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("spmd_halo", tests)
