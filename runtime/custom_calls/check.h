// Checks, before anything runs, that every custom-call target of a module
// can run: built in, or registered by a --custom-call-library.
#ifndef HL_CUSTOM_CALLS_CHECK_H_
#define HL_CUSTOM_CALLS_CHECK_H_

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// The first unknown target as an error naming it, its instruction and the flag.
hl_status_t hl_custom_calls_check_module(const hl_module_t *m);

#endif  // HL_CUSTOM_CALLS_CHECK_H_
