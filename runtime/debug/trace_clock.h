// The clock of --trace's hot path: one read per instruction, so it must be
// cheap. Where the CPU says its time-stamp counter is invariant (CPUID leaf
// 0x80000007, EDX bit 8: it ticks at a constant rate through frequency and
// sleep states) and the kernel itself uses it as the source of
// CLOCK_MONOTONIC ("tsc" in
// /sys/devices/system/clocksource/clocksource0/current_clocksource: the
// kernel checked that it is synchronised across cores), the
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
  int64_t base;              // ticks well before init: recorded ticks are kept relative to it
} hl_trace_clock_t;

// Chooses the counter and takes the first anchor. `allow_tsc` false: always
// CLOCK_MONOTONIC (tests compare both).
void hl_trace_clock_init(hl_trace_clock_t *clock, bool allow_tsc);

// CLOCK_MONOTONIC in ns (out of line: the inline counter read stays small).
int64_t hl_trace_clock_monotonic_ns(void);

static inline int64_t hl_trace_clock_ticks(const hl_trace_clock_t *clock) {
#if defined(__x86_64__)
  if (__builtin_expect(clock->tsc, 1)) return (int64_t)__rdtsc();
#endif
  (void)clock;
  return hl_trace_clock_monotonic_ns();
}

// Takes the second anchor (waiting until 10 ms after the first, so a short
// run still gets an accurate rate). Call before converting.
void hl_trace_clock_calibrate(hl_trace_clock_t *clock);
// CLOCK_MONOTONIC nanoseconds of a tick value (after calibrate).
int64_t hl_trace_clock_to_ns(const hl_trace_clock_t *clock, int64_t ticks);

#endif  // HL_RUNTIME_DEBUG_TRACE_CLOCK_H_
