// Status, allocation-failure injection, strbuf, shapes and literals.
// hl-test-libs: hl_base
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "tests/unit/test_util.h"

static hl_status_t fails_with_context(void) {
  HL_RETURN_IF_ERROR_CTX(HL_INVALID("expected ']' near ','"), "loading %s", "p.hlo");
  return NULL;
}

static void test_status(void) {
  hl_status_t s = fails_with_context();
  CU_ASSERT_EQUAL(hl_status_code(s), HL_INVALID_ARGUMENT);
  CU_ASSERT_STRING_EQUAL(hl_status_message(s), "loading p.hlo: expected ']' near ','");
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_status_origin(s), "test_base.c:"));
  hl_status_free(s);
  CU_ASSERT_EQUAL(hl_status_code(NULL), HL_OK);
  CU_ASSERT_STRING_EQUAL(hl_status_message(NULL), "");
}

static void test_strbuf(void) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "");
  for (int i = 0; i < 100; i++) hl_strbuf_appendf(&sb, "%d,", i);
  hl_strbuf_append(&sb, "end");
  CU_ASSERT_EQUAL(strncmp(hl_strbuf_cstr(&sb), "0,1,2,", 6), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&sb), "99,end"));
  char *s = hl_strbuf_take(&sb);
  CU_ASSERT_EQUAL(strlen(s), 290 + 3);
  hl_free(s);
  // an allocation failure poisons the buffer instead of truncating silently
  hl_strbuf_init(&sb);
  hl_alloc_fail_after(0);
  hl_strbuf_append(&sb, "x");
  hl_alloc_fail_after(-1);
  CU_ASSERT_TRUE(sb.failed);
  CU_ASSERT_PTR_NULL(hl_strbuf_take(&sb));
}

static void test_shapes(void) {
  int64_t dims[2] = {2, 3};
  hl_shape_t a = hl_shape_array(HL_F32, 2, dims);
  CU_ASSERT_EQUAL(hl_shape_element_count(&a), 6);
  CU_ASSERT_EQUAL(hl_shape_byte_size(&a), 24);
  int64_t strides[2];
  hl_shape_strides(&a, strides);
  CU_ASSERT_EQUAL(strides[0], 3);
  CU_ASSERT_EQUAL(strides[1], 1);
  a.has_layout = true;
  a.minor_to_major[0] = 0;
  a.minor_to_major[1] = 1;
  CU_ASSERT_FALSE(hl_shape_has_default_layout(&a));
  hl_shape_t parts[2] = {a, hl_shape_scalar(HL_S32)};
  hl_shape_t t;
  HL_ASSERT_OK(hl_shape_tuple(parts, 2, &t));
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_shape_print(&t, true, &sb);
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), "(f32[2,3]{0,1}, s32[])");
  hl_strbuf_deinit(&sb);
  CU_ASSERT_STRING_EQUAL(hl_shape_debug_string(&t), "(f32[2,3], s32[])");
  hl_shape_t c;
  HL_ASSERT_OK(hl_shape_copy(&t, &c));
  CU_ASSERT_TRUE(hl_shape_equal(&t, &c));
  c.tuple[1].dtype = HL_U32;
  CU_ASSERT_FALSE(hl_shape_equal(&t, &c));
  hl_shape_deinit(&c);
  hl_shape_deinit(&t);
  hl_shape_t dyn = hl_shape_array(HL_F32, 2, (int64_t[]){8, -1});
  dyn.dynamic_mask = 3;
  CU_ASSERT_STRING_EQUAL(hl_shape_debug_string(&dyn), "f32[<=8,?]");
}

static void test_literals(void) {
  int64_t dims[1] = {3};
  hl_shape_t s = hl_shape_array(HL_BF16, 1, dims);
  hl_literal_t *a;
  HL_ASSERT_OK(hl_literal_create(&s, &a));
  CU_ASSERT_EQUAL(a->byte_size, 6);
  hl_literal_set_f64(a, 0, 1.0);
  hl_literal_set_f64(a, 1, -2.5);
  hl_literal_set_f64(a, 2, 0.15625);
  CU_ASSERT_EQUAL(((uint16_t *)a->data)[0], 0x3f80);
  CU_ASSERT_DOUBLE_EQUAL(hl_literal_get_f64(a, 1), -2.5, 0);
  hl_literal_t *tok, *tup, *copy;
  HL_ASSERT_OK(hl_literal_create_token(&tok));
  hl_literal_t *parts[2] = {a, tok};
  HL_ASSERT_OK(hl_literal_create_tuple(parts, 2, &tup));
  CU_ASSERT_EQUAL(a->refcount, 2);
  HL_ASSERT_OK(hl_literal_clone(tup, &copy));
  CU_ASSERT_TRUE(hl_literal_equal(tup, copy));
  CU_ASSERT_PTR_NOT_EQUAL(copy->elements[0]->data, a->data);
  ((uint16_t *)copy->elements[0]->data)[2] = 0;
  CU_ASSERT_FALSE(hl_literal_equal(tup, copy));
  hl_literal_release(copy);
  hl_literal_release(tup);
  CU_ASSERT_EQUAL(a->refcount, 1);
  hl_literal_release(tok);
  hl_literal_release(a);
  hl_shape_t big = hl_shape_array(HL_U64, 1, (int64_t[]){1});
  HL_ASSERT_OK(hl_literal_create(&big, &a));
  ((uint64_t *)a->data)[0] = UINT64_MAX;
  CU_ASSERT_EQUAL(hl_literal_get_u64(a, 0), UINT64_MAX);
  hl_literal_release(a);
}

