// The --trace recorder's progress-thread spans (runtime/debug/trace_recorder.c):
// spans that overlap without nesting (two requests in flight together, or
// the MPI backend's and the shared-memory layer's threads at once) must go on
// separate rows, since a trace viewer draws one row as a stack; and the two
// threads may record at the same time. And the executor track's spans, made
// from one clock read per instruction: every instruction of a while loop
// program gets one, consecutive spans of one level touch, and the loop's
// span holds its condition's and body's.
// hl-test-libs: hl_debug hl_collectives hl_verifier hl_text hl_exec hl_ir hl_base
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/debug/debug_observer.h"
#include "runtime/debug/trace_recorder.h"
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

static void test_overlapping_progress_spans_get_rows(void) {
  hl_trace_recorder_t *t = NULL;
  CU_ASSERT_PTR_NULL_FATAL(hl_trace_recorder_create(1000, &t));
  // In the order they completed, not started (ns): A [1000, 5000], B [3000,
  // 8000] overlaps A's end, D [3500, 4000] lies inside both, C [6000, 9000]
  // starts after A ended. Rows by start: A row 1, B row 2, D row 3, C row 1.
  hl_trace_recorder_progress(t, NULL, 4, 3500, 4000, 1, true);  // D
  hl_trace_recorder_progress(t, NULL, 1, 1000, 5000, 1, true);  // A
  hl_trace_recorder_progress(t, NULL, 2, 3000, 8000, 1, true);  // B
  hl_trace_recorder_progress(t, NULL, 3, 6000, 9000, 0, true);  // C
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_trace_recorder_write_events(t, 0, 1, 1, 0, 0, NULL, &sb);
  const char *json = hl_strbuf_cstr(&sb);
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":2,\"ts\":1.000,\"dur\":4.000,"
                                      "\"args\":{\"opcode\":\"\",\"bytes\":1,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":3,\"ts\":3.000,\"dur\":5.000,"
                                      "\"args\":{\"opcode\":\"\",\"bytes\":2,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":4,\"ts\":3.500,\"dur\":0.500,"
                                      "\"args\":{\"opcode\":\"\",\"bytes\":4,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":2,\"ts\":6.000,\"dur\":3.000,"
                                      "\"args\":{\"opcode\":\"\",\"bytes\":3,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":2,\"args\":{\"name\":\"progress thread\"}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":3,\"args\":{\"name\":\"progress thread (2)\"}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":4,\"args\":{\"name\":\"progress thread (3)\"}"));
  CU_ASSERT_EQUAL(hl_test_count(json, "\"cat\":\"progress\""), 4);
  CU_ASSERT_EQUAL(hl_test_count(json, "progress thread ("), 2);
  CU_ASSERT_PTR_NULL(strstr(json, "not recorded"));
  hl_strbuf_deinit(&sb);
  hl_trace_recorder_destroy(t);
}

enum { kSpansPerThread = 20000 };

static void *record_many(void *arg) {
  hl_trace_recorder_t *t = arg;
  for (int i = 0; i < kSpansPerThread; i++)
    hl_trace_recorder_progress(t, NULL, 8, 2 * i + 1, 2 * i + 2, 1, true);
  return NULL;
}

// Two threads recording at once lose no span (without the lock, racing
// count increments can lose some).
static void test_two_threads_record_at_once(void) {
  hl_trace_recorder_t *t = NULL;
  CU_ASSERT_PTR_NULL_FATAL(hl_trace_recorder_create(1000, &t));
  pthread_t a, b;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&a, NULL, record_many, t), 0);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&b, NULL, record_many, t), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  CU_ASSERT_EQUAL(t->progress_count, 2 * kSpansPerThread);
  CU_ASSERT_EQUAL(t->progress_dropped, 0);
  hl_trace_recorder_destroy(t);
}

// One executor-track span: name, computation, start and end (us).
typedef struct span {
  char name[16], computation[16];
  double ts, end;
} span_t;

// The executor track's spans of `json` in file order (at most `cap`).
static int executor_spans(const char *json, span_t *out, int cap) {
  int n = 0;
  for (const char *p = strstr(json, "{\"ph\":\"X\""); p && n < cap;
       p = strstr(p + 1, "{\"ph\":\"X\"")) {
    span_t s = {0};
    int tid = -1;
    double dur = 0;
    if (sscanf(p, "{\"ph\":\"X\",\"name\":\"%15[^\"]\",\"cat\":\"instruction\",\"pid\":0,"
                  "\"tid\":%d,\"ts\":%lf,\"dur\":%lf", s.name, &tid, &s.ts, &dur) != 4 ||
        tid != 0)
      continue;
    const char *c = strstr(p, "\"computation\":\"");
    if (c) sscanf(c, "\"computation\":\"%15[^\"]\"", s.computation);
    s.end = s.ts + dur;
    out[n++] = s;
  }
  return n;
}

