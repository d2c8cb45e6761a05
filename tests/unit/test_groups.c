// Process-group resolution (collectives/groups.c). Expected groups are the
// StableHLO spec's own examples ("Parallel execution": cross_replica,
// cross_partition, cross_replica_and_partition, flattened_ids) translated to
// flattened ids by hand (rank = replica * num_partitions + partition), and
// hand-expanded iota lists.
// hl-test-libs: hl_collectives hl_text hl_ir hl_base
#include <string.h>

#include "collectives/groups.h"
#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static hl_module_t *g_module;

// Parses a module whose root is `inst` (operand p: s32[8]) and returns it.
static const hl_instruction_t *parse_inst(const char *inst) {
  char text[2048];
  snprintf(text, sizeof(text),
           "HloModule m\n"
           "sum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
           "  ROOT s = s32[] add(a, b)\n}\n"
           "ENTRY e {\n  p = s32[8] parameter(0)\n  ROOT c = %s\n}\n",
           inst);
  hl_module_destroy(g_module);
  g_module = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "test", &g_module);
  if (st) {
    fprintf(stderr, "\nparse failed: %s\n%s\n", hl_status_message(st), text);
    hl_status_free(st);
    return NULL;
  }
  return g_module->entry->root;
}

// Resolves and compares with `want`: groups separated by -1, ended by -2.
static void expect_groups(const char *inst, int64_t R, int64_t P, hl_group_mode_t mode,
                          const int *want) {
  const hl_instruction_t *i = parse_inst(inst);
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  hl_process_groups_t g;
  HL_ASSERT_OK(hl_process_groups_resolve(i, R, P, &g));
  CU_ASSERT_EQUAL(g.mode, mode);
  int k = 0, pos = 0;
  for (; want[pos] != -2; k++) {
    CU_ASSERT_FATAL(k < g.group_count);
    int m = 0;
    for (; want[pos] >= 0; pos++, m++) {
      CU_ASSERT_FATAL(m < hl_process_groups_size(&g, k));
      CU_ASSERT_EQUAL(g.ranks[g.offsets[k] + m], want[pos]);
    }
    CU_ASSERT_EQUAL(m, hl_process_groups_size(&g, k));
    if (want[pos] == -1) pos++;
  }
  CU_ASSERT_EQUAL(k, g.group_count);
  hl_process_groups_deinit(&g);
}

static void expect_error(const char *inst, int64_t R, int64_t P, const char *needle) {
  const hl_instruction_t *i = parse_inst(inst);
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  hl_process_groups_t g;
  HL_ASSERT_ERROR_CONTAINS(hl_process_groups_resolve(i, R, P, &g), needle);
}

static void test_mode_names(void) {
  CU_ASSERT_STRING_EQUAL(hl_group_mode_name(HL_GROUP_CROSS_REPLICA), "cross_replica");
  CU_ASSERT_STRING_EQUAL(hl_group_mode_name(HL_GROUP_CROSS_PARTITION), "cross_partition");
  CU_ASSERT_STRING_EQUAL(hl_group_mode_name(HL_GROUP_CROSS_REPLICA_AND_PARTITION),
                         "cross_replica_and_partition");
  CU_ASSERT_STRING_EQUAL(hl_group_mode_name(HL_GROUP_FLATTENED_IDS), "flattened_ids");
  CU_ASSERT_TRUE(hl_opcode_is_collective(HL_OP_ALL_REDUCE_START));
  CU_ASSERT_FALSE(hl_opcode_is_collective(HL_OP_ADD));
}

// Spec: replica_groups = [[0, 1], [2, 3]], num_partitions = 2 ->
// [[(0,0),(1,0)], [(0,1),(1,1)], [(2,0),(3,0)], [(2,1),(3,1)]].
static void test_cross_replica(void) {
  const int want[] = {0, 2, -1, 1, 3, -1, 4, 6, -1, 5, 7, -2};
  expect_groups("s32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum", 4, 2,
                HL_GROUP_CROSS_REPLICA, want);
  // all-to-all / permute / broadcast without a channel are cross_replica too.
  expect_groups("s32[8] all-to-all(p), replica_groups={{0,1},{2,3}}, dimensions={0}", 4, 2,
                HL_GROUP_CROSS_REPLICA, want);
}

