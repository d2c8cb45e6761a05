// Unfused programs through the fusion pass (runtime/fusion/fusion_pass.c,
// issue 24) against fused C loops with the same math, in the same process:
//
//   softmax_hlo / softmax_stablehlo         f32[4096,4096] softmax written op
//        by op (HLO as a "before optimizations" dump has it; StableHLO text as
//        jax.jit(jax.nn.softmax).lower(x).as_text() prints it) vs a per-row
//        C loop (max, exp with the same vmath routine, sum, divide)
//   layer_norm_hlo / layer_norm_stablehlo   f32[4096,1024] layer norm with
//        scale and offset (mean, centred variance, rsqrt) vs a per-row C loop
//
// Per program: the fused run (the pass on, the default of hlo-launch) and
// the op-by-op run (--no-fusion-pass) as time / C loop (target <= 1.5 for
// fused); the first run beside the best later run (target first <= 3x
// later), and the set-up before it (pass + executable), in this process
// (whose heap earlier programs have already touched; the executable's warm
// start has nothing to overlap here, so the first run waits for it) and in
// a fresh process as each hlo-launch rank is (the warm start overlapping
// the making of the inputs, as in hlo-launch; also without it, whose first
// run page-faults every buffer it writes); the peak resident memory of that
// fresh process above what it had before, less the same figure of a fresh
// process running a three-op fused program (libLLVM's pages and the JIT's
// threads, some 60 MB, as bench/run_training_jax.sh subtracts them),
// against inputs + outputs (the fused programs' live-set bound; target
// <= 1.3x).
//
// Run alone (bench/run.sh) or with --quick (tiny sizes, the ctest smoke
// run). Times are minima over repeats (the machine is shared).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "runtime/base/simd_clones.h"
#include "runtime/exec/executor.h"
#include "runtime/fusion/fusion_pass.h"
#include "runtime/loader/program_loader.h"
#include "runtime/vmath/vmath.h"

typedef enum { SOFTMAX, LAYER_NORM, TINY } which_t;

typedef struct prog {
  const char *name;
  which_t which;
  bool stablehlo;
} prog_t;

static const prog_t kProgs[] = {
    {"softmax_hlo", SOFTMAX, false},
    {"softmax_stablehlo", SOFTMAX, true},
    {"layer_norm_hlo", LAYER_NORM, false},
    {"layer_norm_stablehlo", LAYER_NORM, true},
};

// The baseline of the peak figures: three element-wise ops the pass fuses
// and the code generator compiles (bench/run_training_jax.sh's), so what a
// fresh process holds for any program (libLLVM's pages, the JIT's and the
// warm start's threads: some 60 MB) is not counted against softmax or
// layer norm.
static const prog_t kTiny = {"tiny", TINY, false};

static long g_rows[3] = {4096, 4096, 64}, g_cols[3] = {4096, 1024, 1};

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

static const char kReducers[] =
    "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT m = f32[] maximum(a, b)\n}\n"
    "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n";

