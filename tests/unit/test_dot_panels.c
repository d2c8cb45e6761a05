// dot's 16-bit products in panels (runtime/kernels/dot.c, issue 24): each
// gemm tile widens its own rows / columns of the operands and rounds its own
// block of sums. Expected bits: the whole-operand computation it replaced,
// done here from the documented pieces -- both operands widened to f32 whole
// (exact), hl_gemm_run over the whole batch (gemm_tiles.h, checked against a
// double loop by test_gemm_tiles), every sum rounded once -- on 1, 2 and 3
// threads, for row and column tiles, transposed operands, batches, mixed
// f32 / bf16 / f16 operands and a product small enough for the plain loop.
// hl-test-libs: hl_exec hl_text hl_ir hl_base
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/half_arrays.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/gemm_tiles.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/threads/thread_pool.h"
#include "tests/unit/test_util.h"

typedef struct product {
  const char *lt, *rt, *ot;  // element types
  int64_t batch, m, k, n;
  bool ta, tb;  // lhs stored [k, m], rhs stored [n, k]
} product_t;

static const product_t kProducts[] = {
    {"bf16", "bf16", "bf16", 1, 300, 200, 1100, false, false},  // column tiles, lhs shared
    {"bf16", "bf16", "bf16", 1, 1100, 200, 300, true, true},    // row tiles, both transposed
    {"bf16", "bf16", "bf16", 16, 128, 64, 128, false, true},    // attention: a tile per product
    {"bf16", "bf16", "f32", 2, 600, 300, 600, true, false},     // row tiles, batch: rhs shared
    {"f16", "f16", "f32", 1, 520, 96, 700, false, false},
    {"f32", "bf16", "bf16", 1, 700, 128, 520, false, true},     // one operand widened
    {"bf16", "f32", "f16", 3, 64, 40, 72, true, false},
    {"bf16", "bf16", "bf16", 2, 8, 16, 8, false, false},        // the plain loop
};

static hl_dtype_t dtype_of(const char *t) {
  return strcmp(t, "f32") == 0 ? HL_F32 : strcmp(t, "bf16") == 0 ? HL_BF16 : HL_F16;
}

static int dims_text(char *buf, size_t n, int64_t batch, int64_t a, int64_t b) {
  return batch > 1 ? snprintf(buf, n, "%lld,%lld,%lld", (long long)batch, (long long)a,
                              (long long)b)
                   : snprintf(buf, n, "%lld,%lld", (long long)a, (long long)b);
}

static hl_module_t *module_of(const product_t *p) {
  char ld[64], rd[64], od[64], text[1024];
  dims_text(ld, sizeof ld, p->batch, p->ta ? p->k : p->m, p->ta ? p->m : p->k);
  dims_text(rd, sizeof rd, p->batch, p->tb ? p->n : p->k, p->tb ? p->k : p->n);
  dims_text(od, sizeof od, p->batch, p->m, p->n);
  int b = p->batch > 1;
  snprintf(text, sizeof text,
           "HloModule m\n"
           "ENTRY main {\n"
           "  a = %s[%s] parameter(0)\n"
           "  b = %s[%s] parameter(1)\n"
           "  ROOT c = %s[%s] dot(a, b), %slhs_contracting_dims={%d}, rhs_contracting_dims={%d}\n"
           "}\n",
           p->lt, ld, p->rt, rd, p->ot, od, b ? "lhs_batch_dims={0}, rhs_batch_dims={0}, " : "",
           b + (p->ta ? 0 : 1), b + (p->tb ? 1 : 0));
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "<test>", &m));
  return m;
}

// Values of a few bits (exact in every 16-bit type), varied by `seed`.
static hl_literal_t *values(hl_dtype_t t, const hl_shape_t *s, unsigned seed) {
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create_uninitialized(s, &lit));
  int64_t n = hl_literal_element_count(lit);
  float *f = hl_malloc((size_t)n * sizeof(float));
  unsigned x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    f[i] = (float)((int)(x >> 16) % 61 - 30) / 32.0f;
  }
  if (t == HL_F32) memcpy(lit->data, f, (size_t)n * sizeof(float));
  else if (t == HL_BF16) hl_f32_to_bf16_array_canon(f, lit->data, n);
  else hl_f32_to_f16_array_canon(f, lit->data, n);
  hl_free(f);
  return lit;
}

