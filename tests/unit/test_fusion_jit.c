// The fusion JIT's compiled loops (runtime/fusion/jit: LLVM) against
// a scalar evaluation written here from the ops' definitions (IEEE
// arithmetic in the value's type, XLA's NaN-propagating maximum/minimum with
// +0 > -0), bit for bit, on random bodies and element counts around the
// vector and unroll widths, with NaN (payloads), infinities, signed zeros
// and denormals among the inputs; then whole fusion programs with the JIT
// on against the same programs with it off.
#include <CUnit/CUnit.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/vmath/vmath.h"
#include "tests/unit/test_util.h"

// Whether this build and host have a code generator (jit_kernel.h).
static bool jit_available(void) { return strncmp(hl_jit_describe(), "none", 4) != 0; }

static uint64_t g_rng = 0x9E3779B97F4A7C15u;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}

// Inputs without specials (the loops' fast path, with no NaN to recompute).
static bool g_plain;

static float special_f32(void) {
  static const uint32_t bits[] = {0x7FC00000u, 0xFFC00001u, 0x7FA00000u /* sNaN */,
                                  0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
                                  0x00000001u, 0x807FFFFFu, 0x3F800000u, 0xBF800000u,
                                  0x00400000u, 0x7F7FFFFFu};
  float f;
  if (!g_plain && rnd() % 3 == 0) {
    uint32_t b = bits[rnd() % (sizeof bits / sizeof bits[0])];
    memcpy(&f, &b, 4);
  } else {
    f = ((float)(rnd() % 2000) - 1000.0f) / (float)(1 + rnd() % 50);
  }
  return f;
}

static double special_f64(void) {
  static const uint64_t bits[] = {0x7FF8000000000000u, 0xFFF8000000000123u, 0x7FF4000000000000u,
                                  0x7FF0000000000000u, 0xFFF0000000000000u, 0,
                                  0x8000000000000000u, 1, 0x800FFFFFFFFFFFFFu,
                                  0x3FF0000000000000u};
  double d;
  if (!g_plain && rnd() % 3 == 0) {
    uint64_t b = bits[rnd() % (sizeof bits / sizeof bits[0])];
    memcpy(&d, &b, 8);
  } else {
    d = ((double)(rnd() % 2000) - 1000.0) / (double)(1 + rnd() % 50);
  }
  return d;
}

// XLA maximum / minimum: a NaN operand gives it (the first NaN), and +0 > -0.
#define MINMAX_REF(T, name, gt)                        \
  static T name(T a, T b) {                            \
    if (isnan(a)) return a;                            \
    if (isnan(b)) return b;                            \
    if (a == b) return (!!signbit(a) == gt) ? b : a;   \
    return gt ? (a > b ? a : b) : (a < b ? a : b);     \
  }
MINMAX_REF(float, max_f32, 1)
MINMAX_REF(float, min_f32, 0)
MINMAX_REF(double, max_f64, 1)
MINMAX_REF(double, min_f64, 0)

static hl_jit_value_t jv(hl_jit_op_t op, int a, int b, int c) {
  hl_jit_value_t v = {.op = op, .a = a, .b = b, .c = c};
  return v;
}

// The vmath functions random bodies call, found again by their routine.
static const hl_vmath_fn_t kCalls[] = {HL_VM_TANH, HL_VM_EXP, HL_VM_LOG, HL_VM_SIN};
static hl_vmath_fn_t vmath_of(hl_jit_fn_t f, bool f64) {
  for (size_t i = 0; i < sizeof kCalls / sizeof kCalls[0]; i++)
    if ((f64 ? hl_vmath_unary_vector_f64(kCalls[i]) : hl_vmath_unary_vector_f32(kCalls[i])) == f)
      return kCalls[i];
  return HL_VM_NONE;
}

// The symbol a routine is bound to in the generated code.
static const char *routine_name(hl_vmath_fn_t f, bool f64) {
  static char names[HL_VM_COUNT_][2][32];
  snprintf(names[f][f64], sizeof names[f][f64], "test_vmath_%d_%s", (int)f, f64 ? "f64" : "f32");
  return names[f][f64];
}

static bool is_cmp(hl_jit_op_t op) { return op >= HL_JIT_CMP_EQ && op <= HL_JIT_CMP_GE; }

// The body value by value over all n elements, in the body's type: calls
// run through the vmath array loops over the whole array, as the op-by-op
// kernels do (SLEEF's result for a lane may depend on the other lanes of its
// vector: the loops group lanes from element 0 and zero-pad the last vector).
#define REF_EVAL(T, MAX, MIN, SQRT, FABS, VM)                                          \
  static void ref_##T(const hl_jit_body_t *b, const void *const *in, int64_t n, T *out) { \
    size_t cnt = (size_t)(n ? n : 1);                                                 \
    T *v = malloc(sizeof(T) * cnt * (size_t)b->count);                                \
    bool *mask = malloc(cnt * (size_t)b->count);                                      \
    for (int i = 0; i < b->count; i++) {                                              \
      const hl_jit_value_t *x = &b->values[i];                                        \
      T *y = v + (size_t)i * cnt;                                                     \
      bool *my = mask + (size_t)i * cnt;                                              \
      const T *pa = x->op > HL_JIT_BROADCAST ? v + (size_t)x->a * cnt : NULL;         \
      const T *pc = x->op > HL_JIT_BROADCAST ? v + (size_t)x->b * cnt : NULL;         \
      if (x->op == HL_JIT_CALL) {                                                     \
        VM(vmath_of(x->fn, sizeof(T) == 8), pa, y, n);                                \
        continue;                                                                     \
      }                                                                               \
      for (int64_t e = 0; e < n; e++) {                                               \
        T a = pa ? pa[e] : 0, c = pc ? pc[e] : 0;                                     \
        switch (x->op) {                                                              \
          case HL_JIT_LOAD: y[e] = ((const T *)in[x->a])[e]; break;                   \
          case HL_JIT_BROADCAST: y[e] = ((const T *)in[x->a])[0]; break;              \
          case HL_JIT_ADD: y[e] = a + c; break;                                       \
          case HL_JIT_SUB: y[e] = a - c; break;                                       \
          case HL_JIT_MUL: y[e] = a * c; break;                                       \
          case HL_JIT_DIV: y[e] = a / c; break;                                       \
          case HL_JIT_MAX: y[e] = MAX(a, c); break;                                   \
          case HL_JIT_MIN: y[e] = MIN(a, c); break;                                   \
          case HL_JIT_NEG: y[e] = -a; break;                                          \
          case HL_JIT_ABS: y[e] = FABS(a); break;                                     \
          case HL_JIT_SQRT: y[e] = SQRT(a); break;                                    \
          case HL_JIT_CMP_EQ: my[e] = a == c; break;                                  \
          case HL_JIT_CMP_NE: my[e] = a != c; break;                                  \
          case HL_JIT_CMP_LT: my[e] = a < c; break;                                   \
          case HL_JIT_CMP_LE: my[e] = a <= c; break;                                  \
          case HL_JIT_CMP_GT: my[e] = a > c; break;                                   \
          case HL_JIT_CMP_GE: my[e] = a >= c; break;                                  \
          case HL_JIT_SELECT:                                                         \
            y[e] = mask[(size_t)x->a * cnt + (size_t)e] ? pc[e]                       \
                                                        : v[(size_t)x->c * cnt + (size_t)e]; \
            break;                                                                    \
          default: break; /* not drawn by random_body */                              \
        }                                                                             \
      }                                                                               \
    }                                                                                 \
    if (n) memcpy(out, v + (size_t)(b->count - 1) * cnt, sizeof(T) * (size_t)n);     \
    free(v);                                                                          \
    free(mask);                                                                       \
  }
