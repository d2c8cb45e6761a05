// A hook through which a tool learns what the collectives' progress threads
// (the MPI backend's, mpi_progress.c, and the shared-memory layer's,
// shm/shm_layer.c) did, so that --trace can show it on a track of its own,
// without the collectives depending on that tool: the debugging layer sets
// the hook; the collectives only call it.
#ifndef HL_COLLECTIVES_PROGRESS_HOOK_H_
#define HL_COLLECTIVES_PROGRESS_HOOK_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/ir/module.h"

typedef struct hl_progress_hook {
  // One non-blocking collective (a -start's request) the progress thread
  // worked on: from the start of the first round in which it tested it
  // (`start_ns`, CLOCK_MONOTONIC) to the round in which it saw the last of
  // its MPI requests complete (`completed` true), or to the moment its -done
  // took it back from the thread (`completed` false: the wait finishes it).
  // `tests` counts the rounds that tested it; `bytes` is the collective's
  // payload. The shared-memory layer's thread runs each queued -start
  // itself: its spans go from the job's start to its end, `tests` 0,
  // `completed` true. Calls of one backend never overlap (they are made
  // under its progress lock, on its thread or on the thread in the -done),
  // but the two backends' threads may call at once: the hook must be
  // thread-safe, and must not call back into the collectives.
  void (*span)(void *ctx, const hl_instruction_t *inst, int64_t bytes, int64_t start_ns,
               int64_t end_ns, int tests, bool completed);
  void *ctx;
} hl_progress_hook_t;

// Sets the process-wide hook (NULL: none). `hook` must stay valid until it
// is replaced; set it before the collectives start and clear it once the
// last one ended.
void hl_collectives_set_progress_hook(const hl_progress_hook_t *hook);

// For a backend's own progress thread: CLOCK_MONOTONIC now while a hook is
// set, else 0 (nothing will be reported: skip the clock).
int64_t hl_progress_hook_now_ns(void);
// Calls the hook's span (see above) when one is set.
void hl_progress_hook_report(const hl_instruction_t *inst, int64_t bytes, int64_t start_ns,
                             int64_t end_ns, int tests, bool completed);

#endif  // HL_COLLECTIVES_PROGRESS_HOOK_H_