static void program_text(const prog_t *p, long r, long c, char *t, size_t size) {
  if (p->which == TINY) {
    snprintf(t, size,
             "HloModule tiny\nENTRY main {\n  a = f32[%ld] parameter(0)\n"
             "  b = f32[%ld] multiply(a, a)\n  c = f32[%ld] add(b, a)\n"
             "  ROOT d = f32[%ld] subtract(c, a)\n}\n",
             r, r, r, r);
  } else if (p->which == SOFTMAX && !p->stablehlo) {
    snprintf(t, size,
             "HloModule softmax\n%s"
             "ENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n  ninf = f32[] constant(-inf)\n"
             "  mx = f32[%ld] reduce(x, ninf), dimensions={1}, to_apply=max_f32\n"
             "  mxb = f32[%ld,%ld] broadcast(mx), dimensions={0}\n"
             "  sub = f32[%ld,%ld] subtract(x, mxb)\n  e = f32[%ld,%ld] exponential(sub)\n"
             "  zero = f32[] constant(0)\n"
             "  s = f32[%ld] reduce(e, zero), dimensions={1}, to_apply=add_f32\n"
             "  sb = f32[%ld,%ld] broadcast(s), dimensions={0}\n"
             "  ROOT d = f32[%ld,%ld] divide(e, sb)\n}\n",
             kReducers, r, c, r, r, c, r, c, r, c, r, r, c, r, c);
  } else if (p->which == SOFTMAX) {
    // jax.nn.softmax as JAX 0.4 prints it (the max kept finite, the sum's
    // broadcast through a [rows,1] reshape).
    snprintf(t, size,
             "module @jit_softmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
             "  func.func public @main(%%arg0: tensor<%ldx%ldxf32>) -> (tensor<%ldx%ldxf32> {jax.result_info = \"\"}) {\n"
             "    %%cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
             "    %%0 = stablehlo.reduce(%%arg0 init: %%cst) applies stablehlo.maximum across dimensions = [1] : (tensor<%ldx%ldxf32>, tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%1 = stablehlo.broadcast_in_dim %%cst, dims = [] : (tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%2 = stablehlo.maximum %%1, %%0 : tensor<%ldxf32>\n"
             "    %%3 = stablehlo.broadcast_in_dim %%2, dims = [0] : (tensor<%ldxf32>) -> tensor<%ldx1xf32>\n"
             "    %%4 = stablehlo.broadcast_in_dim %%3, dims = [0, 1] : (tensor<%ldx1xf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%5 = stablehlo.subtract %%arg0, %%4 : tensor<%ldx%ldxf32>\n"
             "    %%6 = stablehlo.exponential %%5 : tensor<%ldx%ldxf32>\n"
             "    %%cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
             "    %%7 = stablehlo.reduce(%%6 init: %%cst_0) applies stablehlo.add across dimensions = [1] : (tensor<%ldx%ldxf32>, tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%8 = stablehlo.broadcast_in_dim %%7, dims = [0] : (tensor<%ldxf32>) -> tensor<%ldx1xf32>\n"
             "    %%9 = stablehlo.broadcast_in_dim %%8, dims = [0, 1] : (tensor<%ldx1xf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%10 = stablehlo.divide %%6, %%9 : tensor<%ldx%ldxf32>\n"
             "    return %%10 : tensor<%ldx%ldxf32>\n  }\n}\n",
             r, c, r, c, r, c, r, r, r, r, r, r, r, c, r, c, r, c, r, c, r, r, r, r, r, c, r, c,
             r, c);
  } else if (!p->stablehlo) {
    snprintf(t, size,
             "HloModule layer_norm\n%s"
             "ENTRY main {\n  x = f32[%ld,%ld] parameter(0)\n  gamma = f32[%ld] parameter(1)\n"
             "  beta = f32[%ld] parameter(2)\n  zero = f32[] constant(0)\n"
             "  n = f32[] constant(%ld)\n  nb = f32[%ld] broadcast(n), dimensions={}\n"
             "  s1 = f32[%ld] reduce(x, zero), dimensions={1}, to_apply=add_f32\n"
             "  mean = f32[%ld] divide(s1, nb)\n"
             "  meanb = f32[%ld,%ld] broadcast(mean), dimensions={0}\n"
             "  xc = f32[%ld,%ld] subtract(x, meanb)\n  sq = f32[%ld,%ld] multiply(xc, xc)\n"
             "  s2 = f32[%ld] reduce(sq, zero), dimensions={1}, to_apply=add_f32\n"
             "  var = f32[%ld] divide(s2, nb)\n  eps = f32[] constant(1e-5)\n"
             "  epsb = f32[%ld] broadcast(eps), dimensions={}\n  ve = f32[%ld] add(var, epsb)\n"
             "  rs = f32[%ld] rsqrt(ve)\n  rsb = f32[%ld,%ld] broadcast(rs), dimensions={0}\n"
             "  y = f32[%ld,%ld] multiply(xc, rsb)\n"
             "  gb = f32[%ld,%ld] broadcast(gamma), dimensions={1}\n"
             "  yg = f32[%ld,%ld] multiply(y, gb)\n"
             "  bb = f32[%ld,%ld] broadcast(beta), dimensions={1}\n"
             "  ROOT out = f32[%ld,%ld] add(yg, bb)\n}\n",
             kReducers, r, c, c, c, c, r, r, r, r, c, r, c, r, c, r, r, r, r, r, r, c, r, c, r,
             c, r, c, r, c, r, c);
  } else {
    // flax-style LayerNorm as jax.jit lowers it (mean, centred variance).
    snprintf(t, size,
             "module @jit_layer_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
             "  func.func public @main(%%arg0: tensor<%ldx%ldxf32>, %%arg1: tensor<%ldxf32>, %%arg2: tensor<%ldxf32>) -> (tensor<%ldx%ldxf32> {jax.result_info = \"\"}) {\n"
             "    %%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
             "    %%0 = stablehlo.reduce(%%arg0 init: %%cst) applies stablehlo.add across dimensions = [1] : (tensor<%ldx%ldxf32>, tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%cst_0 = stablehlo.constant dense<%ld.0> : tensor<f32>\n"
             "    %%1 = stablehlo.broadcast_in_dim %%cst_0, dims = [] : (tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%2 = stablehlo.divide %%0, %%1 : tensor<%ldxf32>\n"
             "    %%3 = stablehlo.broadcast_in_dim %%2, dims = [0] : (tensor<%ldxf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%4 = stablehlo.subtract %%arg0, %%3 : tensor<%ldx%ldxf32>\n"
             "    %%5 = stablehlo.multiply %%4, %%4 : tensor<%ldx%ldxf32>\n"
             "    %%6 = stablehlo.reduce(%%5 init: %%cst) applies stablehlo.add across dimensions = [1] : (tensor<%ldx%ldxf32>, tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%7 = stablehlo.divide %%6, %%1 : tensor<%ldxf32>\n"
             "    %%cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>\n"
             "    %%8 = stablehlo.broadcast_in_dim %%cst_1, dims = [] : (tensor<f32>) -> tensor<%ldxf32>\n"
             "    %%9 = stablehlo.add %%7, %%8 : tensor<%ldxf32>\n"
             "    %%10 = stablehlo.rsqrt %%9 : tensor<%ldxf32>\n"
             "    %%11 = stablehlo.broadcast_in_dim %%10, dims = [0] : (tensor<%ldxf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%12 = stablehlo.multiply %%4, %%11 : tensor<%ldx%ldxf32>\n"
             "    %%13 = stablehlo.broadcast_in_dim %%arg1, dims = [1] : (tensor<%ldxf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%14 = stablehlo.multiply %%12, %%13 : tensor<%ldx%ldxf32>\n"
             "    %%15 = stablehlo.broadcast_in_dim %%arg2, dims = [1] : (tensor<%ldxf32>) -> tensor<%ldx%ldxf32>\n"
             "    %%16 = stablehlo.add %%14, %%15 : tensor<%ldx%ldxf32>\n"
             "    return %%16 : tensor<%ldx%ldxf32>\n  }\n}\n",
             r, c, c, c, r, c, r, c, r, c, r, r, r, r, c, r, c, r, c, r, c, r, r, r, r, r, r, r,
             c, r, c, c, r, c, r, c, c, r, c, r, c, r, c);
  }
}

