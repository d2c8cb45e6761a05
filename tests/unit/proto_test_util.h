// Helpers for suites that check protos: the wire fixture
// tests/programs/wire_fixture.hlo.pb, decoded, and instruction lookup in an
// unpacked HloModuleProto.
#ifndef HL_TESTS_UNIT_PROTO_TEST_UTIL_H_
#define HL_TESTS_UNIT_PROTO_TEST_UTIL_H_

#include <string.h>

#include "hlo.pb-c.h"
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

// The instruction called `name` in any computation of `m`, or NULL.
static inline const Xla__HloInstructionProto *hl_test_find_instruction_proto(
    const Xla__HloModuleProto *m, const char *name) {
  for (size_t c = 0; c < m->n_computations; c++)
    for (size_t i = 0; i < m->computations[c]->n_instructions; i++)
      if (strcmp(m->computations[c]->instructions[i]->name, name) == 0)
        return m->computations[c]->instructions[i];
  return NULL;
}

#endif  // HL_TESTS_UNIT_PROTO_TEST_UTIL_H_
