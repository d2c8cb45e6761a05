// Blocked fusion execution (runtime/fusion) against the op-by-op reference
// path: many generated fusions over every element type the element-wise
// kernels support, each run three ways (op by op, blocked on one thread,
// blocked on a pool of 3) with bitwise equal results required. Each
// generated fusion must also compile to a blocked program, so the blocked
// path is really the one that ran.
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/base/strbuf.h"
#include "runtime/exec/elementwise_chains.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

typedef enum family { FLOAT, SIGNED, UNSIGNED, PRED } family_t;

typedef struct type_case {
  const char *name;
  family_t fam;
} type_case_t;

static const type_case_t kTypes[] = {
    {"f32", FLOAT},  {"f64", FLOAT},    {"f16", FLOAT},    {"bf16", FLOAT},
    {"f8e5m2", FLOAT}, {"f8e4m3fn", FLOAT}, {"s8", SIGNED}, {"s16", SIGNED},
    {"s32", SIGNED}, {"s64", SIGNED},   {"s4", SIGNED},    {"u8", UNSIGNED},
    {"u16", UNSIGNED}, {"u32", UNSIGNED}, {"u64", UNSIGNED}, {"u4", UNSIGNED},
    {"pred", PRED},
};

static const char *kFloatUnary[] = {"abs", "negate", "exponential", "log", "tanh", "logistic",
                                    "sine", "cosine", "sqrt", "floor", "ceil", "sign", "erf",
                                    "exponential-minus-one", "log-plus-one", "rsqrt", "cbrt",
                                    "round-nearest-even", "tan", "atan"};
static const char *kFloatBinary[] = {"add", "subtract", "multiply", "divide", "maximum",
                                     "minimum", "power", "atan2", "remainder"};
static const char *kIntUnary[] = {"negate", "not", "sign", "popcnt", "abs"};
static const char *kIntBinary[] = {"add", "subtract", "multiply", "divide", "remainder",
                                   "maximum", "minimum", "and", "or", "xor", "shift-left",
                                   "shift-right-arithmetic", "shift-right-logical"};
static const char *kPredUnary[] = {"not"};
static const char *kPredBinary[] = {"and", "or", "xor", "add", "multiply", "maximum"};

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

