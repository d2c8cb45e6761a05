// User custom-call handlers through XLA's typed FFI C ABI (xla_ffi_api.h).
//
// `hlo-launch --custom-call-library SPEC` (repeatable) calls
// hl_ffi_plugin_load(SPEC) in every process before the program is loaded:
//   PATH                  the library exports hlo_launch_ffi_init(api) and
//                         registers its handlers by name with
//                         api->XLA_FFI_Handler_Register, platform "Host";
//   PATH:T1=S1,T2=S2      target T1 runs the exported XLA_FFI_Handler S1
//                         (a handler compiled for XLA's CPU runtime, unchanged).
// A registered target then runs like a built-in one: typed-FFI custom-calls
// get their operands / results as XLA_FFI_Buffers in the instruction's
// layouts and their backend_config dictionary as sorted attributes.
#ifndef HL_CUSTOM_CALLS_FFI_PLUGIN_H_
#define HL_CUSTOM_CALLS_FFI_PLUGIN_H_

#include "runtime/base/status.h"
#include "runtime/custom_calls/xla_ffi_api.h"

hl_status_t hl_ffi_plugin_load(const char *spec);
// Loads specs[0..n) in order; the first failure stops.
hl_status_t hl_ffi_plugins_load(const char *const *specs, int n);

// The API table handed to plugins (also usable to register handlers
// compiled into the binary).
const XLA_FFI_Api *hl_ffi_api(void);

#endif  // HL_CUSTOM_CALLS_FFI_PLUGIN_H_
