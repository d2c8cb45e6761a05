// Row reductions read back in the same pass (issue 24: "a softmax or layer
// norm becomes one or two passes over rows that stay in cache"). A reduce
// over the minor dimensions (a row reduction) may sit inside a fusion whose
// other ops read its result broadcast back along the reduced dimensions
// (softmax: max, exp(x - max), its sum, the divide; layer norm: mean,
// centred variance, output). The blocked executor (fusion_program.c) then
// runs blocks of whole rows: each block folds its rows with the reduce
// kernel's loop (reduce_fast.h: the same order, the same bits) and its
// consumers read the row values while the rows are still in cache.
//
// This file holds the rules both the fusion pass and the blocked executor
// apply, so the pass only forms what the executor runs:
// - which reduces qualify (hl_fusion_row_reduce_why);
// - how each value of a fusion is indexed from a block of whole rows
//   (hl_fusion_rows_plan): a row reduce must be read only through
//   broadcasts along its rows, so every block evaluates exactly the rows it
//   covers, never another block's (which would recompute whole rows per
//   element).
#ifndef HL_RUNTIME_FUSION_FUSION_ROWS_H_
#define HL_RUNTIME_FUSION_FUSION_ROWS_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/ir/module.h"

// Longest row, in bytes of the reduce's element type, folded and read back
// within one block: the row and the handful of row-sized intermediates of a
// softmax or layer norm then stay within L2 (2 MiB per core here, 256 KiB
// and up elsewhere). Longer rows keep the reduce a fusion of its own (a
// pass writing the reduced values, another reading them).
#define HL_FUSION_ROW_BYTES (INT64_C(64) << 10)

// A broadcast whose innermost dimension repeats each operand element at
// least this many times: the blocked executor evaluates its operand once
// per repeat (fusion_program_run.c map_runs), not once per element, so an
// expensive operand (rsqrt(var + eps), a mean) may be fused behind it.
#define HL_FUSION_SPLAT_RUN 8

// Whether broadcast instruction `b` is of that kind.
bool hl_fusion_broadcast_splats(const hl_instruction_t *b);

// NULL when `reduce` is a row reduction the blocked executor folds and
// reads back within a block of whole rows: one input, a reducer of one op
// its fast path covers, the reduced dimensions (size-1 dimensions aside)
// the minor ones, rows of 1 .. HL_FUSION_ROW_BYTES bytes (*row_len: the
// elements per row). Otherwise the reason.
const char *hl_fusion_row_reduce_why(const hl_instruction_t *reduce, int64_t *row_len);

// Elements per row of an index map that sends element e of its result to
// element e / row of its operand (a broadcast along the minor dimensions of
// a value of the kept dimensions: [R] or [R,1] -> [R,C], row C); 0 when the
// map is not of that form. The map: result dims[rank], operand index =
// offset + sum_d idx[d] * stride[d], operand_count elements.
int64_t hl_fusion_row_broadcast(int rank, const int64_t *dims, const int64_t *stride,
                                int64_t offset, int64_t operand_count);

// How one operand of a value is indexed from the value's own elements.
typedef enum hl_rows_edge {
  HL_ROWS_SAME,    // element e reads operand element e (element-wise ops, reshapes)
  HL_ROWS_SPREAD,  // element e reads operand element e / factor (a row broadcast)
  HL_ROWS_GATHER,  // element e reads operand elements [e * factor, (e + 1) * factor) (a row reduce)
  HL_ROWS_ONE,     // one element whatever e is (a scalar operand)
  HL_ROWS_OTHER,   // anything else (transposes, slices, other broadcasts)
} hl_rows_edge_t;

typedef struct hl_rows_value {
  int nops;
  const int *ops;           // operand values (indices below this value's)
  hl_rows_edge_t edge[3];   // per operand
  int64_t factor[3];        // SPREAD / GATHER
  bool row_reduce;          // a row reduce (its operand 0 a GATHER edge)
} hl_rows_value_t;

// Checks that a program of `count` values (operands before users) whose
// `outputs` (of `total` elements) are evaluated over blocks
// [start, start + m) of whole rows of `row` elements reads each row reduce
// only at the rows of the block: every path from an output to a row reduce
// maps the block's range to the range of rows it covers (a ONE edge reads
// row 0 of rows of `total`: a reduce to one value read as a scalar is
// covered when it is the whole program's one row). NULL when it does;
// otherwise the reason.
const char *hl_fusion_rows_plan(const hl_rows_value_t *values, int count, const int *outputs,
                                int output_count, int64_t total, int64_t row);

#endif  // HL_RUNTIME_FUSION_FUSION_ROWS_H_
