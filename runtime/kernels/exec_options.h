// What one run of a program is given: the process's place in the grid, its
// communicator, channels, observer, threads and profile. Part of the kernel
// contract (the kernel context carries it, runtime/kernels/kernel.h) and the
// executor's input (runtime/exec/executor.h), so it lives with the kernels,
// which may not include the executor's headers: the observer and the
// profile, which only the executor uses, are named by their struct tags.
#ifndef HL_RUNTIME_KERNELS_EXEC_OPTIONS_H_
#define HL_RUNTIME_KERNELS_EXEC_OPTIONS_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/comm/comm.h"

typedef struct hl_exec_options {
  int64_t replica_id, partition_id;
  int64_t num_replicas, num_partitions;  // 0 is read as 1
  hl_comm_t *comm;                       // NULL: single process
  // Channel routes and host-transfer queues (runtime/comm/channels.h), set
  // up by the launcher's channel rendezvous; NULL: no channels, no feeds.
  struct hl_channel_env *channels;
  // Called around every instruction (hl_exec_observer_t,
  // runtime/exec/observer.h); NULL: none.
  struct hl_exec_observer *observer;
  // Blocked fusion execution (runtime/fusion) is on unless this is set: the
  // reference mode runs every fusion op by op (--no-fusion-blocking).
  bool no_fusion_blocking;
  // Threads of this process for fusions and other split work
  // (runtime/threads/thread_pool.h); NULL: the calling thread alone.
  struct hl_thread_pool *pool;
  // Per-instruction profile (runtime/exec/profile.h) to add this run's
  // timings to; NULL: not profiled.
  struct hl_profile *profile;
} hl_exec_options_t;

#endif  // HL_RUNTIME_KERNELS_EXEC_OPTIONS_H_
