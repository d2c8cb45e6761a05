// Profile table: open addressing on the instruction pointer; formatting
// sorts a copy by time.
#include "runtime/exec/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/gemm_tiles.h"
#include "runtime/kernels/kernel.h"

typedef struct entry {
  const hl_instruction_t *inst;
  int64_t calls;
  double seconds, bytes, flops;  // totals over the calls
} entry_t;

struct hl_profile {
  entry_t *slots;
  int64_t cap, count;
};

hl_status_t hl_profile_create(hl_profile_t **out) {
  *out = NULL;
  hl_profile_t *p = hl_calloc(1, sizeof(*p));
  if (!p) return HL_OOM();
  p->cap = 256;
  p->slots = hl_calloc((size_t)p->cap, sizeof(entry_t));
  if (!p->slots) {
    hl_free(p);
    return HL_OOM();
  }
  *out = p;
  return NULL;
}

void hl_profile_destroy(hl_profile_t *p) {
  if (!p) return;
  hl_free(p->slots);
  hl_free(p);
}

static entry_t *find(entry_t *slots, int64_t cap, const hl_instruction_t *inst) {
  uint64_t h = (uint64_t)(uintptr_t)inst * 0x9E3779B97F4A7C15ULL;
  for (int64_t i = (int64_t)(h >> 20) & (cap - 1);; i = (i + 1) & (cap - 1))
    if (!slots[i].inst || slots[i].inst == inst) return &slots[i];
}

static void grow(hl_profile_t *p) {
  entry_t *bigger = hl_calloc((size_t)p->cap * 2, sizeof(entry_t));
  if (!bigger) return;  // keep the table; it only gets fuller
  for (int64_t i = 0; i < p->cap; i++)
    if (p->slots[i].inst) *find(bigger, p->cap * 2, p->slots[i].inst) = p->slots[i];
  hl_free(p->slots);
  p->slots = bigger;
  p->cap *= 2;
}

static double array_bytes(const hl_literal_t *v) {
  if (!v) return 0;
  if (v->shape.dtype == HL_TUPLE) {
    double b = 0;
    for (int i = 0; i < v->shape.tuple_count; i++) b += array_bytes(v->elements[i]);
    return b;
  }
  return (double)v->byte_size;
}

void hl_profile_record(hl_profile_t *p, const hl_instruction_t *inst, double seconds,
                       hl_literal_t *const *operands, int n, const hl_literal_t *result) {
  if (!p) return;
  if (2 * (p->count + 1) > p->cap) grow(p);
  if (2 * (p->count + 1) > p->cap) return;  // out of memory: drop the sample
  entry_t *e = find(p->slots, p->cap, inst);
  if (!e->inst) {
    e->inst = inst;
    p->count++;
  }
  double bytes = array_bytes(result);
  for (int i = 0; i < n; i++) bytes += array_bytes(operands[i]);
  e->calls++;
  e->seconds += seconds;
  e->bytes += bytes;
  e->flops += hl_kernel_flops(inst, operands, n, result);
}

void hl_profile_add_flops(hl_profile_t *p, const hl_instruction_t *inst, double flops) {
  if (!p || !p->cap) return;
  entry_t *e = find(p->slots, p->cap, inst);
  if (e->inst == inst) e->flops += flops;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct copy_job {
  char *dst;
  const char *src;
} copy_job_t;

static void copy_chunk(void *arg, int64_t lo, int64_t len, int worker) {
  (void)worker;
  const copy_job_t *c = arg;
  memcpy(c->dst + lo, c->src + lo, (size_t)len);
}

void hl_profile_measure_machine(hl_thread_pool_t *pool, double *gemm_flops_per_s,
                                double *copy_bytes_per_s) {
  enum { N = 1024 };
  size_t copy_bytes = (size_t)64 << 20;
  float *a = hl_malloc(sizeof(float) * N * N * 3);
  char *src = hl_malloc(copy_bytes), *dst = hl_malloc(copy_bytes);
  *gemm_flops_per_s = *copy_bytes_per_s = 0;
  if (a && src && dst) {
    for (int i = 0; i < 3 * N * N; i++) a[i] = (float)(i % 7) * 0.25f;
    memset(src, 1, copy_bytes);
    memset(dst, 0, copy_bytes);
    // As the dots run: gemm tiles over the pool, BLAS single-threaded.
    hl_gemm_t g = {.ct = HL_F32, .m = N, .n = N, .k = N, .a = a, .b = a + N * N,
                   .c = a + 2 * N * N, .lda = N, .ldb = N, .ldc = N, .batch = 1};
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
      double t0 = now();
      hl_gemm_run(pool, &g);
      double t = now() - t0;
      if (t < best) best = t;
    }
    *gemm_flops_per_s = 2.0 * N * N * N / best;
    copy_job_t c = {dst, src};
    best = 1e30;
    for (int r = 0; r < 3; r++) {
      double t0 = now();
      hl_thread_pool_run_chunks(pool, (int64_t)copy_bytes, copy_chunk, &c);
      double t = now() - t0;
      if (t < best) best = t;
    }
    *copy_bytes_per_s = 2.0 * (double)copy_bytes / best;
  }
  hl_free(a);
  hl_free(src);
  hl_free(dst);
}