// Spec: partition_groups = [[0, 1]], num_replicas = 4 ->
// [[(0,0),(0,1)], [(1,0),(1,1)], [(2,0),(2,1)], [(3,0),(3,1)]].
static void test_cross_partition(void) {
  const int want[] = {0, 1, -1, 2, 3, -1, 4, 5, -1, 6, 7, -2};
  expect_groups("s32[8] all-to-all(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}", 4,
                2, HL_GROUP_CROSS_PARTITION, want);
  expect_groups("s32[8] collective-broadcast(p), channel_id=3, replica_groups={{0,1}}", 4, 2,
                HL_GROUP_CROSS_PARTITION, want);
}

// Spec: replica_groups = [[0, 1], [2, 3]], num_partitions = 2 ->
// [[(0,0),(1,0),(0,1),(1,1)], [(2,0),(3,0),(2,1),(3,1)]].
static void test_cross_replica_and_partition(void) {
  const int want[] = {0, 2, 1, 3, -1, 4, 6, 5, 7, -2};
  expect_groups("s32[8] all-reduce(p), channel_id=1, replica_groups={{0,1},{2,3}}, "
                "to_apply=sum", 4, 2, HL_GROUP_CROSS_REPLICA_AND_PARTITION, want);
  expect_groups("s32[8] all-gather(p), channel_id=1, use_global_device_ids=false, "
                "replica_groups={{0,1},{2,3}}, dimensions={0}", 4, 2,
                HL_GROUP_CROSS_REPLICA_AND_PARTITION, want);
}

// Spec: flattened_id_groups = [[0,1,2,3],[4,5,6,7]], 4x2 ->
// [[(0,0),(0,1),(1,0),(1,1)], [(2,0),(2,1),(3,0),(3,1)]] = ranks 0-3, 4-7.
static void test_flattened_ids(void) {
  const int want[] = {0, 1, 2, 3, -1, 4, 5, 6, 7, -2};
  expect_groups("s32[8] all-reduce(p), channel_id=1, use_global_device_ids=true, "
                "replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=sum", 4, 2,
                HL_GROUP_FLATTENED_IDS, want);
  const int odd[] = {7, 0, -1, 1, 6, -1, 2, 5, -1, 3, 4, -2};  // order kept
  expect_groups("s32[8] reduce-scatter(p), channel_id=1, use_global_device_ids=true, "
                "replica_groups={{7,0},{1,6},{2,5},{3,4}}, dimensions={0}, to_apply=sum", 2, 4,
                HL_GROUP_FLATTENED_IDS, odd);
}

// [2,4]<=[4,2]T(1,0): iota(8) as 4x2 = {{0,1},{2,3},{4,5},{6,7}}, transposed
// = {{0,2,4,6},{1,3,5,7}}, read as 2 groups of 4.
static void test_iota(void) {
  const int want[] = {0, 2, 4, 6, -1, 1, 3, 5, 7, -2};
  expect_groups("s32[8] all-reduce(p), channel_id=1, use_global_device_ids=true, "
                "replica_groups=[2,4]<=[4,2]T(1,0), to_apply=sum", 4, 2,
                HL_GROUP_FLATTENED_IDS, want);
  const int plain[] = {0, 1, -1, 2, 3, -2};  // [2,2]<=[4]: {{0,1},{2,3}} replica ids, P=1
  expect_groups("s32[8] all-reduce(p), replica_groups=[2,2]<=[4], to_apply=sum", 4, 1,
                HL_GROUP_CROSS_REPLICA, plain);
}

// Empty groups: every replica (per partition), every partition (per
// replica), every replica across all partitions.
static void test_empty_groups(void) {
  const int cr[] = {0, 2, -1, 1, 3, -2};
  expect_groups("s32[8] all-reduce(p), replica_groups={}, to_apply=sum", 2, 2,
                HL_GROUP_CROSS_REPLICA, cr);
  const int cp[] = {0, 1, -1, 2, 3, -2};
  expect_groups("s32[8] all-to-all(p), channel_id=2, dimensions={0}", 2, 2,
                HL_GROUP_CROSS_PARTITION, cp);
  const int crp[] = {0, 2, 1, 3, -2};
  expect_groups("s32[8] all-reduce(p), channel_id=2, to_apply=sum", 2, 2,
                HL_GROUP_CROSS_REPLICA_AND_PARTITION, crp);
  const int one[] = {0, -2};
  expect_groups("s32[8] all-reduce(p), to_apply=sum", 1, 1, HL_GROUP_CROSS_REPLICA, one);
}

