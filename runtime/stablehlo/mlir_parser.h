// Parser for MLIR text as StableHLO writes it (module, func.func, pretty and
// generic ops, regions, aliases, dense literals, resource blobs) into the
// syntax tree of mlir_ast.h. Errors are MLIR diagnostics
// "file:line:col: error: ...".
#ifndef HL_RUNTIME_STABLEHLO_MLIR_PARSER_H_
#define HL_RUNTIME_STABLEHLO_MLIR_PARSER_H_

#include <stddef.h>

#include "runtime/base/status.h"
#include "runtime/stablehlo/mlir_ast.h"

// Parses `text` (length bytes; NUL termination not required). `path` is used
// in messages and must outlive `out`, as must `text` (dense bodies point into it).
// first_line: line number of text's first line in the file it came from
// (1 for a whole file; a case of --split-input-file starts later).
hl_status_t hl_mlir_parse(const char *text, size_t length, const char *path, int first_line,
                          hl_mlir_file_t *out);

// Maps an MLIR element type name ("i32", "ui4", "bf16", "f8E4M3FN") to a dtype;
// HL_INVALID when unknown.
hl_dtype_t hl_mlir_element_type(const char *name, size_t length);

#endif  // HL_RUNTIME_STABLEHLO_MLIR_PARSER_H_
