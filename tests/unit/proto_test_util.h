// The wire fixture tests/programs/wire_fixture.hlo.pb, decoded, for the
// proto loader and writer suites.
#ifndef HL_TESTS_UNIT_PROTO_TEST_UTIL_H_
#define HL_TESTS_UNIT_PROTO_TEST_UTIL_H_

#include "runtime/proto/proto_io.h"
#include "test_util.h"

#define FIXTURE HL_SOURCE_DIR "/tests/programs/wire_fixture.hlo.pb"

static inline hl_module_t *load_fixture(void) {
  size_t n = 0;
  uint8_t *d = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  hl_module_t *m = NULL;
  hl_status_t st = hl_proto_decode(d, n, HL_PROTO_HLO_PROTO, "wire_fixture.hlo.pb", &m, NULL, NULL);
  free(d);
  HL_ASSERT_OK(st);
  return m;
}

#endif  // HL_TESTS_UNIT_PROTO_TEST_UTIL_H_
