// hl_code_pages_touch (runtime/base/code_pages.h): after it, every page of
// the read-only mappings of the file that holds the anchor is present in
// this process's page table, as /proc/self/maps and /proc/self/pagemap
// (bit 63: present) tell independently of the loader's program headers; a
// set stop flag touches nothing, and NULL anchors or ones in no loaded
// object are passed over.
// hl-test-libs: hl_base
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/code_pages.h"
#include "tests/unit/test_util.h"

typedef struct {
  uintptr_t lo, hi;
} range_t;

// The read-only mappings (r--p, r-xp) of the file mapped at `anchor`; not
// the PROT_NONE gaps (---p) a loader leaves between segments aligned to
// 64 KiB (aarch64 objects), which nothing can read.
static int readonly_ranges_of(const void *anchor, range_t *out, int cap) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[4096], file[4096] = "";
  uintptr_t a = (uintptr_t)anchor;
  while (fgets(line, sizeof line, f)) {  // the anchor's file
    unsigned long lo, hi;
    char path[4096] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) >= 2 && a >= lo &&
        a < hi)
      strcpy(file, path);
  }
  int n = 0;
  rewind(f);
  while (file[0] && n < cap && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8], path[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perms, path) == 4 &&
        strcmp(path, file) == 0 && perms[0] == 'r' && perms[1] == '-')
      out[n++] = (range_t){lo, hi};
  }
  fclose(f);
  return n;
}

// Pages of [lo, hi) not present in the page table.
static long absent_pages(uintptr_t lo, uintptr_t hi) {
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  long absent = 0;
  for (uintptr_t p = lo; p < hi; p += page) {
    uint64_t entry = 0;
    if (pread(fd, &entry, sizeof entry, (off_t)(p / page * sizeof entry)) != sizeof entry) {
      absent = -1;
      break;
    }
    absent += !(entry >> 63);
  }
  close(fd);
  return absent;
}

static long absent_in(const range_t *r, int n) {
  long absent = 0;
  for (int i = 0; i < n; i++) absent += absent_pages(r[i].lo, r[i].hi);
  return absent;
}

// Whether /proc/self/pagemap describes this process's pages: one written
// page present, one untouched absent. Under qemu-user the maps are the
// guest's but the pagemap is the emulator's (host addresses), so there is
// nothing to check against.
static bool pagemap_describes_this_process(void) {
  long page = sysconf(_SC_PAGESIZE);
  char *p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) return false;
  p[0] = 1;
  bool ok = absent_pages((uintptr_t)p, (uintptr_t)p + (uintptr_t)page) == 0 &&
            absent_pages((uintptr_t)p + (uintptr_t)page, (uintptr_t)p + 2 * (uintptr_t)page) == 1;
  munmap(p, 2 * (size_t)page);
  return ok;
}

// libc: an object large enough that most of its pages are not mapped yet
// in this short process, the stop flag set first.
static void test_touches_every_readonly_page(void) {
  int (*fn)(FILE *) = fclose;
  const void *libc_code;
  memcpy(&libc_code, &fn, sizeof(libc_code));  // function to object pointer
  if (!pagemap_describes_this_process()) {  // ctest's SKIP_RETURN_CODE
    printf("skipped: /proc/self/pagemap does not describe this process's pages (qemu-user?)\n");
    exit(77);
  }
  range_t r[16];
  int n = readonly_ranges_of(libc_code, r, 16);
  CU_ASSERT_FATAL(n >= 2);  // at least the headers and the code
  long before = absent_in(r, n);
  CU_ASSERT(before > 0);
  atomic_bool stop = true;
  int local;
  const void *anchors[3] = {NULL, &local /* the stack: in no object */, libc_code};
  hl_code_pages_touch(anchors, 3, &stop);
  CU_ASSERT_EQUAL(absent_in(r, n), before);
  stop = false;
  hl_code_pages_touch(anchors, 3, &stop);
  CU_ASSERT_EQUAL(absent_in(r, n), 0);
}

static CU_TestInfo tests[] = {
    {"touches_every_readonly_page", test_touches_every_readonly_page},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("code_pages", tests)
