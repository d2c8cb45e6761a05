// The --trace recorder's progress-thread spans (runtime/debug/trace_recorder.c):
// spans that overlap without nesting (two requests in flight together, or
// the MPI backend's and the shared-memory layer's threads at once) must go on
// separate rows, since a trace viewer draws one row as a stack; and the two
// threads may record at the same time.
// hl-test-libs: hl_debug hl_collectives hl_verifier hl_text hl_exec hl_ir hl_base
#include <pthread.h>
#include <string.h>

#include "runtime/debug/trace_recorder.h"
#include "tests/unit/test_util.h"

// Counts occurrences of `needle` in `s`.
static int count_of(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

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
  CU_ASSERT_EQUAL(count_of(json, "\"cat\":\"progress\""), 4);
  CU_ASSERT_EQUAL(count_of(json, "progress thread ("), 2);
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

static CU_TestInfo tests[] = {
    {"overlapping_progress_spans_get_rows", test_overlapping_progress_spans_get_rows},
    {"two_threads_record_at_once", test_two_threads_record_at_once},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("trace_recorder", tests)
