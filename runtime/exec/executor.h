// The local executor: runs one process's program on its arguments.
//
//   hl_exec_options_t opts = {.replica_id = r, .partition_id = p,
//                             .num_replicas = R, .num_partitions = P, .comm = comm};
//   hl_literal_t *result;
//   HL_RETURN_IF_ERROR(hl_execute(module, &opts, args, nargs, &result));
//
// The executor plans each computation once (operand order, last use of every
// value so buffers are released as soon as they are dead), then walks it.
//
// A program run many times (replays, benchmarks, a launcher loop) keeps its
// plans and compiled scalar reducers in an executable instead, as XLA
// separates compile from execute:
//
//   hl_executable_t *exe;
//   HL_RETURN_IF_ERROR(hl_executable_create(module, &exe));
//   for (...) HL_RETURN_IF_ERROR(hl_executable_run(exe, &opts, args, nargs, &result));
//   hl_executable_destroy(exe);
#ifndef HL_RUNTIME_EXEC_EXECUTOR_H_
#define HL_RUNTIME_EXEC_EXECUTOR_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/exec/observer.h"
#include "runtime/ir/module.h"
#include "runtime/kernels/exec_options.h"


// Runs module->entry on `args` (one literal per entry parameter, shapes
// checked). On success *out_result holds a new reference the caller releases.
// Errors name the instruction that failed.
hl_status_t hl_execute(const hl_module_t *module, const hl_exec_options_t *options,
                       hl_literal_t *const *args, int arg_count, hl_literal_t **out_result);

// The module's plans and scalar programs, built on first use and kept for
// later runs. The module must outlive the executable. Not thread-safe: one
// run at a time per executable.
typedef struct hl_executable hl_executable_t;

hl_status_t hl_executable_create(const hl_module_t *module, hl_executable_t **out_executable);
void hl_executable_destroy(hl_executable_t *executable);  // NULL-safe
// hl_execute on the executable's module, reusing what earlier runs built.
hl_status_t hl_executable_run(hl_executable_t *executable, const hl_exec_options_t *options,
                              hl_literal_t *const *args, int arg_count,
                              hl_literal_t **out_result);

// Warm start (issue 24): what a first run would otherwise do on its way --
// the entry's plan, the blocked programs of every fusion (their loops
// queued for the fusion JIT's background compiler, which loads the code
// generator itself: nothing here waits for it), and the large buffers it
// would map fresh (memory_plan.h; a page fault per 4 KiB on first touch,
// several times a memory-bound run itself) made resident, then, until the
// run begins, the code pages it executes (base/code_pages.h) -- done on a
// thread of its own, so that what the caller does next (reading or drawing
// the arguments, connecting ranks) overlaps it. The next run waits for it
// (but for the code pages) and hands the buffers to the allocator's cache,
// where its own requests find them. A failure on the way only leaves the
// work to the run (which reports any error itself). hl_executable_destroy
// waits for the JIT's load and first compile if they are under way
// (jit_kernel.h, hl_jit_settle): the caller may exit next.
void hl_executable_warm_start(hl_executable_t *executable);

// The thread count the runs' pool will have (default 1), set before the
// warm start: kernels' per-thread scratch (dot's 16-bit panels, sort's keys)
// is sized by it (kernels/kernel_scratch.h).
void hl_executable_set_threads(hl_executable_t *executable, int threads);

// The entry's memory figures (memory_plan.h), false when the plan could not
// be built: the live-set lower bound (parameters + the largest set of values
// alive at once), its parameters' bytes, and the kernels' declared scratch:
// the most one instruction holds, and the most values and scratch hold
// together.
typedef struct hl_executable_memory {
  int64_t live_bound_bytes, parameter_bytes;
  int64_t scratch_peak_bytes, with_scratch_peak_bytes;
  // Arenas the blocked fusions' shared workspaces hold now (what the largest
  // block of any fusion took, per worker: fusion_program.h).
  int64_t fusion_workspace_bytes;
} hl_executable_memory_t;
bool hl_executable_memory_bounds(hl_executable_t *executable, hl_executable_memory_t *out);

// The entry's live-set lower bound (memory_plan.h: parameters + the largest
// set of values alive at once in its plan) in bytes, and its parameters'
// bytes; false when the plan could not be built.
bool hl_executable_live_set_bound(hl_executable_t *executable, int64_t *bound_bytes,
                                  int64_t *parameter_bytes);

#endif  // HL_RUNTIME_EXEC_EXECUTOR_H_
