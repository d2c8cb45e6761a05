// The interpreter's fixed cost per instruction: a chain of 10,000 scalar
// adds (each depends on the previous one) through hl_execute, planning
// included, in microseconds per instruction; the baseline is the same chain
// as a C loop. Also the cost per element of a reduce whose reducer is not a
// single known op, so each element calls the reducer computation.
#include "bench/bench_util.h"
#include "runtime/base/strbuf.h"

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int count = quick ? 100 : 10000, reps = quick ? 1 : 20;

  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_append(&sb, "HloModule bench_chain\nENTRY main {\n  p = f32[] parameter(0)\n"
                        "  x0 = f32[] add(p, p)\n");
  for (int i = 1; i < count; i++) hl_strbuf_appendf(&sb, "  x%d = f32[] add(x%d, p)\n", i, i - 1);
  hl_strbuf_appendf(&sb, "  ROOT r = f32[] copy(x%d)\n}\n", count - 1);
  hl_module_t *mod = hl_bench_module(sb.data);
  hl_strbuf_deinit(&sb);
  hl_literal_t *p = hl_bench_literal("f32[]", 1);
  hl_bench_execute(mod, &p, 1);
  double t = hl_bench_best_execute(mod, &p, 1, reps);
  // Baseline: the same dependent chain in C.
  volatile float pv = 0.5f;
  double tb = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = hl_bench_now();
    float x = pv + pv;
    for (int i = 1; i < count; i++) x += pv;
    pv = x * 0.0f + 0.5f;
    double dt = hl_bench_now() - t0;
    if (dt < tb) tb = dt;
  }
  hl_bench_report("scalar_add_chain_10000", t / (count + 1) * 1e6, "us/inst", "C loop us/inst",
                  tb / count * 1e6, false, 2.0);
  hl_module_destroy(mod);
  hl_literal_release(p);

  // reduce with a reducer the fast path does not recognise: sum of |x|.
  long n = quick ? 1000 : 1000000;
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule bench_reduce_custom\nabs_add {\n  a = f32[] parameter(0)\n"
           "  b = f32[] parameter(1)\n  m = f32[] abs(b)\n  ROOT s = f32[] add(a, m)\n}\n"
           "ENTRY main {\n  x = f32[%ld] parameter(0)\n  z = f32[] constant(0)\n"
           "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=abs_add\n}\n",
           n);
  mod = hl_bench_module(text);
  char shape[64];
  snprintf(shape, sizeof shape, "f32[%ld]", n);
  hl_literal_t *x = hl_bench_literal(shape, 2);
  t = hl_bench_best_execute(mod, &x, 1, quick ? 1 : 3);
  double tc = 1e30;
  for (int r = 0; r < (quick ? 1 : 3); r++) {
    double t0 = hl_bench_now();
    volatile float acc = 0;
    const float *v = x->data;
    float a = 0;
    for (long i = 0; i < n; i++) a += v[i] < 0 ? -v[i] : v[i];
    acc = a;
    (void)acc;
    double dt = hl_bench_now() - t0;
    if (dt < tc) tc = dt;
  }
  hl_bench_report("reduce_custom_reducer", t / n * 1e9, "ns/elem", "C loop ns/elem", tc / n * 1e9,
                  false, 300.0);
  hl_module_destroy(mod);
  hl_literal_release(x);
  return 0;
}
