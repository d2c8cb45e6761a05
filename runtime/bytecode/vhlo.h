// StableHLO portable artifacts: MLIR bytecode of the VHLO dialect
// (openxla/stablehlo stablehlo/dialect/VhloBytecode.cpp, VhloOps.td) turned
// into the syntax tree the StableHLO text parser produces (mlir_ast.h), ops
// renamed vhlo.X_vN -> stablehlo.X / func.func and attributes given their
// StableHLO form, so the one lowering of runtime/stablehlo runs them.
//
// Artifacts of StableHLO 0.9.0 .. HL_VHLO_MAX (the producer string
// "StableHLO_vX.Y.Z") are read; a newer one is refused naming both versions.
#ifndef HL_RUNTIME_BYTECODE_VHLO_H_
#define HL_RUNTIME_BYTECODE_VHLO_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/bytecode/mlir_bytecode.h"
#include "runtime/ir/module.h"
#include "runtime/stablehlo/mlir_ast.h"

#define HL_VHLO_MAX_MAJOR 1
#define HL_VHLO_MAX_MINOR 20

// Converts a read bytecode module into `out` (which then points into the
// bytecode's input for strings and constants: keep it alive).
hl_status_t hl_vhlo_to_mlir(const hl_bc_module_t *bc, hl_mlir_file_t *out);

// As hl_vhlo_to_mlir, but a function that cannot be converted is left out
// of `out` and its error kept in *skipped (the conformance comparison uses
// this to compare function by function).
typedef struct hl_vhlo_skipped {
  char **messages;  // owned
  int count;
} hl_vhlo_skipped_t;
hl_status_t hl_vhlo_to_mlir_partial(const hl_bc_module_t *bc, hl_mlir_file_t *out,
                                    hl_vhlo_skipped_t *skipped);
void hl_vhlo_skipped_deinit(hl_vhlo_skipped_t *skipped);

// Reads, converts and lowers a portable artifact into a module.
hl_status_t hl_bytecode_load(const uint8_t *data, size_t size, const char *path,
                             hl_module_t **out_module);
// The same, with dynamic shapes ('?') refined from the entry's arguments
// (hl_stablehlo_load_with_args's contract: arg_count < 0, none given, is an
// error for such an artifact and sets *out_needs_args, which may be NULL).
hl_status_t hl_bytecode_load_with_args(const uint8_t *data, size_t size, const char *path,
                                       hl_literal_t *const *args, int arg_count,
                                       hl_module_t **out_module, bool *out_needs_args);
// @main's declared argument types (dynamic dimensions -1).
hl_status_t hl_bytecode_entry_types(const uint8_t *data, size_t size, const char *path,
                                    hl_shape_t **out_types, int *out_count);

#endif  // HL_RUNTIME_BYTECODE_VHLO_H_
