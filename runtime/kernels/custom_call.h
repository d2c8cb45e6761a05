// The custom-call targets this runtime runs (runtime/kernels/custom_call.c),
// for checks before a program runs.
#ifndef HL_RUNTIME_KERNELS_CUSTOM_CALL_H_
#define HL_RUNTIME_KERNELS_CUSTOM_CALL_H_

#include <stdbool.h>

// hl_kernel_custom_call has an implementation for `target` (operand and
// shape checks still happen when it runs).
bool hl_custom_call_target_supported(const char *target);

#endif  // HL_RUNTIME_KERNELS_CUSTOM_CALL_H_