static void test_executor_spans_nest_and_touch(void) {
  // 3 iterations: the condition runs 4 times (4 instructions), the body 3
  // times (7); the entry has 5 instructions. f32[2] keeps the loop off the
  // scalar programs (which run without the walk).
  static const char kCounted[] =
      "HloModule m\n"
      "cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
      "body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  x = f32[2] get-tuple-element(s), index=1\n  k = s32[] constant(1)\n"
      "  i2 = s32[] add(i, k)\n  y = f32[2] negate(x)\n"
      "  ROOT t = (s32[], f32[2]) tuple(i2, y)\n}\n"
      "ENTRY e {\n  z = s32[] constant(0)\n  x = f32[2] constant({1, 2})\n"
      "  p = (s32[], f32[2]) tuple(z, x)\n"
      "  loop = (s32[], f32[2]) while(p), condition=cond, body=body\n"
      "  ROOT r = f32[2] get-tuple-element(loop), index=1\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kCounted, strlen(kCounted), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_trace_recorder_t *t = NULL;
  HL_ASSERT_OK(hl_trace_recorder_create(1000, &t));
  hl_debug_observer_t *obs = NULL;
  hl_debug_observer_options_t o = {.trace = t};
  HL_ASSERT_OK(hl_debug_observer_create(&o, &obs));
  hl_exec_options_t opts = {.observer = hl_debug_observer_base(obs)};
  hl_literal_t *out = NULL;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t origin = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;  // small ts: exact sums
  for (int run = 0; run < 2; run++) {
    if (run) nanosleep(&(struct timespec){0, 20000000}, NULL);
    HL_ASSERT_OK(hl_execute(m, &opts, NULL, 0, &out));
    hl_literal_release(out);
  }
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_trace_recorder_write_events(t, 0, 1, 1, 0, origin, NULL, &sb);
  span_t spans[200];
  int n = executor_spans(hl_strbuf_cstr(&sb), spans, 200);
  enum { kPerRun = 5 + 4 * 4 + 3 * 7 };  // entry, condition runs, body runs
  CU_ASSERT_EQUAL_FATAL(n, 2 * kPerRun);
  for (int run = 0; run < 2; run++) {
    const span_t *s = spans + run * kPerRun;
    // Spans come in the order instructions finished: the loop's after its
    // condition's and body's, which lie inside it; the first starts where
    // the loop starts (no clock read of its own).
    const span_t *loop = &s[kPerRun - 2], *first = &s[3];
    CU_ASSERT_STRING_EQUAL(loop->name, "loop");
    CU_ASSERT_STRING_EQUAL(first->computation, "cond");
    CU_ASSERT_DOUBLE_EQUAL(first->ts, loop->ts, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(s[2].end, loop->ts, 1e-6);  // p's end
    CU_ASSERT_DOUBLE_EQUAL(loop->end, s[kPerRun - 1].ts, 1e-6);  // r's start
    for (int i = 3; i < kPerRun - 2; i++) {
      CU_ASSERT_DOUBLE_EQUAL(s[i].ts, s[i - 1].end, 1e-6);  // touch: one clock read
      CU_ASSERT(s[i].end >= s[i].ts && s[i].end <= loop->end + 1e-6);
    }
    CU_ASSERT(loop->end >= s[kPerRun - 3].end);
    for (int i = 1; i < 3; i++) CU_ASSERT_DOUBLE_EQUAL(s[i].ts, s[i - 1].end, 1e-6);
  }
  // The second run's first span starts when that run began, not where the
  // first run ended 20 ms before.
  CU_ASSERT(spans[kPerRun].ts - spans[kPerRun - 1].end >= 20000.0);
  hl_strbuf_deinit(&sb);
  hl_debug_observer_destroy(obs);
  hl_trace_recorder_destroy(t);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"executor_spans_nest_and_touch", test_executor_spans_nest_and_touch},
    {"overlapping_progress_spans_get_rows", test_overlapping_progress_spans_get_rows},
    {"two_threads_record_at_once", test_two_threads_record_at_once},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("trace_recorder", tests)
