// Shared by the partitioner's unit suites: HLO text partitioned for n
// partitions, the per-partition text and bytes in *r.
#ifndef HL_TESTS_UNIT_SPMD_TEST_UTIL_H_
#define HL_TESTS_UNIT_SPMD_TEST_UTIL_H_

#include <string.h>

#include "runtime/spmd/partitioner.h"
#include "runtime/text/hlo_parser.h"

static inline hl_status_t spmd_test_partition(const char *text, int n, hl_spmd_result_t *r) {
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "test", &m);
  if (!st) st = hl_spmd_partition(m, n, r);
  hl_module_destroy(m);
  return st;
}

#endif  // HL_TESTS_UNIT_SPMD_TEST_UTIL_H_