// Spec collective_permute example: pairs [[0,1],[1,2]] on 3 replicas.
static void test_permute(void) {
  const hl_instruction_t *i =
      parse_inst("s32[8] collective-permute(p), source_target_pairs={{0,1},{1,2}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  hl_process_groups_t g;
  HL_ASSERT_OK(hl_process_groups_resolve(i, 3, 1, &g));
  CU_ASSERT_TRUE(g.is_permute);
  CU_ASSERT_EQUAL(hl_process_groups_permute_source(&g, 0), -1);
  CU_ASSERT_EQUAL(hl_process_groups_permute_source(&g, 1), 0);
  CU_ASSERT_EQUAL(hl_process_groups_permute_source(&g, 2), 1);
  CU_ASSERT_EQUAL(hl_process_groups_permute_target(&g, 2), -1);
  CU_ASSERT_EQUAL(hl_process_groups_permute_target(&g, 0), 1);
  hl_process_groups_deinit(&g);
  // cross_partition on 2x2: partition 0 -> 1 within each replica: 0->1, 2->3.
  i = parse_inst("s32[8] collective-permute(p), channel_id=5, source_target_pairs={{0,1}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  HL_ASSERT_OK(hl_process_groups_resolve(i, 2, 2, &g));
  CU_ASSERT_EQUAL(g.mode, HL_GROUP_CROSS_PARTITION);
  CU_ASSERT_EQUAL(hl_process_groups_permute_target(&g, 0), 1);
  CU_ASSERT_EQUAL(hl_process_groups_permute_target(&g, 2), 3);
  CU_ASSERT_EQUAL(hl_process_groups_permute_source(&g, 3), 2);
  CU_ASSERT_EQUAL(hl_process_groups_permute_source(&g, 0), -1);
  hl_process_groups_deinit(&g);
}

// Spec collective_broadcast example: groups [[2,1]] on 4 replicas; 0 and 3
// are in no group (they get zeros), 2 is the root.
// Combined collective-permute with two slices per buffer (the pairs of
// XLA's CollectivePermuteInPlaceUpdateMultipleReadWrite parser test): the
// pairs split into two parts of three; a source or target may repeat across
// parts but not within one. Groups come part-major; expected lists worked out
// by hand (cross_replica on R x P: rank = replica * P + partition).
static const hl_instruction_t *parse_combined(const char *pairs) {
  char text[1024];
  snprintf(text, sizeof(text),
           "HloModule m\nENTRY e {\n  x = f32[4,2] parameter(0)\n  c0 = s32[] constant(0)\n"
           "  t = (s32[], s32[]) tuple(c0, c0)\n"
           "  tt = ((s32[], s32[]), (s32[], s32[])) tuple(t, t)\n"
           "  ROOT cp = f32[4,2] collective-permute(x, x, tt, tt), source_target_pairs=%s, "
           "slice_sizes={{1,2},{1,2}}\n}\n",
           pairs);
  hl_module_destroy(g_module);
  g_module = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "test", &g_module);
  if (st) {
    fprintf(stderr, "\nparse failed: %s\n%s\n", hl_status_message(st), text);
    hl_status_free(st);
    return NULL;
  }
  return g_module->entry->root;
}

static void test_permute_combined_parts(void) {
  const hl_instruction_t *i = parse_combined("{{0,1},{1,2},{2,3},{0,3},{2,1},{3,2}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  CU_ASSERT_EQUAL(hl_instruction_permute_slot_count(i), 2);
  hl_process_groups_t g;
  HL_ASSERT_OK(hl_process_groups_resolve(i, 4, 2, &g));
  static const int want[12][2] = {{0, 2}, {2, 4}, {4, 6}, {1, 3}, {3, 5}, {5, 7},
                                  {0, 6}, {4, 2}, {6, 4}, {1, 7}, {5, 3}, {7, 5}};
  CU_ASSERT_EQUAL_FATAL(g.group_count, 12);
  for (int k = 0; k < 12; k++) {
    CU_ASSERT_EQUAL(g.ranks[g.offsets[k]], want[k][0]);
    CU_ASSERT_EQUAL(g.ranks[g.offsets[k] + 1], want[k][1]);
  }
  hl_process_groups_deinit(&g);
  i = parse_combined("{{0,1},{0,2},{2,3},{3,0}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  HL_ASSERT_ERROR_CONTAINS(hl_process_groups_resolve(i, 4, 1, &g), "source 0 appears twice");
  i = parse_combined("{{0,1},{1,2},{2,3}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  HL_ASSERT_ERROR_CONTAINS(hl_process_groups_resolve(i, 4, 1, &g), "equal parts");
  // The plain form has one part.
  i = parse_inst("s32[8] collective-permute(p), source_target_pairs={{0,1},{1,2}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  CU_ASSERT_EQUAL(hl_instruction_permute_slot_count(i), 1);
}

static void test_broadcast_partial(void) {
  const hl_instruction_t *i =
      parse_inst("s32[8] collective-broadcast(p), replica_groups={{2,1}}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  hl_process_groups_t g;
  HL_ASSERT_OK(hl_process_groups_resolve(i, 4, 1, &g));
  int idx;
  CU_ASSERT_EQUAL(hl_process_groups_find(&g, 0, &idx), -1);
  CU_ASSERT_EQUAL(hl_process_groups_find(&g, 3, &idx), -1);
  CU_ASSERT_EQUAL(hl_process_groups_find(&g, 2, &idx), 0);
  CU_ASSERT_EQUAL(idx, 0);
  CU_ASSERT_EQUAL(hl_process_groups_find(&g, 1, &idx), 0);
  CU_ASSERT_EQUAL(idx, 1);
  hl_process_groups_deinit(&g);
}

static void test_errors(void) {
  expect_error("s32[8] all-reduce(p), replica_groups={{0,4}}, to_apply=sum", 4, 1,
               "out of range");
  expect_error("s32[8] all-reduce(p), replica_groups={{0,1},{1,2}}, to_apply=sum", 3, 1,
               "more than once");
  expect_error("s32[8] all-reduce(p), replica_groups={{0,1}}, to_apply=sum", 4, 1,
               "do not cover");
  expect_error("s32[8] all-gather(p), replica_groups={{0,1,2},{3}}, dimensions={0}", 4, 1,
               "same size");
  expect_error("s32[8] all-reduce(p), channel_id=1, use_global_device_ids=true, to_apply=sum",
               2, 1, "needs explicit");
  expect_error("s32[8] all-reduce(p), use_global_device_ids=true, to_apply=sum", 2, 1,
               "requires a channel_id");
  expect_error("s32[8] collective-permute(p), source_target_pairs={{0,1},{0,2}}", 3, 1,
               "source 0 appears twice");
  expect_error("s32[8] collective-permute(p), source_target_pairs={{0,1},{2,1}}", 3, 1,
               "target 1 appears twice");
  expect_error("s32[8] collective-permute(p), channel_id=1, source_target_pairs={{0,2}}", 4, 2,
               "out of range");
  // all-reduce groups may differ in size, but not be empty or leave ids out.
  const int uneven[] = {0, 1, 2, -1, 3, -2};
  expect_groups("s32[8] all-reduce(p), replica_groups={{0,1,2},{3}}, to_apply=sum", 4, 1,
                HL_GROUP_CROSS_REPLICA, uneven);
  // Messages name the instruction.
  expect_error("s32[8] all-reduce(p), replica_groups={{0,9}}, to_apply=sum", 4, 1, "'c'");
}

static CU_TestInfo tests[] = {
    {"mode names", test_mode_names},
    {"cross_replica", test_cross_replica},
    {"cross_partition", test_cross_partition},
    {"cross_replica_and_partition", test_cross_replica_and_partition},
    {"flattened_ids", test_flattened_ids},
    {"iota groups", test_iota},
    {"empty groups", test_empty_groups},
    {"collective-permute pairs", test_permute},
    {"combined collective-permute parts", test_permute_combined_parts},
    {"collective-broadcast partial groups", test_broadcast_partial},
    {"validation errors", test_errors},
    CU_TEST_INFO_NULL,
};

static void cleanup(void) { hl_module_destroy(g_module); }

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 2;
  CU_SuiteInfo suites[] = {{"groups", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
  if (CU_register_suites(suites) != CUE_SUCCESS) return 2;
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  unsigned run = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  cleanup();
  return (failed || run == 0) ? 1 : 0;
}
