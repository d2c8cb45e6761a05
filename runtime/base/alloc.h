// Allocation wrappers. Every allocation of the project goes through these so
// tests can inject failure after N allocations (like Lua's ltests.c) and check
// that cleanup paths return HL_OUT_OF_MEMORY instead of crashing or leaking.
#ifndef HL_RUNTIME_BASE_ALLOC_H_
#define HL_RUNTIME_BASE_ALLOC_H_

#include <stddef.h>

void *hl_malloc(size_t size);
void *hl_calloc(size_t count, size_t size);
void *hl_realloc(void *ptr, size_t size);
// `alignment` a power of two >= sizeof(void *); freed with hl_free (never
// hl_realloc).
void *hl_malloc_aligned(size_t size, size_t alignment);
void hl_free(void *ptr);
char *hl_strdup(const char *s);
char *hl_strndup(const char *s, size_t n);

// Bytes this process holds: malloc's blocks in use plus the large arrays
// alive (alloc.c maps each array >= 64 KiB of its own; those are
// hl_alloc_large_live_bytes). For out-of-memory reports; not cheap
// (mallinfo2 walks the heap's bins).
size_t hl_alloc_live_bytes(void);
size_t hl_alloc_large_live_bytes(void);

// Large blocks ahead of their use (the executor's warm start, issue 24): a
// fresh page costs a page fault per 4 KiB on first touch, which in
// a program's first run can take several times the run itself.
// hl_alloc_large_block_bytes: the mapping a request of `size` bytes gets
// (page-rounded), 0 when it is not a large block (malloc's).
// hl_alloc_resident: a large block of `size` bytes whose pages are all
// resident (cached pages, else fresh ones populated), freed with
// hl_free like any other; NULL when `size` is not large or out of memory.
// hl_alloc_large_peak_bytes: the most large-array bytes alive at once
// (hl_alloc_resident's blocks not counted until freed and taken again:
// they are the cache's, made ahead, not arrays).
size_t hl_alloc_large_block_bytes(size_t size);
void *hl_alloc_resident(size_t size);
size_t hl_alloc_large_peak_bytes(void);
// Bytes of large blocks mapped fresh so far (the pages no cached run gave):
// what first touches will page-fault in.
size_t hl_alloc_large_fresh_bytes(void);

// The size of the last request that failed (0: none since the last clear);
// the executor names it in out-of-memory errors.
size_t hl_alloc_failed_bytes(void);
void hl_alloc_clear_failed_bytes(void);

// Test hook: the next `count` allocations succeed, then all fail.
// A negative count turns injection off (the default).
void hl_alloc_fail_after(long count);

#endif  // HL_RUNTIME_BASE_ALLOC_H_
