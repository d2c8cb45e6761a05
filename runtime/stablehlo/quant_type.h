// Scanning `!quant.uniform<...>` element types (see quant_type.c).
#ifndef HL_RUNTIME_STABLEHLO_QUANT_TYPE_H_
#define HL_RUNTIME_STABLEHLO_QUANT_TYPE_H_

#include <stddef.h>

#include "runtime/stablehlo/mlir_ast.h"

// Scans `<storage[<min:max>]:expressed[:dim], params>` starting at s[*pos]
// (right after the `!quant.uniform` token) into *q (its arrays owned by the
// caller). Returns NULL on success with *pos after the closing '>', or a
// message with *pos where the scan stopped (q left empty).
const char *hl_mlir_scan_quant_uniform(const char *s, size_t n, size_t *pos,
                                       hl_mlir_quant_type_t *q);

#endif  // HL_RUNTIME_STABLEHLO_QUANT_TYPE_H_
