// Checks, before anything runs, that every custom-call target of a module
// can run: built in, or registered by a --custom-call-library.
#ifndef HL_CUSTOM_CALLS_CHECK_H_
#define HL_CUSTOM_CALLS_CHECK_H_

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// The first unknown target as an error naming it, its instruction and the flag;
// then each target's own check of its config (registry.h).
hl_status_t hl_custom_calls_check_module(const hl_module_t *m);

// Why a target that is not registered cannot be run (a Triton kernel, ...), or
// NULL when nothing more than "unknown" is known about it.
const char *hl_custom_call_not_runnable_reason(const char *name);

#endif  // HL_CUSTOM_CALLS_CHECK_H_
