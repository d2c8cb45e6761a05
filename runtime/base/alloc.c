#include "runtime/base/alloc.h"

#include <stdlib.h>
#include <string.h>

static long g_fail_after = -1;

static int should_fail(void) {
  if (g_fail_after < 0) return 0;
  if (g_fail_after == 0) return 1;
  g_fail_after--;
  return 0;
}

void hl_alloc_fail_after(long count) { g_fail_after = count; }

void *hl_malloc(size_t size) {
  if (should_fail()) return NULL;
  return malloc(size ? size : 1);
}

void *hl_malloc_aligned(size_t size, size_t alignment) {
  if (should_fail()) return NULL;
  void *p = NULL;
  return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

void *hl_calloc(size_t count, size_t size) {
  if (should_fail()) return NULL;
  if (count == 0 || size == 0) return calloc(1, 1);
  return calloc(count, size);
}

void *hl_realloc(void *ptr, size_t size) {
  if (should_fail()) return NULL;
  return realloc(ptr, size ? size : 1);
}

void hl_free(void *ptr) { free(ptr); }

char *hl_strndup(const char *s, size_t n) {
  char *d = hl_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *hl_strdup(const char *s) { return s ? hl_strndup(s, strlen(s)) : NULL; }
