// jax.export's argument and result shardings (in_shardings / out_shardings
// of the flatbuffer) on the program: JAX places a call's arguments by them
// and returns its results so, whatever the module's own annotations say, so
// they become @main's `mhlo.sharding` attributes where the module has none,
// and must agree with those it has (JAX writes both from the same
// shardings; a disagreement is an error naming both).
//
// A NamedSharding (serialization version 6+) becomes the HloSharding JAX's
// named_sharding_to_xla_hlo_sharding makes: the abstract mesh's devices
// 0..n-1 in row-major order over its axes; per array dimension the tile index
// is the mixed-radix number of the device's coordinates along that
// dimension's axes (major first); the mesh axes no dimension uses (size > 1)
// replicate along a last tile dimension. Refused by name: unreduced axes,
// manual axes. An HloSharding proto (before version 6) is decoded as XLA's
// OpSharding.
#ifndef HL_RUNTIME_BYTECODE_JAX_SHARDINGS_H_
#define HL_RUNTIME_BYTECODE_JAX_SHARDINGS_H_

#include <stdbool.h>

#include "runtime/base/status.h"
#include "runtime/bytecode/jax_export.h"
#include "runtime/ir/module.h"
#include "runtime/stablehlo/mlir_ast.h"

// The export's sharding `js` of a value of `rank` dimensions in the IR's
// form. *out_specified is false (and *out zeroed) for an unspecified one.
hl_status_t hl_jax_sharding_to_ir(const hl_jax_export_t *ex, const hl_jax_sharding_t *js, int rank,
                                  hl_sharding_t *out, bool *out_specified);

// Which of @main's arguments and results kept an annotation of their own
// (checked against the export after lowering).
typedef struct hl_jax_annotations {
  bool *own_arg, *own_result;
  int arg_count, result_count;
} hl_jax_annotations_t;

// Writes the export's shardings onto @main's arguments (module argument k is
// in_avals[module_kept_var_idx[k]]) and results that have none.
hl_status_t hl_jax_export_annotate(const hl_jax_export_t *ex, hl_mlir_file_t *file,
                                   hl_jax_annotations_t *out);
// After lowering: the entry's own shardings agree with the export's.
hl_status_t hl_jax_export_check_shardings(const hl_jax_export_t *ex,
                                          const hl_jax_annotations_t *notes,
                                          const hl_module_t *module);
void hl_jax_annotations_deinit(hl_jax_annotations_t *notes);

#endif  // HL_RUNTIME_BYTECODE_JAX_SHARDINGS_H_
