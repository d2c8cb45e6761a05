// Hang reports (runtime/debug/hang_report.c): one rank's report from a rank
// state built by hand, and the merge that names the ranks that never arrived.
// hl-test-libs: hl_debug hl_collectives hl_text hl_ir hl_base
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/debug/hang_report.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static const char kProgram[] =
    "HloModule m\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "cond {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  n = s32[] constant(4)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  x = f32[4] get-tuple-element(s), index=1\n"
    "  all-reduce.5 = f32[4] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add\n"
    "  ROOT t = (s32[], f32[4]) tuple(i, all-reduce.5)\n}\n"
    "ENTRY e {\n  p = (s32[], f32[4]) parameter(0)\n"
    "  ROOT while.3 = (s32[], f32[4]) while(p), condition=cond, body=body\n}\n";

static const hl_instruction_t *find(const hl_module_t *m, const char *name) {
  for (int k = 0; k < m->computation_count; k++)
    for (int i = 0; i < m->computations[k]->instruction_count; i++)
      if (strcmp(m->computations[k]->instructions[i]->name, name) == 0)
        return m->computations[k]->instructions[i];
  return NULL;
}

static void test_rank_waiting_in_loop(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kProgram, strlen(kProgram), "m.hlo", &m));
  hl_rank_state_t s;
  memset(&s, 0, sizeof(s));
  s.rank = 3;
  s.phase = HL_PHASE_RUNNING;
  s.depth = 2;
  s.frames[0] = (hl_rank_frame_t){find(m, "while.3")->id, 12, 0};
  s.frames[1] = (hl_rank_frame_t){find(m, "all-reduce.5")->id, -2, 1000000000};
  s.events_written = 1;
  s.events[0] = (hl_rank_event_t){.id = find(m, "all-reduce.5")->id, .opcode = 0, .depth = 1,
                                  .iteration = 12, .start_ns = 1000000000, .bytes = 16,
                                  .serial = 1};
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_hang_report_rank(&s, m, 4, 1, 3500000000, NULL, &sb);
  const char *text = hl_strbuf_cstr(&sb);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "key all-reduce.5@/12\ngroup 2 3\n"));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "summary waits in all-reduce.5 (group {2,3}, iteration 12 of while.3)\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "rank 3 (replica 3, partition 0)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "entered 2.500 s ago"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "all-reduce.5 (all-reduce) iteration 12: 16 bytes, peers "
                                      "{2,3}, started 2.500 s ago, not finished"));
  hl_strbuf_deinit(&sb);
  hl_module_destroy(m);
}

static void test_merge_names_missing_ranks(void) {
  // Ranks 0-2 and 4-7 wait in all-reduce.5 of group {0..7}; rank 3 is elsewhere.
  char *reports[8];
  for (int r = 0; r < 8; r++) {
    reports[r] = hl_malloc(512);
    if (r == 3)
      snprintf(reports[r], 512, "key all-gather.7@\ngroup 0 1 2 3 4 5 6 7\n"
                                "summary waits in all-gather.7 (group {0..7})\ndetail %d\n", r);
    else
      snprintf(reports[r], 512, "key all-reduce.5@/12\ngroup 0 1 2 3 4 5 6 7\n"
                                "summary waits in all-reduce.5 (group {0..7}, iteration 12 of "
                                "while.3)\ndetail %d\n", r);
  }
  hl_strbuf_t summary, full;
  hl_strbuf_init(&summary);
  hl_strbuf_init(&full);
  hl_hang_report_merge((const char *const *)reports, 8, &summary, &full);
  const char *want =
      "  ranks 0-2,4-7 wait in all-reduce.5 (group {0..7}, iteration 12 of while.3); never "
      "arrived: rank 3\n"
      "  rank 3 waits in all-gather.7 (group {0..7}); never arrived: ranks 0-2,4-7\n";
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&summary), want);
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&full), "detail 5\n"));
  for (int r = 0; r < 8; r++) hl_free(reports[r]);
  hl_strbuf_deinit(&summary);
  hl_strbuf_deinit(&full);
}

static void test_merge_silent_rank(void) {
  const char *reports[2] = {"key end\ngroup 0 1\nsummary finished the run and waits for the "
                            "other ranks\n", NULL};
  hl_strbuf_t summary, full;
  hl_strbuf_init(&summary);
  hl_strbuf_init(&full);
  hl_hang_report_merge(reports, 2, &summary, &full);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&summary),
                         "  rank 0 finished the run and waits for the other ranks; never "
                         "arrived: rank 1\n"
                         "  rank 1: no report (its state file is missing)\n");
  hl_strbuf_deinit(&summary);
  hl_strbuf_deinit(&full);
}

static void test_format_ranks(void) {
  int ranks[] = {0, 1, 2, 4, 6, 7};
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_hang_format_ranks(ranks, 6, &sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "0-2,4,6-7");
  hl_strbuf_deinit(&sb);
}

static CU_TestInfo tests[] = {
    {"rank_waiting_in_loop", test_rank_waiting_in_loop},
    {"merge_names_missing_ranks", test_merge_names_missing_ranks},
    {"merge_silent_rank", test_merge_silent_rank},
    {"format_ranks", test_format_ranks},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("hang_report", tests)
