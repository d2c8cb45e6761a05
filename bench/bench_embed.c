// What the embedding API (api/hlo_runtime.h) costs per run over the
// executor it drives: the same program run through hlo_runner_run (checks,
// argument headers, the two agreements over the communicator, the copy of
// the result into the caller's buffer) and through hl_executable_run on the
// module hlo-launch runs (loaded by the same loader, the fusion pass
// applied) with literals made once (the baseline, in the same process).
// One process, on MPI_COMM_SELF. Three programs: a tiny step (8 elements:
// the API's fixed cost against almost no work), a 256 x 256 MLP layer
// (tanh(x w + b): what a model step does), and a StableHLO tanh-GELU layer
// (x + b on 1024 x 1024, then the GELU's chain of elementwise ops, which the
// fusion pass fuses into one loop: what hlo-launch runs); each
// also with Fortran-order (column-major) arrays, whose reordering in and out
// is reported only, and with the fusion pass off (no_fusion_pass: the API
// before runners fused, reported only).
// Paired rounds; the ratio of the fastest runs, and the median round's.
#include <mpi.h>

#include "api/hlo_runtime.h"
#include "bench/bench_util.h"
#include "runtime/fusion/fusion_pass.h"
#include "runtime/loader/program_loader.h"
#include "runtime/base/strbuf.h"

enum { kWays = 4 };  // executor, API, API column-major, API unfused

typedef struct {
  const char *name;
  hl_executable_t *exe;
  hl_literal_t *args[3];
  int nargs;
  hlo_runner_t *runner, *unfused;
  hlo_buffer_t api_args[3], api_results[1];
  int nresults;
} case_t;

static void check_api(hlo_status_t st, const char *what) {
  if (!st) return;
  fprintf(stderr, "bench_embed: %s: %s\n", what, hlo_status_message(st));
  exit(1);
}

static double time_way(case_t *c, int way) {
  double t0 = hl_bench_now();
  if (way == 0) {
    hl_literal_t *out = NULL;
    hl_exec_options_t opts = {0};
    hl_bench_check(hl_executable_run(c->exe, &opts, c->args, c->nargs, &out), "run");
    hl_literal_release(out);
  } else {
    hlo_order_t order = way == 2 ? HLO_COLUMN_MAJOR : HLO_ROW_MAJOR;
    for (int i = 0; i < c->nargs; i++) c->api_args[i].order = order;
    c->api_results[0].order = order;
    check_api(hlo_runner_run(way == 3 ? c->unfused : c->runner, c->api_args, c->nargs, c->api_results, c->nresults),
              "hlo_runner_run");
  }
  return hl_bench_now() - t0;
}

