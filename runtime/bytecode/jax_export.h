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

enum { HL_JAX_EXPORT_MAX_LIST = 64, HL_JAX_MAX_MESH_AXES = 16 };

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
  // Argument and result shardings (hl_jax_export_sharding reads one): the
  // counts are those of in_shardings_idxs / out_shardings_idxs (v10+), else
  // of in_shardings / out_shardings; 0 when the export has none.
  int in_sharding_count, out_sharding_count;
  const uint8_t *data;         // the whole flatbuffer, for those reads
  size_t size;
  const char *path;
  size_t kept_var_at;          // module_kept_var_idx's first element (kept_var_count of them)
  size_t sharding_vec[2], sharding_idx_vec[2];   // [0] in, [1] out; 0: absent
  size_t unique_shardings_vec, unique_meshes_vec;
  uint32_t unique_sharding_count, unique_mesh_count;
} hl_jax_export_t;

// One argument's or result's sharding as the export keeps it
// (serialization.fbs's Sharding / NamedSharding; strings point into the
// buffer). Before serialization version 6 an HloSharding proto; later a
// NamedSharding: an abstract mesh (devices 0..n-1 in row-major order over
// the axis sizes) and a PartitionSpec.
typedef enum hl_jax_sharding_kind {
  HL_JAX_SHARDING_UNSPECIFIED,  // JAX leaves the placement to the caller
  HL_JAX_SHARDING_HLO,          // hlo_proto: an encoded xla.OpSharding
  HL_JAX_SHARDING_NAMED,
} hl_jax_sharding_kind_t;

typedef enum hl_jax_axis_type {
  HL_JAX_AXIS_MISSING = 0, HL_JAX_AXIS_AUTO = 1, HL_JAX_AXIS_EXPLICIT = 2, HL_JAX_AXIS_MANUAL = 3,
} hl_jax_axis_type_t;

typedef struct hl_jax_sharding {
  hl_jax_sharding_kind_t kind;
  const uint8_t *hlo_proto;
  size_t hlo_proto_size;
  int axis_count;                                   // the mesh
  const char *axis_names[HL_JAX_MAX_MESH_AXES];
  uint32_t axis_sizes[HL_JAX_MAX_MESH_AXES];
  uint8_t axis_types[HL_JAX_MAX_MESH_AXES];         // hl_jax_axis_type_t (MISSING if absent)
  int dim_count;                                    // PartitionSpec entries (<= the rank)
  int dim_axis_count[HL_MAX_RANK];                  // 0: None
  uint8_t dim_axes[HL_MAX_RANK][HL_JAX_MAX_MESH_AXES];  // mesh axis indices, major first
  int reduced_count, unreduced_count;
  const char *memory_kind;                          // NULL when absent
} hl_jax_sharding_t;

// The sharding of argument `index` (of in_avals, before module_kept_var_idx
// drops any) or of result `index`. Every offset is checked; a spec naming an
// axis the mesh lacks is an error.
hl_status_t hl_jax_export_sharding(const hl_jax_export_t *ex, bool result, int index,
                                   hl_jax_sharding_t *out);
// Entry `k` of module_kept_var_idx (the in_avals index of module argument k).
hl_status_t hl_jax_export_kept_var(const hl_jax_export_t *ex, int k, int *out_index);

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
