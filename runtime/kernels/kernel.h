// The kernel contract. Every opcode's kernel (named in runtime/ir/opcode.def)
// has this signature: it reads the instruction's decoded attributes and its
// evaluated operands and creates its result. Kernels never see parser or
// proto structures and never call MPI.
#ifndef HL_RUNTIME_KERNELS_KERNEL_H_
#define HL_RUNTIME_KERNELS_KERNEL_H_

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/exec/exec_options.h"
#include "runtime/ir/module.h"

// What a kernel may ask of the executor running it (defined in exec/).
typedef struct hl_kernel_context hl_kernel_context_t;

// operands[i] is the value of inst->operands[i] (borrowed: a kernel that
// wants to keep or return one retains it). On success *out is a new reference
// whose shape equals inst->shape.
typedef hl_status_t (*hl_kernel_fn_t)(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, hl_literal_t **out);

// Runs `computation` on `args` (borrowed) in the same process; for reducers,
// comparators, bodies of call/while/conditional/fusion.
hl_status_t hl_kernel_call_computation(hl_kernel_context_t *ctx,
                                       const hl_computation_t *computation,
                                       hl_literal_t *const *args, int arg_count,
                                       hl_literal_t **out);
// This process's place in the grid, and the communicator (NULL: single process).
const hl_exec_options_t *hl_kernel_options(const hl_kernel_context_t *ctx);
// The argument literal of the current frame's parameter `number` (borrowed).
hl_literal_t *hl_kernel_frame_argument(const hl_kernel_context_t *ctx, int64_t number);
// A library kernel (a custom-call GEMM such as __cublas$gemm) names the
// FLOPs it did, for --profile, which counts those of dot and convolution
// from the instruction itself. NULL-safe.
void hl_kernel_count_flops(hl_kernel_context_t *ctx, double flops);

// Async pairs (all-reduce-start / -done, ...): the start kernel parks the
// state of its pending transfer under its own instruction; the done kernel
// takes it back by the start instruction (its operand). States left when the
// execution ends (an error between start and done) are handed to `discard`,
// which must complete the transfer before freeing its buffers.
hl_status_t hl_kernel_pending_put(hl_kernel_context_t *ctx, const hl_instruction_t *start,
                                  void *state, void (*discard)(void *state));
// The parked state of `start` (NULL when none), removed from the table.
void *hl_kernel_pending_take(hl_kernel_context_t *ctx, const hl_instruction_t *start);

// True when operand k of the instruction now running dies right after it and
// nothing else holds it (refcount 1, not also operand j != k): the kernel may
// then take its buffer, e.g. by swapping data pointers with its freshly
// created result, instead of copying. A true answer is counted as a donation.
bool hl_exec_operand_is_donatable(const hl_kernel_context_t *ctx, int k);

// Asks running executions to stop: loops (while) check the flag each
// iteration and fail with "execution cancelled". Async-signal-safe, so a
// SIGINT handler may call it. The flag stays set until cleared.
void hl_exec_request_cancel(void);
void hl_exec_clear_cancel(void);
bool hl_exec_cancel_requested(void);

// An element-wise kernel's output buffer taken from a dying operand: the
// first of operands[0..count) whose element type and dimensions equal the
// result's and that hl_exec_operand_is_donatable allows, retained and
// relabelled with inst->shape; NULL when none (create a fresh result). The
// kernel then computes in place, so output element i may depend only on
// input element i. Reusing a warm buffer saves the page faults of a freshly
// mmap()ed one, which halve the speed of large element-wise ops.
hl_literal_t *hl_kernel_reuse_operand(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, int count);

// The blocked program of a fusion computation (runtime/fusion), compiled on
// first use and kept by the executable; *out is NULL when the computation is
// not covered (it then runs op by op).
typedef struct hl_fusion_program hl_fusion_program_t;
hl_status_t hl_kernel_fusion_program(hl_kernel_context_t *ctx, const hl_computation_t *computation,
                                     hl_fusion_program_t **out);

// Declarations of every kernel named in opcode.def.
#define X(e, name, arity, kernel)                                                 \
  hl_status_t kernel(hl_kernel_context_t *ctx, const hl_instruction_t *inst,     \
                     hl_literal_t *const *operands, hl_literal_t **out);
#include "runtime/ir/opcode.def"
#undef X

#endif  // HL_RUNTIME_KERNELS_KERNEL_H_
