// Shardy (sdy) attributes of a portable artifact, from their bytecode form
// back to the text StableHLO's parser keeps raw (HL_MATTR_RAW, read by
// runtime/stablehlo/sharding_attrs.c): meshes, shardings, per-value
// shardings, manual axes and op sharding rules.
#ifndef HL_RUNTIME_BYTECODE_SDY_ATTRS_H_
#define HL_RUNTIME_BYTECODE_SDY_ATTRS_H_

#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/bytecode/mlir_bytecode.h"
#include "runtime/stablehlo/mlir_ast.h"

// Attribute `idx` (of the sdy dialect, custom-encoded) as RAW: s = its name
// ("sdy.sharding"), raw = the text between its outer '<' '>' (owned through
// blob / blob_owned).
hl_status_t hl_sdy_attr_text(const hl_bc_module_t *bc, uint64_t idx, hl_mlir_attr_t *out);

#endif  // HL_RUNTIME_BYTECODE_SDY_ATTRS_H_