static unsigned rng_next(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

// Appends one generated fusion module over type t to sb. D0 x D1 values;
// the root is an array, a tuple of two, or a reduce (kind 0, 1, 2), or an
// array that reads a row reduce of the last value back along its rows
// (kind 3: runtime/fusion/fusion_rows.h), or that array with its own row
// reduce as a second output (kind 4: a reduce output over the same rows).
// as_entry: the same instructions as the entry computation itself (no fusion),
// for the unfused element-wise chains of runtime/exec/elementwise_chains.c.
static void generate(hl_strbuf_t *sb, const type_case_t *t, unsigned seed, int ops, int kind,
                     int d0, int d1, bool as_entry) {
  unsigned s = seed;
  const char *T = t->name;
  char full[64], row[32], col[32], tr[64], big[64], flat[32];
  snprintf(full, sizeof full, "%s[%d,%d]", T, d0, d1);
  snprintf(row, sizeof row, "%s[%d]", T, d1);
  snprintf(col, sizeof col, "%s[%d]", T, d0);
  snprintf(tr, sizeof tr, "%s[%d,%d]", T, d1, d0);
  snprintf(big, sizeof big, "%s[%d,%d]", T, d0 + 3, 2 * d1);
  snprintf(flat, sizeof flat, "%s[%d]", T, d0 * d1);
  const char *red = t->fam == FLOAT ? "maximum" : t->fam == PRED ? "or" : "add";
  hl_strbuf_appendf(sb, "HloModule gen\n\nreducer {\n  x = %s[] parameter(0)\n"
                        "  y = %s[] parameter(1)\n  ROOT r = %s[] %s(x, y)\n}\n\n", T, T, T, red);
  hl_strbuf_appendf(sb, as_entry ? "ENTRY main {\n" : "fused {\n");
  hl_strbuf_appendf(sb, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n"
                        "  p2 = %s parameter(2)\n  p3 = %s parameter(3)\n  p4 = %s parameter(4)\n"
                        "  p5 = %s parameter(5)\n", full, full, row, col, tr, big);
  int nv = 2;  // values v0..: full-shaped names
  hl_strbuf_appendf(sb, "  v0 = %s copy(p0)\n  v1 = %s add(p1, p1)\n", full, full);
  for (int i = 0; i < ops; i++) {
    int a = (int)(rng_next(&s) % (unsigned)nv), b = (int)(rng_next(&s) % (unsigned)nv);
    int choice = (int)(rng_next(&s) % 12);
    const char **un = t->fam == FLOAT ? kFloatUnary : t->fam == PRED ? kPredUnary : kIntUnary;
    int nun = t->fam == FLOAT ? N_(kFloatUnary) : t->fam == PRED ? N_(kPredUnary) : N_(kIntUnary);
    const char **bi = t->fam == FLOAT ? kFloatBinary : t->fam == PRED ? kPredBinary : kIntBinary;
    int nbi = t->fam == FLOAT ? N_(kFloatBinary) : t->fam == PRED ? N_(kPredBinary)
                                                                   : N_(kIntBinary);
    int v = nv++;
    switch (choice) {
      case 0: case 1:
        hl_strbuf_appendf(sb, "  v%d = %s %s(v%d)\n", v, full, un[rng_next(&s) % (unsigned)nun], a);
        break;
      case 2: case 3:
        hl_strbuf_appendf(sb, "  v%d = %s %s(v%d, v%d)\n", v, full,
                          bi[rng_next(&s) % (unsigned)nbi], a, b);
        break;
      case 4:
        hl_strbuf_appendf(sb, "  c%d = pred[%d,%d] compare(v%d, v%d), direction=%s\n", v, d0, d1,
                          a, b, (rng_next(&s) & 1) ? "LT" : "GE");
        hl_strbuf_appendf(sb, "  v%d = %s select(c%d, v%d, v%d)\n", v, full, v, b, a);
        break;
      case 5:
        hl_strbuf_appendf(sb, "  b%d = %s broadcast(p2), dimensions={1}\n", v, full);
        hl_strbuf_appendf(sb, "  v%d = %s %s(v%d, b%d)\n", v, full, bi[0], a, v);
        break;
      case 6:
        hl_strbuf_appendf(sb, "  b%d = %s broadcast(p3), dimensions={0}\n", v, full);
        hl_strbuf_appendf(sb, "  v%d = %s %s(b%d, v%d)\n", v, full, bi[nbi - 1], v, a);
        break;
      case 7:
        hl_strbuf_appendf(sb, "  t%d = %s transpose(p4), dimensions={1,0}\n", v, full);
        hl_strbuf_appendf(sb, "  v%d = %s %s(v%d, t%d)\n", v, full, bi[0], a, v);
        break;
      case 8:
        hl_strbuf_appendf(sb, "  s%d = %s slice(p5), slice={[1:%d], [1:%d:2]}\n", v, full,
                          d0 + 1, 2 * d1);
        hl_strbuf_appendf(sb, "  r%d = %s reverse(s%d), dimensions={0}\n", v, full, v);
        hl_strbuf_appendf(sb, "  v%d = %s %s(r%d, v%d)\n", v, full, bi[rng_next(&s) % (unsigned)nbi],
                          v, a);
        break;
      case 9:
        hl_strbuf_appendf(sb, "  f%d = f32[%d,%d] convert(v%d)\n", v, d0, d1, a);
        hl_strbuf_appendf(sb, "  i%d = f32[%d,%d] iota(), iota_dimension=%d\n", v, d0, d1,
                          (int)(rng_next(&s) & 1));
        hl_strbuf_appendf(sb, "  g%d = f32[%d,%d] multiply(f%d, i%d)\n", v, d0, d1, v, v);
        hl_strbuf_appendf(sb, "  v%d = %s convert(g%d)\n", v, full, v);
        break;
      case 10:
        hl_strbuf_appendf(sb, "  k%d = %s[] constant(%d)\n", v, T, t->fam == PRED ? 1 : 2);
        hl_strbuf_appendf(sb, "  z%d = %s broadcast(k%d), dimensions={}\n", v, full, v);
        hl_strbuf_appendf(sb, "  v%d = %s %s(v%d, z%d)\n", v, full,
                          bi[rng_next(&s) % (unsigned)nbi], a, v);
        break;
      default:
        hl_strbuf_appendf(sb, "  lo%d = %s[] constant(%d)\n", v, T, t->fam == PRED ? 0 : 1);
        hl_strbuf_appendf(sb, "  h%d = %s reshape(v%d)\n", v, flat, a);
        hl_strbuf_appendf(sb, "  w%d = %s reshape(h%d)\n", v, full, v);
        hl_strbuf_appendf(sb, "  v%d = %s clamp(lo%d, w%d, v%d)\n", v, full, v, v, b);
        break;
    }
  }
  int last = nv - 1;
  if (kind == 0) {
    hl_strbuf_appendf(sb, "  ROOT out = %s copy(v%d)\n}\n\n", full, last);
  } else if (kind == 1) {
    hl_strbuf_appendf(sb, "  ROOT out = (%s, %s) tuple(v%d, v%d)\n}\n\n", full, full, last,
                      last > 0 ? last - 1 : 0);
  } else if (kind == 3 || kind == 4) {
    hl_strbuf_appendf(sb, "  init = %s[] constant(0)\n", T);
    hl_strbuf_appendf(sb, "  red = %s reduce(v%d, init), dimensions={1}, to_apply=reducer\n", col,
                      last);
    hl_strbuf_appendf(sb, "  rb = %s broadcast(red), dimensions={0}\n", full);
    hl_strbuf_appendf(sb, "  %sback = %s %s(v%d, rb)\n", kind == 3 ? "ROOT " : "", full,
                      t->fam == PRED ? "xor" : "subtract", last);
    if (kind == 4)
      hl_strbuf_appendf(sb, "  red2 = %s reduce(back, init), dimensions={1}, to_apply=reducer\n"
                            "  ROOT out = (%s, %s) tuple(red2, back)\n", col, col, full);
    hl_strbuf_appendf(sb, "}\n\n");
  } else {
    int dim = (int)(seed & 1);
    hl_strbuf_appendf(sb, "  init = %s[] constant(0)\n", T);
    hl_strbuf_appendf(sb, "  red = %s reduce(v%d, init), dimensions={%d}, to_apply=reducer\n",
                      dim ? col : row, last, dim);
    hl_strbuf_appendf(sb, "  ROOT out = (%s, %s) tuple(red, v%d)\n}\n\n", dim ? col : row, full,
                      last);
  }
  if (as_entry) return;
  const char *rshape = kind == 0 || kind == 3 ? full : NULL;
  char tshape[160];
  if (kind == 1) snprintf(tshape, sizeof tshape, "(%s, %s)", full, full);
  if (kind == 2) snprintf(tshape, sizeof tshape, "(%s, %s)", (seed & 1) ? col : row, full);
  if (kind == 4) snprintf(tshape, sizeof tshape, "(%s, %s)", col, full);
  hl_strbuf_appendf(sb, "ENTRY main {\n  a0 = %s parameter(0)\n  a1 = %s parameter(1)\n"
                        "  a2 = %s parameter(2)\n  a3 = %s parameter(3)\n  a4 = %s parameter(4)\n"
                        "  a5 = %s parameter(5)\n  ROOT f = %s fusion(a0, a1, a2, a3, a4, a5), "
                        "kind=kLoop, calls=fused\n}\n",
                    full, full, row, col, tr, big, rshape ? rshape : tshape);
}

static hl_literal_t *random_literal(const hl_shape_t *shape, unsigned seed, family_t fam) {
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(shape, &lit));
  int64_t n = hl_literal_element_count(lit);
  unsigned s = seed;
  for (int64_t i = 0; i < n; i++) {
    unsigned r = rng_next(&s);
    double v = fam == FLOAT ? ((double)(int)(r % 2001) - 1000.0) / 250.0
                            : (double)(int)(r % 200) - 100;
    if (fam == UNSIGNED) v = r % 250;
    if (fam == PRED) v = r & 1;
    hl_literal_set_f64(lit, i, v);
  }
  return lit;
}

