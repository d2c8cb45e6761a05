// Typed-FFI attributes of a custom-call, read from its backend_config.
//
// jaxlib's FFI targets get their attributes as an MLIR dictionary
// (`mhlo.backend_config` in StableHLO; in HLO text the backend_config
// `{mode = 65 : ui8, uplo = 76 : ui8}`, braces or quoted).
#ifndef HL_CUSTOM_CALLS_FFI_ATTRS_H_
#define HL_CUSTOM_CALLS_FFI_ATTRS_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/custom_calls/registry.h"

// The integer (or boolean: 1 / 0) attribute `key`; an error naming the
// attribute and the instruction when it is missing or not an integer.
hl_status_t hl_ffi_attr_int(const hl_custom_call_t *call, const char *key, int64_t *out);
// As above; *found false (and no error) when the attribute is absent.
hl_status_t hl_ffi_attr_int_opt(const hl_custom_call_t *call, const char *key, int64_t *out,
                                bool *found);

#endif  // HL_CUSTOM_CALLS_FFI_ATTRS_H_
