// Shared pieces of the libFuzzer harnesses (tests/fuzz/README.md): each
// harness defines LLVMFuzzerTestOneInput and must never crash, leak or hit
// undefined behaviour on any input; errors are ordinary statuses.
#ifndef HL_TESTS_FUZZ_FUZZ_UTIL_H_
#define HL_TESTS_FUZZ_FUZZ_UTIL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// The input as a NUL-terminated string (the text parser reads `size` bytes
// but its callers always terminate; the harness keeps that contract).
static inline char *hl_fuzz_terminated_copy(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) abort();
  if (size) memcpy(text, data, size);
  text[size] = 0;
  return text;
}

// Statuses are the expected outcome of most inputs: drop them.
static inline void hl_fuzz_drop(hl_status_t st) {
  if (st) hl_status_free(st);
}

#endif  // HL_TESTS_FUZZ_FUZZ_UTIL_H_
