// Decodes dense<...> / dense_resource<...> attribute bodies into literals of
// a known shape: nested lists, splats, hex blobs ("0x..." raw little-endian
// element bytes), hex float bit patterns, complex pairs, true / false.
#ifndef HL_RUNTIME_STABLEHLO_MLIR_DENSE_H_
#define HL_RUNTIME_STABLEHLO_MLIR_DENSE_H_

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/stablehlo/mlir_ast.h"

// a: a DENSE or RESOURCE attribute; shape: an array shape. Errors name
// file:line:col of the attribute.
hl_status_t hl_mlir_dense_literal(const hl_mlir_file_t *file, const hl_mlir_attr_t *a,
                                  const hl_shape_t *shape, hl_literal_t **out_literal);

#endif  // HL_RUNTIME_STABLEHLO_MLIR_DENSE_H_
