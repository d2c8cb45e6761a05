// The generic form of the ops that frame a program ("builtin.module",
// "func.func"), as `mlir-opt --mlir-print-op-generic` writes them, turned
// into the syntax tree the pretty forms give (mlir_parser.c calls these).
#ifndef HL_RUNTIME_STABLEHLO_MLIR_GENERIC_H_
#define HL_RUNTIME_STABLEHLO_MLIR_GENERIC_H_

#include "runtime/base/status.h"
#include "runtime/stablehlo/mlir_ast.h"

// "func.func"() <{sym_name = "f", function_type = (...) -> (...),
// sym_visibility = "private", arg_attrs = [...], res_attrs = [...]}> ({ ^bb0(...): ... })
// -> op as parse_func fills it (symbol, operand / result types, arg / result
// attributes, one region whose first block holds the arguments).
hl_status_t hl_mlir_generic_func(const char *path, hl_mlir_op_t *op);

// A top-level "builtin.module"() <{sym_name = "m"}> ({ ... }) {attrs} moves
// its name, attributes and ops (nested generic modules' too) into the file,
// and is then freed.
hl_status_t hl_mlir_generic_module(const char *path, hl_mlir_file_t *f, hl_mlir_op_t *module);

#endif  // HL_RUNTIME_STABLEHLO_MLIR_GENERIC_H_
