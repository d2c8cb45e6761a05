// Shared pieces of the benchmarks: a monotonic clock, best-of-N timing, a
// module built from HLO text, and the one-line report every benchmark
// prints. Each figure is measured next to its baseline in the same process,
// so the ratio is meaningful on a loaded or unknown machine; bench/run.sh
// collects the "RESULT" lines into a table.
#ifndef HL_BENCH_BENCH_UTIL_H_
#define HL_BENCH_BENCH_UTIL_H_


#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/exec/executor.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"

static inline double hl_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// A failed step of a benchmark is a bug in the benchmark or the runtime:
// say which and stop.
static inline void hl_bench_check(hl_status_t st, const char *what) {
  if (!st) return;
  fprintf(stderr, "bench: %s: %s\n", what, hl_status_message(st));
  hl_status_free(st);
  exit(1);
}

extern char *program_invocation_short_name;  // glibc: the benchmark's name

// With HL_BENCH_DUMP_DIR set, every program a benchmark builds is also
// written there as <benchmark>-<hash of the text>.hlo (or .mlir), so bench/first_run.sh
// can run the same programs through hlo-launch.
static inline void hl_bench_dump(const char *text, const char *ext) {
  const char *dir = getenv("HL_BENCH_DUMP_DIR");
  if (!dir || !*dir) return;
  uint32_t h = 2166136261u;  // FNV-1a of the text: the same program, the same file
  for (const char *c = text; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s-%08x.%s", dir, program_invocation_short_name, h, ext);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "bench: cannot write %s\n", path);
    exit(1);
  }
}

static inline hl_module_t *hl_bench_module(const char *text) {
  hl_bench_dump(text, "hlo");
  hl_module_t *m = NULL;
  hl_bench_check(hl_parse_hlo_module(text, strlen(text), "<bench>", &m), "parse");
  hl_bench_check(hl_verify_module(m), "verify");
  return m;
}

// Literal of `shape_text` filled with small pseudo-random values (exact in
// every float type, so results do not depend on summation order much).
static inline hl_literal_t *hl_bench_literal(const char *shape_text, unsigned seed) {
  hl_shape_t shape;
  hl_bench_check(hl_parse_shape(shape_text, &shape), "shape");
  hl_literal_t *lit = NULL;
  hl_bench_check(hl_literal_create_uninitialized(&shape, &lit), "literal");
  int64_t n = hl_literal_element_count(lit);
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    hl_literal_set_f64(lit, i, (double)((int)(s >> 24) - 128) / 64.0);
  }
  return lit;
}

// Runs `module` once (options may be NULL) and drops the result.
static inline void hl_bench_execute_with(const hl_module_t *module, const hl_exec_options_t *o,
                                         hl_literal_t *const *args, int nargs) {
  hl_literal_t *out = NULL;
  hl_bench_check(hl_execute(module, o, args, nargs, &out), "execute");
  hl_literal_release(out);
}

static inline void hl_bench_execute(const hl_module_t *module, hl_literal_t *const *args,
                                    int nargs) {
  hl_bench_execute_with(module, NULL, args, nargs);
}

// The fastest of `reps` runs of `module`, in seconds.
static inline double hl_bench_best_execute_with(const hl_module_t *module,
                                                const hl_exec_options_t *o,
                                                hl_literal_t *const *args, int nargs, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    hl_bench_execute_with(module, o, args, nargs);
    double t = hl_bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static inline double hl_bench_best_execute(const hl_module_t *module, hl_literal_t *const *args,
                                           int nargs, int reps) {
  return hl_bench_best_execute_with(module, NULL, args, nargs, reps);
}

// The settings hlo-launch's worker applies at start-up (launcher/worker.c):
// large blocks come from the heap and freed memory stays mapped, so a
// program that frees and reallocates big buffers does not page-fault
// fresh mmap()ed memory on every instruction.
static inline void hl_bench_tune_malloc(void) {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);  // never give the heap top back to the kernel (SIZE_MAX)
}

// Prints a human line and a tab-separated RESULT line:
//   RESULT <name> <figure> <baseline> <ratio> <op> <target> <pass|FAIL>
// `higher_is_better`: ratio = figure / baseline must be >= target; else the
// figure itself must be < target (an absolute bound, baseline informative).
static inline bool hl_bench_report(const char *name, double figure, const char *figure_unit,
                                   const char *baseline_name, double baseline,
                                   bool higher_is_better, double target) {
  double ratio = baseline > 0 ? figure / baseline : 0;
  bool pass = higher_is_better ? ratio >= target : figure < target;
  if (higher_is_better)
    printf("%-28s %10.3f %-8s vs %s %10.3f: ratio %.3f (target >= %.2f) %s\n", name, figure,
           figure_unit, baseline_name, baseline, ratio, target, pass ? "pass" : "FAIL");
  else
    printf("%-28s %10.3f %-8s (%s %.3f) target < %.2f %s\n", name, figure, figure_unit,
           baseline_name, baseline, target, pass ? "pass" : "FAIL");
  printf("RESULT\t%s\t%.4g %s\t%s %.4g\t%.3f\t%s %.2f\t%s\n", name, figure, figure_unit,
         baseline_name, baseline, ratio, higher_is_better ? ">=" : "<", target,
         pass ? "pass" : "FAIL");
  fflush(stdout);
  return pass;
}

// The round whose time ratio ours[i] / baseline[i] is the median (the lower
// one for an even count). Taking both times from one round pairs them: on
// shared or throttled cores the baseline's best and ours may otherwise come
// from different moments (BLAS's own speed moved by 1.5x between runs here).
enum { HL_BENCH_MAX_ROUNDS = 32 };

static inline int hl_bench_median_round(const double *ours, const double *baseline, int n) {
  int order[HL_BENCH_MAX_ROUNDS];
  if (n > HL_BENCH_MAX_ROUNDS) n = HL_BENCH_MAX_ROUNDS;
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++)  // insertion sort by ratio: a handful of rounds
    for (int j = i; j > 0 && ours[order[j]] / baseline[order[j]] <
                                 ours[order[j - 1]] / baseline[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  return order[(n - 1) / 2];
}

// True when the benchmark was started with --quick (tiny sizes, one
// repetition: the ctest smoke run).
static inline bool hl_bench_quick(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--quick") == 0) return true;
  return false;
}

#endif  // HL_BENCH_BENCH_UTIL_H_
