#define _GNU_SOURCE  // dl_iterate_phdr
#include "runtime/base/code_pages.h"

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#define STOP_CHECK_BYTES (64 * 1024)
#define MAX_RANGES 8

typedef struct {
  const void *anchor;
  uintptr_t lo[MAX_RANGES], hi[MAX_RANGES];
  int count;
} object_t;

static bool holds(const struct dl_phdr_info *info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= lo && a - lo < ph->p_memsz) return true;
  }
  return false;
}

// Under the loader's list lock: only notes the ranges (a dlopen elsewhere
// waits for this).
static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  object_t *o = data;
  if (!holds(info, (uintptr_t)o->anchor)) return 0;
  for (int i = 0; i < info->dlpi_phnum && o->count < MAX_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W)) continue;
    o->lo[o->count] = info->dlpi_addr + ph->p_vaddr;
    o->hi[o->count++] = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
  }
  return 1;  // found: stop the walk
}

// Not instrumented: one byte of every page, read as raw memory, lands on
// AddressSanitizer's redzones around globals in the read-only data.
__attribute__((no_sanitize_address)) void hl_code_pages_touch(const void *const *anchors,
                                                               int count,
                                                               const atomic_bool *stop) {
  long size = sysconf(_SC_PAGESIZE);  // 4 KiB, or 16 / 64 KiB on some aarch64 kernels
  uintptr_t page = size > 0 ? (uintptr_t)size : 4096;
  volatile unsigned char sink = 0;
  for (int i = 0; i < count; i++) {
    if (!anchors[i]) continue;
    object_t o = {.anchor = anchors[i]};
    dl_iterate_phdr(find_object, &o);
    for (int r = 0; r < o.count; r++)
      for (uintptr_t p = o.lo[r] & ~(page - 1), next = p; p < o.hi[r]; p += page) {
        if (p >= next) {
          if (atomic_load_explicit(stop, memory_order_relaxed)) return;
          next = p + STOP_CHECK_BYTES;
        }
        sink ^= *(const volatile unsigned char *)p;
      }
  }
  (void)sink;
}