static int by_time(const void *x, const void *y) {
  const entry_t *a = x, *b = y;
  return a->seconds < b->seconds ? 1 : a->seconds > b->seconds ? -1 : 0;
}

void hl_profile_format(const hl_profile_t *p, int top, double run_seconds, int64_t runs,
                       double gemm_flops_per_s, double copy_bytes_per_s, hl_strbuf_t *out) {
  entry_t *all = hl_malloc(sizeof(entry_t) * (size_t)(p->count ? p->count : 1));
  if (!all) {
    hl_strbuf_append(out, "  (profile: out of memory)\n");
    return;
  }
  int64_t n = 0;
  double total = 0, flops = 0, other_bytes = 0;
  for (int64_t i = 0; i < p->cap; i++) {
    const entry_t *e = &p->slots[i];
    if (!e->inst) continue;
    all[n++] = *e;
    total += e->seconds;
    if (e->flops > 0)
      flops += e->flops;
    else
      other_bytes += e->bytes;
  }
  qsort(all, (size_t)n, sizeof(entry_t), by_time);
  hl_strbuf_appendf(out, "  %-32s %-14s %8s %10s %6s %10s %9s\n", "instruction", "op", "calls",
                    "ms", "share", "MB", "MFLOP");
  for (int64_t i = 0; i < n && i < top; i++) {
    const entry_t *e = &all[i];
    hl_strbuf_appendf(out, "  %-32.32s %-14.14s %8lld %10.3f %5.1f%% %10.3f %9.3f\n", e->inst->name,
                      hl_opcode_name(e->inst->opcode), (long long)e->calls, 1e3 * e->seconds,
                      total > 0 ? 100 * e->seconds / total : 0, e->bytes / 1e6, e->flops / 1e6);
  }
  double model = (gemm_flops_per_s > 0 ? flops / gemm_flops_per_s : 0) +
                 (copy_bytes_per_s > 0 ? other_bytes / copy_bytes_per_s : 0);
  hl_strbuf_appendf(out,
                    "  roofline: %lld run%s %.3f ms (instructions %.3f ms); model %.3f ms = "
                    "%.3f GFLOP at %.1f GFLOP/s (sgemm) + %.1f MB at %.1f GB/s (memcpy); "
                    "measured / model = %.2f\n",
                    (long long)runs, runs == 1 ? "" : "s", 1e3 * run_seconds, 1e3 * total,
                    1e3 * model, flops / 1e9, gemm_flops_per_s / 1e9, other_bytes / 1e6,
                    copy_bytes_per_s / 1e9, model > 0 ? run_seconds / model : 0);
  hl_free(all);
}

// A "Key:   N kB" line of /proc/self/status in bytes (0: not there).
static double status_bytes(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double v = 0;
  size_t k = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0) v = 1024.0 * atof(line + k);
  if (f) fclose(f);
  return v;
}

void hl_profile_memory_peaks(double *array_bytes, double *resident_bytes) {
  *array_bytes = (double)hl_alloc_large_peak_bytes();
  *resident_bytes = status_bytes("VmHWM:");
}

void hl_profile_format_memory(double arrays, double rss, int64_t bound_bytes,
                              int64_t parameter_bytes, hl_strbuf_t *out) {
  const double mib = 1024.0 * 1024.0;
  hl_strbuf_appendf(out,
                    "  peak memory: large arrays %.1f MiB at once, resident %.1f MiB; live-set "
                    "lower bound %.1f MiB (parameters %.1f MiB + values alive at once)",
                    arrays / mib, rss / mib, (double)bound_bytes / mib,
                    (double)parameter_bytes / mib);
  // Arrays under alloc.c's threshold (64 KiB) come from malloc and are not
  // in the figure.
  if (hl_alloc_large_block_bytes((size_t)(bound_bytes > 0 ? bound_bytes : 0)) && arrays > 0)
    hl_strbuf_appendf(out, "; arrays / bound = %.2f\n", arrays / (double)bound_bytes);
  else
    hl_strbuf_append(out, "; arrays / bound: n/a (no array of 64 KiB or more)\n");
}

void hl_profile_format_workspaces(int64_t bytes, hl_strbuf_t *out) {
  if (bytes <= 0) return;
  hl_strbuf_appendf(out,
                    "  fusion workspaces: %.2f MiB (the blocked fusions' arenas, shared: the largest "
                    "block's need per thread)\n",
                    (double)bytes / (1024.0 * 1024.0));
}

void hl_profile_format_scratch(int64_t scratch_bytes, int64_t with_scratch_bytes,
                               hl_strbuf_t *out) {
  if (scratch_bytes <= 0) return;
  const double mib = 1024.0 * 1024.0;
  hl_strbuf_appendf(out,
                    "  kernels' scratch: up to %.1f MiB in one instruction; values and scratch "
                    "%.1f MiB at once at most\n",
                    (double)scratch_bytes / mib, (double)with_scratch_bytes / mib);
}
