// The kernel contract. Every opcode's kernel (named in runtime/ir/opcode.def)
// has this signature: it reads the instruction's decoded attributes and its
// evaluated operands and creates its result. Kernels never see parser or
// proto structures and never call MPI.
#ifndef HL_RUNTIME_KERNELS_KERNEL_H_
#define HL_RUNTIME_KERNELS_KERNEL_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/kernels/exec_options.h"
#include "runtime/ir/module.h"

// What a kernel may ask of the executor running it. The executor (exec/)
// calls kernels through its dispatch table; kernels reach the executor only
// through this contract -- the context's fields and the service table the
// executor fills in -- and never call the executor's functions, so the rooms
// form no cycle (scripts/include_cycles.py --link, ctest
// architecture.link_cycles). The accessors below are inline for that reason.
typedef struct hl_kernel_context hl_kernel_context_t;
typedef struct hl_fusion_program hl_fusion_program_t;

// The executor's entry points, one table per executor (exec/executor.c).
typedef struct hl_kernel_services {
  // Runs `computation` on `args` (borrowed) in the same process.
  hl_status_t (*call_computation)(hl_kernel_context_t *ctx, const hl_computation_t *computation,
                                  hl_literal_t *const *args, int arg_count, hl_literal_t **out);
  // See hl_kernel_operand_is_donatable.
  bool (*operand_is_donatable)(const hl_kernel_context_t *ctx, int k);
  // See hl_kernel_pending_put / hl_kernel_pending_take.
  hl_status_t (*pending_put)(hl_kernel_context_t *ctx, const hl_instruction_t *start,
                             void *state, void (*discard)(void *state));
  void *(*pending_take)(hl_kernel_context_t *ctx, const hl_instruction_t *start);
  // See hl_kernel_fusion_program.
  hl_status_t (*fusion_program)(hl_kernel_context_t *ctx, const hl_computation_t *computation,
                                hl_fusion_program_t **out);
  // True once a cancellation was requested (hl_exec_request_cancel).
  bool (*cancel_requested)(void);
} hl_kernel_services_t;

// The kernel-visible head of the executor's per-execution context; the
// executor keeps its own state (plans, frames) behind it.
struct hl_kernel_context {
  const hl_kernel_services_t *services;
  // This process's place in the grid, the communicator (NULL: single
  // process), channels, observer, threads, profile; num_replicas and
  // num_partitions normalised to >= 1.
  hl_exec_options_t options;
  hl_literal_t *const *frame_args;  // the running frame's arguments
  int frame_arg_count;
  // FLOPs a library kernel counted (hl_kernel_count_flops) while profiled.
  double counted_flops;
  // Started sends / recvs waiting for their -done (kernels/channels.c; the
  // executor finishes the table with hl_channel_pending_finish).
  struct hl_channel_pending *channel_pending;
};

// operands[i] is the value of inst->operands[i] (borrowed: a kernel that
// wants to keep or return one retains it). On success *out is a new reference
// whose shape equals inst->shape.
typedef hl_status_t (*hl_kernel_fn_t)(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, hl_literal_t **out);

// Runs `computation` on `args` (borrowed) in the same process; for reducers,
// comparators, bodies of call/while/conditional/fusion.
static inline hl_status_t hl_kernel_call_computation(hl_kernel_context_t *ctx,
                                                     const hl_computation_t *computation,
                                                     hl_literal_t *const *args, int arg_count,
                                                     hl_literal_t **out) {
  if (!ctx) {
    *out = NULL;
    return HL_INTERNAL_ERROR("no executor context to call a computation from");
  }
  return ctx->services->call_computation(ctx, computation, args, arg_count, out);
}
// This process's place in the grid, and the communicator (NULL: single process).
static inline const hl_exec_options_t *hl_kernel_options(const hl_kernel_context_t *ctx) {
  return ctx ? &ctx->options : NULL;
}
// The argument literal of the current frame's parameter `number` (borrowed).
static inline hl_literal_t *hl_kernel_frame_argument(const hl_kernel_context_t *ctx,
                                                     int64_t number) {
  if (!ctx || number < 0 || number >= ctx->frame_arg_count) return NULL;
  return ctx->frame_args[number];
}
// A library kernel (a custom-call GEMM such as __cublas$gemm) names the
// FLOPs it did, for --profile, which counts those of dot and convolution
// from the instruction itself. NULL-safe.
static inline void hl_kernel_count_flops(hl_kernel_context_t *ctx, double flops) {
  if (ctx) ctx->counted_flops += flops;
}
// FLOPs of one dot / convolution call (0 for other instructions): what the
// profile counts per call, and what a target that runs a dot of its own
// passes to hl_kernel_count_flops.
double hl_kernel_flops(const hl_instruction_t *inst, hl_literal_t *const *operands,
                       int operand_count, const hl_literal_t *result);