static int g_chains;  // chains found in flat generated modules

static int run_mode(const hl_module_t *m, hl_literal_t **args, bool blocked,
                    hl_thread_pool_t *pool, hl_literal_t **out) {
  hl_exec_options_t o = {.no_fusion_blocking = !blocked, .pool = pool};
  hl_executable_t *exe = NULL;
  HL_ASSERT_OK(hl_executable_create(m, &exe));
  hl_status_t st = hl_executable_run(exe, &o, args, 6, out);
  hl_executable_destroy(exe);
  if (st) {
    fprintf(stderr, "\n  run (%s): %s\n", blocked ? "blocked" : "op by op", hl_status_message(st));
    hl_status_free(st);
    return 1;
  }
  return 0;
}

static void check_case_mode(const type_case_t *t, unsigned seed, int ops, int kind, int d0,
                            int d1, hl_thread_pool_t *pool, bool flat) {
  // The reduce kernel folds f8 and sub-byte types through the reducer
  // computation (no typed loop), which the blocked path leaves op by op.
  if (kind == 2 && (strncmp(t->name, "f8", 2) == 0 || t->name[1] == '4')) kind = 1;
  if (kind >= 3 && (strncmp(t->name, "f8", 2) == 0 || t->name[1] == '4')) kind = 0;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  generate(&sb, t, seed, ops, kind, d0, d1, flat);
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(hl_strbuf_cstr(&sb), sb.length, "gen.hlo", &m);
  if (!st) st = hl_verify_module(m);
  if (st) {
    fprintf(stderr, "\n%s\n  %s\n", hl_strbuf_cstr(&sb), hl_status_message(st));
    hl_status_free(st);
    CU_FAIL("generated module does not parse or verify");
    hl_module_destroy(m);
    hl_strbuf_deinit(&sb);
    return;
  }
  const hl_computation_t *fused = hl_module_find_computation(m, flat ? "main" : "fused");
  if (flat) {
    hl_plan_t *plan = NULL;
    HL_ASSERT_OK(hl_plan_create(fused, &plan));
    g_chains += plan->chain_count;
    hl_plan_destroy(plan);
  } else {
    hl_fusion_program_t *prog = NULL;
    const char *why = NULL;
    HL_ASSERT_OK(hl_fusion_program_compile(fused, &prog, &why));
    if (!prog) {
      fprintf(stderr, "\n%s\n  not blocked: %s\n", hl_strbuf_cstr(&sb), why);
      CU_FAIL("generated fusion is not covered by the blocked path");
    }
    hl_fusion_program_destroy(prog);
  }
  hl_literal_t *args[6];
  for (int i = 0; i < 6; i++)
    args[i] = random_literal(&fused->parameters[i]->shape, seed * 7 + (unsigned)i, t->fam);
  hl_literal_t *ref = NULL, *one = NULL, *many = NULL;
  int bad = run_mode(m, args, false, NULL, &ref) + run_mode(m, args, true, NULL, &one) +
            run_mode(m, args, true, pool, &many);
  CU_ASSERT_EQUAL(bad, 0);
  if (!bad && (!hl_literal_equal(ref, one) || !hl_literal_equal(ref, many))) {
    fprintf(stderr, "\n%s\n  %s seed %u: blocked result differs from op by op (%s)\n",
            hl_strbuf_cstr(&sb), t->name, seed,
            hl_literal_equal(ref, one) ? "threaded" : "single thread");
    CU_FAIL("blocked result differs");
  }
  hl_literal_release(ref);
  hl_literal_release(one);
  hl_literal_release(many);
  for (int i = 0; i < 6; i++) hl_literal_release(args[i]);
  hl_module_destroy(m);
  hl_strbuf_deinit(&sb);
}