// Every allocation inside hl_literal_clone of a nested tuple may fail; each
// failure must come back as HL_OUT_OF_MEMORY (ASan checks nothing leaks).
static void test_clone_allocation_failures(void) {
  hl_shape_t s = hl_shape_array(HL_F32, 1, (int64_t[]){4});
  hl_literal_t *a, *inner, *outer;
  HL_ASSERT_OK(hl_literal_create(&s, &a));
  HL_ASSERT_OK(hl_literal_create_tuple(&a, 1, &inner));
  hl_literal_t *parts[2] = {inner, a};
  HL_ASSERT_OK(hl_literal_create_tuple(parts, 2, &outer));
  int failures = 0;
  for (long n = 0; n < 200; n++) {
    hl_literal_t *copy = NULL;
    hl_alloc_fail_after(n);
    hl_status_t st = hl_literal_clone(outer, &copy);
    hl_alloc_fail_after(-1);
    if (!st) {
      CU_ASSERT_TRUE(hl_literal_equal(outer, copy));
      hl_literal_release(copy);
      break;
    }
    CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
    CU_ASSERT_PTR_NULL(copy);
    hl_status_free(st);
    failures++;
  }
  CU_ASSERT_TRUE(failures > 5);
  hl_literal_release(outer);
  hl_literal_release(inner);
  hl_literal_release(a);
}

