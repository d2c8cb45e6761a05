// Free page runs (page_runs.h): a sorted array; lists hold tens of runs, so
// a binary search and a memmove per change are all the structure needed.
#include "runtime/base/page_runs.h"

#include <stdlib.h>
#include <string.h>

// The index of the first run starting at or after `start`.
static size_t lower_bound(const hl_page_runs_t *s, uintptr_t start) {
  size_t lo = 0, hi = s->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->runs[mid].start < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

bool hl_page_runs_put(hl_page_runs_t *s, uintptr_t start, size_t bytes) {
  if (bytes == 0) return true;
  size_t i = lower_bound(s, start);
  bool before = i > 0 && s->runs[i - 1].start + s->runs[i - 1].bytes == start;
  bool after = i < s->count && start + bytes == s->runs[i].start;
  if (before && after) {  // fills the gap between two runs: one run now
    s->runs[i - 1].bytes += bytes + s->runs[i].bytes;
    memmove(&s->runs[i], &s->runs[i + 1], (s->count - i - 1) * sizeof(s->runs[0]));
    s->count--;
  } else if (before) {
    s->runs[i - 1].bytes += bytes;
  } else if (after) {
    s->runs[i].start = start;
    s->runs[i].bytes += bytes;
  } else {
    if (s->count == s->cap) {
      // Plain realloc: alloc.c calls this under its lock, where hl_malloc
      // would take the lock again (and count against failure injection).
      size_t n = s->cap ? 2 * s->cap : 16;
      hl_page_run_t *p = realloc(s->runs, n * sizeof(*p));
      if (!p) return false;
      s->runs = p;
      s->cap = n;
    }
    memmove(&s->runs[i + 1], &s->runs[i], (s->count - i) * sizeof(s->runs[0]));
    s->runs[i] = (hl_page_run_t){start, bytes};
    s->count++;
  }
  s->bytes += bytes;
  return true;
}

static hl_page_run_t remove_at(hl_page_runs_t *s, size_t i) {
  hl_page_run_t r = s->runs[i];
  memmove(&s->runs[i], &s->runs[i + 1], (s->count - i - 1) * sizeof(s->runs[0]));
  s->count--;
  s->bytes -= r.bytes;
  return r;
}

uintptr_t hl_page_runs_take(hl_page_runs_t *s, size_t bytes) {
  size_t fit = s->count;
  for (size_t i = 0; i < s->count; i++)
    if (s->runs[i].bytes >= bytes && (fit == s->count || s->runs[i].bytes < s->runs[fit].bytes))
      fit = i;
  if (fit == s->count || bytes == 0) return 0;
  hl_page_run_t *r = &s->runs[fit];
  uintptr_t p = r->start;
  if (r->bytes == bytes) {
    remove_at(s, fit);
  } else {
    r->start += bytes;
    r->bytes -= bytes;
    s->bytes -= bytes;
  }
  return p;
}

size_t hl_page_runs_budget(size_t peak) { return peak + peak / 4; }

bool hl_page_runs_map_fresh(const hl_page_runs_t *s, size_t live, size_t peak, size_t bytes) {
  if (live + bytes > peak) peak = live + bytes;
  return live + s->bytes + bytes <= hl_page_runs_budget(peak);
}

// The index of the largest run (the lowest address among equals), -1 when
// there is none.
static long largest(const hl_page_runs_t *s) {
  long l = -1;
  for (size_t i = 0; i < s->count; i++)
    if (l < 0 || s->runs[i].bytes > s->runs[l].bytes) l = (long)i;
  return l;
}

bool hl_page_runs_gather(hl_page_runs_t *s, size_t bytes, hl_page_run_t *out) {
  long i = largest(s);
  if (i < 0 || bytes == 0) return false;
  hl_page_run_t *r = &s->runs[i];
  if (r->bytes <= bytes) {
    *out = remove_at(s, (size_t)i);
    return true;
  }
  *out = (hl_page_run_t){r->start, bytes};
  r->start += bytes;
  r->bytes -= bytes;
  s->bytes -= bytes;
  return true;
}

bool hl_page_runs_trim(hl_page_runs_t *s, size_t limit, hl_page_run_t *out) {
  if (s->bytes <= limit || s->count == 0) return false;
  size_t excess = s->bytes - limit, i = (size_t)largest(s);
  hl_page_run_t *r = &s->runs[i];
  if (r->bytes <= excess) {
    *out = remove_at(s, i);
    return true;
  }
  r->bytes -= excess;
  s->bytes -= excess;
  *out = (hl_page_run_t){r->start + r->bytes, excess};
  return true;
}

void hl_page_runs_deinit(hl_page_runs_t *s) {
  free(s->runs);
  memset(s, 0, sizeof(*s));
}
