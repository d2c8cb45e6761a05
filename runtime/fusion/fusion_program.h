// Blocked fusion execution: a fusion computation compiled once into a small
// program that evaluates its outputs over cache-sized blocks of the output
// (or, for reductions, of the reduced input), so every intermediate lives
// in a few KiB of L1/L2 instead of a full-size array.
//
//   hl_fusion_program_t *p;
//   HL_RETURN_IF_ERROR(hl_fusion_program_compile(computation, &p, &why));
//   if (p) HL_RETURN_IF_ERROR(hl_fusion_program_run(p, args, n, pool, &result));
//   else   ... run the computation op by op (why says what is not covered)
//
// Covered: parameters, constants, the element-wise arithmetic of
// elementwise.c (real and integer types), compare, select, clamp, convert,
// iota (integer, f32, f64), and the index maps broadcast, transpose, slice,
// reverse, reshape, plus bitcast and copy between default layouts, all as
// index arithmetic; row reduces read back inside (fusion_rows.h: blocks of
// whole rows, each row folded once and read back while in cache); roots:
// one array, a tuple of arrays of one shape, or reduces (single input, a
// reducer the reduce kernel's fast path covers) of one input shape, alone
// or in a tuple with arrays of that input shape.
// Every element is computed by the same array loops as the op-by-op kernels
// (elementwise_arrays.h, reduce_fast.h) in the same order, so results are
// bit-identical to running the computation op by op.
#ifndef HL_RUNTIME_FUSION_FUSION_PROGRAM_H_
#define HL_RUNTIME_FUSION_FUSION_PROGRAM_H_

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"
#include "runtime/threads/thread_pool.h"

typedef struct hl_fusion_program hl_fusion_program_t;

// Compiles `computation`. *out_program is NULL (and *why names the first
// construct not covered) when the blocked path does not apply; an error
// status only for out of memory.
hl_status_t hl_fusion_program_compile(const hl_computation_t *computation,
                                      hl_fusion_program_t **out_program, const char **why);
void hl_fusion_program_destroy(hl_fusion_program_t *program);  // NULL-safe
// What a first run would otherwise set up on its way (the executable's warm
// start, issue 24): the first worker's workspace (memo arrays; the arena
// with its pages touched when the program's upper bound of a block is
// small, 256 KiB), the streaming threshold (read from sysfs once).
hl_status_t hl_fusion_program_warm(hl_fusion_program_t *program);

// Workspaces (issue 24): a run's blocks evaluate into a per-worker arena and
// memo arrays. A program makes a set of its own at its first run unless it
// was given one to share: programs that never run at the same time (an
// executable's: instructions run one at a time) share one set, so the
// memory held is the largest block's need of any of them per worker, not a
// sum over programs. An arena starts empty and grows, between blocks, to
// what a block took (never to the upper bound the program computes), so its
// size is the real need. The set must outlive the programs that use it.
typedef struct hl_fusion_workspaces hl_fusion_workspaces_t;
hl_fusion_workspaces_t *hl_fusion_workspaces_create(void);  // NULL: out of memory
void hl_fusion_workspaces_destroy(hl_fusion_workspaces_t *set);  // NULL-safe
// Before the program's first run (a set of its own is dropped); NULL: no-op.
void hl_fusion_program_use_workspaces(hl_fusion_program_t *program, hl_fusion_workspaces_t *set);
// Arena bytes the set holds over its workers (for --profile, tests).
size_t hl_fusion_workspaces_arena_bytes(const hl_fusion_workspaces_t *set);
// Those of the set the program runs with (0 before its first run), and
// the program's upper bound of one block's arena (for tests).
size_t hl_fusion_program_workspace_bytes(const hl_fusion_program_t *program);
size_t hl_fusion_program_arena_bound(const hl_fusion_program_t *program);

// Compiles a chain of instructions of an ordinary computation `c` (the
// executor's unfused element-wise chains, runtime/exec/plan.c): `members`
// in evaluation order, the last one the chain's one array output; `inputs`
// the values from outside the chain, which become the program's arguments
// in that order. *out_program is NULL (with *why) when not covered.
hl_status_t hl_fusion_program_compile_chain(const hl_computation_t *c,
                                            const hl_instruction_t *const *members,
                                            int member_count,
                                            const hl_instruction_t *const *inputs,
                                            int input_count, hl_fusion_program_t **out_program,
                                            const char **why);

// Runs the program on the computation's arguments (shapes already checked
// against its parameters). Blocks are split over `pool` (NULL: this thread)
// where outputs do not overlap. Not reentrant: one run at a time.
hl_status_t hl_fusion_program_run(hl_fusion_program_t *program, hl_literal_t *const *args,
                                  int arg_count, hl_thread_pool_t *pool, hl_literal_t **out);

// Elements per block of the iteration space (for tests and benchmarks).
int64_t hl_fusion_program_block_elements(const hl_fusion_program_t *program);

// Compiled loops (runtime/fusion/jit) the program runs, 0 when the JIT is off
// or covers none of its nodes (for tests and benchmarks).
int hl_fusion_program_jit_regions(const hl_fusion_program_t *program);
// Of those, the ones whose loop is compiled (the others are compiled in the
// background and run interpreted until then: jit_kernel.h).
int hl_fusion_program_jit_regions_ready(const hl_fusion_program_t *program);
// Index maps those loops read row by row instead of materializing them (a
// broadcast row or column vector, a slice).
int hl_fusion_program_jit_row_leaves(const hl_fusion_program_t *program);

#endif  // HL_RUNTIME_FUSION_FUSION_PROGRAM_H_
