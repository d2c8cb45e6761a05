// Shared scaffolding for the CUnit suites: each test_<name>.c defines its
// test functions, lists them in a HL_TEST_SUITE table and calls
// HL_TEST_MAIN(suite_name, tests).
//
//   static void test_foo(void) { CU_ASSERT_EQUAL(1 + 1, 2); }
//   static CU_TestInfo tests[] = {{"foo", test_foo}, CU_TEST_INFO_NULL};
//   HL_TEST_MAIN("dtype", tests)
#ifndef HL_TESTS_UNIT_TEST_UTIL_H_
#define HL_TESTS_UNIT_TEST_UTIL_H_

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/status.h"

// Asserts a status is OK; on failure prints its message and frees it.
#define HL_ASSERT_OK(expr)                                              \
  do {                                                                  \
    hl_status_t hl_test_st_ = (expr);                                   \
    if (hl_test_st_) {                                                  \
      fprintf(stderr, "\n  %s:%d: %s -> %s\n", __FILE__, __LINE__, #expr, \
              hl_status_message(hl_test_st_));                          \
      hl_status_free(hl_test_st_);                                      \
      CU_FAIL_FATAL(#expr " returned an error");                        \
    }                                                                   \
  } while (0)

// Asserts a status is an error whose message contains `needle`; frees it.
#define HL_ASSERT_ERROR_CONTAINS(expr, needle)                                  \
  do {                                                                          \
    hl_status_t hl_test_st_ = (expr);                                           \
    CU_ASSERT_PTR_NOT_NULL(hl_test_st_);                                        \
    if (hl_test_st_) {                                                          \
      if (!strstr(hl_status_message(hl_test_st_), (needle))) {                  \
        fprintf(stderr, "\n  %s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, \
                hl_status_message(hl_test_st_), (needle));                      \
        CU_FAIL(#expr " error message");                                        \
      }                                                                         \
      hl_status_free(hl_test_st_);                                              \
    }                                                                           \
  } while (0)

#define HL_TEST_MAIN(suite_name, tests) HL_TEST_MAIN_WITH_FIXTURES(suite_name, NULL, NULL, tests)

// The same, with a suite set-up and tear-down (CUnit's init / clean: 0 = ok).
#define HL_TEST_MAIN_WITH_FIXTURES(suite_name, init, clean, tests)       \
  int main(void) {                                                          \
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;                  \
    CU_SuiteInfo suites[] = {{suite_name, init, clean, NULL, NULL, tests},  \
                             CU_SUITE_INFO_NULL};                           \
    if (CU_register_suites(suites) != CUE_SUCCESS) return 2;                \
    CU_basic_set_mode(CU_BRM_VERBOSE);                                      \
    CU_basic_run_tests();                                                   \
    unsigned failed = CU_get_number_of_failures() +                         \
                      CU_get_number_of_tests_failed();                      \
    unsigned run = CU_get_number_of_tests_run();                            \
    CU_cleanup_registry();                                                  \
    return (failed || run == 0) ? 1 : 0;                                    \
  }

// How many times `needle` occurs in `hay` (overlapping occurrences count).
static inline int hl_test_count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

// The whole file at `path` (malloc'd, the caller frees), or NULL.
static inline uint8_t *hl_test_read_file(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  *out_size = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  return buf;
}

// A fresh scratch directory /tmp/hl_test_<tag>_XXXXXX in `dir` (0 = ok), for
// suites that write files; hl_test_remove_dir deletes it and its contents.
static inline int hl_test_make_dir(char *dir, size_t size, const char *tag) {
  snprintf(dir, size, "/tmp/hl_test_%s_XXXXXX", tag);
  return mkdtemp(dir) ? 0 : 1;
}

static inline int hl_test_remove_dir(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}

#endif  // HL_TESTS_UNIT_TEST_UTIL_H_
