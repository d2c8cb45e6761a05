// Executable copies of generated code: mapped writable, filled, then made
// read+execute (never writable and executable at once); unmapped on free.
#ifndef HL_RUNTIME_FUSION_JIT_EXEC_MEMORY_H_
#define HL_RUNTIME_FUSION_JIT_EXEC_MEMORY_H_

#include <stddef.h>

#include "runtime/base/status.h"

typedef struct hl_exec_memory {
  void *code;
  size_t size;  // mapped bytes
} hl_exec_memory_t;

// Copies `bytes` into a new read+execute mapping.
hl_status_t hl_exec_memory_create(const void *bytes, size_t len, hl_exec_memory_t *out);
void hl_exec_memory_free(hl_exec_memory_t *m);  // zeroed or freed: no-op

#endif  // HL_RUNTIME_FUSION_JIT_EXEC_MEMORY_H_
