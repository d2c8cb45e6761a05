// Scatter's passthrough dimensions for the partitioner: an operand dimension
// that is a window dimension of the updates taken whole (update size =
// operand size) can stay split, with the updates split the same way along
// their window dimension and the indices whole. Per partition the scatter
// then does exactly what the global one does to its columns: a start index
// other than 0 along such a dimension puts the window out of bounds, so the
// update is skipped both globally and locally. One operand, no batching
// dimensions; anything else has no rule (fallback).
#include "runtime/spmd/spmd_internal.h"

bool spmd_scatter_maps(const hl_instruction_t *s, int *operand_to_update) {
  if (s->opcode != HL_OP_SCATTER || s->operand_count != 3 || !s->attrs.has_scatter_dimension_numbers ||
      hl_shape_is_tuple(&s->shape))
    return false;
  const hl_scatter_dims_t *sd = &s->attrs.scatter_dimension_numbers;
  const hl_shape_t *os = &s->operands[0]->shape, *us = &s->operands[2]->shape;
  if (sd->input_batching_dims.n || sd->scatter_indices_batching_dims.n || os->rank > HL_MAX_RANK) return false;
  for (int d = 0; d < os->rank; d++) operand_to_update[d] = -1;
  // Operand dims not inserted (ascending) <- update_window_dims (ascending).
  int od = 0;
  for (int k = 0; k < sd->update_window_dims.n; k++) {
    for (;;) {
      bool inserted = false;
      for (int c = 0; c < sd->inserted_window_dims.n; c++) inserted |= sd->inserted_window_dims.v[c] == od;
      if (!inserted) break;
      od++;
    }
    int64_t uw = sd->update_window_dims.v[k];
    if (od >= os->rank || uw < 0 || uw >= us->rank) return false;
    if (us->dims[uw] == os->dims[od]) operand_to_update[od] = (int)uw;
    od++;
  }
  for (int d = 0; d < os->rank; d++)  // without a passthrough dim it is the fallback
    if (operand_to_update[d] >= 0) return true;
  return false;
}