static void check_case(const type_case_t *t, unsigned seed, int ops, int kind, int d0, int d1,
                       hl_thread_pool_t *pool) {
  check_case_mode(t, seed, ops, kind, d0, d1, pool, false);
}

// Unfused element-wise chains in an ordinary computation: the generated
// bodies as the entry computation, where the walk runs the chains blocked
// (chains need >= HL_CHAIN_MIN_ELEMENTS elements) against the op-by-op
// reference (no_fusion_blocking), every type, one thread and a pool.
static void test_unfused_chains(void) {
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(3, &pool));
  g_chains = 0;
  for (int ti = 0; ti < N_(kTypes); ti++)
    for (unsigned seed = 1; seed <= 4; seed++)
      check_case_mode(&kTypes[ti], seed * 17 + (unsigned)ti, 6 + (int)(seed % 7),
                      (int)(seed % 3), 37, 129, pool, true);
  for (unsigned seed = 1; seed <= 4; seed++)
    check_case_mode(&kTypes[0], seed * 29, 16, (int)(seed % 3), 5, 5000, pool, true);
  // The chains really ran blocked somewhere (most modules have several).
  CU_ASSERT(g_chains >= N_(kTypes) * 2);
  hl_thread_pool_destroy(pool);
}

// A plan groups a single-use element-wise chain and keeps the values it
// reads alive until the chain's root.
static void test_chain_plan(void) {
  const char *text =
      "HloModule m\nENTRY main {\n  x = f32[8192] parameter(0)\n  y = f32[8192] parameter(1)\n"
      "  a = f32[8192] multiply(x, y)\n  b = f32[8192] exponential(a)\n"
      "  c = f32[8192] add(b, x)\n  d = f32[8192] negate(x)\n"
      "  ROOT e = (f32[8192], f32[8192]) tuple(c, d)\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "chain.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  const hl_computation_t *entry = hl_module_find_computation(m, "main");
  hl_plan_t *plan = NULL;
  HL_ASSERT_OK(hl_plan_create(entry, &plan));
  CU_ASSERT_EQUAL(plan->chain_count, 1);  // a, b, c (d alone is no chain)
  if (plan->chain_count == 1) {
    CU_ASSERT_EQUAL(plan->chains[0].member_count, 3);
    CU_ASSERT_EQUAL(plan->chains[0].input_count, 2);
    int root_q = plan->chains[0].root_position;
    CU_ASSERT_PTR_EQUAL(plan->order[root_q], entry->root->operands[0]);
    // x and y die no earlier than the chain's root.
    CU_ASSERT(hl_plan_last_use(plan, entry->parameters[1]->index) == root_q);
    CU_ASSERT(hl_plan_last_use(plan, entry->parameters[0]->index) >= root_q);
  }
  hl_plan_destroy(plan);
  hl_module_destroy(m);
}

