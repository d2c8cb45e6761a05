// The trace clock (see trace_clock.h).
#include "runtime/debug/trace_clock.h"

#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

int64_t hl_trace_clock_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// True when the kernel's CLOCK_MONOTONIC runs on the time-stamp counter.
static bool kernel_uses_tsc(void) {
#if defined(__x86_64__)
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return false;
  char name[32] = "";
  bool yes = fgets(name, sizeof(name), f) && strcmp(name, "tsc\n") == 0;
  fclose(f);
  return yes;
#else
  return false;
#endif
}

// One (ticks, ns) pair read as close together as possible: of a few tries,
// the one whose counter reads around the clock read are nearest.
static void anchor(const hl_trace_clock_t *c, int64_t *tick, int64_t *ns) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 5; i++) {
    int64_t a = hl_trace_clock_ticks(c), t = hl_trace_clock_monotonic_ns(),
            b = hl_trace_clock_ticks(c);
    if (b - a < best) {
      best = b - a;
      *tick = a + (b - a) / 2;
      *ns = t;
    }
  }
}

// CPUID's invariant-TSC bit (leaf 0x80000007, EDX bit 8).
static bool cpu_has_invariant_tsc(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

void hl_trace_clock_init(hl_trace_clock_t *c, bool allow_tsc) {
  memset(c, 0, sizeof(*c));
  c->tsc = allow_tsc && cpu_has_invariant_tsc() && kernel_uses_tsc();
  if (c->tsc) anchor(c, &c->tick0, &c->ns0);
  // A second before now (in either unit's worth of ticks, at most ~5 GHz):
  // a core whose counter lags a little still reads above it.
  c->base = (c->tsc ? c->tick0 : hl_trace_clock_ticks(c)) - 5000000000;
}

void hl_trace_clock_calibrate(hl_trace_clock_t *c) {
  if (!c->tsc) return;
  while (hl_trace_clock_monotonic_ns() - c->ns0 < 10000000) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  anchor(c, &c->tick1, &c->ns1);
}

int64_t hl_trace_clock_to_ns(const hl_trace_clock_t *c, int64_t ticks) {
  if (!c->tsc) return ticks;
  double rate = (double)(c->ns1 - c->ns0) / (double)(c->tick1 - c->tick0);
  return c->ns0 + (int64_t)((double)(ticks - c->tick0) * rate);
}