REF_EVAL(float, max_f32, min_f32, sqrtf, fabsf, hl_vmath_unary_f32)
REF_EVAL(double, max_f64, min_f64, sqrt, fabs, hl_vmath_unary_f64)

// A random body: `vec` vector inputs, `sc` scalar inputs, `ops` operations.
static int random_body(hl_jit_value_t *v, int vec, int sc, int ops, hl_jit_body_t *b) {
  int n = 0;
  b->input_count = vec + sc;
  for (int i = 0; i < vec + sc; i++) {
    b->input_scalar[i] = i >= vec;
    v[n++] = jv(i >= vec ? HL_JIT_BROADCAST : HL_JIT_LOAD, i, 0, 0);
  }
  for (int k = 0; k < ops; k++) {
    // Operands drawn mostly from recent values, so chains form and few live.
    int x = n - 1 - (int)(rnd() % (n < 4 ? n : 4)), y = (int)(rnd() % n);
    while (is_cmp(v[x].op)) x--;
    while (is_cmp(v[y].op)) y = (y + 1) % n;
    hl_vmath_fn_t vf = kCalls[rnd() % (sizeof kCalls / sizeof kCalls[0])];
    hl_jit_fn_t fn = b->type == HL_JIT_F64 ? hl_vmath_unary_vector_f64(vf)
                                           : hl_vmath_unary_vector_f32(vf);
    switch (rnd() % 12) {
      case 9:
        v[n] = jv(fn ? HL_JIT_CALL : HL_JIT_NEG, x, 0, 0);
        v[n].fn = fn;
        v[n++].fn_name = routine_name(vf, b->type == HL_JIT_F64);
        break;
      case 0: v[n++] = jv(HL_JIT_ADD, x, y, 0); break;
      case 1: v[n++] = jv(HL_JIT_SUB, x, y, 0); break;
      case 2: v[n++] = jv(HL_JIT_MUL, x, y, 0); break;
      case 3: v[n++] = jv(HL_JIT_DIV, y, x, 0); break;
      case 4: v[n++] = jv(HL_JIT_MAX, x, y, 0); break;
      case 5: v[n++] = jv(HL_JIT_MIN, y, x, 0); break;
      case 6: v[n++] = jv(HL_JIT_NEG, x, 0, 0); break;
      case 7: v[n++] = jv(HL_JIT_ABS, x, 0, 0); break;
      case 8: v[n++] = jv(HL_JIT_SQRT, x, 0, 0); break;
      default: {
        int z = (int)(rnd() % n);
        while (is_cmp(v[z].op)) z = (z + 1) % n;
        v[n++] = jv((hl_jit_op_t)(HL_JIT_CMP_EQ + rnd() % 6), x, y, 0);
        v[n] = jv(HL_JIT_SELECT, n - 1, y, z);
        n++;
      }
    }
  }
  b->values = v;
  b->count = n;
  return n;
}

// A failing element: the body, its inputs there, the bits wanted and got.
static void print_case(const hl_jit_body_t *b, const void *const *in, int64_t e,
                       const unsigned char *want, const unsigned char *got) {
  size_t es = b->type == HL_JIT_F64 ? 8 : 4;
  for (int i = 0; i < b->count; i++)
    printf(" v%d=op%d(%d,%d,%d)", i, (int)b->values[i].op, b->values[i].a, b->values[i].b,
           b->values[i].c);
  for (int i = 0; i < b->input_count; i++) {
    uint64_t bits = 0;
    memcpy(&bits, (const char *)in[i] + (b->input_scalar[i] ? 0 : (size_t)e * es), es);
    printf(" in%d=%llx", i, (unsigned long long)bits);
  }
  uint64_t w = 0, g = 0;
  memcpy(&w, want, es);
  memcpy(&g, got, es);
  printf(" want %llx got %llx", (unsigned long long)w, (unsigned long long)g);
}

static bool check_body(const hl_jit_body_t *b, int64_t n) {
  bool f64 = b->type == HL_JIT_F64;
  size_t es = f64 ? 8 : 4;
  void *in[HL_JIT_MAX_INPUTS];
  for (int i = 0; i < b->input_count; i++) {
    int64_t cnt = b->input_scalar[i] ? 1 : n;
    in[i] = malloc((size_t)(cnt ? cnt : 1) * es);
    for (int64_t e = 0; e < cnt; e++) {
      if (f64)
        ((double *)in[i])[e] = special_f64();
      else
        ((float *)in[i])[e] = special_f32();
    }
  }
  // Guard elements after the output: the loop must not write past n.
  unsigned char *out = malloc((size_t)(n + 8) * es);
  memset(out, 0xAB, (size_t)(n + 8) * es);
  hl_jit_kernel_t *k = NULL;
  const char *why = NULL;
  HL_ASSERT_OK(hl_jit_kernel_create(b, &k, &why));
  CU_ASSERT_PTR_NOT_NULL(k);
  if (!k) {
    printf("\n  not compiled: %s\n", why ? why : "?");
    for (int i = 0; i < b->input_count; i++) free(in[i]);
    free(out);
    return false;
  }
  hl_jit_kernel_run(k, (const void *const *)in, out, n);
  unsigned char *want = malloc((size_t)(n ? n : 1) * es);
  if (f64)
    ref_double(b, (const void *const *)in, n, (double *)want);
  else
    ref_float(b, (const void *const *)in, n, (float *)want);
  int bad = 0;
  for (int64_t e = 0; e < n && bad < 3; e++) {
    if (memcmp(want + (size_t)e * es, out + (size_t)e * es, es) != 0) {
      bad++;
      printf("\n  %s body of %d values, n=%lld: element %lld differs:", f64 ? "f64" : "f32",
             b->count, (long long)n, (long long)e);
      print_case(b, (const void *const *)in, e, want + (size_t)e * es, out + (size_t)e * es);
    }
  }
  free(want);
  CU_ASSERT_EQUAL(bad, 0);
  for (size_t i = (size_t)n * es; i < (size_t)(n + 8) * es; i++) CU_ASSERT_EQUAL(out[i], 0xAB);
  // Streaming stores (aligned output) and the fallback for an unaligned one
  // write the same bits, and nothing past n.
  unsigned char *aligned = NULL;
  CU_ASSERT_EQUAL_FATAL(posix_memalign((void **)&aligned, 64, (size_t)(n + 16) * es), 0);
  for (int shift = 0; shift <= 1; shift++) {
    unsigned char *o = aligned + (size_t)shift * es;
    memset(o, 0xAB, (size_t)(n + 8) * es);
    hl_jit_kernel_run_streaming(k, (const void *const *)in, o, n);
    CU_ASSERT_EQUAL(memcmp(o, out, (size_t)(n + 8) * es), 0);
  }
  free(aligned);
  hl_jit_kernel_destroy(k);
  for (int i = 0; i < b->input_count; i++) free(in[i]);
  free(out);
  return true;
}