// Every type, every root kind, shapes with ragged blocks (not multiples of
// the block) and more than one block.
static void test_generated_all_types(void) {
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(3, &pool));
  for (int ti = 0; ti < N_(kTypes); ti++)
    for (unsigned seed = 1; seed <= 6; seed++)
      check_case(&kTypes[ti], seed * 31 + (unsigned)ti, 4 + (int)(seed % 5), (int)(seed % 3),
                 37, 129, pool);
  // Row reduces read back (kinds 3, 4): the reduce kernel's bits, every type.
  for (int ti = 0; ti < N_(kTypes); ti++)
    for (unsigned seed = 1; seed <= 2; seed++)
      check_case(&kTypes[ti], seed * 37 + (unsigned)ti, 3 + (int)(seed % 4), 2 + (int)seed, 37,
                 129, pool);
  hl_thread_pool_destroy(pool);
}

// Long chains on f32 / bf16 (the types programs use most), tiny and
// single-element shapes, and rows longer than one block (the reduce must
// keep each row whole to fold it in the reduce kernel's order).
static void test_generated_shapes(void) {
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(2, &pool));
  const int shapes[][2] = {{1, 1}, {3, 5}, {64, 64}, {5, 5000}, {300, 7}};
  for (int si = 0; si < N_(shapes); si++)
    for (unsigned seed = 1; seed <= 4; seed++) {
      check_case(&kTypes[0], seed * 101 + (unsigned)si, 12, (int)(seed % 3), shapes[si][0],
                 shapes[si][1], pool);
      check_case(&kTypes[3], seed * 103 + (unsigned)si, 8, (int)((seed + 1) % 3), shapes[si][0],
                 shapes[si][1], pool);
      check_case(&kTypes[seed & 1 ? 0 : 1], seed * 107 + (unsigned)si, 6, 3 + (int)(seed / 3),
                 shapes[si][0], shapes[si][1], pool);
    }
  hl_thread_pool_destroy(pool);
}

