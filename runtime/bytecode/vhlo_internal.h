// Private to runtime/bytecode's VHLO reader: what the op conversion
// (vhlo.c) and the type and attribute decoders (vhlo_attrs.c) share. Not an
// API: vhlo.h is.
#ifndef HL_RUNTIME_BYTECODE_VHLO_INTERNAL_H_
#define HL_RUNTIME_BYTECODE_VHLO_INTERNAL_H_

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/bytecode/mlir_bytecode.h"
#include "runtime/stablehlo/mlir_ast.h"

typedef struct vctx {
  const hl_bc_module_t *bc;
  hl_mlir_file_t *file;
  uint32_t vhlo, builtin, sdy;  // dialect indices (UINT32_MAX when absent)
  uint64_t *value_type;    // type index of each value number
  uint32_t *value_alias;   // the value each value number stands for (itself, or a cast's operand)
  int major, minor, patch; // the producer's StableHLO version
  int *last_quant;         // quantization id of the tensor type decoded last (0: none)
} vctx_t;

// An error naming the artifact and its producer.
static inline hl_status_t verr(const vctx_t *v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return HL_INVALID("%s: portable artifact (%s): %s", v->bc->path, v->bc->producer, msg);
}

// A value type (tensor, token or tuple) from type index `idx`.
hl_status_t hl_vhlo_decode_type(const vctx_t *v, uint64_t idx, hl_shape_t *out, int depth);
// Attribute `idx` in its StableHLO form (*out zeroed on error).
hl_status_t hl_vhlo_decode_attr(const vctx_t *v, uint64_t idx, hl_mlir_attr_t *out, int depth);
// `a` becomes a string-valued attribute of `kind` (a copy of s).
hl_status_t hl_vhlo_set_string(hl_mlir_attr_t *a, hl_mlir_attr_kind_t kind, const char *s);
// Appends an item named `key` to list / dictionary attribute `a`; *slot is
// the new (zeroed) value.
hl_status_t hl_vhlo_push_item(hl_mlir_attr_t *a, const char *key, hl_mlir_attr_t **slot);

#endif  // HL_RUNTIME_BYTECODE_VHLO_INTERNAL_H_