static void test_random_bodies(void) {
  if (!jit_available()) {
    // Off where it cannot run: the kernel is not created, with a reason.
    hl_jit_value_t v[2] = {jv(HL_JIT_LOAD, 0, 0, 0), jv(HL_JIT_NEG, 0, 0, 0)};
    hl_jit_body_t b = {.type = HL_JIT_F32, .values = v, .count = 2, .input_count = 1};
    hl_jit_kernel_t *k = NULL;
    const char *why = NULL;
    HL_ASSERT_OK(hl_jit_kernel_create(&b, &k, &why));
    CU_ASSERT_PTR_NULL(k);
    CU_ASSERT_PTR_NOT_NULL(why);
    return;
  }
  static const int64_t kCounts[] = {0, 1, 7, 8, 9, 31, 32, 33, 63, 100, 1027};
  hl_jit_value_t v[HL_JIT_MAX_VALUES];
  int compiled = 0;
  // The width variants (tests/CMakeLists.txt) check fewer: compiling is
  // most of the time.
  int bodies = getenv("HL_FUSION_JIT_VECTOR_BYTES") ? 120 : 400;
  for (int t = 0; t < bodies; t++) {
    hl_jit_body_t b = {.type = t % 2 ? HL_JIT_F64 : HL_JIT_F32};
    g_plain = t % 4 >= 2;
    random_body(v, 1 + (int)(rnd() % 7), (int)(rnd() % 2), 1 + (int)(rnd() % 30), &b);
    compiled += check_body(&b, kCounts[rnd() % (sizeof kCounts / sizeof kCounts[0])]);
  }
  g_plain = false;
  CU_ASSERT_EQUAL(compiled, bodies);
}

// Each operation alone on special values (NaN payloads and signs, infinities,
// zeros, denormals), both operand orders.
static void test_each_op(void) {
  if (!jit_available()) return;
  static const hl_jit_op_t kOps[] = {HL_JIT_ADD, HL_JIT_SUB, HL_JIT_MUL, HL_JIT_DIV, HL_JIT_MAX,
                                     HL_JIT_MIN, HL_JIT_NEG, HL_JIT_ABS, HL_JIT_SQRT};
  for (int t = 0; t < 2; t++)
    for (size_t o = 0; o < sizeof kOps / sizeof kOps[0]; o++) {
      hl_jit_value_t v[3] = {jv(HL_JIT_LOAD, 0, 0, 0), jv(HL_JIT_LOAD, 1, 0, 0),
                             jv(kOps[o], 0, 1, 0)};
      hl_jit_body_t b = {.type = t ? HL_JIT_F64 : HL_JIT_F32, .values = v, .count = 3,
                         .input_count = 2};
      printf("\n  op %d %s", (int)kOps[o], t ? "f64" : "f32");
      check_body(&b, 1000);
    }
}

// Every input in use (11, two of them scalars), and a body with more live
// values than any CPU has vector registers (LLVM spills them).
static void test_limits(void) {
  if (!jit_available()) return;
  hl_jit_value_t v[64];
  hl_jit_body_t b = {.type = HL_JIT_F32, .values = v, .input_count = HL_JIT_MAX_INPUTS};
  int n = 0;
  for (int i = 0; i < HL_JIT_MAX_INPUTS; i++) {
    b.input_scalar[i] = i == 5 || i == 9;
    v[n++] = jv(b.input_scalar[i] ? HL_JIT_BROADCAST : HL_JIT_LOAD, i, 0, 0);
  }
  int acc = 0;
  for (int i = 1; i < HL_JIT_MAX_INPUTS; i++) {
    v[n] = jv(i % 2 ? HL_JIT_ADD : HL_JIT_MUL, acc, i, 0);
    acc = n++;
  }
  b.count = n;
  CU_ASSERT_TRUE(check_body(&b, 45));
  // 40 values live at once.
  n = 0;
  b.input_count = 1;
  memset(b.input_scalar, 0, sizeof b.input_scalar);
  v[n++] = jv(HL_JIT_LOAD, 0, 0, 0);
  for (int i = 0; i < 40; i++, n++) v[n] = jv(i % 2 ? HL_JIT_SQRT : HL_JIT_NEG, n - 1, 0, 0);
  for (int i = 0; i < 20; i++, n++) v[n] = jv(HL_JIT_ADD, n - 1, 39 - i, 0);
  b.count = n;
  CU_ASSERT_TRUE(check_body(&b, 77));
  hl_jit_kernel_t *k = NULL;
  const char *why = NULL;
  // Malformed bodies are refused, not compiled.
  hl_jit_value_t bad[2] = {jv(HL_JIT_LOAD, 0, 0, 0), jv(HL_JIT_CMP_LT, 0, 0, 0)};
  hl_jit_body_t mb = {.type = HL_JIT_F32, .values = bad, .count = 2, .input_count = 1};
  HL_ASSERT_OK(hl_jit_kernel_create(&mb, &k, &why));
  CU_ASSERT_PTR_NULL(k);
  bad[1] = jv(HL_JIT_ADD, 0, 1, 0);
  HL_ASSERT_OK(hl_jit_kernel_create(&mb, &k, &why));
  CU_ASSERT_PTR_NULL(k);
}

