// The verifier's collective cases (runtime/verifier/collective_rules.c,
// hl_verify_collective): result shapes against operand shapes, dimensions and
// the written group size. Expected shapes follow the StableHLO spec's
// constraints (all_gather C6, reduce_scatter C8, all_to_all C9, ...).
// hl-test-libs: hl_verifier hl_text hl_ir hl_base
#include <string.h>

#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

// Verifies a module whose entry holds `body` (parameter p: s32[4,6]).
static hl_status_t verify(const char *body) {
  char text[4096];
  snprintf(text, sizeof(text),
           "HloModule m\n"
           "sum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
           "  ROOT s = s32[] add(a, b)\n}\n"
           "ENTRY e {\n  p = s32[4,6] parameter(0)\n%s\n}\n",
           body);
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "t.hlo", &m);
  if (!st) st = hl_verify_module(m);
  hl_module_destroy(m);
  return st;
}

static void test_valid(void) {
  HL_ASSERT_OK(verify("  ROOT c = s32[4,6] all-reduce(p), replica_groups={}, to_apply=sum"));
  HL_ASSERT_OK(verify("  ROOT c = s32[4,12] all-gather(p), replica_groups={{0,1}}, "
                      "dimensions={1}"));
  HL_ASSERT_OK(verify("  ROOT c = s32[4,3] reduce-scatter(p), replica_groups={{0,1}}, "
                      "dimensions={1}, to_apply=sum"));
  HL_ASSERT_OK(verify("  ROOT c = s32[4,6] all-to-all(p), replica_groups={{0,1,2}}, "
                      "dimensions={1}"));
  HL_ASSERT_OK(verify("  ROOT c = (s32[4,6], s32[4,6]) all-to-all(p, p), "
                      "replica_groups={{0,1}}"));
  HL_ASSERT_OK(verify("  ROOT c = s32[4,6] collective-permute(p), "
                      "source_target_pairs={{0,1},{1,0}}"));
  HL_ASSERT_OK(verify("  ROOT c = s32[4,6] collective-broadcast(p), replica_groups={{1,0}}"));
  HL_ASSERT_OK(verify("  s = (s32[4,6], s32[8,6]) all-gather-start(p), replica_groups={}, "
                      "dimensions={0}\n  ROOT d = s32[8,6] all-gather-done(s)"));
  HL_ASSERT_OK(verify("  s = s32[4,6] all-reduce-start(p), replica_groups={}, to_apply=sum\n"
                      "  ROOT d = s32[4,6] all-reduce-done(s)"));
  // cross_replica_and_partition: the group spans the partitions too, so
  // 2 written replicas may gather 4 blocks.
  HL_ASSERT_OK(verify("  ROOT c = s32[16,6] all-gather(p), channel_id=1, "
                      "replica_groups={{0,1}}, dimensions={0}"));
}

static void test_invalid(void) {
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,6] all-reduce(p), to_apply=sum, "
                                  "replica_groups={}\n  x = s32[4,5] all-reduce(p), "
                                  "to_apply=sum"),
                           "differs from operand");
  // 3 members gather 3 blocks along dimension 1, not 2.
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,12] all-gather(p), replica_groups={{0,1,2}}, "
                                  "dimensions={1}"),
                           "gathered");
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,12] all-gather(p), replica_groups={}, "
                                  "dimensions={2}"),
                           "dimensions");
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,4] reduce-scatter(p), replica_groups={}, "
                                  "dimensions={1}, to_apply=sum"),
                           "scattered");
  // 6 is not divisible by 4 members.
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,6] all-to-all(p), "
                                  "replica_groups={{0,1,2,3}}, dimensions={1}"),
                           "cannot be split");
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = (s32[4,6], s32[4,6]) all-to-all(p, p), "
                                  "replica_groups={{0,1,2}}"),
                           "group size");
  HL_ASSERT_ERROR_CONTAINS(verify("  ROOT c = s32[4,5] collective-permute(p), "
                                  "source_target_pairs={{0,1}}"),
                           "differs from operand");
  HL_ASSERT_ERROR_CONTAINS(verify("  s = (s32[4,6], s32[8,6]) all-gather-start(p), "
                                  "replica_groups={}, dimensions={0}\n"
                                  "  ROOT d = s32[4,6] all-gather-done(s)"),
                           "all-gather-start");
}

static CU_TestInfo tests[] = {
    {"valid collectives", test_valid},
    {"invalid collectives", test_invalid},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("verifier_collectives", tests)
