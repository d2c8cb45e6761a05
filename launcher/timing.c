#include "launcher/timing.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Milliseconds to the microsecond, and to three significant digits below
// 0.1 ms (a small program's run takes about a microsecond: "0.000" would
// hide it, and its first run against it).
static void append_ms(hl_strbuf_t *out, double seconds) {
  double ms = seconds * 1e3;
  int decimals = 3;
  for (double t = ms; t > 0 && t < 0.1 && decimals < 9; t *= 10) decimals++;
  hl_strbuf_appendf(out, "%.*f ms", decimals, ms);
}

hl_status_t hl_timing_format(const double *seconds, int64_t runs, int processes,
                             hl_strbuf_t *out) {
  if (runs < 1) return HL_INVALID("no runs to report");
  hl_strbuf_appendf(out, "%lld run%s on %d process%s: %s", (long long)runs, runs == 1 ? "" : "s",
                    processes, processes == 1 ? "" : "es", runs == 1 ? "" : "first ");
  append_ms(out, seconds[0]);
  if (runs > 1) {
    // The first run also builds the plans and warms caches: kept apart.
    int64_t n = runs - 1;
    double *rest = hl_malloc((size_t)n * sizeof(double));
    if (!rest) return HL_OOM();
    memcpy(rest, seconds + 1, (size_t)n * sizeof(double));
    qsort(rest, (size_t)n, sizeof(double), cmp_double);
    double median = n % 2 ? rest[n / 2] : 0.5 * (rest[n / 2 - 1] + rest[n / 2]);
    hl_strbuf_appendf(out, "; runs 2-%lld: min ", (long long)runs);
    append_ms(out, rest[0]);
    hl_strbuf_appendf(out, ", median ");
    append_ms(out, median);
    hl_strbuf_appendf(out, ", max ");
    append_ms(out, rest[n - 1]);
    hl_free(rest);
  }
  return out->failed ? HL_OOM() : NULL;
}