// A call in the last, partial vector: its padding lanes must reach the
// routine as zeros, as in the array loop's padded copy, since SLEEF takes a
// slower, differently rounded path for the whole vector when any lane is out
// of its fast range (here 0/0 = NaN would be: sinf(-5.0851064) then rounds
// to 0x3F6E6C62 instead of 0x3F6E6C61).
static void test_call_in_partial_vector(void) {
  hl_jit_fn_t sinf8 = hl_vmath_unary_vector_f32(HL_VM_SIN);
  if (!jit_available() || !sinf8) return;
  hl_jit_value_t v[4] = {jv(HL_JIT_LOAD, 0, 0, 0), jv(HL_JIT_LOAD, 1, 0, 0),
                         jv(HL_JIT_DIV, 0, 1, 0), jv(HL_JIT_CALL, 2, 0, 0)};
  v[3].fn = sinf8;
  v[3].fn_name = routine_name(HL_VM_SIN, false);
  hl_jit_body_t b = {.type = HL_JIT_F32, .values = v, .count = 4, .input_count = 2};
  for (int64_t n = 1; n <= 15; n += 7) {
    uint32_t x[16], y[16], want[16], got[16];
    for (int i = 0; i < 16; i++) {
      x[i] = 0xC0A2B931u;
      y[i] = 0x3F800000u;  // 1
    }
    const void *in[2] = {x, y};
    hl_jit_kernel_t *k = NULL;
    const char *why = NULL;
    HL_ASSERT_OK(hl_jit_kernel_create(&b, &k, &why));
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    hl_jit_kernel_run(k, in, got, n);
    hl_jit_kernel_destroy(k);
    float xs[16];
    memcpy(xs, x, sizeof xs);
    hl_vmath_unary_f32(HL_VM_SIN, xs, (float *)want, n);
    for (int64_t i = 0; i < n; i++) CU_ASSERT_EQUAL(got[i], want[i]);
  }
}

//===----------------------------------------------------------------------===//
// Fusion programs: JIT on vs off
//===----------------------------------------------------------------------===//

static hl_literal_t *random_literal(hl_dtype_t t, int64_t n) {
  hl_shape_t s = {.dtype = t, .rank = 1, .dims = {n}};
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&s, &l));
  for (int64_t e = 0; e < n; e++) {
    if (t == HL_F64)
      ((double *)l->data)[e] = special_f64();
    else
      ((float *)l->data)[e] = special_f32();
  }
  return l;
}

static int g_row_leaves;  // of the last run_fusion's program

static hl_literal_t *run_fusion(const char *text, hl_literal_t **args, int nargs, bool jit,
                                int *regions) {
  hl_jit_set_enabled(jit);
  hl_jit_set_wait(true);  // compiled before the run: the loops run, not the interpreter
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "jit_test.hlo", &m));
  hl_fusion_program_t *prog = NULL;
  const char *why = NULL;
  HL_ASSERT_OK(hl_fusion_program_compile(hl_module_find_computation(m, "fused"), &prog, &why));
  CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
  *regions = hl_fusion_program_jit_regions(prog);
  g_row_leaves = hl_fusion_program_jit_row_leaves(prog);
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_fusion_program_run(prog, args, nargs, NULL, &out));
  hl_fusion_program_destroy(prog);
  hl_module_destroy(m);
  hl_jit_set_enabled(true);
  return out;
}

// Covered ops mixed with uncovered ones (exponential, a broadcast row, a
// convert), a shared intermediate, a scalar constant, compare + select,
// two outputs, over sizes that leave a ragged last block.
static void test_programs_jit_vs_interpreter(void) {
  static const char *kTypes[] = {"f32", "f64"};
  for (int ti = 0; ti < 2; ti++) {
    const char *t = kTypes[ti];
    int64_t n = ti ? 4099 : 2053;
    static const char kTemplate[] =
        "HloModule jit\n"
        "fused {\n"
        "  x = T[N] parameter(0)\n"
        "  y = T[N] parameter(1)\n"
        "  c = T[] constant(0.5)\n"
        "  cb = T[N] broadcast(c), dimensions={}\n"
        "  a = T[N] multiply(x, cb)\n"
        "  b = T[N] add(a, y)\n"
        "  e = T[N] exponential(b)\n"
        "  d = T[N] divide(e, x)\n"
        "  mx = T[N] maximum(d, a)\n"
        "  mn = T[N] minimum(y, mx)\n"
        "  s = T[N] sqrt(mn)\n"
        "  ng = T[N] negate(s)\n"
        "  ab = T[N] abs(b)\n"
        "  p = pred[N] compare(ng, ab), direction=LT\n"
        "  sel = T[N] select(p, ab, mn)\n"
        "  sub = T[N] subtract(sel, b)\n"
        "  ROOT t = (T[N], T[N]) tuple(sub, b)\n"
        "}\n"
        "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
        "  ROOT f = (T[N], T[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
    char text[4096];
    size_t k = 0;
    for (const char *c = kTemplate; *c; c++) {
      if (*c == 'T' && c[1] == '[')
        k += (size_t)snprintf(text + k, sizeof text - k, "%s", t);
      else if (*c == 'N' && c[1] == ']')
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)n);
      else
        text[k++] = *c;
    }
    text[k] = 0;
    hl_dtype_t dt = ti ? HL_F64 : HL_F32;
    hl_literal_t *args[2] = {random_literal(dt, n), random_literal(dt, n)};
    int on_regions = 0, off_regions = 0;
    hl_literal_t *on = run_fusion(text, args, 2, true, &on_regions);
    hl_literal_t *off = run_fusion(text, args, 2, false, &off_regions);
    if (jit_available()) CU_ASSERT(on_regions >= 2);  // a..b and d..sub
    CU_ASSERT_EQUAL(off_regions, 0);
    CU_ASSERT_TRUE(hl_literal_equal(on, off));
    for (int i = 0; i < 2; i++)
      CU_ASSERT_EQUAL(memcmp(on->elements[i]->data, off->elements[i]->data,
                             (size_t)n * hl_dtype_size(dt)),
                      0);
    hl_literal_release(on);
    hl_literal_release(off);
    hl_literal_release(args[0]);
    hl_literal_release(args[1]);
  }
}

// Random elements of any type: for integers a third full-width, a third
// small (shift amounts around the width), a third extremes; for 16-bit
// floats every bit pattern (NaN payloads, infinities, denormals).
static hl_literal_t *random_any(hl_dtype_t t, int64_t n) {
  if (t == HL_F32 || t == HL_F64) return random_literal(t, n);
  hl_shape_t s = {.dtype = t, .rank = 1, .dims = {n}};
  hl_literal_t *l = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&s, &l));
  size_t es = hl_dtype_size(t);
  bool is_signed = t == HL_S8 || t == HL_S16 || t == HL_S32 || t == HL_S64;
  for (int64_t e = 0; e < n; e++) {
    uint64_t v = (uint64_t)rnd() << 32 | rnd();
    if (t != HL_BF16 && t != HL_F16) {
      uint64_t top = UINT64_C(1) << (8 * es - 1);
      switch (rnd() % 3) {
        case 0: break;
        case 1: v = rnd() % (8 * es + 3); break;
        default: {
          const uint64_t ex[] = {0, ~UINT64_C(0), top, top - 1, 1, top + 1};
          v = ex[rnd() % 6];
        }
      }
      (void)is_signed;
    }
    memcpy((char *)l->data + (size_t)e * es, &v, es);
  }
  return l;
}

