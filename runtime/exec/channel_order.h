// The executor's evaluation order around channel instructions
// (exec/channel_order.c; plan.c applies it to every plan).
#ifndef HL_RUNTIME_EXEC_CHANNEL_ORDER_H_
#define HL_RUNTIME_EXEC_CHANNEL_ORDER_H_

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// Reorders a valid evaluation order of `c` so that no process blocks in a
// channel wait while it still has transfers to start: among the instructions
// whose dependencies have run, send/recv run first and send-done / recv-done
// (and calls of computations that contain them) last. Leaves computations
// without channel instructions untouched.
hl_status_t hl_channel_order(const hl_computation_t *c, const hl_instruction_t **order);

#endif  // HL_RUNTIME_EXEC_CHANNEL_ORDER_H_
