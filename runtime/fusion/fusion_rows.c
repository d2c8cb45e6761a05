// Row reductions read back in the same pass: the rules (fusion_rows.h).
#include "runtime/fusion/fusion_rows.h"

#include "runtime/base/alloc.h"
#include "runtime/kernels/reduce_fast.h"
#include "runtime/kernels/reducer_match.h"

const char *hl_fusion_row_reduce_why(const hl_instruction_t *r, int64_t *row_len) {
  *row_len = 0;
  if (r->opcode != HL_OP_REDUCE || r->operand_count != 2) return "a variadic reduce";
  const hl_shape_t *xs = &r->operands[0]->shape;
  hl_dtype_t t = xs->dtype;
  if (!hl_shape_is_array(xs) || xs->dynamic_mask || !hl_shape_is_array(&r->shape) ||
      r->shape.dtype != t)
    return "a reduce of a non-array value";
  hl_reduce_run_fn fold, combine;
  if (!hl_reduce_fast_fns(t, hl_simple_reducer_op(hl_instruction_to_apply(r), t), &fold,
                          &combine))
    return "a reduce whose reducer is not a simple op";
  bool reduced[HL_MAX_RANK] = {false};
  const hl_i64_list_t *dims = &r->attrs.dimensions;
  for (int i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= xs->rank || reduced[d]) return "a reduce with bad dimensions";
    reduced[d] = true;
  }
  // The reduce kernel folds each run of the merged minor segment into one
  // result when only that segment is reduced (reduce.c reduce_fast): a row.
  int64_t row = 1;
  bool in_row = true;
  for (int d = xs->rank - 1; d >= 0; d--) {
    if (xs->dims[d] == 1) continue;
    if (reduced[d] && !in_row) return "a reduce over other than the minor dimensions";
    if (reduced[d]) row *= xs->dims[d];
    else in_row = false;
  }
  if (row < 1) return "a reduce of empty rows";
  if (row > HL_FUSION_ROW_BYTES / (int64_t)hl_dtype_size(t)) return "rows too long for the cache";
  *row_len = row;
  return NULL;
}

bool hl_fusion_broadcast_splats(const hl_instruction_t *b) {
  const hl_shape_t *s = &b->shape, *o = &b->operands[0]->shape;
  if (b->opcode != HL_OP_BROADCAST || s->rank == 0 || s->dims[s->rank - 1] < HL_FUSION_SPLAT_RUN)
    return false;
  const hl_i64_list_t *dm = &b->attrs.dimensions;
  for (int i = 0; i < dm->n && i < o->rank; i++)
    if (dm->v[i] == s->rank - 1 && o->dims[i] != 1) return false;
  return true;
}

int64_t hl_fusion_row_broadcast(int rank, const int64_t *dims, const int64_t *stride,
                                int64_t offset, int64_t operand_count) {
  if (offset != 0) return 0;
  // Minor dimensions read at stride 0 form the row; the others must read
  // the operand in row-major order.
  int64_t row = 1, outer = 1, expect = 1;
  int d = rank - 1;
  for (; d >= 0 && (stride[d] == 0 || dims[d] == 1); d--) row *= dims[d];
  for (; d >= 0; d--) {
    if (dims[d] == 1) continue;
    if (stride[d] != expect) return 0;
    expect *= dims[d];
    outer *= dims[d];
  }
  return row > 1 && outer == operand_count ? row : 0;
}

// The range a value is evaluated over for a block [start, start + m) of
// whole rows: [start / P, (start + m) / P) for P > 0 (1: the block's own
// range); 0 not reached; -1 anything else.
static int64_t step(int64_t p, hl_rows_edge_t e, int64_t f, int64_t total) {
  if (p <= 0) return -1;
  switch (e) {
    case HL_ROWS_SAME: return p;
    case HL_ROWS_SPREAD: return p * f;
    case HL_ROWS_GATHER: return p % f == 0 ? p / f : -1;
    case HL_ROWS_ONE: return total > 0 ? total : -1;
    default: return -1;
  }
}

const char *hl_fusion_rows_plan(const hl_rows_value_t *v, int count, const int *outputs,
                                int output_count, int64_t total, int64_t row) {
  int64_t *at = hl_calloc((size_t)(count ? count : 1), sizeof(int64_t));
  if (!at) return "out of memory";
  for (int i = 0; i < output_count; i++) at[outputs[i]] = at[outputs[i]] == 0 ? 1 : at[outputs[i]];
  const char *why = NULL;
  for (int k = count - 1; k >= 0 && !why; k--) {
    if (at[k] == 0) continue;
    if (v[k].row_reduce && (at[k] != row || v[k].factor[0] != row))
      why = "a row reduce read other than broadcast along its rows";
    for (int i = 0; i < v[k].nops; i++) {
      int o = v[k].ops[i];
      int64_t s = step(at[k], v[k].edge[i], v[k].factor[i], total);
      at[o] = at[o] == 0 || at[o] == s ? s : -1;
    }
  }
  hl_free(at);
  return why;
}