// What the blocked path does not cover falls back to op by op (same result,
// no error): a dot inside the fusion, a row reduce read back across its rows
// (not along them: blocks of whole rows would each need every row), a
// bitcast between layouts.
static void test_uncovered_falls_back(void) {
  const char *texts[] = {
      "HloModule m\nfused {\n  a = f32[4,4] parameter(0)\n  d = f32[4,4] dot(a, a), "
      "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  ROOT r = f32[4,4] add(d, a)\n}\n"
      "ENTRY main {\n  p = f32[4,4] parameter(0)\n  ROOT f = f32[4,4] fusion(p), kind=kOutput, "
      "calls=fused\n}\n",
      "HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] "
      "add(x, y)\n}\nfused {\n  a = f32[4,4] parameter(0)\n  z = f32[] constant(0)\n"
      "  r = f32[4] reduce(a, z), dimensions={1}, to_apply=add\n  b = f32[4,4] broadcast(r), "
      "dimensions={1}\n  ROOT q = f32[4,4] divide(a, b)\n}\nENTRY main {\n  p = f32[4,4] "
      "parameter(0)\n  ROOT f = f32[4,4] fusion(p), kind=kLoop, calls=fused\n}\n",
      "HloModule m\nfused {\n  a = f32[4,8]{1,0} parameter(0)\n  ROOT b = f32[8,4]{0,1} "
      "bitcast(a)\n}\nENTRY main {\n  p = f32[4,8]{1,0} parameter(0)\n  ROOT f = f32[8,4]{0,1} "
      "fusion(p), kind=kLoop, calls=fused\n}\n",
  };
  for (int i = 0; i < N_(texts); i++) {
    hl_module_t *m = NULL;
    HL_ASSERT_OK(hl_parse_hlo_module(texts[i], strlen(texts[i]), "fb.hlo", &m));
    HL_ASSERT_OK(hl_verify_module(m));
    hl_fusion_program_t *prog = NULL;
    const char *why = NULL;
    HL_ASSERT_OK(hl_fusion_program_compile(hl_module_find_computation(m, "fused"), &prog, &why));
    CU_ASSERT_PTR_NULL(prog);
    CU_ASSERT_PTR_NOT_NULL(why);
    hl_fusion_program_destroy(prog);
    hl_literal_t *arg = random_literal(&m->entry->parameters[0]->shape, 5, FLOAT);
    hl_literal_t *ref = NULL, *got = NULL;
    hl_exec_options_t on = {0}, off = {.no_fusion_blocking = true};
    HL_ASSERT_OK(hl_execute(m, &off, &arg, 1, &ref));
    HL_ASSERT_OK(hl_execute(m, &on, &arg, 1, &got));
    CU_ASSERT_TRUE(hl_literal_equal(ref, got));
    hl_literal_release(ref);
    hl_literal_release(got);
    hl_literal_release(arg);
    hl_module_destroy(m);
  }
}

// Values checked against numbers worked out by hand (not only against the
// other path): softmax-style fusion pieces on a 2x3 input.
static void test_known_values(void) {
  const char *text =
      "HloModule m\nmax {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT r = f32[] "
      "maximum(x, y)\n}\nfused {\n  a = f32[2,3] parameter(0)\n  two = f32[] constant(2)\n"
      "  b = f32[2,3] broadcast(two), dimensions={}\n  m = f32[2,3] multiply(a, b)\n"
      "  i = s32[2,3] iota(), iota_dimension=1\n  fi = f32[2,3] convert(i)\n"
      "  s = f32[2,3] subtract(m, fi)\n  init = f32[] constant(-inf)\n"
      "  r = f32[2] reduce(s, init), dimensions={1}, to_apply=max\n"
      "  ROOT t = (f32[2], f32[2,3]) tuple(r, s)\n}\nENTRY main {\n  p = f32[2,3] parameter(0)\n"
      "  ROOT f = (f32[2], f32[2,3]) fusion(p), kind=kInput, calls=fused\n}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "kv.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_literal_t *arg = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(&m->entry->parameters[0]->shape, &arg));
  const float in[6] = {1, 5, 2, -1, -3, 0.5f};
  memcpy(arg->data, in, sizeof in);
  hl_literal_t *got = NULL;
  hl_exec_options_t on = {0};
  HL_ASSERT_OK(hl_execute(m, &on, &arg, 1, &got));
  // s = 2a - column: {2, 9, 2; -2, -7, -1}; row maxima {9, -1}.
  const float s_want[6] = {2, 9, 2, -2, -7, -1}, r_want[2] = {9, -1};
  CU_ASSERT_EQUAL(memcmp(got->elements[0]->data, r_want, sizeof r_want), 0);
  CU_ASSERT_EQUAL(memcmp(got->elements[1]->data, s_want, sizeof s_want), 0);
  hl_literal_release(got);
  hl_literal_release(arg);
  hl_module_destroy(m);
}