// The running execution's table of started channel transfers (NULL without
// a context).
static inline struct hl_channel_pending **hl_kernel_channel_pending(hl_kernel_context_t *ctx) {
  return ctx ? &ctx->channel_pending : NULL;
}

// Async pairs (all-reduce-start / -done, ...): the start kernel parks the
// state of its pending transfer under its own instruction; the done kernel
// takes it back by the start instruction (its operand). States left when the
// execution ends (an error between start and done) are handed to `discard`,
// which must complete the transfer before freeing its buffers.
static inline hl_status_t hl_kernel_pending_put(hl_kernel_context_t *ctx,
                                                const hl_instruction_t *start, void *state,
                                                void (*discard)(void *state)) {
  return ctx->services->pending_put(ctx, start, state, discard);
}
// The parked state of `start` (NULL when none), removed from the table.
static inline void *hl_kernel_pending_take(hl_kernel_context_t *ctx,
                                           const hl_instruction_t *start) {
  return ctx->services->pending_take(ctx, start);
}

// True when operand k of the instruction now running dies right after it and
// nothing else holds it (refcount 1, not also operand j != k): the kernel may
// then take its buffer, e.g. by swapping data pointers with its freshly
// created result, instead of copying. A true answer is counted as a donation.
static inline bool hl_kernel_operand_is_donatable(const hl_kernel_context_t *ctx, int k) {
  return ctx && ctx->services->operand_is_donatable(ctx, k);
}

// True once running executions were asked to stop (hl_exec_request_cancel in
// exec/executor.h): loops (while) check it each iteration and fail with
// "execution cancelled".
static inline bool hl_kernel_cancel_requested(const hl_kernel_context_t *ctx) {
  return ctx && ctx->services->cancel_requested();
}

// An element-wise kernel's output buffer taken from a dying operand: the
// first of operands[0..count) whose element type and dimensions equal the
// result's and that hl_kernel_operand_is_donatable allows, retained and
// relabelled with inst->shape; NULL when none (create a fresh result). The
// kernel then computes in place, so output element i may depend only on
// input element i. Reusing a warm buffer saves the page faults of a freshly
// mmap()ed one, which halve the speed of large element-wise ops.
// (kernels/kernel.c)
hl_literal_t *hl_kernel_reuse_operand(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, int count);

// The blocked program of a fusion computation (runtime/fusion), compiled on
// first use and kept by the executable; *out is NULL when the computation is
// not covered (it then runs op by op).
static inline hl_status_t hl_kernel_fusion_program(hl_kernel_context_t *ctx,
                                                   const hl_computation_t *computation,
                                                   hl_fusion_program_t **out) {
  return ctx->services->fusion_program(ctx, computation, out);
}

// Declarations of every kernel named in opcode.def.
#define X(e, name, arity, kernel)                                                 \
  hl_status_t kernel(hl_kernel_context_t *ctx, const hl_instruction_t *inst,     \
                     hl_literal_t *const *operands, hl_literal_t **out);
#include "runtime/ir/opcode.def"
#undef X

#endif  // HL_RUNTIME_KERNELS_KERNEL_H_