// text with every "T[" replaced by the type's name and every "N]" by n.
static void instantiate(const char *tmpl, const char *t, int64_t n, char *text, size_t cap) {
  size_t k = 0;
  for (const char *c = tmpl; *c && k + 32 < cap; c++) {
    if (*c == 'T' && c[1] == '[')
      k += (size_t)snprintf(text + k, cap - k, "%s", t);
    else if (*c == 'N' && c[1] == ']')
      k += (size_t)snprintf(text + k, cap - k, "%lld", (long long)n);
    else
      text[k++] = *c;
  }
  text[k] = 0;
}

// A fusion run with the JIT on and off: the same bits, and compiled loops
// in the JIT's run.
static void check_program(const char *tmpl, const char *tname, hl_dtype_t dt, int64_t n) {
  char text[8192];
  instantiate(tmpl, tname, n, text, sizeof text);
  hl_literal_t *args[2] = {random_any(dt, n), random_any(dt, n)};
  int on_regions = 0, off_regions = 0;
  hl_literal_t *on = run_fusion(text, args, 2, true, &on_regions);
  hl_literal_t *off = run_fusion(text, args, 2, false, &off_regions);
  if (jit_available()) CU_ASSERT(on_regions >= 1);
  CU_ASSERT_EQUAL(off_regions, 0);
  for (int i = 0; i < 2; i++) {
    size_t bytes = (size_t)n * hl_dtype_size(dt);
    const unsigned char *x = on->elements[i]->data, *y = off->elements[i]->data;
    if (memcmp(x, y, bytes) != 0) {
      size_t at = 0;
      while (x[at] == y[at]) at++;
      printf("\n  %s output %d differs at element %zu (jit regions %d)", tname, i,
             at / hl_dtype_size(dt), on_regions);
      CU_FAIL("JIT and interpreter differ");
    }
  }
  hl_literal_release(on);
  hl_literal_release(off);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
}

// Every integer operation the JIT covers, at every width, signed and
// unsigned (division by zero and INT_MIN / -1, shifts past the width among
// the inputs).
static void test_integer_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_int\n"
      "fused {\n"
      "  x = T[N] parameter(0)\n"
      "  y = T[N] parameter(1)\n"
      "  c = T[] constant(3)\n"
      "  cb = T[N] broadcast(c), dimensions={}\n"
      "  a = T[N] add(x, y)\n"
      "  m = T[N] multiply(a, cb)\n"
      "  d = T[N] divide(m, y)\n"
      "  r = T[N] remainder(x, d)\n"
      "  mx = T[N] maximum(r, y)\n"
      "  mn = T[N] minimum(mx, a)\n"
      "  ng = T[N] negate(mn)\n"
      "  ab = T[N] abs(ng)\n"
      "  an = T[N] and(ab, x)\n"
      "  o = T[N] or(an, y)\n"
      "  xr = T[N] xor(o, d)\n"
      "  nt = T[N] not(xr)\n"
      "  sl = T[N] shift-left(nt, y)\n"
      "  sa = T[N] shift-right-arithmetic(x, y)\n"
      "  sr = T[N] shift-right-logical(sa, cb)\n"
      "  s2 = T[N] shift-right-logical(x, y)\n"
      "  sum = T[N] add(sl, s2)\n"
      "  p = pred[N] compare(sum, a), direction=LT\n"
      "  sel = T[N] select(p, sr, xr)\n"
      "  q = pred[N] compare(sel, y), direction=NE\n"
      "  sel2 = T[N] select(q, sel, d)\n"
      "  sub = T[N] subtract(sel2, m)\n"
      "  ROOT t = (T[N], T[N]) tuple(sub, d)\n"
      "}\n"
      "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
      "  ROOT f = (T[N], T[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  static const char *kNames[] = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
  static const hl_dtype_t kTypes[] = {HL_S8, HL_S16, HL_S32, HL_S64,
                                      HL_U8, HL_U16, HL_U32, HL_U64};
  for (int i = 0; i < 8; i++) check_program(kTemplate, kNames[i], kTypes[i], 2053 + 7 * i);
}

// The float operations on bf16 / f16 (f32 math, rounded per op) and on f32 /
// f64, transcendentals and floor / ceil included, on every bit pattern.
static void test_float_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_float\n"
      "fused {\n"
      "  x = T[N] parameter(0)\n"
      "  y = T[N] parameter(1)\n"
      "  c = T[] constant(0.5)\n"
      "  cb = T[N] broadcast(c), dimensions={}\n"
      "  a = T[N] add(x, y)\n"
      "  m = T[N] multiply(a, cb)\n"
      "  d = T[N] divide(m, y)\n"
      "  mx = T[N] maximum(d, x)\n"
      "  mn = T[N] minimum(y, mx)\n"
      "  s = T[N] sqrt(mn)\n"
      "  ng = T[N] negate(s)\n"
      "  ab = T[N] abs(a)\n"
      "  fl = T[N] floor(d)\n"
      "  ce = T[N] ceil(m)\n"
      "  e = T[N] exponential(fl)\n"
      "  th = T[N] tanh(ce)\n"
      "  lg = T[N] log(ab)\n"
      "  p = pred[N] compare(ng, ab), direction=LT\n"
      "  sel = T[N] select(p, e, th)\n"
      "  q = pred[N] compare(sel, lg), direction=GE\n"
      "  sel2 = T[N] select(q, sel, lg)\n"
      "  sub = T[N] subtract(sel2, x)\n"
      "  ROOT t = (T[N], T[N]) tuple(sub, a)\n"
      "}\n"
      "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
      "  ROOT f = (T[N], T[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  static const char *kNames[] = {"bf16", "f16", "f32", "f64"};
  static const hl_dtype_t kTypes[] = {HL_BF16, HL_F16, HL_F32, HL_F64};
  for (int i = 0; i < 4; i++) check_program(kTemplate, kNames[i], kTypes[i], 3001 + 5 * i);
  static const char kRsqrt[] =
      "HloModule jit_rsqrt\n"
      "fused {\n"
      "  x = T[N] parameter(0)\n"
      "  y = T[N] parameter(1)\n"
      "  r = T[N] rsqrt(x)\n"
      "  l = T[N] logistic(y)\n"
      "  c = T[N] cosine(r)\n"
      "  a = T[N] add(l, c)\n"
      "  ROOT t = (T[N], T[N]) tuple(a, r)\n"
      "}\n"
      "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
      "  ROOT f = (T[N], T[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  check_program(kRsqrt, "f32", HL_F32, 1500);
  // pow and atan2: vmath's routines of two arguments, from the loop.
  static const char kBinaryCalls[] =
      "HloModule jit_pow\n"
      "fused {\n"
      "  x = T[N] parameter(0)\n"
      "  y = T[N] parameter(1)\n"
      "  a = T[N] abs(x)\n"
      "  p = T[N] power(a, y)\n"
      "  q = T[N] power(x, y)\n"
      "  t = T[N] atan2(p, x)\n"
      "  u = T[N] atan2(y, q)\n"
      "  s = T[N] add(t, u)\n"
      "  ROOT r = (T[N], T[N]) tuple(s, p)\n"
      "}\n"
      "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
      "  ROOT f = (T[N], T[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  for (int i = 0; i < 4; i++) check_program(kBinaryCalls, kNames[i], kTypes[i], 2001 + 3 * i);
}


