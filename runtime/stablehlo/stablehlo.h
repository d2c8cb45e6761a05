// StableHLO text (MLIR) as a program format: parsed (mlir_parser.h) and
// lowered once into the module IR, so the one executor runs it.
//
// The entry computation is @main, else the one function no other function
// refers to. The module's replica / partition counts come from the module
// attributes mhlo.num_replicas / mhlo.num_partitions.
#ifndef HL_RUNTIME_STABLEHLO_STABLEHLO_H_
#define HL_RUNTIME_STABLEHLO_STABLEHLO_H_

#include <stdbool.h>
#include <stddef.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/stablehlo/mlir_ast.h"

// Parses and lowers `text`. `path` names the file in messages ("file:line:col:
// error: ..."); first_line is the file line of text's first line (a
// --split-input-file case starts after its separator).
hl_status_t hl_stablehlo_load(const char *text, size_t length, const char *path, int first_line,
                              hl_module_t **out_module);

// Lowers an already parsed file (the text parser's, or the bytecode reader's:
// runtime/bytecode) into a module; `file` stays the caller's. A file with dynamic shapes
// is an error here (hl_stablehlo_load_with_args refines them).
hl_status_t hl_stablehlo_lower_file(const hl_mlir_file_t *file, const char *path,
                                    hl_module_t **out_module);

// hl_stablehlo_load for a program with dynamic shapes ('?' dimensions, as jax.export
// writes symbolic shapes): they are refined from the entry's arguments
// `args` (arg_count of them; their shapes, and the values of those the shape
// computations read), as StableHLO's refine-arguments / refine-shapes passes
// do (refine_shapes.c). arg_count < 0: none given; a program with dynamic
// shapes is then an error, and *out_needs_args (may be NULL) says so.
hl_status_t hl_stablehlo_load_with_args(const char *text, size_t length, const char *path,
                                        int first_line, hl_literal_t *const *args, int arg_count,
                                        hl_module_t **out_module, bool *out_needs_args);

// The declared types of @main's arguments (dynamic dimensions -1), which say
// the element types of the arguments a program with dynamic shapes is
// refined from. *out_types: owned array (deinit each, hl_free).
hl_status_t hl_stablehlo_entry_types(const char *text, size_t length, const char *path,
                                     hl_shape_t **out_types, int *out_count);

// The same two for an already parsed file (the bytecode reader's): lowering
// with dynamic shapes refined from args (arg_count < 0: none given, an error
// for a file with dynamic shapes), and @main's declared argument types.
hl_status_t hl_stablehlo_lower_file_with_args(const hl_mlir_file_t *file, const char *path,
                                              hl_literal_t *const *args, int arg_count,
                                              hl_module_t **out_module);
hl_status_t hl_stablehlo_file_entry_types(const hl_mlir_file_t *file, const char *path,
                                          hl_shape_t **out_types, int *out_count);

// True when `text` starts (after comments) like MLIR: `module`, `func.func`,
// `#alias =`, `!alias =`, or a `"builtin.module"` generic op.
bool hl_stablehlo_looks_like(const char *text, size_t length);

// --split-input-file: the cases of a file separated by lines `// -----`.
typedef struct hl_mlir_case {
  size_t offset, length;  // byte range within the file text
  int first_line;         // 1-based line of the case's first line
} hl_mlir_case_t;
// *out_cases: owned array (hl_free) of *out_count >= 1 cases.
hl_status_t hl_stablehlo_split_cases(const char *text, size_t length, hl_mlir_case_t **out_cases,
                                     int *out_count);

#endif  // HL_RUNTIME_STABLEHLO_STABLEHLO_H_
