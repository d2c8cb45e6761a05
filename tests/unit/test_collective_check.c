// The static collective check (runtime/debug/collective_check.c) on small
// programs whose deadlocks, or lack of them, are worked out by hand.
// hl-test-libs: hl_debug hl_channels hl_collectives hl_text hl_ir hl_base
#include <string.h>

#include "runtime/debug/collective_check.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static const char kHead[] =
    "HloModule m\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "reduce {\n  x = f32[4] parameter(0)\n"
    "  ROOT ar = f32[4] all-reduce(x), replica_groups={}, to_apply=add\n}\n"
    "reduce_pairs {\n  x = f32[4] parameter(0)\n"
    "  ROOT arp = f32[4] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add\n}\n"
    "gather {\n  x = f32[4] parameter(0)\n"
    "  g = f32[16] all-gather(x), replica_groups={}, dimensions={0}\n"
    "  ROOT s = f32[4] slice(g), slice={[0:4]}\n}\n"
    "skip {\n  ROOT x = f32[4] parameter(0)\n}\n";

static hl_status_t check(const char *entry_and_more) {
  char text[8192];
  snprintf(text, sizeof(text), "%s%s", kHead, entry_and_more);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "c.hlo", &m));
  hl_status_t st = hl_collective_check(m, 4, 1);
  hl_module_destroy(m);
  return st;
}

// Rank 3 picks `other`, the rest `reduce`.
static char *on_rank3(const char *other, char *buf, size_t cap) {
  snprintf(buf, cap,
           "ENTRY e {\n  x = f32[4] parameter(0)\n  r = u32[] replica-id()\n"
           "  three = u32[] constant(3)\n  is3 = pred[] compare(r, three), direction=EQ\n"
           "  ROOT y = f32[4] conditional(is3, x, x), true_computation=%s, "
           "false_computation=reduce\n}\n",
           other);
  return buf;
}

static void test_mismatch_names_both(void) {
  char buf[1024];
  HL_ASSERT_ERROR_CONTAINS(check(on_rank3("gather", buf, sizeof(buf))),
                           "rank 0's collective #1 is instruction 'ar' (all-reduce) in "
                           "computation 'reduce' at c.hlo:9:8, shape f32[4], group {0,1,2,3}, "
                           "but rank 3's collective #1 is instruction 'g' (all-gather)");
}

static void test_skipping_rank(void) {
  char buf[1024];
  HL_ASSERT_ERROR_CONTAINS(check(on_rank3("skip", buf, sizeof(buf))),
                           "but rank 3 ends the program after 0 collectives");
}

static void test_group_mismatch(void) {
  // Rank 3 reduces in {2,3} while 0-2 reduce over everyone: rank 2 cannot
  // be in both.
  char buf[1024];
  HL_ASSERT_ERROR_CONTAINS(check(on_rank3("reduce_pairs", buf, sizeof(buf))), "group {2,3}");
}

static void test_same_collectives_everywhere(void) {
  char buf[1024];
  CU_ASSERT_PTR_NULL(check(on_rank3("reduce", buf, sizeof(buf))));
}

static void test_data_dependent_branch_is_not_judged(void) {
  CU_ASSERT_PTR_NULL(check("ENTRY e {\n  x = f32[4] parameter(0)\n  p = pred[] parameter(1)\n"
                           "  ROOT y = f32[4] conditional(p, x, x), true_computation=gather, "
                           "false_computation=reduce\n}\n"));
}

static const char kLoop[] =
    "cond {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  n = s32[] constant(%s)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  x = f32[4] get-tuple-element(s), index=1\n  r = u32[] replica-id()\n"
    "  three = u32[] constant(3)\n  is3 = pred[] compare(r, three), direction=EQ\n"
    "  y = f32[4] conditional(is3, x, x), true_computation=skip, false_computation=reduce\n"
    "  ROOT t = (s32[], f32[4]) tuple(i, y)\n}\n"
    "ENTRY e {\n  x = f32[4] parameter(0)\n  z = s32[] constant(%s)\n"
    "  p = (s32[], f32[4]) tuple(z, x)\n"
    "  ROOT w = (s32[], f32[4]) while(p), condition=cond, body=body\n}\n";