// Values a convert must get right: every bit pattern of the 16-bit floats;
// for f32 / f64 random bit patterns (NaN payloads, huge and tiny
// magnitudes), powers of two and their neighbours (integer saturation
// limits), halves (truncation), and ordinary values; integers as random_any.
static hl_literal_t *random_convert_input(hl_dtype_t t, int64_t n) {
  if (t != HL_F32 && t != HL_F64) return random_any(t, n);
  hl_literal_t *l = random_literal(t, n);
  for (int64_t e = 0; e < n; e++) {
    uint64_t bits = (uint64_t)rnd() << 32 | rnd();
    double sign = rnd() % 2 ? -1.0 : 1.0, d;
    switch (rnd() % 5) {
      case 0:
        if (t == HL_F32)
          memcpy((float *)l->data + e, &bits, 4);
        else
          memcpy((double *)l->data + e, &bits, 8);
        continue;
      case 1:
        d = sign * ldexp(1.0, (int)(rnd() % 70)) + (double)((int)(rnd() % 5) - 2);
        break;
      case 2:
        d = sign * ((double)(rnd() % 1000) + 0.5);
        break;
      case 3:
        d = sign * ldexp(1.0 + (double)(rnd() % 4096) / 4096.0, (int)(rnd() % 140) - 70);
        break;
      default:
        continue;  // random_literal's value
    }
    if (t == HL_F32)
      ((float *)l->data)[e] = (float)d;
    else
      ((double *)l->data)[e] = d;
  }
  return l;
}

// Runs the two-output program text (outputs of type out) with the JIT on
// and off on args: the same bits, and compiled loops in the JIT's run.
static void check_on_off(const char *text, hl_literal_t **args, int nargs, hl_dtype_t out,
                         int64_t n, const char *what) {
  int on_regions = 0, off_regions = 0;
  hl_literal_t *on = run_fusion(text, args, nargs, true, &on_regions);
  int row_leaves = g_row_leaves;
  hl_literal_t *off = run_fusion(text, args, nargs, false, &off_regions);
  g_row_leaves = row_leaves;  // the JIT's run's
  if (jit_available() && on_regions < 1) {
    printf("\n  %s: no compiled loop", what);
    CU_FAIL("no compiled loop");
  }
  CU_ASSERT_EQUAL(off_regions, 0);
  for (int i = 0; i < 2; i++) {
    size_t es = hl_dtype_size(out), bytes = (size_t)n * es;
    const unsigned char *x = on->elements[i]->data, *y = off->elements[i]->data;
    if (memcmp(x, y, bytes) != 0) {
      size_t at = 0;
      while (x[at] == y[at]) at++;
      at /= es;
      uint64_t gx = 0, gy = 0;
      memcpy(&gx, x + at * es, es);
      memcpy(&gy, y + at * es, es);
      printf("\n  %s output %d differs at element %zu: %llx vs %llx", what, i, at,
             (unsigned long long)gx, (unsigned long long)gy);
      CU_FAIL("JIT and interpreter differ");
    }
  }
  hl_literal_release(on);
  hl_literal_release(off);
}

static const char *const kAllNames[] = {"f32", "f64", "bf16", "f16", "s8",  "s16",
                                        "s32", "s64", "u8",   "u16", "u32", "u64"};
static const hl_dtype_t kAllTypes[] = {HL_F32, HL_F64, HL_BF16, HL_F16, HL_S8,  HL_S16,
                                       HL_S32, HL_S64, HL_U8,   HL_U16, HL_U32, HL_U64};

// Converts between every pair of the JIT's types, of a parameter and of an
// add computed in the loop (NaNs the loop made), each into arithmetic of
// the destination type: convert.c's saturation, NaN -> 0, rounding once,
// NaN payloads.
static void test_convert_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_convert\n"
      "fused {\n"
      "  x = S[N] parameter(0)\n"
      "  y = S[N] parameter(1)\n"
      "  a = S[N] add(x, y)\n"
      "  c = D[N] convert(a)\n"
      "  cy = D[N] convert(y)\n"
      "  m = D[N] maximum(c, cy)\n"
      "  cx = D[N] convert(x)\n"
      "  ROOT t = (D[N], D[N]) tuple(m, cx)\n"
      "}\n"
      "ENTRY main {\n  x = S[N] parameter(0)\n  y = S[N] parameter(1)\n"
      "  ROOT f = (D[N], D[N]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  // The width variants check every third pair, the three of them together
  // every pair: compiling is most of the time.
  const char *width = getenv("HL_FUSION_JIT_VECTOR_BYTES");
  int stride = width ? 3 : 1;
  int offset = !width || atoi(width) == 16 ? 0 : atoi(width) == 32 ? 1 : 2;
  int pair = 0;
  for (int si = 0; si < 12; si++)
    for (int di = 0; di < 12; di++) {
      if (si == di || pair++ % stride != offset) continue;
      int64_t n = 1000 + 7 * si + di;
      char tmpl[2048], text[4096];
      size_t k = 0;
      for (const char *c = kTemplate; *c && k + 8 < sizeof tmpl; c++) {
        if ((*c == 'S' || *c == 'D') && c[1] == '[')
          k += (size_t)snprintf(tmpl + k, sizeof tmpl - k, "%s", kAllNames[*c == 'S' ? si : di]);
        else
          tmpl[k++] = *c;
      }
      tmpl[k] = 0;
      instantiate(tmpl, "", n, text, sizeof text);
      hl_literal_t *args[2] = {random_convert_input(kAllTypes[si], n),
                               random_convert_input(kAllTypes[si], n)};
      char what[64];
      snprintf(what, sizeof what, "convert %s -> %s", kAllNames[si], kAllNames[di]);
      check_on_off(text, args, 2, kAllTypes[di], n, what);
      hl_literal_release(args[0]);
      hl_literal_release(args[1]);
    }
}

