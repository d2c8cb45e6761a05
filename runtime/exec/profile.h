// Per-instruction profile of one process's runs (hlo-launch --profile):
// time, calls, bytes moved and FLOPs per instruction, and a roofline model of
// the whole run.
//
// The executor records every instruction that does work itself: a fusion
// as one entry (its inside is not recorded, blocked or not), while / call /
// conditional not at all (their bodies' instructions are recorded), so the
// entries add up to the run's time.
//
// Roofline: dot and convolution FLOPs at the measured BLAS rate plus the
// bytes every other instruction reads and writes at the measured memory
// bandwidth; the figure is measured time / that model (1.0 = at the roof).
#ifndef HL_RUNTIME_EXEC_PROFILE_H_
#define HL_RUNTIME_EXEC_PROFILE_H_

#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"
#include "runtime/threads/thread_pool.h"

typedef struct hl_profile hl_profile_t;

hl_status_t hl_profile_create(hl_profile_t **out_profile);
void hl_profile_destroy(hl_profile_t *profile);  // NULL-safe

// One call of `inst` that took `seconds`.
void hl_profile_record(hl_profile_t *profile, const hl_instruction_t *inst, double seconds,
                       hl_literal_t *const *operands, int operand_count,
                       const hl_literal_t *result);

// Adds FLOPs a library kernel counted (hl_kernel_count_flops) to `inst`'s
// row, recorded just before. A call's own FLOPs: hl_kernel_flops (kernel.h).
void hl_profile_add_flops(hl_profile_t *profile, const hl_instruction_t *inst, double flops);

// This machine's rates, measured in this process on the pool's threads
// (NULL: one): f32 GEMM FLOP/s (1024^3 as dots run it: gemm tiles over the
// pool, kernels/gemm_tiles.h) and memcpy bytes/s (read + write, 64 MiB in
// chunks over the pool).
void hl_profile_measure_machine(hl_thread_pool_t *pool, double *gemm_flops_per_s,
                                double *copy_bytes_per_s);

// Appends the `top` instructions with the most time (name, opcode, calls,
// total ms, share, MB moved, MFLOP; totals over the runs) and one roofline line for `run_seconds`
// of measured time over `runs` runs.
void hl_profile_format(const hl_profile_t *profile, int top, double run_seconds, int64_t runs,
                       double gemm_flops_per_s, double copy_bytes_per_s, hl_strbuf_t *out);

// Memory (issue 24): the most bytes of large arrays (alloc.h, >= 64 KiB
// each) this process has held at once and its peak resident size (VmHWM:
// code, MPI and small blocks too), taken right after the runs (before the
// roofline's own measurements); and one line setting them against the
// program's live-set lower bound (`bound_bytes`, memory_plan.h: its
// parameters plus the most values alive at once; `parameter_bytes` of it
// the parameters).
void hl_profile_memory_peaks(double *array_bytes, double *resident_bytes);
void hl_profile_format_memory(double array_bytes, double resident_bytes, int64_t bound_bytes,
                              int64_t parameter_bytes, hl_strbuf_t *out);
// The line after it when kernels declare scratch (kernels/kernel_scratch.h):
// the most one instruction holds, and values and scratch at once (the
// bound's walk with scratch; both outside the bound itself).
void hl_profile_format_scratch(int64_t scratch_bytes, int64_t with_scratch_bytes,
                               hl_strbuf_t *out);
// "  fusion workspaces: X MiB (...)": the arenas the blocked fusions hold
// (inside the resident figure, outside the live-set bound); nothing when 0.
void hl_profile_format_workspaces(int64_t bytes, hl_strbuf_t *out);

#endif  // HL_RUNTIME_EXEC_PROFILE_H_