static void test_loop_runs_at_least_once(void) {
  char buf[2048];
  snprintf(buf, sizeof(buf), kLoop, "5", "0");
  HL_ASSERT_ERROR_CONTAINS(check(buf), "rank 3 ends the program after 0 collectives");
}

static void test_loop_that_may_not_run(void) {
  // 0 < 0 is false: the body never runs, so nothing deadlocks.
  char buf[2048];
  snprintf(buf, sizeof(buf), kLoop, "0", "0");
  CU_ASSERT_PTR_NULL(check(buf));
}

// Channel 1 with pairs {{0,1},{2,3}}: ranks 0 and 2 send, 1 and 3 receive.
#define PAIRS "frontend_attributes={_xla_send_recv_source_target_pairs=\"{{0,1},{2,3}}\"}"
static const char kSendComp[] =
    "send_comp {\n  x = f32[4] parameter(0)\n  tok = token[] after-all()\n"
    "  s = (f32[4], u32[], token[]) send(x, tok), channel_id=1, " PAIRS "\n"
    "  sd = token[] send-done(s), channel_id=1\n  ROOT y = f32[4] copy(x)\n}\n";
static const char kRecvComp[] =
    "recv_comp {\n  x = f32[4] parameter(0)\n  tok = token[] after-all()\n"
    "  r = (f32[4], u32[], token[]) recv(tok), channel_id=1, " PAIRS "\n"
    "  rd = (f32[4], token[]) recv-done(r), channel_id=1\n"
    "  ROOT y = f32[4] get-tuple-element(rd), index=0\n}\n";

// Every rank calls send_comp, then recv_comp (or, on rank 3, `rank3_recv`).
static hl_status_t check_channels(const char *rank3_recv) {
  char buf[4096];
  snprintf(buf, sizeof(buf),
           "%s%sENTRY e {\n  x = f32[4] parameter(0)\n"
           "  a = f32[4] call(x), to_apply=send_comp\n  r = u32[] replica-id()\n"
           "  three = u32[] constant(3)\n  is3 = pred[] compare(r, three), direction=EQ\n"
           "  ROOT y = f32[4] conditional(is3, a, a), true_computation=%s, "
           "false_computation=recv_comp\n}\n",
           kSendComp, kRecvComp, rank3_recv);
  return check(buf);
}

static void test_channels_pair_up(void) { CU_ASSERT_PTR_NULL(check_channels("recv_comp")); }

static void test_missing_recv(void) {
  HL_ASSERT_ERROR_CONTAINS(check_channels("skip"),
                           "channel check: the ranks would deadlock: rank 2 sends 1 message on "
                           "channel 1 to rank 3 (instruction 's' (send) in computation "
                           "'send_comp' at c.hlo:");
  HL_ASSERT_ERROR_CONTAINS(check_channels("skip"), "but rank 3 receives from it 0 (grid 4 x 1;");
}

// A loop of send_comp (counter i from `init`, while compare(i, n) `dir`,
// i = `update`), then `recvs` calls of recv_comp outside it.
static hl_status_t check_loop(const char *init, const char *n, const char *dir,
                              const char *update, int recvs) {
  char buf[8192], tail[512] = "  y0 = f32[4] copy(x)\n";
  for (int k = 1; k <= recvs; k++)
    snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
             "  y%d = f32[4] call(y%d), to_apply=recv_comp\n", k, k - 1);
  snprintf(buf, sizeof(buf),
           "%s%scond {\n  s = (s32[], f32[4]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n  n = s32[] %s\n"
           "  ROOT lt = pred[] compare(i, n), direction=%s\n}\n"
           "body {\n  s = (s32[], f32[4]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n"
           "  x = f32[4] get-tuple-element(s), index=1\n"
           "  y = f32[4] call(x), to_apply=send_comp\n  one = s32[] constant(1)\n"
           "  j = s32[] %s\n  ROOT t = (s32[], f32[4]) tuple(j, y)\n}\n"
           "ENTRY e {\n  x = f32[4] parameter(0)\n  v = s32[] parameter(1)\n"
           "  z = s32[] %s\n  p = (s32[], f32[4]) tuple(z, x)\n"
           "  w = (s32[], f32[4]) while(p), condition=cond, body=body\n"
           "%s  ROOT y = f32[4] copy(y%d)\n}\n",
           kSendComp, kRecvComp, n, dir, update, init, tail, recvs);
  return check(buf);
}