//===----------------------------------------------------------------------===//
// The fused C loops
//===----------------------------------------------------------------------===//

HL_SIMD_CLONES static void softmax_c(const float *x, float *y, long rows, long cols) {
  for (long r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float mx = -INFINITY;
    for (long i = 0; i < cols; i++) mx = xr[i] > mx ? xr[i] : mx;
    for (long i = 0; i < cols; i++) yr[i] = xr[i] - mx;
    hl_vmath_unary_f32(HL_VM_EXP, yr, yr, cols);
    float s = 0;
    for (long i = 0; i < cols; i++) s += yr[i];
    for (long i = 0; i < cols; i++) yr[i] /= s;
  }
}

HL_SIMD_CLONES static void layer_norm_c(const float *x, const float *g, const float *b, float *y,
                                        long rows, long cols) {
  for (long r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float s = 0;
    for (long i = 0; i < cols; i++) s += xr[i];
    float mean = s / (float)cols, v = 0;
    for (long i = 0; i < cols; i++) v += (xr[i] - mean) * (xr[i] - mean);
    float rs = 1.0f / sqrtf(v / (float)cols + 1e-5f);
    for (long i = 0; i < cols; i++) yr[i] = (xr[i] - mean) * rs * g[i] + b[i];
  }
}

//===----------------------------------------------------------------------===//
// Runs
//===----------------------------------------------------------------------===//

static hl_module_t *load(const prog_t *p, long r, long c) {
  size_t size = 1 << 16;
  char *text = malloc(size);
  program_text(p, r, c, text, size);
  hl_bench_dump(text, p->stablehlo ? "mlir" : "hlo");
  hl_program_t prog;
  hl_bench_check(hl_program_load_bytes((const uint8_t *)text, strlen(text), p->name, &prog),
                 "load");
  free(text);
  hl_module_t *m = prog.module;
  prog.module = NULL;
  hl_program_deinit(&prog);
  return m;
}

