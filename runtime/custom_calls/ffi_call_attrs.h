// Builds an XLA_FFI_Attrs (sorted by name) from a typed-FFI custom-call's
// backend_config, an MLIR dictionary such as
//   {alpha = 2.500000e+00 : f32, mode = 65 : ui8, name = "x", dims = array<i64: 1, 2>}
#ifndef HL_CUSTOM_CALLS_FFI_CALL_ATTRS_H_
#define HL_CUSTOM_CALLS_FFI_CALL_ATTRS_H_

#include "runtime/base/status.h"
#include "runtime/custom_calls/xla_ffi_api.h"

typedef struct hl_ffi_attr_store {
  void **blocks;  // every allocation behind the attributes (owned)
  int count;
} hl_ffi_attr_store_t;

// text may be NULL or empty (no attributes). Values: booleans (PRED), integers
// with an MLIR integer type (i64 when untyped), floats (f32 / f64), strings,
// array<T: ...> of integers or floats, and nested dictionaries.
hl_status_t hl_ffi_attrs_build(const char *text, XLA_FFI_Attrs *out, hl_ffi_attr_store_t *store);
void hl_ffi_attr_store_free(hl_ffi_attr_store_t *store);

#endif  // HL_CUSTOM_CALLS_FFI_CALL_ATTRS_H_