static void test_channel_in_loop_counted_per_trip(void) {
  // Two trips send twice; the peers receive twice, outside the loop: the
  // program is fine (counting one trip would call it a deadlock).
  CU_ASSERT_PTR_NULL(check_loop("constant(0)", "constant(2)", "LT", "add(i, one)", 2));
  // Counting down: 3, 2, 1 -> three trips (subtract, GT).
  CU_ASSERT_PTR_NULL(check_loop("constant(3)", "constant(0)", "GT", "subtract(i, one)", 3));
  // Step on the left, LE: 0, 1, 2 -> three trips.
  CU_ASSERT_PTR_NULL(check_loop("constant(0)", "constant(2)", "LE", "add(one, i)", 3));
}

static void test_loop_sends_more_than_received(void) {
  // Three trips send three messages; the peers receive two.
  HL_ASSERT_ERROR_CONTAINS(check_loop("constant(0)", "constant(3)", "LT", "add(i, one)", 2),
                           "channel check: the ranks would deadlock: rank 0 sends 3 messages on "
                           "channel 1 to rank 1 (instruction 's' (send) in computation "
                           "'send_comp' at c.hlo:");
  HL_ASSERT_ERROR_CONTAINS(check_loop("constant(0)", "constant(3)", "LT", "add(i, one)", 2),
                           "but rank 1 receives from it 2 (grid 4 x 1;");
  // A loop that never runs sends nothing: the one recv waits forever.
  HL_ASSERT_ERROR_CONTAINS(check_loop("constant(5)", "constant(3)", "LT", "add(i, one)", 1),
                           "rank 1 receives 1 message on channel 1 from rank 0 (instruction "
                           "'r' (recv) in computation 'recv_comp' at c.hlo:");
}

static void test_loop_with_unknown_trips_is_not_judged(void) {
  // The counter starts at a parameter, or the counter is not updated by a
  // constant step: trips unknown, nothing said even though the counts may differ.
  CU_ASSERT_PTR_NULL(check_loop("copy(v)", "constant(3)", "LT", "add(i, one)", 1));
  CU_ASSERT_PTR_NULL(check_loop("constant(0)", "constant(3)", "LT", "add(i, i)", 1));
  CU_ASSERT_PTR_NULL(check_loop("constant(0)", "constant(3)", "LT", "subtract(one, i)", 1));
}

static void test_loop_stopped_by_undecided_collectives_is_not_judged(void) {
  // The body first runs a data-dependent conditional whose branches differ
  // in collectives (the walk stops there), then sends: the sends after that
  // point are not seen, so nothing may be said (a partial count, 0 sent
  // against 2 received, would be a false error).
  char buf[8192];
  snprintf(buf, sizeof(buf),
           "%s%scond {\n  s = (s32[], f32[4], pred[]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(2)\n"
           "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
           "body {\n  s = (s32[], f32[4], pred[]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n"
           "  x = f32[4] get-tuple-element(s), index=1\n"
           "  b = pred[] get-tuple-element(s), index=2\n"
           "  c = f32[4] conditional(b, x, x), true_computation=reduce, "
           "false_computation=gather\n"
           "  y = f32[4] call(c), to_apply=send_comp\n  one = s32[] constant(1)\n"
           "  j = s32[] add(i, one)\n  ROOT t = (s32[], f32[4], pred[]) tuple(j, y, b)\n}\n"
           "ENTRY e {\n  x = f32[4] parameter(0)\n  b = pred[] parameter(1)\n"
           "  z = s32[] constant(0)\n  p = (s32[], f32[4], pred[]) tuple(z, x, b)\n"
           "  w = (s32[], f32[4], pred[]) while(p), condition=cond, body=body\n"
           "  y1 = f32[4] call(x), to_apply=recv_comp\n"
           "  ROOT y = f32[4] call(y1), to_apply=recv_comp\n}\n",
           kSendComp, kRecvComp);
  CU_ASSERT_PTR_NULL(check(buf));
}

