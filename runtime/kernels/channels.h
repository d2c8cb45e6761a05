// The channel kernels' per-execution table of started transfers
// (kernels/channels.c), which the executor finishes at the end of a run.
#ifndef HL_RUNTIME_KERNELS_CHANNELS_H_
#define HL_RUNTIME_KERNELS_CHANNELS_H_

#include "runtime/base/status.h"
#include "runtime/comm/comm.h"

// Per-execution table of started transfers waiting for their send-done /
// recv-done. Lives in the kernel context (hl_kernel_channel_pending,
// runtime/kernels/kernel.h), is filled and drained by the channel kernels,
// and is finished by hl_execute.
typedef struct hl_channel_pending hl_channel_pending_t;

// At the end of an execution: waits for transfers nobody waited for (when
// `st` is NULL; a send whose send-done was never run still has to complete),
// frees the table, and returns `st` or the first wait error.
hl_status_t hl_channel_pending_finish(hl_comm_t *comm, hl_channel_pending_t *pending,
                                      hl_status_t st);

#endif  // HL_RUNTIME_KERNELS_CHANNELS_H_
