#include "runtime/fusion/jit/exec_memory.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

hl_status_t hl_exec_memory_create(const void *bytes, size_t len, hl_exec_memory_t *out) {
  memset(out, 0, sizeof(*out));
  long page = sysconf(_SC_PAGESIZE);
  size_t size = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
  if (size == 0) size = (size_t)page;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return HL_INTERNAL_ERROR("mmap of %zu bytes for JIT code: %s", size, strerror(errno));
  memcpy(p, bytes, len);
  if (mprotect(p, size, PROT_READ | PROT_EXEC) != 0) {
    int e = errno;
    munmap(p, size);
    return HL_INTERNAL_ERROR("mprotect of JIT code to read+execute: %s", strerror(e));
  }
  out->code = p;
  out->size = size;
  return NULL;
}

void hl_exec_memory_free(hl_exec_memory_t *m) {
  if (m->code) munmap(m->code, m->size);
  m->code = NULL;
  m->size = 0;
}