static float *widened(const hl_literal_t *x) {
  int64_t n = hl_literal_element_count(x);
  float *f = hl_malloc((size_t)(n ? n : 1) * sizeof(float));
  hl_convert_array(x->shape.dtype, HL_F32, x->data, f, n);
  return f;
}

// The whole-operand computation (see the top).
static void *reference(const product_t *p, const hl_literal_t *a, const hl_literal_t *b,
                       hl_dtype_t ot, size_t *bytes) {
  float *wa = widened(a), *wb = widened(b);
  int64_t nc = p->batch * p->m * p->n;
  float *c = hl_malloc((size_t)nc * sizeof(float));
  hl_gemm_t g = {.ct = HL_F32, .trans_a = p->ta, .trans_b = p->tb, .m = p->m, .n = p->n,
                 .k = p->k, .a = wa, .b = wb, .c = c, .lda = p->ta ? p->m : p->k,
                 .ldb = p->tb ? p->k : p->n, .ldc = p->n, .batch = p->batch,
                 .stride_a = p->m * p->k, .stride_b = p->k * p->n, .stride_c = p->m * p->n};
  hl_gemm_run(NULL, &g);
  hl_free(wa);
  hl_free(wb);
  if (ot == HL_F32) {
    *bytes = (size_t)nc * 4;
    return c;
  }
  uint16_t *y = hl_malloc((size_t)nc * 2);
  if (ot == HL_BF16) hl_f32_to_bf16_array_canon(c, y, nc);
  else hl_f32_to_f16_array_canon(c, y, nc);
  hl_free(c);
  *bytes = (size_t)nc * 2;
  return y;
}

static void check(const product_t *p, unsigned seed) {
  hl_module_t *m = module_of(p);
  hl_literal_t *args[2] = {values(dtype_of(p->lt), &m->entry->parameters[0]->shape, seed),
                           values(dtype_of(p->rt), &m->entry->parameters[1]->shape, seed + 7)};
  size_t bytes = 0;
  void *want = reference(p, args[0], args[1], dtype_of(p->ot), &bytes);
  for (int threads = 1; threads <= 3; threads++) {
    hl_thread_pool_t *pool = NULL;
    HL_ASSERT_OK(hl_thread_pool_create(threads, &pool));
    hl_exec_options_t o = {.pool = pool};
    hl_literal_t *out = NULL;
    HL_ASSERT_OK(hl_execute(m, &o, args, 2, &out));
    CU_ASSERT_EQUAL_FATAL(out->byte_size, bytes);
    if (memcmp(out->data, want, bytes) != 0)
      fprintf(stderr, "\n  %s x %s -> %s [%lld] %lldx%lldx%lld%s%s, %d threads: bits differ\n",
              p->lt, p->rt, p->ot, (long long)p->batch, (long long)p->m, (long long)p->k,
              (long long)p->n, p->ta ? " lhs^T" : "", p->tb ? " rhs^T" : "", threads);
    CU_ASSERT_EQUAL(memcmp(out->data, want, bytes), 0);
    hl_literal_release(out);
    hl_thread_pool_destroy(pool);
  }
  hl_free(want);
  for (int i = 0; i < 2; i++) hl_literal_release(args[i]);
  hl_module_destroy(m);
}

static void test_panels_keep_the_whole_operand_bits(void) {
  for (size_t i = 0; i < sizeof kProducts / sizeof *kProducts; i++)
    check(&kProducts[i], (unsigned)i + 1);
}

static CU_TestInfo tests[] = {
    {"panels_keep_the_whole_operand_bits", test_panels_keep_the_whole_operand_bits},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("dot_panels", tests)
