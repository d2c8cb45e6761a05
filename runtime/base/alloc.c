// Small blocks come from malloc. Large arrays (>= kBigBytes, 64 KiB) are
// pages of their own, recycled through a cache of freed pages: the launcher
// keeps freed heap memory mapped (launcher/worker.c's mallopt, so a program
// that reuses a buffer size does not page-fault it in again), and in that
// heap a large aligned block is rarely reused -- glibc (< 2.38) memalign
// asks for size + alignment, which the chunk the previous array of the same
// size left cannot give, and small allocations carve freed chunks -- so the
// heap grew by an array per run under --repeat (issue 26), and arrays of
// 256 KiB - 1 MiB left it fragmented by 3-9 MB on the training steps
// (issue 24). The cache is a set of page runs (page_runs.h): a request is
// cut from the smallest run that holds it, a freed block joins the runs it
// touches, and when no run holds a request it maps fresh pages within a
// slack over the peak of live bytes, else it gathers the cached runs' pages
// into its range (mremap moves page tables: no copy, no page fault). All
// that is mapped -- blocks out and cached -- stays within that budget (the
// peak and a quarter): later runs of a program map and move nothing.
#define _GNU_SOURCE  // mremap
#include "runtime/base/alloc.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/page_runs.h"

// The system's page (4 KiB on x86-64, up to 64 KiB on aarch64 kernels):
// blocks are cut, joined and unmapped at its multiples.
static size_t page_size(void) {
  static _Atomic size_t page;
  size_t p = atomic_load_explicit(&page, memory_order_relaxed);
  if (!p) {
    long s = sysconf(_SC_PAGESIZE);
    p = s > 0 ? (size_t)s : 4096;
    atomic_store_explicit(&page, p, memory_order_relaxed);
  }
  return p;
}
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HL_ALLOC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HL_ALLOC_ASAN)
// Under AddressSanitizer every block is malloc's, so its leak and bounds
// checks cover large arrays too.
static const size_t kBigBytes = SIZE_MAX;
#else
static const size_t kBigBytes = (size_t)1 << 16;
#endif

static long g_fail_after = -1;
static _Atomic size_t g_failed_bytes;  // the last request that failed

static int should_fail(void) {
  if (g_fail_after < 0) return 0;
  if (g_fail_after == 0) return 1;
  g_fail_after--;
  return 0;
}

void hl_alloc_fail_after(long count) { g_fail_after = count; }

size_t hl_alloc_failed_bytes(void) { return atomic_load(&g_failed_bytes); }
void hl_alloc_clear_failed_bytes(void) { atomic_store(&g_failed_bytes, 0); }

// `p`, recording `bytes` as the failed request when it is NULL.
static void *noted(void *p, size_t bytes) {
  if (!p) atomic_store(&g_failed_bytes, bytes ? bytes : 1);
  return p;
}

//===----------------------------------------------------------------------===//
// Large blocks
//===----------------------------------------------------------------------===//

struct big_block {
  void *ptr;
  size_t bytes;   // the mapping's length (a multiple of the page)
  bool reserved;  // hl_alloc_resident's: made ahead for the cache, not an array yet
};

// Live blocks (an unordered array) and the cache of freed pages (runs in
// address order, page_runs.h); a spin lock guards both (large allocations
// are rare next to the work on them).
static struct big_block *g_live;
static size_t g_live_count, g_live_cap;
static hl_page_runs_t g_cache;
static size_t g_live_bytes, g_peak_live_bytes;
// Live blocks that are hl_alloc_resident's reservations, and the most bytes
// of the others (the program's arrays) live at once: what
// hl_alloc_large_peak_bytes reports. The cache's limit counts both.
static size_t g_reserved_bytes, g_peak_array_bytes;
static size_t g_fresh_bytes;  // mapped fresh so far (pages no cached run gave)
static atomic_size_t g_live_count_atomic;  // read without the lock by hl_free
static atomic_flag g_lock = ATOMIC_FLAG_INIT;

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) {
  }
}
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static bool push_live(struct big_block b) {
  if (g_live_count == g_live_cap) {
    size_t n = g_live_cap ? 2 * g_live_cap : 16;
    struct big_block *p = realloc(g_live, n * sizeof(*p));
    if (!p) return false;
    g_live = p;
    g_live_cap = n;
  }
  g_live[g_live_count++] = b;
  return true;
}