// `text`: any format the loader reads; argument shapes in `shapes` (each
// also an hlo_buffer_t).
static void measure(const char *name, const char *text, const char *const *shapes, int nargs,
                    const char *result_shape, int rounds, int reps, double target) {
  case_t c = {.name = name, .nargs = nargs, .nresults = 1};
  hl_program_t loaded;
  hl_bench_dump(text, strncmp(text, "HloModule", 9) == 0 ? "hlo" : "mlir");  // bench/first_run.sh
  hl_bench_check(hl_program_load_bytes((const uint8_t *)text, strlen(text), name, &loaded),
                 "load");
  hl_module_t *m = loaded.module;
  hl_bench_check(hl_fusion_pass_run(m, NULL, NULL), "fusion pass");
  hl_bench_check(hl_executable_create(m, &c.exe), "executable");
  hlo_program_t *program = NULL;
  check_api(hlo_program_load_memory(text, strlen(text), name, &program), "load");
  check_api(hlo_runner_create(program, MPI_COMM_SELF, NULL, &c.runner), "runner");
  hlo_runner_options_t unfused;
  hlo_runner_options_init(&unfused);
  unfused.no_fusion_pass = 1;
  check_api(hlo_runner_create(program, MPI_COMM_SELF, &unfused, &c.unfused), "runner");
  for (int i = 0; i < nargs; i++) {
    c.args[i] = hl_bench_literal(shapes[i], (unsigned)i + 1);
    const hl_shape_t *s = &c.args[i]->shape;
    c.api_args[i] = (hlo_buffer_t){(hlo_dtype_t)s->dtype, s->rank, s->dims, c.args[i]->data,
                                   HLO_ROW_MAJOR};
  }
  hl_literal_t *result = hl_bench_literal(result_shape, 9);
  c.api_results[0] = (hlo_buffer_t){(hlo_dtype_t)result->shape.dtype, result->shape.rank,
                                    result->shape.dims, result->data, HLO_ROW_MAJOR};
  // The first run of each plans and compiles: not timed.
  for (int k = 0; k < kWays; k++) time_way(&c, k);
  double t[kWays][HL_BENCH_MAX_ROUNDS];
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < kWays; k++) {
      double best = 1e30;
      for (int i = 0; i < reps; i++) {
        double s = time_way(&c, k);
        if (s < best) best = s;
      }
      t[k][r] = best;
    }
  double best[kWays];
  for (int k = 0; k < kWays; k++) {
    best[k] = 1e30;
    for (int r = 0; r < rounds; r++)
      if (t[k][r] < best[k]) best[k] = t[k][r];
  }
  static const char *const kLabel[kWays] = {"", "api", "api_column_major", "api_unfused"};
  for (int k = 1; k < kWays; k++) {
    int r = hl_bench_median_round(t[k], t[0], rounds);
    char figure[96];
    snprintf(figure, sizeof figure, "%s_%s", name, kLabel[k]);
    printf("%s: fastest %.3f us per run, executor alone %.3f us (%+.3f us); median round's "
           "ratio %.3f (%d rounds)\n", figure, best[k] * 1e6, best[0] * 1e6,
           (best[k] - best[0]) * 1e6, t[k][r] / t[0][r], rounds);
    hl_bench_report(figure, best[k] / best[0], "x", "executor alone", 1.0, false,
                    k >= 2 ? 100.0 : target);
  }
  hlo_runner_free(c.runner);
  hlo_runner_free(c.unfused);
  hlo_program_free(program);
  hl_executable_destroy(c.exe);
  hl_program_deinit(&loaded);
  for (int i = 0; i < nargs; i++) hl_literal_release(c.args[i]);
  hl_literal_release(result);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  bool quick = hl_bench_quick(argc, argv);
  hl_bench_tune_malloc();
  int rounds = quick ? 1 : 21;

  static const char *const tiny_shapes[] = {"f32[8]"};
  measure("tiny_step",
          "HloModule tiny\n"
          "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
          "ENTRY main {\n  u = f32[8] parameter(0)\n  z = f32[] constant(0)\n"
          "  s = f32[] reduce(u, z), dimensions={0}, to_apply=add\n"
          "  b = f32[8] broadcast(s), dimensions={}\n  m = f32[8] multiply(u, b)\n"
          "  ROOT t = f32[8] tanh(m)\n}\n",
          tiny_shapes, 1, "f32[8]", rounds, quick ? 2 : 200, 4.0);

  int n = quick ? 16 : 256;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb,
                    "HloModule mlp\nENTRY main {\n  x = f32[%d,%d] parameter(0)\n"
                    "  w = f32[%d,%d] parameter(1)\n  b = f32[%d] parameter(2)\n"
                    "  d = f32[%d,%d] dot(x, w), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}\n"
                    "  bb = f32[%d,%d] broadcast(b), dimensions={1}\n"
                    "  s = f32[%d,%d] add(d, bb)\n  ROOT t = f32[%d,%d] tanh(s)\n}\n",
                    n, n, n, n, n, n, n, n, n, n, n, n, n);
  char xs[32], bs[32];
  snprintf(xs, sizeof xs, "f32[%d,%d]", n, n);
  snprintf(bs, sizeof bs, "f32[%d]", n);
  const char *const mlp_shapes[] = {xs, xs, bs};
  measure("mlp_layer", hl_strbuf_cstr(&sb), mlp_shapes, 3, xs, rounds, quick ? 1 : 5, 1.10);
  // The bias and tanh-GELU as jax.export prints StableHLO (constants splatted).
  hl_strbuf_deinit(&sb);
  hl_strbuf_init(&sb);
  n = quick ? 16 : 1024;  // 4 MiB per array: past the caches, as a model's activations are
  snprintf(xs, sizeof xs, "f32[%d,%d]", n, n);
  snprintf(bs, sizeof bs, "f32[%d]", n);
  hl_strbuf_appendf(&sb,
                    "module @jit_gelu {\n  func.func public @main(%%x: tensor<%dx%dxf32>, "
                    "%%b: tensor<%dxf32>) -> tensor<%dx%dxf32> {\n",
                    n, n, n, n, n);
  const char *chain[] = {
      "%1 = stablehlo.broadcast_in_dim %b, dims = [1] : (B) -> T",
      "%y = stablehlo.add %x, %1 : T",
      "%c = stablehlo.constant dense<4.471500e-02> : T",
      "%k = stablehlo.constant dense<0.797884583> : T",
      "%h = stablehlo.constant dense<5.000000e-01> : T",
      "%one = stablehlo.constant dense<1.000000e+00> : T",
      "%2 = stablehlo.multiply %y, %y : T", "%3 = stablehlo.multiply %2, %y : T",
      "%4 = stablehlo.multiply %c, %3 : T", "%5 = stablehlo.add %y, %4 : T",
      "%6 = stablehlo.multiply %k, %5 : T", "%7 = stablehlo.tanh %6 : T",
      "%8 = stablehlo.add %one, %7 : T", "%9 = stablehlo.multiply %h, %y : T",
      "%g = stablehlo.multiply %9, %8 : T", "return %g : T"};
  char tensor[48], vec[48];
  snprintf(tensor, sizeof tensor, "tensor<%dx%dxf32>", n, n);
  snprintf(vec, sizeof vec, "tensor<%dxf32>", n);
  for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++) {
    hl_strbuf_append(&sb, "    ");
    for (const char *p = chain[i]; *p; p++)
      if (*p == 'T' || *p == 'B') hl_strbuf_append(&sb, *p == 'T' ? tensor : vec);
      else hl_strbuf_append_char(&sb, *p);
    hl_strbuf_append(&sb, "\n");
  }
  hl_strbuf_append(&sb, "  }\n}\n");
  const char *const gelu_shapes[] = {xs, bs};
  // Target 1.5: the API also copies the 4 MiB result into the caller's
  // buffer (about 0.25 ms here), which the executor alone hands over.
  measure("gelu_stablehlo", hl_strbuf_cstr(&sb), gelu_shapes, 2, xs, rounds, quick ? 1 : 5, 1.5);
  hl_strbuf_deinit(&sb);
  MPI_Finalize();
  return 0;
}