// iota along each dimension of a 2-D shape, of every type iota has here,
// added to a parameter and converted (the loop's base: blocks start
// anywhere in the index space).
static void test_iota_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_iota\n"
      "fused {\n"
      "  x = T[37,129] parameter(0)\n"
      "  y = T[37,129] parameter(1)\n"
      "  i0 = T[37,129] iota(), iota_dimension=0\n"
      "  i1 = T[37,129] iota(), iota_dimension=1\n"
      "  a = T[37,129] add(x, i0)\n"
      "  b = T[37,129] multiply(i1, y)\n"
      "  c = T[37,129] subtract(a, b)\n"
      "  ROOT t = (T[37,129], T[37,129]) tuple(c, i1)\n"
      "}\n"
      "ENTRY main {\n  x = T[37,129] parameter(0)\n  y = T[37,129] parameter(1)\n"
      "  ROOT f = (T[37,129], T[37,129]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  static const int kTypes[] = {0, 1, 4, 5, 6, 7, 8, 9, 10, 11};  // kAllNames: no 16-bit floats
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++) {
    int t = kTypes[i];
    char text[4096];
    instantiate(kTemplate, kAllNames[t], 0, text, sizeof text);
    hl_literal_t *args[2] = {random_any(kAllTypes[t], 37 * 129),
                             random_any(kAllTypes[t], 37 * 129)};
    char what[64];
    snprintf(what, sizeof what, "iota %s", kAllNames[t]);
    check_on_off(text, args, 2, kAllTypes[t], 37 * 129, what);
    hl_literal_release(args[0]);
    hl_literal_release(args[1]);
  }
}

// Broadcasts of a column vector (x - max per row, x * scale per row), of a
// row vector (a bias per column) and a slice of columns, read per row by
// the loop: rows of 256 (whole 8-lane groups: read per row even with
// exponential), 100 (no routine: per row) and 129 (with exponential: the
// leaves materialized, the interpreter's lane groups), and a 3-D layer-norm
// shape; ragged blocks throughout.
static void test_row_leaf_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_rows\n"
      "fused {\n"
      "  x = T[R,C] parameter(0)\n"
      "  v = T[R] parameter(1)\n"
      "  w = T[C] parameter(2)\n"
      "  z = T[R,D] parameter(3)\n"
      "  bv = T[R,C] broadcast(v), dimensions={0}\n"
      "  bw = T[R,C] broadcast(w), dimensions={1}\n"
      "  sz = T[R,C] slice(z), slice={[0:R], [3:E]}\n"
      "  d = T[R,C] subtract(x, bv)\n"
      "  e = T[R,C] F(d)\n"
      "  q = T[R,C] multiply(e, bw)\n"
      "  a = T[R,C] add(q, sz)\n"
      "  s = T[R,C] divide(a, bv)\n"
      "  ROOT t = (T[R,C], T[R,C]) tuple(s, q)\n"
      "}\n"
      "ENTRY main {\n  x = T[R,C] parameter(0)\n  v = T[R] parameter(1)\n"
      "  w = T[C] parameter(2)\n  z = T[R,D] parameter(3)\n"
      "  ROOT f = (T[R,C], T[R,C]) fusion(x, v, w, z), kind=kLoop, calls=fused\n}\n";
  static const struct {
    int type;  // kAllNames
    int64_t rows, cols;
    const char *fn;
    bool per_row;
  } kCases[] = {{0, 19, 256, "exponential", true}, {1, 23, 100, "negate", true},
                {0, 31, 129, "exponential", false}, {2, 17, 256, "exponential", true},
                {3, 13, 100, "abs", true},         {6, 9, 300, "negate", true},
                {1, 11, 64, "exponential", true}};
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; c++) {
    int t = kCases[c].type;
    int64_t r = kCases[c].rows, n = kCases[c].cols, d = n + 5;
    char text[4096];
    size_t k = 0;
    for (const char *ch = kTemplate; *ch && k + 32 < sizeof text; ch++) {
      if (*ch == 'T' && ch[1] == '[')
        k += (size_t)snprintf(text + k, sizeof text - k, "%s", kAllNames[t]);
      else if (*ch == 'R' && (ch[1] == ',' || ch[1] == ']'))
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)r);
      else if (*ch == 'C' && ch[1] == ']')
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)n);
      else if (*ch == 'D' && ch[1] == ']')
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)d);
      else if (*ch == 'E' && ch[1] == ']')
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)(n + 3));
      else if (*ch == 'F' && ch[1] == '(')
        k += (size_t)snprintf(text + k, sizeof text - k, "%s", kCases[c].fn);
      else
        text[k++] = *ch;
    }
    text[k] = 0;
    hl_dtype_t dt = kAllTypes[t];
    hl_literal_t *args[4] = {random_any(dt, r * n), random_any(dt, r), random_any(dt, n),
                             random_any(dt, r * d)};
    char what[96];
    snprintf(what, sizeof what, "rows %s[%lld,%lld] %s", kAllNames[t], (long long)r,
             (long long)n, kCases[c].fn);
    check_on_off(text, args, 4, dt, r * n, what);
    if (jit_available()) {
      // The loop of q reads bv and bw per row (not with exponential on
      // rows of 129 where vmath has an 8-lane vector routine: its lane
      // groups; aarch64 calls the scalar one), the loop of s sz and bv.
      bool groups = hl_vmath_unary_vector_f32(HL_VM_EXP) != NULL;
      int want = kCases[c].per_row || !groups ? 4 : 2;
      if (g_row_leaves != want) {
        printf("\n  %s: %d leaves read per row", what, g_row_leaves);
        CU_FAIL("leaves read per row");
      }
    }
    for (int i = 0; i < 4; i++) hl_literal_release(args[i]);
  }
}

// clamp with bounds of the operand's shape and as one element (a rank-0
// parameter, a rank-0 value computed in the fusion), every type: NaN
// operands and bounds, signed zeros, unsigned extremes.
static void test_clamp_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_clamp\n"
      "fused {\n"
      "  x = T[N] parameter(0)\n"
      "  y = T[N] parameter(1)\n"
      "  lo = T[] parameter(2)\n"
      "  hi0 = T[] parameter(3)\n"
      "  hi = T[] negate(hi0)\n"
      "  a = T[N] add(x, y)\n"
      "  c1 = T[N] clamp(y, a, x)\n"
      "  c2 = T[N] clamp(lo, c1, hi)\n"
      "  c3 = T[N] clamp(lo, a, y)\n"
      "  c4 = T[N] clamp(y, x, hi)\n"
      "  s = T[N] subtract(c2, c3)\n"
      "  ROOT t = (T[N], T[N]) tuple(s, c4)\n"
      "}\n"
      "ENTRY main {\n  x = T[N] parameter(0)\n  y = T[N] parameter(1)\n"
      "  lo = T[] parameter(2)\n  hi = T[] parameter(3)\n"
      "  ROOT f = (T[N], T[N]) fusion(x, y, lo, hi), kind=kLoop, calls=fused\n}\n";
  for (int t = 0; t < 12; t++) {
    int64_t n = 1500 + 11 * t;
    char text[4096];
    instantiate(kTemplate, kAllNames[t], n, text, sizeof text);
    for (int round = 0; round < 3; round++) {
      hl_literal_t *args[4] = {random_convert_input(kAllTypes[t], n),
                               random_convert_input(kAllTypes[t], n),
                               random_convert_input(kAllTypes[t], 1),
                               random_convert_input(kAllTypes[t], 1)};
      char what[64];
      snprintf(what, sizeof what, "clamp %s", kAllNames[t]);
      check_on_off(text, args, 4, kAllTypes[t], n, what);
      for (int i = 0; i < 4; i++) hl_literal_release(args[i]);
    }
  }
}