// Large blocks (alloc.c): a freed array's mapping serves the next request
// of its size (what keeps --repeat at one run's memory), calloc zeroes a
// recycled one, realloc keeps the contents, live bytes count them, and a
// failed request is recorded.
static void test_large_blocks(void) {
  size_t n = (size_t)3 << 20;
  size_t before = hl_alloc_large_live_bytes();
  unsigned char *a = hl_malloc_aligned(n, 64);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_EQUAL((uintptr_t)a % 64, 0);
  if (hl_alloc_large_live_bytes() == before) {  // sanitizer build: malloc's blocks only
    hl_free(a);
    return;
  }
  CU_ASSERT_TRUE(hl_alloc_large_live_bytes() >= before + n);
  memset(a, 0xAB, n);
  hl_free(a);
  CU_ASSERT_EQUAL(hl_alloc_large_live_bytes(), before);
  unsigned char *b = hl_calloc(n, 1);
  CU_ASSERT_PTR_EQUAL(b, a);  // the same mapping, recycled
  bool zero = true;
  for (size_t i = 0; i < n; i += 4093) zero = zero && b[i] == 0;
  CU_ASSERT_TRUE(zero && b[n - 1] == 0);
  b[0] = 7;
  b[n - 1] = 9;
  unsigned char *c = hl_realloc(b, 2 * n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_TRUE(c[0] == 7 && c[n - 1] == 9);
  unsigned char *d = hl_realloc(c, 16);  // back into malloc's heap
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  CU_ASSERT_EQUAL(d[0], 7);
  hl_free(d);
  CU_ASSERT_EQUAL(hl_alloc_large_live_bytes(), before);
  hl_alloc_clear_failed_bytes();
  hl_alloc_fail_after(0);
  CU_ASSERT_PTR_NULL(hl_malloc(12345));
  hl_alloc_fail_after(-1);
  CU_ASSERT_EQUAL(hl_alloc_failed_bytes(), 12345);
  hl_alloc_clear_failed_bytes();
}

// A resident block made ahead (hl_alloc_resident, the warm start's) is the
// cache's, not an array: the peak of arrays at once does not count it while
// it is reserved; freed, it serves the next request of its size without a
// fresh mapping, and that array counts.
static void test_resident_blocks_are_not_arrays(void) {
  size_t peak = hl_alloc_large_peak_bytes(), fresh = hl_alloc_large_fresh_bytes();
  size_t n = peak + ((size_t)8 << 20);  // more than any array so far
  void *r = hl_alloc_resident(n);
  if (!r) return;  // sanitizer build: no large blocks
  CU_ASSERT_EQUAL(hl_alloc_large_peak_bytes(), peak);
  CU_ASSERT_TRUE(hl_alloc_large_fresh_bytes() > fresh);  // larger than any cached block
  hl_free(r);
  fresh = hl_alloc_large_fresh_bytes();
  void *a = hl_malloc(n);
  CU_ASSERT_PTR_EQUAL(a, r);
  CU_ASSERT_EQUAL(hl_alloc_large_fresh_bytes(), fresh);
  CU_ASSERT_TRUE(hl_alloc_large_peak_bytes() >= n);
  hl_free(a);
}

// A smaller request is cut from the front of a cached run, the rest stays
// cached, and given back the block joins it again, so that the larger
// request after it finds the whole run without faulting in new pages (runs
// of one program map nothing fresh after the first).
static void test_cut_blocks_join_again(void) {
  size_t big = hl_alloc_large_peak_bytes() + ((size_t)6 << 20), small = big / 2 + 4096;
  unsigned char *a = hl_malloc(big);
  if (!a || hl_alloc_large_block_bytes(big) == 0) {  // sanitizer build
    hl_free(a);
    return;
  }
  memset(a, 1, big);
  hl_free(a);
  size_t fresh = hl_alloc_large_fresh_bytes();
  unsigned char *b = hl_malloc(small);
  CU_ASSERT_PTR_EQUAL(b, a);
  hl_free(b);
  unsigned char *c = hl_malloc(big);
  CU_ASSERT_PTR_EQUAL(c, a);
  CU_ASSERT_EQUAL(hl_alloc_large_fresh_bytes(), fresh);
  hl_free(c);
}

// Once the budget (the peak of live bytes and a quarter) is spent, a
// request that no cached run holds takes the cached pages, moved into its
// range, instead of mapping fresh ones; calloc zeroes them, and the block
// between them keeps its contents. An injected failure maps and moves
// nothing.
static void test_cached_pages_are_gathered(void) {
  size_t n = hl_alloc_large_peak_bytes() + ((size_t)8 << 20);
  unsigned char *a = hl_malloc(n);
  if (!a || hl_alloc_large_block_bytes(n) == 0) {  // sanitizer build
    hl_free(a);
    return;
  }
  unsigned char *b = hl_malloc(n), *c = hl_malloc(n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  memset(a, 1, n);
  memset(b, 2, n);
  memset(c, 3, n);
  hl_free(a);
  hl_free(c);
  size_t fresh = hl_alloc_large_fresh_bytes(), live = hl_alloc_large_live_bytes();
  hl_alloc_fail_after(0);
  CU_ASSERT_PTR_NULL(hl_calloc(2 * n, 1));
  CU_ASSERT_PTR_NULL(hl_alloc_resident(2 * n));
  hl_alloc_fail_after(-1);
  CU_ASSERT_EQUAL(hl_alloc_failed_bytes(), 2 * n);
  hl_alloc_clear_failed_bytes();
  CU_ASSERT_EQUAL(hl_alloc_large_live_bytes(), live);
  unsigned char *d = hl_calloc(2 * n, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  CU_ASSERT_EQUAL(hl_alloc_large_fresh_bytes(), fresh);
  bool zero = true;
  for (size_t i = 0; i < 2 * n; i += 4093) zero = zero && d[i] == 0;
  CU_ASSERT_TRUE(zero && d[2 * n - 1] == 0);
  bool kept = true;
  for (size_t i = 0; i < n; i += 4093) kept = kept && b[i] == 2;
  CU_ASSERT_TRUE(kept && b[n - 1] == 2);
  hl_free(b);
  hl_free(d);
}

// Runs of a program (the same requests and releases, an output alive from
// one run into the next) map fresh pages in the first runs only: the cache
// keeps within its budget without giving back what the next run takes.
static void test_later_runs_map_nothing(void) {
  size_t u = (hl_alloc_large_peak_bytes() / 8 + 4096) & ~(size_t)4095;
  if (hl_alloc_large_block_bytes(u) == 0) return;  // sanitizer build
  size_t fresh[6];
  void *out = NULL;
  for (int run = 0; run < 6; run++) {
    void *x1 = hl_malloc(5 * u), *x2 = hl_malloc(11 * u);
    hl_free(x1);
    void *x3 = hl_malloc(19 * u), *x4 = hl_malloc(4 * u + 4096);
    hl_free(x2);
    hl_free(out);  // the last run's output
    out = hl_malloc(7 * u);
    void *x5 = hl_malloc(14 * u);
    CU_ASSERT_TRUE(x1 && x2 && x3 && x4 && x5 && out);
    hl_free(x3);
    hl_free(x4);
    hl_free(x5);
    fresh[run] = hl_alloc_large_fresh_bytes();
  }
  hl_free(out);
  CU_ASSERT_TRUE(fresh[0] > 0);
  CU_ASSERT_EQUAL(fresh[5], fresh[2]);
}

static CU_TestInfo tests[] = {
    {"cut_blocks_join_again", test_cut_blocks_join_again},
    {"resident_blocks_are_not_arrays", test_resident_blocks_are_not_arrays},
    {"large_blocks", test_large_blocks},
    {"cached_pages_are_gathered", test_cached_pages_are_gathered},
    {"later_runs_map_nothing", test_later_runs_map_nothing},
    {"status", test_status},
    {"strbuf", test_strbuf},
    {"shapes", test_shapes},
    {"literals", test_literals},
    {"clone_allocation_failures", test_clone_allocation_failures},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("base", tests)