// JAX's fori_loop shape: the bound travels in the loop state (element 1),
// passed through by the body as `next_n`; `recvs` receives after the loop.
static hl_status_t check_carried_bound(const char *next_n, int recvs) {
  char buf[8192], tail[512] = "  y0 = f32[4] copy(x)\n";
  for (int k = 1; k <= recvs; k++)
    snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
             "  y%d = f32[4] call(y%d), to_apply=recv_comp\n", k, k - 1);
  snprintf(buf, sizeof(buf),
           "%s%scond {\n  s = (s32[], s32[], f32[4]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n"
           "  n = s32[] get-tuple-element(s), index=1\n"
           "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
           "body {\n  s = (s32[], s32[], f32[4]) parameter(0)\n"
           "  i = s32[] get-tuple-element(s), index=0\n"
           "  n = s32[] get-tuple-element(s), index=1\n"
           "  x = f32[4] get-tuple-element(s), index=2\n"
           "  y = f32[4] call(x), to_apply=send_comp\n  one = s32[] constant(1)\n"
           "  j = s32[] add(i, one)\n  m = s32[] %s\n"
           "  ROOT t = (s32[], s32[], f32[4]) tuple(j, m, y)\n}\n"
           "ENTRY e {\n  x = f32[4] parameter(0)\n  z = s32[] constant(0)\n"
           "  three = s32[] constant(3)\n  p = (s32[], s32[], f32[4]) tuple(z, three, x)\n"
           "  w = (s32[], s32[], f32[4]) while(p), condition=cond, body=body\n"
           "%s  ROOT y = f32[4] copy(y%d)\n}\n",
           kSendComp, kRecvComp, next_n, tail, recvs);
  return check(buf);
}

static void test_loop_bound_carried_in_state(void) {
  CU_ASSERT_PTR_NULL(check_carried_bound("copy(n)", 1));  // copy: not a pass-through
  CU_ASSERT_PTR_NULL(check_carried_bound("get-tuple-element(s), index=1", 3));
  HL_ASSERT_ERROR_CONTAINS(check_carried_bound("get-tuple-element(s), index=1", 2),
                           "rank 0 sends 3 messages on channel 1 to rank 1");
  // A bound the body changes is not counted.
  CU_ASSERT_PTR_NULL(check_carried_bound("add(n, one)", 2));
}

// Channel 5: a send whose channel no recv of the program uses.
static const char kOrphanSend[] =
    "orphan {\n  x = f32[4] parameter(0)\n  tok = token[] after-all()\n"
    "  s5 = (f32[4], u32[], token[]) send(x, tok), channel_id=5\n"
    "  sd5 = token[] send-done(s5), channel_id=5\n  ROOT y = f32[4] copy(x)\n}\n";