static int make_args(const prog_t *p, long r, long c, hl_literal_t **args) {
  char shape[64];
  if (p->which == TINY) {
    snprintf(shape, sizeof shape, "f32[%ld]", r);
    args[0] = hl_bench_literal(shape, 1);
    return 1;
  }
  snprintf(shape, sizeof shape, "f32[%ld,%ld]", r, c);
  args[0] = hl_bench_literal(shape, 1);
  if (p->which == SOFTMAX) return 1;
  snprintf(shape, sizeof shape, "f32[%ld]", c);
  args[1] = hl_bench_literal(shape, 2);
  args[2] = hl_bench_literal(shape, 3);
  return 3;
}

static double run_once(hl_executable_t *exe, hl_literal_t **args, int n) {
  hl_exec_options_t o = {0};
  hl_literal_t *out = NULL;
  double t0 = hl_bench_now();
  hl_bench_check(hl_executable_run(exe, &o, args, n, &out), "run");
  double t = hl_bench_now() - t0;
  hl_literal_release(out);
  return t;
}

typedef struct timing {
  double setup, first, later;
} timing_t;

static timing_t time_program(const prog_t *p, long r, long c, bool fuse, hl_literal_t **args,
                             int n, int reps) {
  timing_t t = {0, 0, 1e30};
  hl_module_t *m = load(p, r, c);
  double t0 = hl_bench_now();
  if (fuse) hl_bench_check(hl_fusion_pass_run(m, NULL, NULL), "fusion pass");
  hl_executable_t *exe = NULL;
  hl_bench_check(hl_executable_create(m, &exe), "executable");
  t.setup = hl_bench_now() - t0;
  hl_executable_warm_start(exe);  // nothing to overlap here: the first run waits for it
  t.first = run_once(exe, args, n);
  for (int i = 0; i < reps; i++) {
    double x = run_once(exe, args, n);
    if (x < t.later) t.later = x;
  }
  hl_executable_destroy(exe);
  hl_module_destroy(m);
  return t;
}

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0) v = atol(line + k + 1);
  if (f) fclose(f);
  return v;
}

// --peak INDEX FUSE: this process loads program INDEX (-1: the tiny
// baseline), makes its inputs, runs it 4 times; prints the peak resident
// KiB above what it had before, the first and the best later run.
static int peak_main(const prog_t *p, bool fuse, bool no_warm, long r, long c) {
  long before = status_kib("VmRSS:");
  // As hlo-launch's worker: the executable and its warm start, then the
  // arguments (which the warm start overlaps), then the runs.
  hl_module_t *m = load(p, r, c);
  if (fuse) hl_bench_check(hl_fusion_pass_run(m, NULL, NULL), "fusion pass");
  hl_executable_t *exe = NULL;
  hl_bench_check(hl_executable_create(m, &exe), "executable");
  if (!no_warm) hl_executable_warm_start(exe);
  hl_literal_t *args[3];
  int n = make_args(p, r, c, args);
  double first = run_once(exe, args, n);
  double later = 1e30;
  for (int i = 0; i < 3; i++) {
    double t = run_once(exe, args, n);
    if (t < later) later = t;
  }
  // The peak of the process's whole life, read once the executable is gone:
  // its destroy waits for the code generator's load and first compile
  // (hl_jit_settle), which run in the background meanwhile. Read right after
  // the first run, the baseline's few microseconds ended before libLLVM's
  // pages were counted and softmax's did not (1.47x instead of 1.01x).
  hl_executable_destroy(exe);
  long peak = status_kib("VmHWM:") - before;
  printf("%ld %.6f %.6f\n", peak, first, later);
  hl_module_destroy(m);
  for (int i = 0; i < n; i++) hl_literal_release(args[i]);
  return 0;
}

