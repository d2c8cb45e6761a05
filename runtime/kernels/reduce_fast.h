// reduce's typed fold / combine loops (reduce.c), shared with the blocked
// fusion executor so that a reduction fused with its producers visits and
// rounds exactly as the reduce kernel does.
#ifndef HL_RUNTIME_KERNELS_REDUCE_FAST_H_
#define HL_RUNTIME_KERNELS_REDUCE_FAST_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/ir/module.h"

// fold: a contiguous run of n elements into one accumulator (*acc);
// combine: a contiguous run into n accumulators acc[0..n), element-wise.
typedef void (*hl_reduce_run_fn)(const void *x, int64_t n, void *acc);

// The loops of (element type, reducer op), as the reduce kernel's fast path
// uses them; false when that path does not cover the pair.
bool hl_reduce_fast_fns(hl_dtype_t t, hl_opcode_t op, hl_reduce_run_fn *fold,
                        hl_reduce_run_fn *combine);

#endif  // HL_RUNTIME_KERNELS_REDUCE_FAST_H_