// A fusion that only moves a parameter's elements (XLA's layout-copy
// fusions: a lone transpose; a broadcast; a strided slice) is covered and
// copies blocks of whole rows with the strided copy engine: the same bits as
// the op-by-op kernels, on one thread and on two, rows not a multiple of
// the block.
static void test_data_movement_copies(void) {
  const char *texts[] = {
      "HloModule m\nfused {\n  a = bf16[40,24] parameter(0)\n  ROOT t = bf16[24,40] "
      "transpose(a), dimensions={1,0}\n}\nENTRY main {\n  p = bf16[40,24] parameter(0)\n"
      "  ROOT f = bf16[24,40] fusion(p), kind=kLoop, calls=fused\n}\n",
      "HloModule m\nfused {\n  a = f32[300,70] parameter(0)\n  ROOT t = f32[70,300] "
      "transpose(a), dimensions={1,0}\n}\nENTRY main {\n  p = f32[300,70] parameter(0)\n"
      "  ROOT f = f32[70,300] fusion(p), kind=kLoop, calls=fused\n}\n",
      "HloModule m\nfused {\n  a = f64[6,50,33] parameter(0)\n  ROOT t = f64[33,6,50] "
      "transpose(a), dimensions={2,0,1}\n}\nENTRY main {\n  p = f64[6,50,33] parameter(0)\n"
      "  ROOT f = f64[33,6,50] fusion(p), kind=kLoop, calls=fused\n}\n",
      "HloModule m\nfused {\n  a = f32[129] parameter(0)\n  ROOT b = f32[77,129] "
      "broadcast(a), dimensions={1}\n}\nENTRY main {\n  p = f32[129] parameter(0)\n"
      "  ROOT f = f32[77,129] fusion(p), kind=kLoop, calls=fused\n}\n",
      "HloModule m\nfused {\n  a = f32[200,90] parameter(0)\n  ROOT s = f32[66,40] "
      "slice(a), slice={[3:200:3], [5:85:2]}\n}\nENTRY main {\n  p = f32[200,90] parameter(0)\n"
      "  ROOT f = f32[66,40] fusion(p), kind=kLoop, calls=fused\n}\n",
  };
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(2, &pool));
  for (int i = 0; i < N_(texts); i++) {
    hl_module_t *m = NULL;
    HL_ASSERT_OK(hl_parse_hlo_module(texts[i], strlen(texts[i]), "fb.hlo", &m));
    HL_ASSERT_OK(hl_verify_module(m));
    hl_fusion_program_t *prog = NULL;
    const char *why = NULL;
    HL_ASSERT_OK(hl_fusion_program_compile(hl_module_find_computation(m, "fused"), &prog, &why));
    CU_ASSERT_PTR_NOT_NULL(prog);
    hl_fusion_program_destroy(prog);
    hl_literal_t *arg = random_literal(&m->entry->parameters[0]->shape, 7, FLOAT);
    hl_literal_t *ref = NULL, *got = NULL, *got2 = NULL;
    hl_exec_options_t on = {0}, two = {.pool = pool}, off = {.no_fusion_blocking = true};
    HL_ASSERT_OK(hl_execute(m, &off, &arg, 1, &ref));
    HL_ASSERT_OK(hl_execute(m, &on, &arg, 1, &got));
    HL_ASSERT_OK(hl_execute(m, &two, &arg, 1, &got2));
    CU_ASSERT_TRUE(hl_literal_equal(ref, got));
    CU_ASSERT_TRUE(hl_literal_equal(ref, got2));
    hl_literal_release(ref);
    hl_literal_release(got);
    hl_literal_release(got2);
    hl_literal_release(arg);
    hl_module_destroy(m);
  }
  hl_thread_pool_destroy(pool);
}

static CU_TestInfo tests[] = {
    {"data_movement_copies", test_data_movement_copies},
    {"generated_all_types", test_generated_all_types},
    {"generated_shapes", test_generated_shapes},
    {"uncovered_falls_back", test_uncovered_falls_back},
    {"known_values", test_known_values},
    {"unfused_chains", test_unfused_chains},
    {"chain_plan", test_chain_plan},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fusion_blocked", tests)