// A fresh process (as each hlo-launch rank is): peak MiB, first and best
// later run in seconds.
static double fresh_process(const char *self, int index, bool fuse, bool quick, bool no_warm,
                            double *first, double *later) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' --peak %d %d %d%s", self, index, fuse ? 1 : 0, no_warm ? 1 : 0,
           quick ? " --quick" : "");
  FILE *f = popen(cmd, "r");
  long kib = -1;
  if (!f || fscanf(f, "%ld %lf %lf", &kib, first, later) != 3) kib = -1;
  if (f) pclose(f);
  return (double)kib / 1024.0;
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  if (quick) g_rows[0] = g_rows[1] = 64, g_cols[0] = 256, g_cols[1] = 128;
  hl_bench_tune_malloc();  // as hlo-launch's worker
  if (argc >= 5 && strcmp(argv[1], "--peak") == 0) {
    int i = atoi(argv[2]);
    const prog_t *p = i < 0 ? &kTiny : &kProgs[i];
    return peak_main(p, atoi(argv[3]) != 0, atoi(argv[4]) != 0, g_rows[p->which],
                     g_cols[p->which]);
  }
  int reps = quick ? 1 : 5;
  printf("# unfused programs: fused by the pass vs op by op vs a fused C loop (1 thread); "
         "softmax %ldx%ld, layer norm %ldx%ld; vmath %s\n",
         g_rows[0], g_cols[0], g_rows[1], g_cols[1], hl_vmath_isa());
  bool all = true;
  double b1, bl;
  double base = fresh_process(argv[0], -1, true, quick, false, &b1, &bl);
  double base_nw = fresh_process(argv[0], -1, true, quick, true, &b1, &bl);
  printf("# baseline: a fresh process running a three-op fused program peaks %.1f MiB above "
         "its start (%.1f MiB without the warm start); subtracted from the peaks below\n",
         base, base_nw);
  for (size_t k = 0; k < sizeof kProgs / sizeof kProgs[0]; k++) {
    const prog_t *p = &kProgs[k];
    long r = g_rows[p->which], c = g_cols[p->which];
    hl_literal_t *args[3];
    int n = make_args(p, r, c, args);
    float *out = malloc(sizeof(float) * (size_t)(r * c));
    memset(out, 0, sizeof(float) * (size_t)(r * c));
    double t_c = 1e30;
    for (int i = 0; i < reps + 1; i++) {
      double t0 = hl_bench_now();
      if (p->which == SOFTMAX) softmax_c(args[0]->data, out, r, c);
      else layer_norm_c(args[0]->data, args[1]->data, args[2]->data, out, r, c);
      double t = hl_bench_now() - t0;
      if (t < t_c) t_c = t;
    }
    timing_t fused = time_program(p, r, c, true, args, n, reps);
    timing_t unfused = time_program(p, r, c, false, args, n, quick ? 1 : 3);
    printf("# %s: C loop %.2f ms; fused %.2f ms (first run %.2f ms, set-up %.2f ms); "
           "op by op %.2f ms (first run %.2f ms)\n",
           p->name, 1e3 * t_c, 1e3 * fused.later, 1e3 * fused.first, 1e3 * fused.setup,
           1e3 * unfused.later, 1e3 * unfused.first);
    char name[64];
    snprintf(name, sizeof name, "%s_vs_C", p->name);
    all &= hl_bench_report(name, 1 / fused.later, "runs/s", "C_loop", 1 / t_c, true, 1 / 1.5);
    snprintf(name, sizeof name, "%s_op_by_op_vs_C", p->name);
    hl_bench_report(name, 1 / unfused.later, "runs/s", "C_loop", 1 / t_c, true, 0);
    double io = (double)(args[0]->byte_size * 2) / (1 << 20);
    for (int i = 1; i < n; i++) io += (double)args[i]->byte_size / (1 << 20);
    double f1, fl, u1, ul, n1, nl;
    double pf = fresh_process(argv[0], (int)k, true, quick, false, &f1, &fl) - base;
    double pu = fresh_process(argv[0], (int)k, false, quick, false, &u1, &ul) - base;
    double pn = fresh_process(argv[0], (int)k, true, quick, true, &n1, &nl) - base_nw;
    printf("# %s: fresh process: peak resident above the baseline's %.1f MiB fused (%.2fx), "
           "%.1f MiB op by op (%.2fx), against inputs + outputs %.1f MiB (the fused "
           "program's live-set bound); first run %.2f ms, later %.2f ms fused; %.2f / %.2f ms "
           "op by op; fused without the warm start %.2f / %.2f ms (peak %.1f MiB)\n",
           p->name, pf, pf / io, pu, pu / io, io, 1e3 * f1, 1e3 * fl, 1e3 * u1, 1e3 * ul,
           1e3 * n1, 1e3 * nl, pn);
    snprintf(name, sizeof name, "%s_first_run", p->name);
    all &= hl_bench_report(name, fused.first / fused.later, "x_later", "later_ms",
                           1e3 * fused.later, false, 3.0);
    snprintf(name, sizeof name, "%s_first_run_fresh", p->name);
    all &= hl_bench_report(name, f1 / fl, "x_later", "later_ms", 1e3 * fl, false, 3.0);
    snprintf(name, sizeof name, "%s_peak_memory", p->name);
    if (!quick) all &= hl_bench_report(name, pf / io, "x_in+out", "MiB", pf, false, 1.3);
    free(out);
    for (int i = 0; i < n; i++) hl_literal_release(args[i]);
  }
  return all || quick ? 0 : 1;
}
