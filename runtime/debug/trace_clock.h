// The clock of --trace's hot path: two reads per instruction, so it must be
// cheap. Where the kernel itself uses the CPU's time-stamp counter as the
// source of CLOCK_MONOTONIC ("tsc" in
// /sys/devices/system/clocksource/clocksource0/current_clocksource: the
// kernel checked that it is invariant and synchronised across cores), the
// recorder reads the counter (rdtsc, ~10 ns on the development machine,
// against ~25 ns for clock_gettime) and converts ticks to CLOCK_MONOTONIC
// nanoseconds only when the trace is written, by the line through two
// (ticks, ns) anchors: one taken when the clock is made, one when the trace
// is written (at least 10 ms apart). Elsewhere ticks are CLOCK_MONOTONIC
// nanoseconds.
#ifndef HL_RUNTIME_DEBUG_TRACE_CLOCK_H_
#define HL_RUNTIME_DEBUG_TRACE_CLOCK_H_

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

typedef struct hl_trace_clock {
  bool tsc;                  // ticks are time-stamp counter values
  int64_t tick0, ns0;        // the anchor taken at init
  int64_t tick1, ns1;        // the anchor taken by hl_trace_clock_calibrate
} hl_trace_clock_t;

// Chooses the counter and takes the first anchor. `allow_tsc` false: always
// CLOCK_MONOTONIC (tests compare both).
void hl_trace_clock_init(hl_trace_clock_t *clock, bool allow_tsc);

static inline int64_t hl_trace_clock_ticks(const hl_trace_clock_t *clock) {
#if defined(__x86_64__)
  if (clock->tsc) return (int64_t)__rdtsc();
#endif
  (void)clock;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Takes the second anchor (waiting until 10 ms after the first, so a short
// run still gets an accurate rate). Call before converting.
void hl_trace_clock_calibrate(hl_trace_clock_t *clock);
// CLOCK_MONOTONIC nanoseconds of a tick value (after calibrate).
int64_t hl_trace_clock_to_ns(const hl_trace_clock_t *clock, int64_t ticks);

#endif  // HL_RUNTIME_DEBUG_TRACE_CLOCK_H_
