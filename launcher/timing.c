#include "launcher/timing.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

hl_status_t hl_timing_format(const double *seconds, int64_t runs, int processes,
                             hl_strbuf_t *out) {
  if (runs < 1) return HL_INVALID("no runs to report");
  hl_strbuf_appendf(out, "%lld run%s on %d process%s: %s%.3f ms", (long long)runs,
                    runs == 1 ? "" : "s", processes, processes == 1 ? "" : "es",
                    runs == 1 ? "" : "first ", seconds[0] * 1e3);
  if (runs > 1) {
    // The first run also builds the plans and warms caches: kept apart.
    int64_t n = runs - 1;
    double *rest = hl_malloc((size_t)n * sizeof(double));
    if (!rest) return HL_OOM();
    memcpy(rest, seconds + 1, (size_t)n * sizeof(double));
    qsort(rest, (size_t)n, sizeof(double), cmp_double);
    double median = n % 2 ? rest[n / 2] : 0.5 * (rest[n / 2 - 1] + rest[n / 2]);
    hl_strbuf_appendf(out, "; runs 2-%lld: min %.3f ms, median %.3f ms, max %.3f ms",
                      (long long)runs, rest[0] * 1e3, median * 1e3, rest[n - 1] * 1e3);
    hl_free(rest);
  }
  return out->failed ? HL_OOM() : NULL;
}
