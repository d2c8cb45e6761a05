// The --trace clock (runtime/debug/trace_clock.c) and the recorder's spans
// in time: ticks converted back to CLOCK_MONOTONIC must agree with
// clock_gettime read at the same moments (the independent reference), and a
// recorded run's spans must lie inside the interval the test measured
// around it.
// hl-test-libs: hl_debug hl_collectives hl_verifier hl_text hl_exec hl_ir hl_base
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/debug/debug_observer.h"
#include "runtime/debug/trace_clock.h"
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

static int64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000};
  nanosleep(&ts, NULL);
}

// The sample among [from, to) whose converted tick is closest to its
// monotonic reading: one the scheduler did not interrupt between the two.
static int best_sample(const int64_t *err, int from, int to) {
  int best = from;
  for (int i = from + 1; i < to; i++)
    if (err[i] < err[best]) best = i;
  return best;
}

// Samples (ticks, monotonic) over ~30 ms, calibrates, and checks every
// converted tick against its monotonic reading. A wrong rate (ticks taken
// for ns at a few GHz) would be off by tens of ms; the bounds allow for
// samples preempted between their two reads on a loaded machine (or under
// qemu-user, where a read takes microseconds) only through the median and
// through the best sample of each end.
static void check_conversion(bool allow_tsc) {
  hl_trace_clock_t c;
  hl_trace_clock_init(&c, allow_tsc);
  enum { kSamples = 16 };
  int64_t ticks[kSamples], mono[kSamples];
  for (int i = 0; i < kSamples; i++) {
    ticks[i] = hl_trace_clock_ticks(&c);
    mono[i] = monotonic_ns();
    sleep_ms(2);
  }
  hl_trace_clock_calibrate(&c);
  int64_t err[kSamples];
  for (int i = 0; i < kSamples; i++) {
    err[i] = llabs(hl_trace_clock_to_ns(&c, ticks[i]) - mono[i]);
    if (i > 0) CU_ASSERT(hl_trace_clock_to_ns(&c, ticks[i]) > hl_trace_clock_to_ns(&c, ticks[i - 1]));
  }
  // Elapsed time agrees too, between the best samples of the first and the
  // last quarter (the first and last samples themselves: a preemption of
  // either between its two reads, a few ms on a loaded machine, failed
  // the 1 ms bound). They lie >= 9 sleeps of >= 2 ms apart.
  int first = best_sample(err, 0, kSamples / 4), last = best_sample(err, 3 * kSamples / 4, kSamples);
  int64_t elapsed = hl_trace_clock_to_ns(&c, ticks[last]) - hl_trace_clock_to_ns(&c, ticks[first]);
  CU_ASSERT(elapsed >= 2000000 * (last - first) - 20000);
  CU_ASSERT(llabs(elapsed - (mono[last] - mono[first])) < 1000000);
  // Median error: insertion sort.
  for (int i = 1; i < kSamples; i++)
    for (int j = i; j > 0 && err[j] < err[j - 1]; j--) {
      int64_t t = err[j];
      err[j] = err[j - 1];
      err[j - 1] = t;
    }
  CU_ASSERT(err[kSamples / 2] < 20000);  // 20 us
}

static void test_counter_converts_to_monotonic(void) { check_conversion(true); }
static void test_monotonic_fallback(void) { check_conversion(false); }

// The "ts" / "dur" of every "X" event in `json` (ms since origin) lie in [0, limit_us].
static int spans_within(const char *json, double limit_us, int tid) {
  int n = 0;
  char key[32];
  snprintf(key, sizeof key, "\"tid\":%d,\"ts\":", tid);
  for (const char *p = strstr(json, key); p; p = strstr(p + 1, key)) {
    double ts = strtod(p + strlen(key), NULL);
    const char *d = strstr(p, "\"dur\":");
    double dur = d ? strtod(d + 6, NULL) : -1;
    CU_ASSERT(ts >= 0 && dur >= 0 && ts + dur <= limit_us);
    n++;
  }
  return n;
}

static void test_recorded_spans_in_time(void) {
  static const char kHlo[] =
      "HloModule m\nENTRY main {\n  p = f32[1000] parameter(0)\n"
      "  a = f32[1000] add(p, p)\n  ROOT e = f32[1000] exponential(a)\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kHlo, strlen(kHlo), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_trace_recorder_t *t = NULL;
  HL_ASSERT_OK(hl_trace_recorder_create(1000, &t));
  hl_debug_observer_t *obs = NULL;
  hl_debug_observer_options_t o = {.trace = t};
  HL_ASSERT_OK(hl_debug_observer_create(&o, &obs));
  hl_shape_t shape;
  HL_ASSERT_OK(hl_parse_shape("f32[1000]", &shape));
  hl_literal_t *arg = NULL, *out = NULL;
  HL_ASSERT_OK(hl_literal_create(&shape, &arg));
  int64_t origin = monotonic_ns();
  hl_exec_options_t opts = {.observer = hl_debug_observer_base(obs)};
  HL_ASSERT_OK(hl_execute(m, &opts, &arg, 1, &out));
  int64_t end = monotonic_ns();
  // A progress-thread span as the collectives' hook would record it.
  hl_trace_recorder_progress(t, NULL, 64, origin + 10, origin + 20, 3, true);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_trace_recorder_write_events(t, 0, 1, 1, 0, origin, NULL, &sb);
  const char *json = hl_strbuf_cstr(&sb);
  CU_ASSERT_EQUAL(spans_within(json, (double)(end - origin) * 1e-3, 0), 3);  // p, a, e
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"name\":\"progress thread\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tid\":2,\"ts\":0.010,\"dur\":0.010,"
                                      "\"args\":{\"opcode\":\"\",\"bytes\":64,\"tests\":3,"
                                      "\"completed_by\":\"progress thread\"}}"));
  hl_strbuf_deinit(&sb);
  hl_literal_release(arg);
  hl_literal_release(out);
  hl_debug_observer_destroy(obs);
  hl_trace_recorder_destroy(t);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"counter_converts_to_monotonic", test_counter_converts_to_monotonic},
    {"monotonic_fallback", test_monotonic_fallback},
    {"recorded_spans_in_time", test_recorded_spans_in_time},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("trace_clock", tests)