// A layer norm with its row reduces read back inside the fusion
// (fusion_rows.h), rows short enough that the broadcasts are materialized
// (32) and long enough to be read per row (256): JIT on and off agree.
static void test_row_reduce_programs(void) {
  static const char kTemplate[] =
      "HloModule jit_row_reduce\n"
      "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\n"
      "fused {\n"
      "  x = f32[R,C] parameter(0)\n"
      "  g = f32[C] parameter(1)\n"
      "  zero = f32[] constant(0)\n"
      "  n = f32[] constant(7)\n"
      "  nb = f32[R] broadcast(n), dimensions={}\n"
      "  s1 = f32[R] reduce(x, zero), dimensions={1}, to_apply=add_f32\n"
      "  mean = f32[R] divide(s1, nb)\n"
      "  mb = f32[R,C] broadcast(mean), dimensions={0}\n"
      "  xc = f32[R,C] subtract(x, mb)\n"
      "  sq = f32[R,C] multiply(xc, xc)\n"
      "  s2 = f32[R] reduce(sq, zero), dimensions={1}, to_apply=add_f32\n"
      "  var = f32[R] divide(s2, nb)\n"
      "  rs = f32[R] rsqrt(var)\n"
      "  rb = f32[R,C] broadcast(rs), dimensions={0}\n"
      "  y = f32[R,C] multiply(xc, rb)\n"
      "  gb = f32[R,C] broadcast(g), dimensions={1}\n"
      "  out = f32[R,C] multiply(y, gb)\n"
      "  ROOT t = (f32[R,C], f32[R,C]) tuple(out, y)\n"
      "}\n"
      "ENTRY main {\n  x = f32[R,C] parameter(0)\n  g = f32[C] parameter(1)\n"
      "  ROOT f = (f32[R,C], f32[R,C]) fusion(x, g), kind=kLoop, calls=fused\n}\n";
  static const int64_t kShapes[][2] = {{257, 32}, {61, 256}, {40, 100}};
  for (int c = 0; c < 3; c++) {
    int64_t r = kShapes[c][0], n = kShapes[c][1];
    char text[4096];
    size_t k = 0;
    for (const char *ch = kTemplate; *ch && k + 32 < sizeof text; ch++) {
      if (*ch == 'R' && (ch[1] == ',' || ch[1] == ']'))
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)r);
      else if (*ch == 'C' && ch[1] == ']')
        k += (size_t)snprintf(text + k, sizeof text - k, "%lld", (long long)n);
      else
        text[k++] = *ch;
    }
    text[k] = 0;
    hl_literal_t *args[2] = {random_literal(HL_F32, r * n), random_literal(HL_F32, n)};
    char what[64];
    snprintf(what, sizeof what, "row reduces f32[%lld,%lld]", (long long)r, (long long)n);
    check_on_off(text, args, 2, HL_F32, r * n, what);
    for (int i = 0; i < 2; i++) hl_literal_release(args[i]);
  }
}

// Compiled in the background: the program runs interpreted until its loops
// are ready, then compiled, with the same bits throughout.
static void test_background_compile(void) {
  if (!jit_available()) return;
  static const char kText[] =
      "HloModule bg\n"
      "fused {\n"
      "  x = f32[5000] parameter(0)\n"
      "  y = f32[5000] parameter(1)\n"
      "  a = f32[5000] multiply(x, y)\n"
      "  e = f32[5000] exponential(a)\n"
      "  d = f32[5000] divide(e, y)\n"
      "  s = f32[5000] subtract(d, x)\n"
      "  ROOT t = (f32[5000], f32[5000]) tuple(s, a)\n"
      "}\n"
      "ENTRY main {\n  x = f32[5000] parameter(0)\n  y = f32[5000] parameter(1)\n"
      "  ROOT f = (f32[5000], f32[5000]) fusion(x, y), kind=kLoop, calls=fused\n}\n";
  hl_literal_t *args[2] = {random_literal(HL_F32, 5000), random_literal(HL_F32, 5000)};
  int regions = 0;
  hl_literal_t *want = run_fusion(kText, args, 2, false, &regions);
  hl_jit_set_wait(false);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kText, strlen(kText), "bg.hlo", &m));
  hl_fusion_program_t *prog = NULL;
  const char *why = NULL;
  HL_ASSERT_OK(hl_fusion_program_compile(hl_module_find_computation(m, "fused"), &prog, &why));
  CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
  CU_ASSERT(hl_fusion_program_jit_regions(prog) >= 1);
  int runs = 0, ready = 0;
  for (; runs < 100000 && ready < hl_fusion_program_jit_regions(prog); runs++) {
    ready = hl_fusion_program_jit_regions_ready(prog);
    hl_literal_t *got = NULL;
    HL_ASSERT_OK(hl_fusion_program_run(prog, args, 2, NULL, &got));
    CU_ASSERT_TRUE(hl_literal_equal(got, want));
    for (int i = 0; i < 2; i++)
      CU_ASSERT_EQUAL(memcmp(got->elements[i]->data, want->elements[i]->data, 5000 * 4), 0);
    hl_literal_release(got);
    if (ready < hl_fusion_program_jit_regions(prog)) sched_yield();
  }
  CU_ASSERT_EQUAL(ready, hl_fusion_program_jit_regions(prog));
  hl_fusion_program_destroy(prog);
  hl_module_destroy(m);
  hl_jit_set_wait(true);
  hl_literal_release(want);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
}

static CU_TestInfo tests[] = {
    {"each_op", test_each_op},
    {"random_bodies", test_random_bodies},
    {"limits", test_limits},
    {"call_in_partial_vector", test_call_in_partial_vector},
    {"programs_jit_vs_interpreter", test_programs_jit_vs_interpreter},
    {"integer_programs", test_integer_programs},
    {"float_programs", test_float_programs},
    {"convert_programs", test_convert_programs},
    {"iota_programs", test_iota_programs},
    {"row_leaf_programs", test_row_leaf_programs},
    {"clamp_programs", test_clamp_programs},
    {"row_reduce_programs", test_row_reduce_programs},
    {"background_compile", test_background_compile},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fusion_jit", tests)
