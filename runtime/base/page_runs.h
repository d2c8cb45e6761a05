// Free page runs: address ranges kept in address order, each joined with
// the runs it touches. The allocator's cache of freed large blocks
// (alloc.c) is one, over real mappings; the memory plan's simulation of
// that cache (exec/memory_plan.c) is another, over made-up addresses, so
// the two take the same decisions. Nothing here maps or unmaps: the caller
// does what the calls return.
//
// A request is served by the smallest run that holds it (the lowest address
// among equals), cut from its front; the rest stays a run. A block cut off
// and given back joins its tail again, so a program that frees everything
// it took leaves whole runs behind. A request that no run holds maps fresh
// pages while all that is mapped stays within a slack over the peak of live
// bytes, else it gathers the runs' pages (moved into its range): the first
// runs of a program map a little more than its peak, and from then on each
// run finds the runs as the one before left them, takes the same blocks and
// neither maps nor moves a page (--repeat, issue 26). Moving instead costs
// a system call and a TLB flush per run and request, and cuts the address
// space into ever more mappings.
#ifndef HL_RUNTIME_BASE_PAGE_RUNS_H_
#define HL_RUNTIME_BASE_PAGE_RUNS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hl_page_run {
  uintptr_t start;
  size_t bytes;
} hl_page_run_t;

typedef struct hl_page_runs {
  hl_page_run_t *runs;  // ascending start, none touching the next
  size_t count, cap;
  size_t bytes;  // the runs' total
} hl_page_runs_t;

// Adds [start, start + bytes) (which overlaps no run), joined with the runs
// it touches. false: out of memory for the list (nothing changed).
bool hl_page_runs_put(hl_page_runs_t *s, uintptr_t start, size_t bytes);

// The start of `bytes` cut from the smallest run that holds them, 0 when
// none does.
uintptr_t hl_page_runs_take(hl_page_runs_t *s, size_t bytes);

// For a request that no run holds: the largest run (or its front, when it
// holds more than `bytes`) taken out, its pages to be moved into the
// request's range; false when there is no run. Called until the request is
// covered or the runs run out, it gathers pages largest run first.
bool hl_page_runs_gather(hl_page_runs_t *s, size_t bytes, hl_page_run_t *out);

// Whether a request of `bytes` that no run holds maps fresh pages rather
// than gathering the runs': whether `live` (bytes of blocks out), the
// runs' bytes and `bytes` stay within hl_page_runs_budget of the peak of
// live bytes (`peak`, this request counted).
bool hl_page_runs_map_fresh(const hl_page_runs_t *s, size_t live, size_t peak, size_t bytes);
// The most that is kept mapped for a peak of `peak` live bytes: the peak
// and a quarter (on the training steps of bench/training the slack that
// lets later runs map and move nothing; an eighth left 2-12 moves a run).
size_t hl_page_runs_budget(size_t peak);

// While the runs hold more than `limit` bytes: the range to give back, cut
// from the end of the largest run (the excess, or the whole run when it is
// no larger), and true; false when they hold at most `limit`.
bool hl_page_runs_trim(hl_page_runs_t *s, size_t limit, hl_page_run_t *out);

// Empties the list (the caller has given the runs back); frees its memory.
void hl_page_runs_deinit(hl_page_runs_t *s);

#endif  // HL_RUNTIME_BASE_PAGE_RUNS_H_
