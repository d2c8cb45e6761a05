// jax.export's serialized form (`Exported.serialize()`): a flatbuffer of
// jax/_src/export/serialization.fbs upstream (table Exported) around the
// StableHLO portable artifact. Read with a small bounds-checked flatbuffer
// reader (every offset, vtable and vector length checked against the buffer).
#ifndef HL_RUNTIME_BYTECODE_JAX_EXPORT_H_
#define HL_RUNTIME_BYTECODE_JAX_EXPORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

enum { HL_JAX_EXPORT_MAX_LIST = 64 };

typedef struct hl_jax_export {
  uint16_t serialization_version;
  uint16_t calling_convention_version;
  const char *function_name;   // points into the buffer (NUL-terminated there)
  int nr_devices;              // nr_devices, else the older nr_devices_short
  const char *platforms[HL_JAX_EXPORT_MAX_LIST];  // "cpu", "cuda", ...
  int platform_count;
  int in_aval_count, out_aval_count;
  int ordered_effect_count;
  int kept_var_count;          // module_kept_var_idx entries (-1: field absent)
  bool uses_global_constants;
  const uint8_t *module;       // mlir_module_serialized: the portable artifact
  size_t module_size;
} hl_jax_export_t;

// True when the bytes are a flatbuffer whose root table holds, in the slot
// of mlir_module_serialized, MLIR bytecode.
bool hl_jax_export_looks_like(const uint8_t *data, size_t size);

hl_status_t hl_jax_export_read(const uint8_t *data, size_t size, const char *path,
                               hl_jax_export_t *out);

// Reads the export and loads its module for the CPU: a multi-platform export
// has its platform-index argument bound to CPU's index.
hl_status_t hl_jax_export_load(const uint8_t *data, size_t size, const char *path,
                               hl_module_t **out_module);
// The same, with dynamic shapes refined from the entry's arguments (the
// kept ones, after the platform index is bound): hl_bytecode_load_with_args's
// contract.
hl_status_t hl_jax_export_load_with_args(const uint8_t *data, size_t size, const char *path,
                                         hl_literal_t *const *args, int arg_count,
                                         hl_module_t **out_module, bool *out_needs_args);
// @main's declared argument types after that binding (dynamic dimensions -1).
hl_status_t hl_jax_export_entry_types(const uint8_t *data, size_t size, const char *path,
                                      hl_shape_t **out_types, int *out_count);

#endif  // HL_RUNTIME_BYTECODE_JAX_EXPORT_H_
