// Huge pages under the buffers the direct path exposes to its peers.
//
// process_vm_readv pins the owner's pages one 4 KiB page at a time; on the
// 2-core KVM development VM reading 4 MiB from a peer took 323 us when the
// peer's buffer was on 4 KiB pages and 149 us on one 2 MiB transparent huge
// page (16 MiB: 2461 vs 941 us; a user-space memcpy of the same 16 MiB:
// 1160-1290 us), the reader's own page size hardly mattering. Heap memory
// is on 4 KiB pages unless the allocator asked for more (THP "madvise"
// mode), so a member asks the kernel to back the aligned interior of a
// buffer it exposes with huge pages (MADV_COLLAPSE, Linux >= 6.1:
// synchronous, contents unchanged, the mapping's flags untouched). The first
// collapse of a range costs more than it saves in one call (on the loaded
// VM 7-25 ms for 14 MiB: a copy, the page allocation and an LRU drain on
// every CPU); a range already on huge pages costs a page-table walk (1-2 us
// for 14 MiB). So a range is collapsed only when it is exposed again (a
// buffer the program reuses, as the executor's never-trimmed heap does
// step after step: launcher/worker.c's mallopt), never in a one-shot call:
// a small table remembers the ranges exposed recently. A kernel without
// MADV_COLLAPSE (EINVAL) turns it off for the process; other failures (not
// anonymous memory, no free huge page) leave that range as it was.
// HL_SHM_HUGE_PAGES=0 turns it off (for comparison).
#include "collectives/shm/shm_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 uapi; older headers lack it
#endif

enum { kHugePage = 2 << 20 };  // x86-64 / arm64 (4 KiB base pages) PMD size

static _Atomic int g_state;  // 0: unknown, 1: on, 2: off

static bool enabled(void) {
  int s = atomic_load_explicit(&g_state, memory_order_relaxed);
  if (s == 0) {
    const char *e = getenv("HL_SHM_HUGE_PAGES");
    s = e && !strcmp(e, "0") ? 2 : 1;
    atomic_store_explicit(&g_state, s, memory_order_relaxed);
  }
  return s == 1;
}

// Ranges exposed recently, in sets of 4 by their first huge page (a
// collective exposes up to two buffers at a time): a hit means the range
// is exposed again.
enum { kSets = 16, kWays = 4 };
static struct {
  uintptr_t lo, hi;
} g_seen[kSets][kWays];
static unsigned g_next[kSets];
static pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;

static bool seen_before(uintptr_t lo, uintptr_t hi) {
  size_t set = (size_t)((lo / kHugePage) * 0x9e3779b97f4a7c15ull >> 60) % kSets;
  bool hit = false;
  pthread_mutex_lock(&g_seen_lock);
  for (int w = 0; w < kWays && !hit; w++) hit = g_seen[set][w].lo == lo && g_seen[set][w].hi == hi;
  if (!hit) {
    unsigned w = g_next[set]++ % kWays;
    g_seen[set][w].lo = lo;
    g_seen[set][w].hi = hi;
  }
  pthread_mutex_unlock(&g_seen_lock);
  return hit;
}

void hl_shm_prefer_huge_pages(const void *buf, size_t bytes) {
  if (!buf || bytes < kHugePage || !enabled()) return;
  uintptr_t a = (uintptr_t)buf, lo = (a + kHugePage - 1) & ~(uintptr_t)(kHugePage - 1);
  uintptr_t hi = (a + bytes) & ~(uintptr_t)(kHugePage - 1);
  if (hi <= lo || !seen_before(lo, hi)) return;
  if (madvise((void *)lo, hi - lo, MADV_COLLAPSE) != 0 && errno == EINVAL)
    atomic_store_explicit(&g_state, 2, memory_order_relaxed);
}
