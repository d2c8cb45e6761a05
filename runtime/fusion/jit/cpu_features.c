#include "runtime/fusion/jit/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t)hi << 32 | lo;
}

bool hl_jit_cpu_has_avx2(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!osxsave || !avx) return false;
  if ((xgetbv0() & 6) != 6) return false;  // XMM and YMM state enabled by the OS
  if (__get_cpuid_max(0, NULL) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  return b & (1u << 5);
}
#else
bool hl_jit_cpu_has_avx2(void) { return false; }
#endif