static void test_send_without_any_recv(void) {
  char buf[4096];
  // Rank 3 certainly runs it (a branch decided by replica-id).
  snprintf(buf, sizeof(buf),
           "%sENTRY e {\n  x = f32[4] parameter(0)\n  r = u32[] replica-id()\n"
           "  three = u32[] constant(3)\n  is3 = pred[] compare(r, three), direction=EQ\n"
           "  ROOT y = f32[4] conditional(is3, x, x), true_computation=orphan, "
           "false_computation=skip\n}\n", kOrphanSend);
  HL_ASSERT_ERROR_CONTAINS(check(buf),
                           "channel check: channel 5 has a sender (process 3) but no receiver: "
                           "instruction 's5' (send) in computation 'orphan' at c.hlo:");
  HL_ASSERT_ERROR_CONTAINS(check(buf), "and no recv of the program receives on it");
  // Behind a data-dependent branch it may never run: not judged.
  snprintf(buf, sizeof(buf),
           "%sENTRY e {\n  x = f32[4] parameter(0)\n  b = pred[] parameter(1)\n"
           "  ROOT y = f32[4] conditional(b, x, x), true_computation=orphan, "
           "false_computation=skip\n}\n", kOrphanSend);
  CU_ASSERT_PTR_NULL(check(buf));
}

// Without pairs the channel setup pairs the channel's one sender with its
// one receiver: a one-process job is its own peer and counted so (two sends,
// one recv: the second send is never received); on more processes every one
// would send, which the setup refuses at start-up, so nothing is judged.
static void test_channel_without_pairs(void) {
  static const char kSelf[] =
      "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  tok = token[] after-all()\n"
      "  r = (f32[4], u32[], token[]) recv(tok), channel_id=2\n"
      "  s = (f32[4], u32[], token[]) send(x, tok), channel_id=2\n"
      "  rd = (f32[4], token[]) recv-done(r), channel_id=2\n"
      "  sd = token[] send-done(s), channel_id=2\n%s"
      "  ROOT y = f32[4] get-tuple-element(rd), index=0\n}\n";
  static const char kAgain[] =
      "  s2 = (f32[4], u32[], token[]) send(x, tok), channel_id=2\n"
      "  sd2 = token[] send-done(s2), channel_id=2\n";
  char text[2048];
  for (int twice = 0; twice < 2; twice++) {
    snprintf(text, sizeof(text), kSelf, twice ? kAgain : "");
    hl_module_t *m = NULL;
    HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "c.hlo", &m));
    if (twice)
      HL_ASSERT_ERROR_CONTAINS(hl_collective_check(m, 1, 1),
                               "channel check: the ranks would deadlock: rank 0 receives 1 "
                               "message on channel 2 from rank 0 (instruction 'r' (recv) in "
                               "computation 'e' at c.hlo:5:3), but rank 0 sends it 2 (grid 1 x 1;");
    else
      CU_ASSERT_PTR_NULL(hl_collective_check(m, 1, 1));
    CU_ASSERT_PTR_NULL(hl_collective_check(m, 2, 1));  // the channel setup's error
    hl_module_destroy(m);
  }
}

static CU_TestInfo tests[] = {
    {"channel_without_pairs", test_channel_without_pairs},
    {"channels_pair_up", test_channels_pair_up},
    {"missing_recv", test_missing_recv},
    {"channel_in_loop_counted_per_trip", test_channel_in_loop_counted_per_trip},
    {"loop_sends_more_than_received", test_loop_sends_more_than_received},
    {"loop_with_unknown_trips_is_not_judged", test_loop_with_unknown_trips_is_not_judged},
    {"loop_stopped_by_undecided_collectives_is_not_judged",
     test_loop_stopped_by_undecided_collectives_is_not_judged},
    {"loop_bound_carried_in_state", test_loop_bound_carried_in_state},
    {"send_without_any_recv", test_send_without_any_recv},
    {"mismatch_names_both", test_mismatch_names_both},
    {"skipping_rank", test_skipping_rank},
    {"group_mismatch", test_group_mismatch},
    {"same_collectives_everywhere", test_same_collectives_everywhere},
    {"data_dependent_branch_is_not_judged", test_data_dependent_branch_is_not_judged},
    {"loop_runs_at_least_once", test_loop_runs_at_least_once},
    {"loop_that_may_not_run", test_loop_that_may_not_run},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("collective_check", tests)