static size_t page_round(size_t bytes) {
  size_t page = page_size();
  return (bytes + page - 1) & ~(page - 1);
}

static void *mmap_fresh(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

// Moves the pages of [from, from + len) to `to` (mremap moves page tables:
// no copy, no page fault) and returns the bytes moved; what cannot be moved
// is unmapped (`to` keeps the fresh pages there). Kernels before 6.17 move
// no range that spans two mappings (cached runs join blocks of several),
// so a range they refuse is moved in halves.
static size_t move_pages(char *from, size_t len, char *to) {
  if (mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED) return len;
  if (errno == EFAULT && len > page_size()) {
    size_t half = len / 2 & ~(page_size() - 1);
    return move_pages(from, half, to) + move_pages(from + half, len - half, to + half);
  }
  munmap(from, len);
  return 0;
}

// `bytes` (page-rounded) of mapped memory: cut from the smallest cached run
// that holds them; else a fresh range -- into which, once the slack over the
// peak is spent (hl_page_runs_map_fresh), the cached runs' pages are moved,
// largest run first, so that freed pages serve a request however the cache
// is cut up: only what the cache lacks is new. *zeroed: its contents are
// zero (nothing moved in).
static void *big_take(size_t bytes, bool *zeroed) {
  *zeroed = false;
  uintptr_t at = hl_page_runs_take(&g_cache, bytes);
  if (at) return (void *)at;
  bool gather = !hl_page_runs_map_fresh(&g_cache, g_live_bytes, g_peak_live_bytes, bytes);
  char *p = mmap_fresh(bytes);
  if (!p && g_cache.count > 0) {  // give the cache back and try again
    for (size_t i = 0; i < g_cache.count; i++)
      munmap((void *)g_cache.runs[i].start, g_cache.runs[i].bytes);
    hl_page_runs_deinit(&g_cache);
    p = mmap_fresh(bytes);
  }
  if (!p) return NULL;
  size_t have = 0, moved = 0;  // bytes of p the runs covered, of which moved
  hl_page_run_t r;
  while (gather && have < bytes && hl_page_runs_gather(&g_cache, bytes - have, &r)) {
    moved += move_pages((char *)r.start, r.bytes, p + have);
    have += r.bytes;
  }
  g_fresh_bytes += bytes - moved;
  *zeroed = moved == 0;
  return p;
}

// A mapping of `bytes` (page-rounded) entered in the live list.
static void *big_take_live(size_t bytes, bool reserved, bool *zeroed) {
  lock();
  void *p = big_take(bytes, zeroed);
  if (p && !push_live((struct big_block){p, bytes, reserved})) {
    if (!hl_page_runs_put(&g_cache, (uintptr_t)p, bytes)) munmap(p, bytes);
    p = NULL;
  }
  if (p) {
    g_live_bytes += bytes;
    if (reserved) g_reserved_bytes += bytes;
    if (g_live_bytes > g_peak_live_bytes) g_peak_live_bytes = g_live_bytes;
    if (g_live_bytes - g_reserved_bytes > g_peak_array_bytes)
      g_peak_array_bytes = g_live_bytes - g_reserved_bytes;
    atomic_store(&g_live_count_atomic, g_live_count);
  }
  unlock();
  return p;
}

static void *big_alloc(size_t size, bool zero) {
  bool zeroed;
  void *p = big_take_live(page_round(size), false, &zeroed);
  if (p && zero && !zeroed) memset(p, 0, size);
  return p;
}

// The live block at `ptr` taken out of the live list (bytes 0: not one).
static struct big_block big_find_and_remove(void *ptr) {
  struct big_block found = {NULL, 0, false};
  if (((uintptr_t)ptr & (page_size() - 1)) != 0 || atomic_load(&g_live_count_atomic) == 0)
    return found;
  lock();
  for (size_t i = 0; i < g_live_count; i++)
    if (g_live[i].ptr == ptr) {
      found = g_live[i];
      g_live[i] = g_live[--g_live_count];
      g_live_bytes -= found.bytes;
      if (found.reserved) g_reserved_bytes -= found.bytes;
      atomic_store(&g_live_count_atomic, g_live_count);
      break;
    }
  unlock();
  return found;
}

// Into the cache, joined with the runs it touches; while all that is mapped
// (live and cached) is more than the peak of live bytes and its slack
// (hl_page_runs_map_fresh), the excess is unmapped from the end of the
// cache's largest run.
static void big_release(struct big_block b) {
  lock();
  if (!hl_page_runs_put(&g_cache, (uintptr_t)b.ptr, b.bytes)) munmap(b.ptr, b.bytes);
  size_t budget = hl_page_runs_budget(g_peak_live_bytes);
  size_t limit = budget > g_live_bytes ? budget - g_live_bytes : 0;
  hl_page_run_t out;
  while (hl_page_runs_trim(&g_cache, limit, &out)) munmap((void *)out.start, out.bytes);
  unlock();
}

size_t hl_alloc_large_live_bytes(void) {
  lock();
  size_t n = g_live_bytes;
  unlock();
  return n;
}

size_t hl_alloc_large_peak_bytes(void) {
  lock();
  size_t n = g_peak_array_bytes;
  unlock();
  return n;
}

size_t hl_alloc_large_fresh_bytes(void) {
  lock();
  size_t n = g_fresh_bytes;
  unlock();
  return n;
}

size_t hl_alloc_large_block_bytes(size_t size) {
  return size >= kBigBytes ? page_round(size) : 0;
}

void *hl_alloc_resident(size_t size) {
  if (size < kBigBytes || should_fail()) return NULL;
  size_t bytes = page_round(size);
  bool zeroed;
  void *p = big_take_live(bytes, true, &zeroed);
  (void)zeroed;
  // Fresh pages (a new mapping, or a cached one grown) faulted in now, in
  // one call where the kernel has it (Linux 5.14: resident pages cost only
  // the walk), else by writing a byte a page.
#ifdef MADV_POPULATE_WRITE
  if (p && madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return p;
#endif
  for (size_t off = 0; p && off < bytes; off += page_size()) ((volatile char *)p)[off] = 0;
  return p;
}

size_t hl_alloc_live_bytes(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd + hl_alloc_large_live_bytes();
}

//===----------------------------------------------------------------------===//
// The wrappers
//===----------------------------------------------------------------------===//

void *hl_malloc(size_t size) {
  if (should_fail()) return noted(NULL, size);
  if (size >= kBigBytes) return noted(big_alloc(size, false), size);
  return noted(malloc(size ? size : 1), size);
}

void *hl_malloc_aligned(size_t size, size_t alignment) {
  if (should_fail()) return noted(NULL, size);
  if (size >= kBigBytes && alignment <= page_size())
    return noted(big_alloc(size, false), size);
  void *p = NULL;
  return noted(posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL, size);
}

void *hl_calloc(size_t count, size_t size) {
  if (should_fail()) return noted(NULL, count * size);
  if (count == 0 || size == 0) return noted(calloc(1, 1), 1);
  if (size > SIZE_MAX / count) return noted(NULL, SIZE_MAX);
  if (count * size >= kBigBytes) return noted(big_alloc(count * size, true), count * size);
  return noted(calloc(count, size), count * size);
}

void *hl_realloc(void *ptr, size_t size) {
  if (should_fail()) return noted(NULL, size);
  struct big_block b = ptr ? big_find_and_remove(ptr) : (struct big_block){NULL, 0, false};
  if (!b.bytes) return noted(realloc(ptr, size ? size : 1), size);
  // A large block moves into a fresh one (malloc's or the cache's).
  void *p = size >= kBigBytes ? big_alloc(size, false) : malloc(size ? size : 1);
  if (!p) {  // still the caller's: back to the live list
    lock();
    bool kept = push_live(b);
    if (kept) {
      g_live_bytes += b.bytes;
      if (b.reserved) g_reserved_bytes += b.bytes;
      atomic_store(&g_live_count_atomic, g_live_count);
    }
    unlock();
    return noted(NULL, size);
  }
  memcpy(p, ptr, size < b.bytes ? size : b.bytes);
  big_release(b);
  return p;
}

void hl_free(void *ptr) {
  if (!ptr) return;
  struct big_block b = big_find_and_remove(ptr);
  if (b.bytes) big_release(b);
  else free(ptr);
}

char *hl_strndup(const char *s, size_t n) {
  char *d = hl_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *hl_strdup(const char *s) { return s ? hl_strndup(s, strlen(s)) : NULL; }
