// Helpers for kernel suites driven by HLO text: parse a module whose entry
// takes no parameters (constant inputs), verify it, run it with hl_execute
// and compare the result bitwise with a literal parsed from text.
#ifndef HL_TESTS_UNIT_HLO_RUN_UTIL_H_
#define HL_TESTS_UNIT_HLO_RUN_UTIL_H_

#include <string.h>

#include "runtime/base/literal.h"
#include "runtime/base/strbuf.h"
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

// Parses, verifies and runs `hlo`; returns the status of the first failing
// step (parse and verify errors must not happen in a test: they fail it).
static inline hl_status_t hr_run(const char *hlo, hl_literal_t **out) {
  hl_module_t *m = NULL;
  *out = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(hlo, strlen(hlo), "test.hlo", &m));
  hl_status_t st = hl_verify_module(m);
  if (!st) st = hl_execute(m, NULL, NULL, 0, out);
  hl_module_destroy(m);
  return st;
}

// The module printed as HLO text (the caller hl_free()s it).
static inline char *hr_print_module(const hl_module_t *m) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  HL_ASSERT_OK(hl_print_hlo_module(m, &sb));
  return hl_strbuf_take(&sb);
}

static inline void hr_print(const char *what, const hl_literal_t *lit) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_literal_print(lit, &sb);
  fprintf(stderr, "\n  %s: %s\n", what, hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
}

// Runs `hlo` and asserts its result equals `value` of `shape` (bitwise).
static inline void hr_expect_at(const char *file, int line, const char *hlo, const char *shape,
                                const char *value) {
  hl_shape_t s;
  hl_literal_t *want = NULL, *got = NULL;
  HL_ASSERT_OK(hl_parse_shape(shape, &s));
  HL_ASSERT_OK(hl_parse_literal(value, &s, &want));
  HL_ASSERT_OK(hr_run(hlo, &got));
  if (!hl_literal_equal(got, want)) {
    fprintf(stderr, "\n  %s:%d: result differs", file, line);
    hr_print("want", want);
    hr_print("got ", got);
    CU_FAIL("result differs");
  }
  hl_literal_release(got);
  hl_literal_release(want);
  hl_shape_deinit(&s);
}
#define hr_expect(hlo, shape, value) hr_expect_at(__FILE__, __LINE__, hlo, shape, value)

// Asserts parsing + verifying + running `hlo` fails with `needle` in the message.
#define hr_expect_error(hlo, needle)                    \
  do {                                                  \
    hl_literal_t *hr_out_ = NULL;                       \
    HL_ASSERT_ERROR_CONTAINS(hr_run(hlo, &hr_out_), needle); \
    hl_literal_release(hr_out_);                        \
  } while (0)

#endif  // HL_TESTS_UNIT_HLO_RUN_UTIL_H_
